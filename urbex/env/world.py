"""The construction seam: what every episode consumer needs, built once from params.

A :class:`World` holds the scene provider (an LRU of opened scene caches under
``<assets>/scenes``) and the landmark index of ``<assets>/landmarks`` and makes environments
over them. Evaluation (:class:`urbex.eval.player.EpisodePlayer`), SFT's teacher and recovery
episodes, GRPO's trl environment class, the proposal and ranker fitting passes, the results
page's replay and ``urbex ground`` all start here; the policy comes from
:func:`urbex.agents.registry.make_policy` over a world's environment.

An environment's landmark index changes only through
:meth:`~urbex.env.episode.GroundingEnv.use_landmarks` (perturbed or renamed worlds).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from urbex.config import Params
from urbex.config_data import LandmarkParams
from urbex.config_env import EnvParams
from urbex.env.episode import GroundingEnv
from urbex.env.scenes import CachedSceneProvider
from urbex.errors import LandmarkError
from urbex.landmarks.lookup import LandmarkIndex, landmark_index
from urbex.layout import AssetLayout

__all__ = ["World"]

_SAME: Any = object()


@dataclass(frozen=True, slots=True)
class World:
    """Scenes and landmarks of one assets root (or benchmark), and environments over them.

    Attributes
    ----------
    env_params : EnvParams
        What the environments play by.
    scenes : CachedSceneProvider
        ``scene_id → SceneCache``, shared by every environment of this world (thread-safe).
    landmarks : LandmarkIndex or None
        The landmark index (None when the assets hold no landmark table).
    """

    env_params: EnvParams
    scenes: CachedSceneProvider
    landmarks: LandmarkIndex | None

    @classmethod
    def open(
        cls,
        layout: AssetLayout,
        env: EnvParams,
        landmarks: LandmarkParams,
        *,
        scenes_dir: Path | None = None,
        max_open_scenes: int = 8,
        require_landmarks: bool = False,
    ) -> World:
        """The world of ``layout`` (``<assets>/scenes``, ``<assets>/landmarks``), its
        environments playing by ``env``, its landmark index matching by ``landmarks``.

        Parameters
        ----------
        scenes_dir
            Directory of scene caches (default ``layout.scenes``).
        max_open_scenes
            Scene caches kept open at once (least recently used closed first).
        require_landmarks
            Raise when there is no landmark table instead of playing without landmarks.

        Raises
        ------
        LandmarkError
            ``require_landmarks`` and ``<assets>/landmarks`` holds no table.
        """
        scenes = CachedSceneProvider(scenes_dir or layout.scenes, maxsize=max_open_scenes)
        index = landmark_index(layout, landmarks)
        if index is None and require_landmarks:
            raise LandmarkError(
                "landmark tables not found; build them with `urbex landmarks`",
                path=layout.landmarks,
            )
        return cls(env_params=env, scenes=scenes, landmarks=index)

    @classmethod
    def from_params(
        cls,
        params: Params,
        *,
        scenes_dir: Path | None = None,
        max_open_scenes: int = 8,
        require_landmarks: bool = False,
    ) -> World:
        """:meth:`open` with the layout, ``env`` and ``landmarks`` sections of ``params``."""
        return cls.open(
            params.layout,
            params.env,
            params.landmarks,
            scenes_dir=scenes_dir,
            max_open_scenes=max_open_scenes,
            require_landmarks=require_landmarks,
        )

    def env(self, *, landmarks: LandmarkIndex | None = _SAME) -> GroundingEnv:
        """A new environment over this world's scenes (and ``landmarks``, default the world's)."""
        index = self.landmarks if landmarks is _SAME else landmarks
        return GroundingEnv(self.env_params, self.scenes, index)
