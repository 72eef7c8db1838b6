"""Heuristic policies: ``landmark_prior`` (no vision, an honest floor) and the ``no_tools`` factory.

``landmark_prior`` reads only the description, the scene id, the landmark table (a public map,
like OSM) and the global view's georeferencing — never the target:

1. the *anchor*: the first landmark the description mentions (its parse,
   :func:`urbex.language.parse`, against the scene's landmark names);
2. the *class*: the parse's target class, else ``default_class``;
3. the *box*: if the description names the landmark itself (``"the building called X"``,
   ``"X, the red building"``) → the landmark's footprint; else a class-sized box (train-split
   mean size) centred on the anchor, shifted by the direction of its relation (``north of``,
   ``south-east of``, ``to the left of`` in the map frame, ...) far enough to sit beside the
   landmark with a ``gap_m`` gap; no anchor → the scene centre.

It answers on turn 1, in the global view. Frames: world metres (x east, y north) until the
final conversion to global-view units (0–1000).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from urbex.agents.workflow import WorkflowPolicy
from urbex.annotations.class_sizes import CITYREFER_CLASS_SIZES
from urbex.env.policy import PolicyBase
from urbex.landmarks.table import footprint_bounds
from urbex.language import Parse, parse
from urbex.tool_vocabulary import ToolName

if TYPE_CHECKING:
    from PIL import Image

    from urbex.env.episode import GroundingEnv
    from urbex.env.policy import Policy

__all__ = [
    "CITYREFER_CLASS_SIZES",
    "LandmarkPriorPolicy",
    "no_tools_policy",
    "prior_box",
    "shift_signs",
]


def shift_signs(parse: Parse) -> tuple[float, float]:
    """Signs ``(sx, sy)`` (x east, y north) of the first mention's direction; ``(0, 0)`` if it
    has none.

    >>> shift_signs(parse("the car north-east of the church", ["the church"]))
    (1.0, 1.0)
    >>> shift_signs(parse("on the southern side of Mill Lane", ["Mill Lane"]))
    (0.0, -1.0)
    >>> shift_signs(parse("the car to the left of Mill Lane", ["Mill Lane"]))
    (-1.0, 0.0)
    >>> shift_signs(parse("next to the hall", ["the hall"]))
    (0.0, 0.0)
    """
    b = parse.mentions[0].bearing if parse.mentions else None
    if b is None:
        return (0.0, 0.0)
    return (float(np.sign(round(b[0], 3))), float(np.sign(round(b[1], 3))))


def prior_box(
    parse: Parse,
    *,
    anchor_xy: ArrayLike | None,
    anchor_box: ArrayLike | None,
    scene_box: ArrayLike,
    class_sizes: Mapping[str, tuple[float, float]] = CITYREFER_CLASS_SIZES,
    gap_m: float = 4.0,
    default_class: str = "Building",
) -> NDArray[np.float64]:
    """The landmark-prior BEV box (world metres) for one description (see the module docstring).

    Parameters
    ----------
    parse : Parse
        The description's parse; its first mention is the anchor.
    anchor_xy : array_like, shape (2,), or None
        The first mentioned landmark's world position (metres); None when none is mentioned.
    anchor_box : array_like, shape (4,), or None
        The landmark's footprint bounds ``[x_min, y_min, x_max, y_max]`` (metres), if known.
    scene_box : array_like, shape (4,)
        The scene's BEV bounds, metres (the result is clipped to it).

    Returns
    -------
    ndarray, shape (4,), float64

    Examples
    --------
    A car (5 × 5 m prior) north of a 20 × 10 m landmark centred at (50, 50), 4 m gap:

    >>> hall = ["Merton Hall"]
    >>> prior_box(parse("the red car north of Merton Hall", hall), anchor_xy=(50, 50),
    ...           anchor_box=(40, 45, 60, 55), scene_box=(0, 0, 100, 100),
    ...           class_sizes={"Car": (5, 5)}).tolist()
    [47.5, 59.0, 52.5, 64.0]
    >>> prior_box(parse("the building called Merton Hall", hall), anchor_xy=(50, 50),
    ...           anchor_box=(40, 45, 60, 55), scene_box=(0, 0, 100, 100)).tolist()
    [40.0, 45.0, 60.0, 55.0]
    >>> prior_box(parse("a car"), anchor_xy=None, anchor_box=None,
    ...           scene_box=(0, 0, 100, 100), class_sizes={"Car": (4, 2)}).tolist()
    [48.0, 49.0, 52.0, 51.0]
    """
    sb = np.asarray(scene_box, dtype=np.float64).reshape(4)
    cls = parse.target_class or default_class
    dx, dy = class_sizes.get(cls, CITYREFER_CLASS_SIZES.get(cls, (10.0, 10.0)))
    half = np.array([dx, dy], dtype=np.float64) / 2
    if anchor_xy is None:
        c = (sb[:2] + sb[2:]) / 2
    else:
        c = np.asarray(anchor_xy, dtype=np.float64).reshape(2)
        ab = None if anchor_box is None else np.asarray(anchor_box, dtype=np.float64).reshape(4)
        names_itself = bool(parse.mentions) and parse.mentions[0].names_target
        if names_itself and ab is not None and np.all(ab[2:] > ab[:2]):
            return _clip(ab, sb)
        s = np.asarray(shift_signs(parse), dtype=np.float64)
        lm_half = (ab[2:] - ab[:2]) / 2 if ab is not None else np.zeros(2)
        if ab is not None:
            c = (ab[:2] + ab[2:]) / 2
        c = c + s * (lm_half + half + gap_m)
    return _clip(np.concatenate([c - half, c + half]), sb)


def _clip(box: NDArray[np.float64], scene: NDArray[np.float64]) -> NDArray[np.float64]:
    """Shift a box into the scene bounds when possible (keeping its size), then clip."""
    b = box.copy()
    for lo, hi in ((0, 2), (1, 3)):
        if b[lo] < scene[lo]:
            b[[lo, hi]] += scene[lo] - b[lo]
        if b[hi] > scene[hi]:
            b[[lo, hi]] -= b[hi] - scene[hi]
    b[0::2] = np.clip(b[0::2], scene[0], scene[2])
    b[1::2] = np.clip(b[1::2], scene[1], scene[3])
    return b


def _to_units(view: Any, box: NDArray[np.float64]) -> list[int]:
    u = np.asarray(view.from_world_box(box), dtype=np.float64)
    x1, y1 = (math.floor(float(np.clip(v, 0, 999))) for v in u[:2])
    x2, y2 = (math.ceil(float(np.clip(v, 1, 1000))) for v in u[2:])
    return [x1, y1, max(x2, x1 + 1), max(y2, y1 + 1)]


class LandmarkPriorPolicy(PolicyBase):
    """The no-vision floor, bound to an environment (reads only the description, the scene id,
    the landmark index and the global view's transform — never ``target_box_*``).

    Parameters
    ----------
    env
        The environment (``env.query.description``, ``env.query.scene_id``, ``env.landmarks``,
        ``env.views["global"]``).
    class_sizes
        ``{class: (dx, dy)}`` metres, the train split's means
        (:func:`urbex.annotations.class_sizes.read_class_sizes`); None: CityRefer's means.
    gap_m
        Gap between the landmark's footprint and the shifted box, metres.
    default_class
        The class when no class noun is found.
    """

    def __init__(
        self,
        env: GroundingEnv,
        *,
        class_sizes: Mapping[str, tuple[float, float]] | None = None,
        gap_m: float = 4.0,
        default_class: str = "Building",
    ) -> None:
        if gap_m < 0:
            raise ValueError(f"gap_m: expected >= 0 metres, got {gap_m}")
        self.env = env
        self.class_sizes = dict(class_sizes or CITYREFER_CLASS_SIZES)
        self.gap_m = float(gap_m)
        self.default_class = default_class

    def predict(self, description: str, scene_id: str) -> NDArray[np.float64]:
        """The predicted BEV box (world metres) for a description in a scene."""
        g = self.env.views["global"]
        anchor_xy = anchor_box = None
        idx = self.env.landmarks
        names = idx.names(scene_id) if idx is not None else []
        p = parse(description, names, threshold=getattr(idx, "mention_threshold", 0.9))
        if idx is not None and p.mentions:
            res = idx.lookup(p.mentions[0].name, scene_id=scene_id, limit=1)
            best = res.best or (res.candidates[0] if res.candidates else None)
            if best is not None:
                anchor_xy = (best.x, best.y)
                anchor_box = footprint_bounds(best.row, require_area=True)
        return prior_box(
            p,
            anchor_xy=anchor_xy,
            anchor_box=anchor_box,
            scene_box=g.world_box,
            class_sizes=self.class_sizes,
            gap_m=self.gap_m,
            default_class=self.default_class,
        )

    def act(self, messages: list[dict[str, Any]], images: list[Image.Image]) -> str:
        """Answer on the first turn in the global view (``messages``/``images`` unused)."""
        q = self.env.query
        box = self.predict(q.description, q.scene_id)
        units = _to_units(self.env.views["global"], box)
        return f"<answer>{json.dumps({'view_id': 'global', 'bbox_2d': units})}</answer>"


def no_tools_policy(inner: Policy, *, max_turns: int = 8, redirects: int = 1) -> Policy:
    """``no_tools``: the wrapped model must answer from the global view (a one-step workflow)."""

    return WorkflowPolicy(inner, steps=(ToolName.ANSWER,), max_turns=max_turns, redirects=redirects)
