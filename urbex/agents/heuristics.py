"""Heuristic policies: ``landmark_prior`` (no vision, an honest floor) and the ``no_tools`` factory.

``landmark_prior`` reads only the description, the scene id, the landmark table (a public map,
like OSM) and the global view's georeferencing — never the target:

1. the *anchor*: the first landmark the description mentions
   (:meth:`urbex.landmarks.LandmarkIndex.mentions`);
2. the *class*: the earliest class noun of the description (``car park`` → Parking, ``car`` →
   Car, ``building``/``house`` → Building, ``field``/``ground`` → Ground), else ``default_class``;
3. the *box*: if the description names the landmark itself (``"the building called X"``, or it
   starts with the name) → the landmark's footprint; else a class-sized box (train-split mean
   size) centred on the anchor, shifted by the first compass word (``north``, ``south-east``,
   ...) far enough to sit beside the landmark with a ``gap_m`` gap; no anchor → the scene centre.

It answers on turn 1, in the global view. Frames: world metres (x east, y north) until the
final conversion to global-view units (0–1000).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from urbex.agents.workflow import WorkflowPolicy
from urbex.annotations.class_sizes import CITYREFER_CLASS_SIZES
from urbex.env.policy import PolicyBase
from urbex.landmarks.table import footprint_bounds

if TYPE_CHECKING:
    from PIL import Image

    from urbex.env.episode import GroundingEnv
    from urbex.env.policy import Policy

__all__ = [
    "CITYREFER_CLASS_SIZES",
    "LandmarkPriorPolicy",
    "compass_vector",
    "infer_class",
    "no_tools_policy",
    "prior_box",
]


# Longest alternatives first: at one position the regex takes the first that matches.
_CLASS_WORDS: tuple[tuple[str, str], ...] = (
    ("parking lot", "Parking"), ("car park", "Parking"), ("parking area", "Parking"),
    ("parking", "Parking"), ("open green space", "Ground"), ("green field", "Ground"),
    ("grass field", "Ground"), ("playing field", "Ground"), ("automobile", "Car"),
    ("vehicle", "Car"), ("truck", "Car"), ("van", "Car"), ("car", "Car"), ("cars", "Car"),
    ("building", "Building"), ("house", "Building"), ("structure", "Building"),
    ("tower", "Building"), ("church", "Building"), ("hall", "Building"), ("ground", "Ground"),
    ("field", "Ground"), ("lawn", "Ground"), ("pitch", "Ground"),
)  # fmt: skip
_CLASS_RE = re.compile(r"\b(" + "|".join(re.escape(w) for w, _ in _CLASS_WORDS) + r")\b")
_CLASS_OF = dict(_CLASS_WORDS)
_COMPASS_RE = re.compile(
    r"\b(north|south)[\s-]?(east|west)(?:ern)?\b|\b(north|south|east|west)(?:ern|wards?)?\b"
)
_UNIT = {"north": (0.0, 1.0), "south": (0.0, -1.0), "east": (1.0, 0.0), "west": (-1.0, 0.0)}
_NAMES_ITSELF = re.compile(r"\b(called|known as|named)\b")


def infer_class(description: str, default: str = "Building") -> str:
    """The target class from the earliest class noun of the description.

    >>> infer_class("the red car parked north of Merton Hall")
    'Car'
    >>> infer_class("the car park next to the building")
    'Parking'
    >>> infer_class("something tall", default="Building")
    'Building'
    """
    m = _CLASS_RE.search(description.lower())
    return _CLASS_OF[m.group(1)] if m else default


def compass_vector(description: str) -> tuple[float, float]:
    """Sign vector ``(sx, sy)`` (x east, y north) of the first compass word; ``(0, 0)`` if none.

    >>> compass_vector("the car north-east of the church")
    (1.0, 1.0)
    >>> compass_vector("on the southern side of Mill Lane")
    (0.0, -1.0)
    >>> compass_vector("next to the hall")
    (0.0, 0.0)
    """
    m = _COMPASS_RE.search(description.lower())
    if not m:
        return (0.0, 0.0)
    if m.group(1):
        a, b = _UNIT[m.group(1)], _UNIT[m.group(2)]
        return (a[0] + b[0], a[1] + b[1])
    return _UNIT[m.group(3)]


def prior_box(
    description: str,
    *,
    anchor_xy: ArrayLike | None,
    anchor_box: ArrayLike | None,
    anchor_name: str | None,
    scene_box: ArrayLike,
    class_sizes: Mapping[str, tuple[float, float]] = CITYREFER_CLASS_SIZES,
    gap_m: float = 4.0,
    default_class: str = "Building",
) -> NDArray[np.float64]:
    """The landmark-prior BEV box (world metres) for one description (see the module docstring).

    Parameters
    ----------
    anchor_xy : array_like, shape (2,), or None
        The mentioned landmark's world position (metres); None when none is mentioned.
    anchor_box : array_like, shape (4,), or None
        The landmark's footprint bounds ``[x_min, y_min, x_max, y_max]`` (metres), if known.
    anchor_name : str or None
        The landmark's name (to detect a description that names the target itself).
    scene_box : array_like, shape (4,)
        The scene's BEV bounds, metres (the result is clipped to it).

    Returns
    -------
    ndarray, shape (4,), float64

    Examples
    --------
    A car (5 × 5 m prior) north of a 20 × 10 m landmark centred at (50, 50), 4 m gap:

    >>> prior_box("the red car north of Merton Hall", anchor_xy=(50, 50),
    ...           anchor_box=(40, 45, 60, 55), anchor_name="Merton Hall", scene_box=(0, 0, 100, 100),
    ...           class_sizes={"Car": (5, 5)}).tolist()
    [47.5, 59.0, 52.5, 64.0]
    >>> prior_box("the building called Merton Hall", anchor_xy=(50, 50), anchor_box=(40, 45, 60, 55),
    ...           anchor_name="Merton Hall", scene_box=(0, 0, 100, 100)).tolist()
    [40.0, 45.0, 60.0, 55.0]
    >>> prior_box("a car", anchor_xy=None, anchor_box=None, anchor_name=None,
    ...           scene_box=(0, 0, 100, 100), class_sizes={"Car": (4, 2)}).tolist()
    [48.0, 49.0, 52.0, 51.0]
    """
    sb = np.asarray(scene_box, dtype=np.float64).reshape(4)
    cls = infer_class(description, default_class)
    dx, dy = class_sizes.get(cls, CITYREFER_CLASS_SIZES.get(cls, (10.0, 10.0)))
    half = np.array([dx, dy], dtype=np.float64) / 2
    text = description.strip().lower()
    if anchor_xy is None:
        c = (sb[:2] + sb[2:]) / 2
    else:
        c = np.asarray(anchor_xy, dtype=np.float64).reshape(2)
        ab = None if anchor_box is None else np.asarray(anchor_box, dtype=np.float64).reshape(4)
        names_itself = anchor_name is not None and (
            text.startswith(anchor_name.strip().lower())
            or (
                bool(_NAMES_ITSELF.search(text))
                and text.find(anchor_name.strip().lower()) >= 0
                and compass_vector(text) == (0.0, 0.0)
            )
        )
        if names_itself and ab is not None and np.all(ab[2:] > ab[:2]):
            return _clip(ab, sb)
        s = np.asarray(compass_vector(text), dtype=np.float64)
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
        anchor_xy = anchor_box = anchor_name = None
        idx = self.env.landmarks
        if idx is not None:
            names = idx.mentions(description, scene_id)
            if names:
                res = idx.lookup(names[0], scene_id=scene_id, limit=1)
                best = res.best or (res.candidates[0] if res.candidates else None)
                if best is not None:
                    anchor_xy = (best.x, best.y)
                    anchor_box = footprint_bounds(best.row, require_area=True)
                    anchor_name = best.name
        return prior_box(
            description,
            anchor_xy=anchor_xy,
            anchor_box=anchor_box,
            anchor_name=anchor_name,
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

    return WorkflowPolicy(inner, steps=("answer",), max_turns=max_turns, redirects=redirects)
