"""``ranking``: a non-neural **With-GT candidate-ranking baseline** (CityRefer/CityAnchor setting).

City-scale ranking methods (paper §2.1, §4.2, A.3) score a set of precomputed candidate
instances against the description and return the best one; in the paper's "With-GT" protocol the
candidates are the scene's **ground-truth instance boxes**. This policy does the same without a
network: it reads the scene's GT instance table (class, box, mean colour, size, landmark name —
*every* instance of the scene, not the target), the landmark index (a public map) and the
description, scores every candidate with :func:`score_candidates`, and answers the best
candidate's box in the global view on turn 1. It never reads the query's ``object_id`` or
``target_box_*``: it is privileged only in knowing the candidate boxes (With-GT), which is what
makes it a ranking baseline rather than a search policy.

Scoring (all terms are ≤ 0, 0 = the candidate satisfies the phrase; summed per candidate):

* **class** — the earliest class noun (``car``/``vehicle`` → Car, ``building``/``house``/
  ``hall``/``structure`` → Building, ``parking lot``/``car park`` → Parking, ``ground``/
  ``field``/``park``/``green`` → Ground; landmark names are masked out first): ``-W_CLASS``
  for another class.
* **colour** — each colour word vs the candidate's mean RGB: ``log p(word | rgb)`` of a soft
  nearest-palette model in CIELAB (D65), ``p ∝ exp(−ΔE76 / T)`` over :data:`PALETTE`.
* **landmarks** — each mentioned landmark with the relation phrase just before it: compass
  (``north of``, ``on the south side of``: centre-to-centre bearing within ±45°, BEV gap ≤
  35 m), ``next to``/``beside`` (gap ≤ 6 m), ``near``/``opposite`` (gap ≤ 35 m), ``in`` (centre
  inside the footprint), ``on``/``along``/``facing`` a road (gap to its centreline ≤ a class
  tolerance), ``corner of A and B`` / ``where A meets B`` (gap to the crossing point),
  ``called``/``known as`` (the instance's landmark name). Penalties grow linearly past the
  tolerance, in units of the tolerance.
* **selectors** — ``largest``/``smallest``/``tallest`` (and ``big``/``small``/``tall``) and
  ordinals (``the second car from the east end of X Road``) pick within the *plausible set*:
  candidates whose filter score is within :data:`PLAUSIBLE_MARGIN` of the best.

Frames: boxes are BEV ``[x_min, y_min, x_max, y_max]`` in **world metres** (x east, y north)
until the final conversion to global-view units (0–1000).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from urbex.agents.heuristics import _to_units
from urbex.colour import (
    _COLOUR_ALIASES,
    PALETTE,
    colour_log_likelihood,
    exposure_gain,
    srgb_to_lab,
)
from urbex.env.policy import PolicyBase
from urbex.errors import CacheError, PolicyError
from urbex.geometry import gap_2d, overlap_bounds_2d
from urbex.landmarks.names import normalize_name
from urbex.landmarks.table import footprint_bounds
from urbex.language.target import CLASS_WORDS, class_of_text

if TYPE_CHECKING:
    import polars as pl
    from PIL import Image

    from urbex.env.episode import GroundingEnv

__all__ = [
    "PALETTE",
    "PLAUSIBLE_MARGIN",
    "W_CLASS",
    "Anchor",
    "Candidates",
    "RankingPolicy",
    "anchors_for",
    "colour_log_likelihood",
    "exposure_gain",
    "score_candidates",
    "srgb_to_lab",
]

#: Penalty for a candidate of another class than the description's class noun.
W_CLASS = 10.0
#: Penalty for answering the landmark itself to "north of / next to / in X" (never X).
W_SELF = 100.0
#: Weight of each landmark relation penalty (per tolerance unit past the tolerance).
W_REL = 2.0
#: Candidates within this margin of the best filter score form the plausible set of a selector.
PLAUSIBLE_MARGIN = 0.3
# Class nouns: the one vocabulary of urbex.language.target (longest alternatives first at one position).
_NOUN_RE = re.compile(  # class nouns that hide a colour word ("green field"), not bare "green"
    r"\b(" + "|".join(re.escape(w) for w, _ in CLASS_WORDS if w != "green") + r")\b"
)
_COLOUR_RE = re.compile(r"\b(" + "|".join([*PALETTE, *_COLOUR_ALIASES]) + r")\b")
_SIZE_RE = re.compile(r"\b(largest|biggest|big|large|smallest|small|little|tallest|highest|tall)\b")
_SIZE_OF = {"largest": "area", "biggest": "area", "big": "area", "large": "area",
            "smallest": "-area", "small": "-area", "little": "-area",
            "tallest": "height", "highest": "height", "tall": "height"}  # fmt: skip
_ORD_WORDS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6}
_ORDINAL_RE = re.compile(r"\b(first|second|third|fourth|fifth|sixth|(\d+)(?:st|nd|rd|th))\b")
_UNIT = {"north": (0.0, 1.0), "south": (0.0, -1.0), "east": (1.0, 0.0), "west": (-1.0, 0.0)}
_ANY_LOT_RE = re.compile(r"\bin (?:a|any) (?:parking lot|car park|parking area)\b")

# Relation phrases that end right before a landmark mention (normalised text: no "the").
_REL_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("named", re.compile(r"\b(?:called|known as|named)\s*$")),
    ("end", re.compile(r"\bfrom (north|south|east|west) end of\s*$")),
    ("corner", re.compile(r"\b(?:corner of|junction of|intersection of|where)\s*$")),
    ("pair", re.compile(r"^\s*(?:and|meets)\s*$")),
    ("compass", re.compile(
        r"\b(north|south)?\s*-?\s*(north|south|east|west)(?:ern)?\s+(?:side\s+)?of\s*$")),
    ("next", re.compile(r"\b(?:next to|beside|adjacent to|by|alongside)\s*$")),
    ("near", re.compile(r"\b(?:near|close to|opposite|across from|around)\s*$")),
    ("in", re.compile(r"\b(?:in|inside|within|parked in)\s*$")),
    ("on", re.compile(r"\b(?:on|along|facing|on road|at)\s*$")),
)  # fmt: skip

#: Tolerances (metres): compass/near gap, next-to gap, corner gap per class, road gap per class.
NEAR_M, NEXT_M = 35.0, 6.0
_CORNER_TOL = {"Car": 10.0}
_ROAD_TOL = {"Car": 5.0}  # half a carriageway (~5 m) from the centreline
_CORNER_DEFAULT, _ROAD_DEFAULT = 15.0, 15.0


# ---------------------------------------------------------------------------------------------
# records
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Candidates:
    """The candidate instances of one scene (the With-GT instance table), columnar.

    Attributes
    ----------
    object_id : ndarray, shape (K,), str
    class_name : ndarray, shape (K,), str
    box : ndarray, shape (K, 4), float64
        BEV boxes ``[x_min, y_min, x_max, y_max]``, world metres.
    height : ndarray, shape (K,), float64
        Vertical extent ``dz``, metres.
    rgb : ndarray, shape (K, 3), float64
        Mean colour 0–255 (NaN where the cloud has no colours).
    landmark_name : ndarray, shape (K,), str
        ``""`` where the instance is not a named landmark.
    """

    object_id: NDArray[np.str_]
    class_name: NDArray[np.str_]
    box: NDArray[np.float64]
    height: NDArray[np.float64]
    rgb: NDArray[np.float64]
    landmark_name: NDArray[np.str_]

    def __post_init__(self) -> None:
        k = len(self.object_id)
        for name, arr, shape in (
            ("class_name", self.class_name, (k,)),
            ("box", self.box, (k, 4)),
            ("height", self.height, (k,)),
            ("rgb", self.rgb, (k, 3)),
            ("landmark_name", self.landmark_name, (k,)),
        ):
            if np.shape(arr) != shape:
                raise ValueError(f"Candidates.{name}: expected shape {shape}, got {np.shape(arr)}")
        if k and not np.all(np.isfinite(self.box)):
            raise ValueError("Candidates.box: expected finite world-metre boxes, got NaN/inf")

    def __len__(self) -> int:
        return len(self.object_id)

    @classmethod
    def build(
        cls,
        *,
        class_name: Sequence[str],
        box: ArrayLike,
        rgb: ArrayLike | None = None,
        height: ArrayLike | None = None,
        landmark_name: Sequence[str] | None = None,
        object_id: Sequence[str] | None = None,
    ) -> Candidates:
        """Candidates from plain sequences (missing colours → NaN, heights → 1 m, names → "")."""
        b = np.asarray(box, dtype=np.float64).reshape(-1, 4)
        k = len(b)
        return cls(
            object_id=np.asarray(
                object_id if object_id is not None else [str(i) for i in range(k)], dtype=str
            ),
            class_name=np.asarray(list(class_name), dtype=str).reshape(-1),
            box=b,
            height=np.ones(k) if height is None else np.asarray(height, dtype=np.float64),
            rgb=np.full((k, 3), np.nan) if rgb is None else np.asarray(rgb, dtype=np.float64),
            landmark_name=np.asarray(
                landmark_name if landmark_name is not None else [""] * k, dtype=str
            ),
        )

    @classmethod
    def from_table(cls, table: pl.DataFrame, *, scene_id: str = "") -> Candidates:
        """Candidates from a scene cache's instance table (:mod:`urbex.scene.instances`).

        Raises
        ------
        CacheError
            A required column is missing (names it).
        """
        need = ("object_id", "class_name", "x_min", "y_min", "x_max", "y_max", "z_min", "z_max")
        missing = [c for c in need if c not in table.columns]
        if missing:
            raise CacheError(
                f"instance table of scene {scene_id!r}: expected columns {list(need)}, "
                f"missing {missing}; rebuild the scene cache with `urbex cache`",
                field=missing[0],
            )
        k = table.height
        rgb = np.full((k, 3), np.nan)
        if all(c in table.columns for c in ("mean_r", "mean_g", "mean_b")):
            rgb = table.select("mean_r", "mean_g", "mean_b").to_numpy().astype(np.float64)
        lm = (
            table["landmark_name"].fill_null("").to_list()
            if "landmark_name" in table.columns
            else [""] * k
        )
        z = table.select("z_min", "z_max").to_numpy().astype(np.float64).reshape(k, 2)
        return cls(
            object_id=np.asarray(table["object_id"].cast(str).to_list(), dtype=str).reshape(k),
            class_name=np.asarray(table["class_name"].fill_null("").to_list(), dtype=str).reshape(k),
            box=table.select("x_min", "y_min", "x_max", "y_max").to_numpy().astype(np.float64).reshape(k, 4),
            height=z[:, 1] - z[:, 0],
            rgb=rgb,
            landmark_name=np.asarray(lm, dtype=str).reshape(k),
        )  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class Anchor:
    """A landmark the description mentions.

    Attributes
    ----------
    name : str
        As in the landmark table (located in the description after :func:`normalize_name`).
    box : ndarray, shape (4,), float64
        Footprint bounds, world metres; a road's centreline gives a box that is flat across the
        road; a point landmark a zero-size box.
    kind : str
        Landmark kind (``road``, ``building``, ...); ``road`` marks a line.
    """

    name: str
    box: NDArray[np.float64]
    kind: str = ""

    def __post_init__(self) -> None:
        b = np.asarray(self.box, dtype=np.float64).reshape(-1)
        if b.shape != (4,) or not np.all(np.isfinite(b)) or b[2] < b[0] or b[3] < b[1]:
            raise ValueError(
                f"Anchor {self.name!r}: expected box [x_min, y_min, x_max, y_max] (finite, "
                f"ordered), got {self.box!r}"
            )
        object.__setattr__(self, "box", b)

    @property
    def is_line(self) -> bool:
        """A road, or a footprint under 1 m across and over 5 m long."""
        ext = self.box[2:] - self.box[:2]
        return self.kind == "road" or (float(ext.min()) < 1.0 and float(ext.max()) > 5.0)


# ---------------------------------------------------------------------------------------------
# geometry helpers (world metres)
# ---------------------------------------------------------------------------------------------


def _gap(boxes: NDArray[np.float64], other: ArrayLike) -> NDArray[np.float64]:
    """BEV gap (m, 0 when touching/overlapping) from each box (K, 4) to one box (4,):
    :func:`urbex.geometry.gap_2d` as an array."""
    return np.asarray(gap_2d(boxes, other), dtype=np.float64)


def _over(x: NDArray[np.float64], tol: float | NDArray[np.float64]) -> NDArray[np.float64]:
    """Penalty in tolerance units past the tolerance (0 inside)."""
    return np.maximum(0.0, x - tol) / tol


def _per_class(
    table: dict[str, float], default: float, cls: NDArray[np.str_]
) -> NDArray[np.float64]:
    return np.array([table.get(str(c), default) for c in cls], dtype=np.float64)


def _crossing(a: Anchor, b: Anchor) -> NDArray[np.float64]:
    """The point where two anchors meet: centre of their bounds' overlap (or of the gap)."""
    o = overlap_bounds_2d(a.box, b.box)
    p = (o[:2] + o[2:]) / 2
    return np.concatenate([p, p])


