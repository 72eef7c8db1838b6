"""Referring expressions that are unique by construction.

An :class:`Expression` is a target class, a tuple of *filter* predicates, at most one
*selector* (a superlative or an ordinal) and ``also`` facts said of the one selected.
:func:`satisfying` evaluates it over **all** same-class instances of a block: filters in order,
then the selector over what is left, then the ``also`` facts. The first generator's predicates
live here (colour, road, corner, compass and "next to", across the road, car park, name); those
people use that it lacked are in :mod:`urbex.synth.predicates`.
:func:`urbex.synth.candidates.candidate_expressions` lists what can be said about one instance;
:mod:`urbex.synth.queries` keeps only those that select exactly the target, so every kept
description is unambiguous (:func:`satisfying` lets a test re-check that independently), and
:mod:`urbex.synth.phrasing` words them.

Frames
------
All geometry is the block's local world frame (metres, x east, y north). "North of X" means:
the object's BEV box is within :data:`NEAR_M` metres of X's box and the direction from X's
centre to the object's centre is within ±45° of north.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from urbex.synth.block import CITYREFER_LABELS, Block
from urbex.synth.facts import Predicate, SceneFacts
from urbex.synth.predicates import (
    NEAR_M,
    NEXT_TO_M,
    ROAD_GAP,
    AtRoadEnd,
    Between,
    Context,
    Counted,
    FacingSide,
    HasShape,
    HasWalls,
    MapRegion,
    MapRelation,
    OffRoad,
    per_class,
)

__all__ = [
    "ACROSS_M",
    "COMPASS_DEG",
    "NEAR_M",
    "NEXT_TO_M",
    "AcrossRoad",
    "AtCorner",
    "Expression",
    "Extreme",
    "Filter",
    "HasColour",
    "InParking",
    "IsLandmark",
    "NearLandmark",
    "OnRoad",
    "Ordinal",
    "Predicate",
    "SceneFacts",
    "Selector",
    "filter_names",
    "satisfying",
]

#: Max offset (m) along a road between an object and what it is "across the road from".
ACROSS_M = 25.0
_CORNER_GAP = {"Car": 10.0, "Building": 15.0, "Parking": 15.0, "Ground": 15.0}
#: Compass relation → direction (degrees counter-clockwise from east).
COMPASS_DEG = {"east": 0.0, "north": 90.0, "west": 180.0, "south": 270.0}


@dataclass(frozen=True, slots=True)
class HasColour:
    """The basic colour (car body, building roof) is ``colour``.

    ``shade`` (a word of :data:`urbex.synth.palette.SHADES`, e.g. ``"turquoise"``) also
    requires that shade; ``among`` (a hedge, "dark grey or black") accepts any of those basic
    colours instead of ``colour`` alone, so the description is unique even if the reader takes
    the other colour of the hedge.
    """

    colour: str
    shade: str = ""
    among: tuple[str, ...] = ()

    def mask(self, facts: SceneFacts, cand: NDArray[np.bool_]) -> NDArray[np.bool_]:
        out = cand & np.isin(facts.colour, self.among or (self.colour,))
        return out & (facts.shade == self.shade) if self.shade else out


@dataclass(frozen=True, slots=True)
class OnRoad:
    """On (cars: touching the carriageway) or fronting (others: within 10 m of it) ``road``."""

    road: str

    def mask(self, facts: SceneFacts, cand: NDArray[np.bool_]) -> NDArray[np.bool_]:
        return cand & facts.memo(self, lambda: self._where(facts))

    def _where(self, facts: SceneFacts) -> NDArray[np.bool_]:
        gap = facts.gap_to_box(facts.roads[self.road].strip())
        return gap <= per_class(ROAD_GAP, facts)


@dataclass(frozen=True, slots=True)
class AtCorner:
    """Near the junction of two perpendicular roads (``road_a`` runs east–west)."""

    road_a: str
    road_b: str

    def point(self, facts: SceneFacts) -> NDArray[np.float64]:
        a, b = facts.roads[self.road_a], facts.roads[self.road_b]
        if a.axis == b.axis:
            raise ValueError(f"AtCorner: {a.name!r} and {b.name!r} are parallel")
        return np.array([b.coord, a.coord]) if a.axis == "x" else np.array([a.coord, b.coord])

    def mask(self, facts: SceneFacts, cand: NDArray[np.bool_]) -> NDArray[np.bool_]:
        return cand & facts.memo(self, lambda: self._where(facts))

    def _where(self, facts: SceneFacts) -> NDArray[np.bool_]:
        p = self.point(facts)
        gap = facts.gap_to_box(np.array([p[0], p[1], p[0], p[1]]))
        return gap <= per_class(_CORNER_GAP, facts)


@dataclass(frozen=True, slots=True)
class NearLandmark:
    """Compass relation (``north``/``south``/``east``/``west``) or ``next to`` a named instance."""

    landmark: str
    relation: Literal["north", "south", "east", "west", "next to"]

    def mask(self, facts: SceneFacts, cand: NDArray[np.bool_]) -> NDArray[np.bool_]:
        return cand & facts.memo(self, lambda: self._where(facts))

    def _where(self, facts: SceneFacts) -> NDArray[np.bool_]:
        row = facts.landmark_row(self.landmark)
        gap = facts.gap_to_box(facts.box[row])
        not_self = np.arange(len(facts.ids)) != row
        if self.relation == "next to":
            return not_self & (gap <= NEXT_TO_M)
        d = facts.center - facts.center[row]
        ang = np.degrees(np.arctan2(d[:, 1], d[:, 0]))
        diff = np.abs((ang - COMPASS_DEG[self.relation] + 180.0) % 360.0 - 180.0)
        return not_self & (gap <= NEAR_M) & (diff < 45.0)


@dataclass(frozen=True, slots=True)
class AcrossRoad:
    """Across ``road`` from the named instance ``landmark``.

    Both front the road (each within its class's road gap of the carriageway, as
    :class:`OnRoad`), their centres lie on opposite sides of the centreline, and at most
    :data:`ACROSS_M` apart along it ("the car park across Mill Lane from Merton Hall").
    """

    road: str
    landmark: str

    def mask(self, facts: SceneFacts, cand: NDArray[np.bool_]) -> NDArray[np.bool_]:
        return cand & facts.memo(self, lambda: self._where(facts))

    def _where(self, facts: SceneFacts) -> NDArray[np.bool_]:
        r = facts.roads[self.road]
        row = facts.landmark_row(self.landmark)
        fronts = facts.gap_to_box(r.strip()) <= per_class(ROAD_GAP, facts)
        across, along = (1, 0) if r.axis == "x" else (0, 1)
        side = np.sign(facts.center[:, across] - r.coord)
        near = np.abs(facts.center[:, along] - facts.center[row, along]) <= ACROSS_M
        not_self = np.arange(len(facts.ids)) != row
        return not_self & fronts & bool(fronts[row]) & (side * side[row] < 0) & near


@dataclass(frozen=True, slots=True)
class InParking:
    """Centre inside a parking lot (any lot when ``lot`` is ``""``, else the named one)."""

    lot: str = ""

    def mask(self, facts: SceneFacts, cand: NDArray[np.bool_]) -> NDArray[np.bool_]:
        return cand & facts.memo(self, lambda: self._where(facts))

    def _where(self, facts: SceneFacts) -> NDArray[np.bool_]:
        rows = facts.parking_rows if not self.lot else np.array([facts.landmark_row(self.lot)])
        inside = np.zeros(len(facts.ids), bool)
        for r in rows:
            b = facts.box[r]
            c = facts.center
            inside |= (c[:, 0] > b[0]) & (c[:, 0] < b[2]) & (c[:, 1] > b[1]) & (c[:, 1] < b[3])
        return inside & (facts.cls != "Parking")


@dataclass(frozen=True, slots=True)
class IsLandmark:
    """The instance carries the landmark name ``name``."""

    name: str

    def mask(self, facts: SceneFacts, cand: NDArray[np.bool_]) -> NDArray[np.bool_]:
        return cand & (facts.landmark == self.name)


@dataclass(frozen=True, slots=True)
class Extreme:
    """Selector: the ``largest``/``smallest`` (BEV area) or ``tallest`` remaining candidate.

    Selects nothing unless at least two candidates remain and the winner beats the runner-up
    by :attr:`margin` (ratio), so "the largest" is visibly the largest.
    """

    measure: Literal["largest", "smallest", "tallest"]
    margin: float = 1.25

    def select(self, facts: SceneFacts, cand: NDArray[np.bool_]) -> NDArray[np.bool_]:
        rows = np.flatnonzero(cand)
        out = np.zeros_like(cand)
        if rows.size < 2:
            return out
        v = facts.height[rows] if self.measure == "tallest" else facts.area[rows]
        if self.measure == "smallest":
            v = 1.0 / np.maximum(v, 1e-9)
        order = np.argsort(-v, kind="stable")
        if v[order[0]] >= self.margin * v[order[1]]:
            out[rows[order[0]]] = True
        return out


@dataclass(frozen=True, slots=True)
class Ordinal:
    """Selector: the ``rank``-th (1-based) candidate on ``road`` counted from its ``end``.

    Candidates are first restricted to :class:`OnRoad` ``(road)``. Selects nothing when the
    neighbours of the chosen one are within 1 m of it along the road (order ambiguous).
    """

    rank: int
    road: str
    end: Literal["east", "west", "north", "south"]

    def select(self, facts: SceneFacts, cand: NDArray[np.bool_]) -> NDArray[np.bool_]:
        r = facts.roads[self.road]
        if (r.axis == "x") != (self.end in ("east", "west")):
            raise ValueError(
                f"Ordinal: road {r.name!r} runs along {r.axis}; it has no {self.end} end"
            )
        rows = np.flatnonzero(OnRoad(self.road).mask(facts, cand))
        out = np.zeros_like(cand)
        if not 1 <= self.rank <= rows.size:
            return out
        along = facts.center[rows, 0 if r.axis == "x" else 1]
        if self.end in ("east", "north"):
            along = -along
        order = np.argsort(along, kind="stable")
        s = along[order]
        k = self.rank - 1
        if (k > 0 and s[k] - s[k - 1] < 1.0) or (k + 1 < s.size and s[k + 1] - s[k] < 1.0):
            return out
        out[rows[order[k]]] = True
        return out


Filter = (
    HasColour
    | OnRoad
    | AtCorner
    | NearLandmark
    | AcrossRoad
    | InParking
    | IsLandmark
    | HasWalls
    | HasShape
    | MapRegion
    | MapRelation
    | FacingSide
    | Between
    | OffRoad
    | AtRoadEnd
    | Context
    | Counted
)
Selector = Extreme | Ordinal


@dataclass(frozen=True, slots=True, kw_only=True)
class Expression:
    """A referring expression: class + filters (applied in order) + optional selector, then
    ``also``: facts stated of the one selected ("the second car from the east end of Mill
    Lane. *It is dark blue.*"), checked after the selector, so they never change which
    candidate the selector picks.

    Only :class:`~urbex.synth.predicates.Counted` depends on its place in ``filters``.
    """

    object_name: str
    filters: tuple[Filter, ...] = ()
    selector: Selector | None = None
    also: tuple[Filter, ...] = ()

    def __post_init__(self) -> None:
        if self.object_name not in CITYREFER_LABELS:
            raise ValueError(
                f"Expression.object_name: expected one of {sorted(CITYREFER_LABELS)}, got {self.object_name!r}"
            )
        for f in (*self.filters, *self.also):
            if not isinstance(f, Filter):
                raise TypeError(f"Expression.filters: {f!r} is not a filter predicate")
        if any(isinstance(f, Counted) for f in self.also):
            raise TypeError("Expression.also: a count belongs in the filters")
        if self.selector is not None and not isinstance(self.selector, Selector):
            raise TypeError(f"Expression.selector: {self.selector!r} is not a selector")


def filter_names(f: Filter) -> tuple[str, ...]:
    """The place names (roads, landmarks, car parks) a filter mentions, in phrase order.

    >>> filter_names(AcrossRoad("Mill Lane", "Merton Hall")), filter_names(HasColour("red"))
    (('Mill Lane', 'Merton Hall'), ())
    """
    if isinstance(f, OnRoad | OffRoad | AtRoadEnd):
        return (f.road,)
    if isinstance(f, MapRelation | FacingSide):
        return (f.landmark,)
    if isinstance(f, Between):
        return (f.a, f.b)
    if isinstance(f, AtCorner):
        return (f.road_a, f.road_b)
    if isinstance(f, NearLandmark):
        return (f.landmark,)
    if isinstance(f, AcrossRoad):
        return (f.road, f.landmark)
    if isinstance(f, InParking):
        return (f.lot,) if f.lot else ()
    if isinstance(f, IsLandmark):
        return (f.name,)
    return ()


def satisfying(expression: Expression, scene: Block | SceneFacts) -> NDArray[np.int32]:
    """Instance ids of every same-class instance the expression selects.

    Parameters
    ----------
    expression
        The expression: its filters in order, its selector, then its ``also`` facts.
    scene
        A block, or its precomputed :class:`SceneFacts`.

    Returns
    -------
    ndarray, shape (K,), int32
        Sorted instance ids; an expression is unambiguous iff K == 1.
    """
    facts = scene if isinstance(scene, SceneFacts) else SceneFacts.from_block(scene)
    cand = facts.cls == expression.object_name
    for f in expression.filters:
        cand = f.mask(facts, cand)
    if expression.selector is not None:
        cand = expression.selector.select(facts, cand)
    for f in expression.also:
        cand = f.mask(facts, cand)
    return np.sort(facts.ids[cand]).astype(np.int32)
