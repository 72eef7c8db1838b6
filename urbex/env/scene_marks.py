"""A scene's marks, computed once per scene: proposals, attribute words, map names and the
marked global view (:class:`SceneMarksCache`, kept by each :class:`~urbex.env.episode.GroundingEnv`)."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from urbex.config_env import MarksParams
from urbex.env.marks import MarkState, landmark_footprints, mark_names, mark_words
from urbex.env.tools import mark_view
from urbex.env.views import EpisodeView

__all__ = ["MARK_CACHE", "SceneMarks", "SceneMarksCache"]

#: Scenes whose marks (proposals, attribute words, map names) an environment keeps.
MARK_CACHE = 8

#: (proposals, attribute words per mark id, map name per mark id, the marked global view, the
#: numbers that view gave its marks under episode numbering — ``{}`` otherwise)
SceneMarks = tuple[Any, dict[int, tuple[str, ...]], dict[int, str], EpisodeView, dict[int, int]]


class SceneMarksCache:
    """The :data:`SceneMarks` of the :data:`MARK_CACHE` most recent (scene, landmark index,
    global view) triples."""

    def __init__(self) -> None:
        self._kept: OrderedDict[tuple[str, int, int, int], tuple[Any, ...]] = OrderedDict()

    def get(
        self,
        scene_id: str,
        scene: Any,
        glob: EpisodeView,
        *,
        landmarks: Any,
        params: MarksParams,
    ) -> SceneMarks:
        """``scene``'s marks under ``params`` with ``landmarks``' names, drawn on ``glob``."""
        key = (scene_id, id(scene), id(landmarks), id(glob))
        hit = self._kept.get(key)
        if hit is not None:  # the entry holds its three objects, so their ids stay theirs
            out: SceneMarks = hit[3]
            return out
        props = scene.proposals
        words = mark_words(props) if params.describe == "attributes" else {}
        named = mark_names(props.box_2d_m, landmark_footprints(landmarks, scene_id))
        names = {int(i): n for i, n in zip(props.mark_id.tolist(), named, strict=True) if n}
        state = MarkState(proposals=props, params=params, words=words, names=names)
        marked = mark_view(glob, state)
        out = (props, words, names, marked, dict(state.to_display or {}))
        self._kept[key] = (scene, landmarks, glob, out)
        while len(self._kept) > MARK_CACHE:
            self._kept.popitem(last=False)
        return out