# ---------------------------------------------------------------------------------------------
# parsing
# ---------------------------------------------------------------------------------------------


def _locate(words: list[str], name: str) -> tuple[int, int] | None:
    """Token span of ``name`` (normalised) in ``words``; None when not there verbatim."""
    toks = normalize_name(name).split()
    n = len(toks)
    if n == 0:
        return None
    for a in range(len(words) - n + 1):
        if words[a : a + n] == toks:
            return a, a + n
    return None


def _relation(context: str) -> tuple[str, re.Match[str] | None]:
    for rel, pat in _REL_PATTERNS:
        m = pat.search(context)
        if m:
            return rel, m
    return "near", None


# ---------------------------------------------------------------------------------------------
# scoring
# ---------------------------------------------------------------------------------------------


def score_candidates(
    description: str, candidates: Candidates, landmarks: Sequence[Anchor] = ()
) -> NDArray[np.float64]:
    """Score every candidate against the description (higher is better; see the module docstring).

    Parameters
    ----------
    description : str
        The referring expression.
    candidates : Candidates
        The scene's instances (K rows), world metres.
    landmarks : sequence of Anchor
        The landmarks the description mentions (e.g. from
        :meth:`urbex.landmarks.LandmarkIndex.mentions`), in any order; each is located in the
        description to read the relation phrase in front of it (one that cannot be located
        counts as "near").

    Returns
    -------
    ndarray, shape (K,), float64
        Scores; ``argmax`` is the answer (ties → the first candidate).

    Examples
    --------
    A red and a blue car, and a red building; a landmark hall at the origin:

    >>> c = Candidates.build(class_name=["Car", "Car", "Building"],
    ...     box=[[0, 20, 4, 22], [0, -22, 4, -20], [30, 0, 50, 20]],
    ...     rgb=[[200, 30, 30], [30, 60, 200], [200, 30, 30]])
    >>> hall = Anchor(name="Merton Hall", box=np.array([-5.0, -5.0, 5.0, 5.0]), kind="building")
    >>> int(np.argmax(score_candidates("the red car", c)))
    0
    >>> int(np.argmax(score_candidates("the car south of Merton Hall", c, [hall])))
    1
    >>> int(np.argmax(score_candidates("the red house", c)))
    2
    """
    k = len(candidates)
    score = np.zeros(k, dtype=np.float64)
    if k == 0:
        return score
    words = normalize_name(description).split()
    spans: list[tuple[int, int, Anchor]] = []
    floating: list[Anchor] = []
    for a in landmarks:
        s = _locate(words, a.name)
        (floating.append(a) if s is None else spans.append((s[0], s[1], a)))
    spans.sort(key=lambda t: t[0])
    masked = list(words)
    for s0, s1, _ in spans:
        masked[s0:s1] = ["_"] * (s1 - s0)
    text = " ".join(masked)

    # class
    cls = class_of_text(text)
    if cls is not None:
        score -= W_CLASS * (candidates.class_name != cls)
    # colours (class nouns removed first: "green field" is a class, not a colour), after the
    # scene's exposure correction (see :func:`exposure_gain`)
    colour_words = [m.group(1) for m in _COLOUR_RE.finditer(_NOUN_RE.sub(" ", text))]
    if colour_words:
        rgb = candidates.rgb * exposure_gain(candidates.rgb)
        for w in colour_words:
            score += colour_log_likelihood(w, rgb)

    box, cls_arr = candidates.box, candidates.class_name
    centre = (box[:, :2] + box[:, 2:]) / 2
    norm_lm = np.array([normalize_name(n) for n in candidates.landmark_name], dtype=str)
    ordinal_road: tuple[Anchor, str] | None = None
    prev_end = 0
    pending_corner: Anchor | None = None
    for s0, s1, a in spans:
        ctx = " ".join(words[prev_end:s0])
        prev_end = s1
        rel, m = _relation(ctx)
        if rel == "pair" and pending_corner is not None:
            p = _crossing(pending_corner, a)
            tol = _per_class(_CORNER_TOL, _CORNER_DEFAULT, cls_arr)
            score -= W_REL * _over(_gap(box, p), tol)
            pending_corner = None
            continue
        if rel == "pair":
            rel = "near"
        pending_corner = None
        is_self = (norm_lm == normalize_name(a.name)) & (norm_lm != "")
        gap = _gap(box, a.box)
        if rel == "named":
            score -= W_CLASS * ~is_self
        elif rel == "corner":
            pending_corner = a  # scored with its partner ("... and B", "... meets B")
        elif rel == "end":
            assert m is not None
            ordinal_road = (a, m.group(1))
            score -= W_REL * _over(gap, _per_class(_ROAD_TOL, _ROAD_DEFAULT, cls_arr))
        elif a.is_line and rel in ("on", "next", "near", "in"):
            score -= W_REL * _over(gap, _per_class(_ROAD_TOL, _ROAD_DEFAULT, cls_arr))
        elif rel == "compass":
            assert m is not None
            u = np.array(_UNIT[m.group(2)])
            if m.group(1) and m.group(2) in ("east", "west"):
                u = u + np.array(_UNIT[m.group(1)])
            u = u / np.linalg.norm(u)
            if a.is_line:  # the side of a road: displacement from its nearest point
                d = centre - np.clip(centre, a.box[:2], a.box[2:])
            else:
                d = centre - (a.box[:2] + a.box[2:]) / 2
            ang = np.degrees(np.arccos(np.clip(d @ u / np.maximum(np.hypot(*d.T), 1e-9), -1, 1)))
            score -= W_REL * (_over(ang, 45.0) + _over(gap, NEAR_M) + 0.1 * gap / NEAR_M)
            score -= W_SELF * is_self
        elif rel == "next":
            score -= W_REL * (_over(gap, NEXT_M) + 0.1 * gap / NEXT_M) + W_SELF * is_self
        elif rel == "in":
            inside = np.all((centre > a.box[:2]) & (centre < a.box[2:]), axis=1)
            out_d = _gap(np.concatenate([centre, centre], axis=1), a.box)  # centre to box
            score -= W_REL * (~inside) * (1.0 + out_d / 5.0) + W_SELF * is_self
        else:  # near / opposite / on a non-road / unknown phrase
            score -= W_REL * (_over(gap, NEAR_M) + 0.1 * gap / NEAR_M) + W_SELF * is_self
    if pending_corner is not None:  # "at the corner of A" without a partner: near A
        score -= W_REL * _over(_gap(box, pending_corner.box), NEAR_M)
    for a in floating:
        score -= W_REL * _over(_gap(box, a.box), NEAR_M)
    if _ANY_LOT_RE.search(text):  # "in a parking lot": inside any Parking candidate
        lots = box[cls_arr == "Parking"]
        if len(lots):
            inside = (
                (centre[:, None, 0] > lots[None, :, 0]) & (centre[:, None, 0] < lots[None, :, 2])
                & (centre[:, None, 1] > lots[None, :, 1]) & (centre[:, None, 1] < lots[None, :, 3])
            ).any(1) & (cls_arr != "Parking")  # fmt: skip
            score -= W_REL * ~inside

    # selectors, within the plausible set
    plausible = score >= score.max() - PLAUSIBLE_MARGIN
    rows = np.flatnonzero(plausible)
    top = score.max()
    om = _ORDINAL_RE.search(text)
    if ordinal_road is not None and om is not None:
        rank = _ORD_WORDS.get(om.group(1)) or int(om.group(2))
        a, end = ordinal_road
        along = centre[rows, 0 if end in ("east", "west") else 1]
        if end in ("east", "north"):
            along = -along
        pos = np.empty(rows.size, dtype=np.float64)
        pos[np.argsort(along, kind="stable")] = np.arange(1, rows.size + 1)
        score[rows] = top + 1.0 / (1.0 + np.abs(pos - rank))
        return score
    sm = _SIZE_RE.search(text)
    if sm is not None and rows.size > 1:
        measure = _SIZE_OF[sm.group(1)]
        area = np.prod(box[:, 2:] - box[:, :2], axis=1)
        v = candidates.height if measure == "height" else area
        v = -v[rows] if measure == "-area" else v[rows]
        order = np.argsort(-v, kind="stable")
        z = np.empty(rows.size, dtype=np.float64)
        z[order] = 1.0 - np.arange(rows.size) / rows.size
        score[rows] = top + z
    return score


