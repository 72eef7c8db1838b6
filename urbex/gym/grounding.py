"""``urbex/Grounding-v0``: the grounding episode as a registered ``gymnasium.Env``.

A thin subclass around :class:`urbex.env.episode.GroundingEnv` (which plays, scores and
records); this class only declares the spaces, draws the episode's query from a split and
converts observations to arrays.

>>> import gymnasium, urbex                                    # doctest: +SKIP
>>> env = gymnasium.make("urbex/Grounding-v0", assets="assets", split="val")  # doctest: +SKIP
>>> obs, info = env.reset(seed=0)                              # doctest: +SKIP

Spaces
------
observation_space : Dict
    ``text`` (Text): the user prompt after ``reset``, the tool output or error text after
    ``step`` (a character outside the Basic Multilingual Plane, U+FFFD). ``image`` (Box uint8, shape ``(H, W, 3)``, RGB): the view the turn created (the
    global view after ``reset``), pasted at the top-left of an ``H × W`` black canvas, where
    ``(W, H)`` is the largest of ``env.global_view_size``, ``zoom_size`` and ``oblique_size``
    (view pixels; every view of a kind has its kind's fixed size); all zeros when the turn made
    no view. ``view_id`` (Text): that view's id (``global``, ``zoom_N``, ``oblique_N``; ``""``
    with no view). ``turn`` (Discrete): assistant turns played; ``turns_left`` (Discrete): turns
    left of ``env.max_turns``.
action_space : Text
    The model's reply (tool call or answer, :mod:`urbex.env.protocol`), any Unicode text of the
    Basic Multilingual Plane.

``info`` is the wrapped environment's (``query_id``, ``scene_id``, ``max_turns`` after reset;
``step`` and, at the end, ``outcome`` after each step) plus ``images``: the step's PIL images.
The step record's ``env_s`` is 0.0 here (a replay with the same seed and actions gives equal
``info``, as Gymnasium's checker requires); the episode loop (:mod:`urbex.env.play`) measures it.
``terminated``: the agent answered; ``truncated``: the turn budget is spent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from numpy.typing import NDArray

from urbex.annotations.splits import load_queries
from urbex.config import SPLIT_NAMES, Params, load_params
from urbex.env.episode import GroundingEnv
from urbex.env.world import World
from urbex.errors import AnnotationError, CacheError, ConfigError
from urbex.eval.ground import landmark_hits
from urbex.layout import META_FILE, AssetLayout
from urbex.query import Query
from urbex.viz.trajectory import trajectory_picture

__all__ = ["MAX_TEXT_CHARS", "TEXT_CHARSET", "GroundingGymEnv", "resolve_params"]

#: Every character a prompt, tool text or reply may hold: the Basic Multilingual Plane less the
#: surrogates.
TEXT_CHARSET: str = "".join(chr(c) for c in range(0x10000) if not 0xD800 <= c < 0xE000)
#: Longest text (characters) of an observation or an action.
MAX_TEXT_CHARS = 65_536


class _OutsideBmp(dict[int, str]):
    """``str.translate`` table: a character outside :data:`TEXT_CHARSET` becomes U+FFFD."""

    def __missing__(self, code: int) -> str:
        return "\ufffd" if code > 0xFFFF or 0xD800 <= code < 0xE000 else chr(code)


_OUTSIDE_BMP = _OutsideBmp()


def resolve_params(params: Params | str | Path | None, assets: str | Path | None) -> Params:
    """``params`` as :class:`~urbex.config.Params` (a ``params.yaml`` path is read; None: the
    working folder's, or the defaults), its ``paths.assets`` replaced by ``assets`` if given."""
    p = params if isinstance(params, Params) else load_params(params)
    return p if assets is None else p.with_updates(paths={"assets": Path(assets)})


def _require_built(lay: AssetLayout) -> None:
    """The stages an episode needs, in build order: a one-line error naming the first missing
    one and its command."""
    built = lay.scenes.is_dir() and any(p.is_file() for p in lay.scenes.glob(f"*/{META_FILE}"))
    if not built:
        raise CacheError(
            "no scene cache: stage `cache` is not built; build it with `urbex synth` then "
            "`urbex cache` (or `make demo`)",
            path=lay.scenes,
        )
    if not lay.queries.is_file():
        raise AnnotationError(
            "no split table: stage `splits` is not built; build it with `urbex splits`",
            path=lay.queries,
        )


class GroundingGymEnv(gym.Env[dict[str, Any], str]):
    """One grounding episode per ``reset``, on a query drawn from ``split``.

    Parameters
    ----------
    assets : str or Path or None
        The assets root (``paths.assets``); default the one of ``params``.
    split : str
        The split the queries come from (``train``, ``val``, ``test_nd``, ``test_no``, ``test``).
    params : Params or str or Path or None
        The params, or a ``params.yaml`` to read (default: ``./params.yaml`` or the defaults).
    render_mode : {"rgb_array"} or None
        ``"rgb_array"``: :meth:`render` returns the trajectory picture (what ``urbex ground``
        writes) as an ``(h, w, 3)`` uint8 array.

    Raises
    ------
    ConfigError
        An unknown split (the message lists the splits).
    CacheError, AnnotationError
        The assets are not built (the message names the stage and its command), or ``split``
        holds no query.
    """

    metadata: dict[str, Any] = {"render_modes": ["rgb_array"], "render_fps": 1}  # noqa: RUF012

    def __init__(
        self,
        assets: str | Path | None = None,
        split: str = "val",
        params: Params | str | Path | None = None,
        render_mode: str | None = None,
    ) -> None:
        if split not in SPLIT_NAMES:
            raise ConfigError(f"unknown split {split!r}; splits: {', '.join(SPLIT_NAMES)}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode: expected None or 'rgb_array', got {render_mode!r}")
        self.render_mode = render_mode
        p = resolve_params(params, assets)
        _require_built(p.layout)
        #: The params the episodes play by (``paths.assets`` replaced by ``assets`` if given).
        self.params: Params = p
        self.split = split
        self.queries: list[Query] = load_queries(p.layout, split)
        self.world = World.from_params(p)
        self.inner: GroundingEnv = self.world.env()
        e = self.inner.params
        sizes = (e.global_view_size, e.zoom_size, e.oblique_size)
        self.view_shape = (max(h for _, h in sizes), max(w for w, _ in sizes), 3)
        text = spaces.Text(max_length=MAX_TEXT_CHARS, min_length=0, charset=TEXT_CHARSET)
        self.observation_space = spaces.Dict(
            {
                "text": text,
                "image": spaces.Box(0, 255, self.view_shape, np.uint8),
                "view_id": spaces.Text(max_length=64, min_length=0, charset=TEXT_CHARSET),
                "turn": spaces.Discrete(e.max_turns + 1),
                "turns_left": spaces.Discrete(e.max_turns + 1),
            }
        )
        self.action_space = spaces.Text(
            max_length=MAX_TEXT_CHARS, min_length=0, charset=TEXT_CHARSET
        )

    def reset(
        self, *, seed: int | None = None, options: Mapping[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Start an episode on a query drawn with ``np_random`` (or ``options["query_id"]``).

        ``options`` may also hold the wrapped environment's (``point_metrics``).
        """
        super().reset(seed=seed)
        opts = dict(options or {})
        qid = opts.pop("query_id", None)
        if qid is None:
            query = self.queries[int(self.np_random.integers(len(self.queries)))]
        else:
            hits = [q for q in self.queries if q.query_id == qid]
            if not hits:
                raise ValueError(f"options['query_id']: {qid!r} is not a query of {self.split!r}")
            query = hits[0]
        inner_seed = int(self.np_random.integers(2**31))
        obs, info = self.inner.reset(query=query, seed=inner_seed, options=opts or None)
        return self._observation(obs), {**info, "images": obs["images"]}

    def step(self, action: str) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """Play one assistant turn (``action``: the model's reply text)."""
        if not isinstance(action, str):
            raise TypeError(f"action: expected a str (the model's reply), got {type(action)}")
        obs, reward, terminated, truncated, info = self.inner.step(action)
        info = {**info, "images": obs["images"]}
        if "step" in info:  # its measured seconds would make a replay's info differ
            info["step"] = replace(info["step"], env_s=0.0)
        return self._observation(obs), float(reward), bool(terminated), bool(truncated), info

    def render(self) -> NDArray[np.uint8] | None:  # type: ignore[override]
        """The trajectory picture of the episode so far (None without ``render_mode``)."""
        if self.render_mode is None:
            gym.logger.warn(
                "render() without render_mode; make the env with render_mode='rgb_array'"
            )
            return None
        env = self.inner
        o = env.outcome
        q = env.query
        pred = None if o is None else o.pred_box_2d_m
        picture = trajectory_picture(
            env.scene,
            env.steps,
            env.views,
            query_text=q.description,
            pred_box_2d=pred,
            target_box_2d=q.target_box_2d if q.has_target else None,
            landmarks=landmark_hits(env.landmarks, q.scene_id, env.steps),
            answer_mark=None if o is None else o.answer_mark,
            subtitle=f"{self.split} | {q.query_id}",
        )
        return np.asarray(picture.convert("RGB"), dtype=np.uint8)

    def _observation(self, obs: Mapping[str, Any]) -> dict[str, Any]:
        image = np.zeros(self.view_shape, np.uint8)
        view_id = ""
        if obs["images"]:
            a = np.asarray(obs["images"][-1].convert("RGB"), dtype=np.uint8)
            image[: a.shape[0], : a.shape[1]] = a[: self.view_shape[0], : self.view_shape[1]]
            view_id = str(obs["view_ids"][-1])
        text = str(obs["text"])[:MAX_TEXT_CHARS]
        return {
            "text": text.translate(_OUTSIDE_BMP) if not text.isascii() else text,
            "image": image,
            "view_id": view_id,
            "turn": np.int64(self.inner.turn),
            "turns_left": np.int64(self.inner.turns_left),
        }