# ---------------------------------------------------------------------------------------------
# the policy
# ---------------------------------------------------------------------------------------------


def _anchor_box(row: dict[str, Any], x: float, y: float) -> NDArray[np.float64]:
    """Footprint bounds (world m) of a landmark row; the point ``(x, y)`` without a footprint."""
    b = footprint_bounds(row)
    return b if b is not None else np.array([x, y, x, y], dtype=np.float64)


def anchors_for(description: str, scene_id: str, index: Any) -> list[Anchor]:
    """The :class:`Anchor` of each landmark ``index`` finds mentioned in ``description``."""
    if index is None:
        return []
    out = []
    for name in index.mentions(description, scene_id):
        res = index.lookup(name, scene_id=scene_id, limit=1)
        best = res.best or (res.candidates[0] if res.candidates else None)
        if best is None:
            continue
        box = _anchor_box(best.row, best.x, best.y)
        out.append(Anchor(name=best.name, box=box, kind=str(best.row.get("kind") or "")))
    return out


class RankingPolicy(PolicyBase):
    """The With-GT candidate-ranking baseline, bound to an environment (answers on turn 1).

    It reads ``env.query.description`` and ``env.query.scene_id``, the landmark index
    (``env.landmarks``), the global view's transform, and the scene's GT instance table through
    ``instances`` — **never** the query's ``object_id`` or ``target_box_*``.

    Parameters
    ----------
    env
        The environment it plays in.
    instances
        ``scene_id → instance table`` (polars; :mod:`urbex.scene.instances` columns) — the
        With-GT candidate set (the registry passes the env's scene caches).
    candidate_classes
        Rank only these classes (``params.eval.candidate_classes``); None = all.
    """

    def __init__(
        self,
        env: GroundingEnv,
        *,
        instances: Callable[[str], pl.DataFrame],
        candidate_classes: Sequence[str] | None = None,
    ) -> None:
        self.env = env
        self.instances = instances
        self.candidate_classes = None if candidate_classes is None else tuple(candidate_classes)
        self._cands: dict[str, Candidates] = {}

    def candidates(self, scene_id: str) -> Candidates:
        """The scene's candidates (cached per scene).

        Raises
        ------
        PolicyError
            The scene has no candidate instances.
        """
        if scene_id not in self._cands:
            import polars as pl

            t = self.instances(scene_id)
            if self.candidate_classes is not None and "class_name" in t.columns:
                t = t.filter(pl.col("class_name").is_in(list(self.candidate_classes)))
            c = Candidates.from_table(t, scene_id=scene_id)
            if len(c) == 0:
                raise PolicyError(
                    f"ranking: scene {scene_id!r} has no candidate instances"
                    + (
                        f" of classes {list(self.candidate_classes)}"
                        if self.candidate_classes
                        else ""
                    )
                    + "; the With-GT ranking baseline needs the scene's instance table"
                )
            self._cands[scene_id] = c
        return self._cands[scene_id]

    def scores(self, description: str, scene_id: str) -> NDArray[np.float64]:
        """:func:`score_candidates` over the scene's candidates, shape (K,)."""
        anchors = anchors_for(description, scene_id, self.env.landmarks)
        return score_candidates(description, self.candidates(scene_id), anchors)

    def predict(self, description: str, scene_id: str) -> NDArray[np.float64]:
        """The top candidate's BEV box (world metres), shape (4,)."""
        s = self.scores(description, scene_id)
        return self.candidates(scene_id).box[int(np.argmax(s))].copy()

    def act(self, messages: list[dict[str, Any]], images: list[Image.Image]) -> str:
        """Answer the top candidate in the global view (``messages``/``images`` unused)."""

        q = self.env.query
        box = self.predict(q.description, q.scene_id)
        units = _to_units(self.env.views["global"], box)
        return f"<answer>{json.dumps({'view_id': 'global', 'bbox_2d': units})}</answer>"
