"""Referring expressions that are unique by construction.

An :class:`Expression` is a target class, a tuple of *filter* predicates and at most one
*selector* (a superlative or an ordinal). :func:`satisfying` evaluates it over **all**
same-class instances of a block: filters in order, then the selector over what is left.
:func:`candidate_expressions` lists what can be said about one instance, from simple to rich;
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
from typing import Literal, Protocol

import numpy as np
from numpy.typing import NDArray

from urbex.geometry import gap_2d
from urbex.synth.block import CITYREFER_LABELS, Block

__all__ = [
    "ACROSS_M",
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
    "candidate_expressions",
    "filter_names",
    "satisfying",
]

#: Max BEV gap (m) between an object and a landmark for a compass relation ("north of").
NEAR_M = 35.0
#: Max BEV gap (m) for "next to".
NEXT_TO_M = 6.0
#: Max offset (m) along a road between an object and what it is "across the road from".
ACROSS_M = 25.0
_ROAD_GAP = {"Car": 0.3, "Building": 10.0, "Parking": 10.0, "Ground": 10.0}
_CORNER_GAP = {"Car": 10.0, "Building": 15.0, "Parking": 15.0, "Ground": 15.0}
_DIRECTIONS = {"east": 0.0, "north": 90.0, "west": 180.0, "south": 270.0}
_ORDINALS = ("first", "second", "third", "fourth")


@dataclass(frozen=True, slots=True)
class SceneFacts:
    """Columnar facts about a block's instances, the inputs of every predicate.

    Built once per block with :meth:`from_block`. Arrays have one row per instance (M rows);
    boxes are BEV ``[x_min, y_min, x_max, y_max]`` in local world metres.
    """

    ids: NDArray[np.int32]
    cls: NDArray[np.str_]
    box: NDArray[np.float64]  # (M, 4)
    center: NDArray[np.float64]  # (M, 2)
    area: NDArray[np.float64]
    height: NDArray[np.float64]
    colour: NDArray[np.str_]
    landmark: NDArray[np.str_]
    roads: dict
    parking_rows: NDArray[np.int64]

    @classmethod
    def from_block(cls, block: Block) -> SceneFacts:
        o = block.objects
        box = o.box[:, [0, 1, 3, 4]]
        names = np.array(o.object_name, dtype=str) if len(o) else np.zeros(0, str)
        return cls(
            ids=o.instance_id,
            cls=names,
            box=box,
            center=(box[:, :2] + box[:, 2:]) / 2,
            area=(box[:, 2] - box[:, 0]) * (box[:, 3] - box[:, 1]),
            height=o.box[:, 5] - o.box[:, 2],
            colour=np.array(o.colour, dtype=str) if len(o) else np.zeros(0, str),
            landmark=np.array(o.landmark, dtype=str) if len(o) else np.zeros(0, str),
            roads={r.name: r for r in block.roads},
            parking_rows=np.flatnonzero(names == "Parking"),
        )

    def gap_to_box(self, other: NDArray) -> NDArray[np.float64]:
        """BEV gap (m, 0 when touching/overlapping) from every instance box to one box (4,)
        (:func:`urbex.geometry.gap_2d`)."""
        return np.asarray(gap_2d(self.box, other), dtype=np.float64)

    def landmark_row(self, name: str) -> int:
        """Row of the instance landmark called ``name`` (``KeyError`` if none)."""
        hit = np.flatnonzero(self.landmark == name)
        if not hit.size:
            raise KeyError(f"no instance landmark named {name!r}")
        return int(hit[0])


class Predicate(Protocol):
    """A filter: keeps the candidates (boolean mask over rows) that satisfy it."""

    def mask(self, facts: SceneFacts, cand: NDArray[np.bool_]) -> NDArray[np.bool_]: ...


def _per_class(table: dict[str, float], facts: SceneFacts) -> NDArray[np.float64]:
    return np.array([table.get(c, 10.0) for c in facts.cls], np.float64)


@dataclass(frozen=True, slots=True)
class HasColour:
    """Colour word equals ``colour`` (car body, building roof)."""

    colour: str

    def mask(self, facts: SceneFacts, cand: NDArray[np.bool_]) -> NDArray[np.bool_]:
        return cand & (facts.colour == self.colour)


@dataclass(frozen=True, slots=True)
class OnRoad:
    """On (cars: touching the carriageway) or fronting (others: within 10 m of it) ``road``."""

    road: str

    def mask(self, facts: SceneFacts, cand: NDArray[np.bool_]) -> NDArray[np.bool_]:
        gap = facts.gap_to_box(facts.roads[self.road].strip())
        return cand & (gap <= _per_class(_ROAD_GAP, facts))


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
        p = self.point(facts)
        gap = facts.gap_to_box(np.array([p[0], p[1], p[0], p[1]]))
        return cand & (gap <= _per_class(_CORNER_GAP, facts))


@dataclass(frozen=True, slots=True)
class NearLandmark:
    """Compass relation (``north``/``south``/``east``/``west``) or ``next to`` a named instance."""

    landmark: str
    relation: Literal["north", "south", "east", "west", "next to"]

    def mask(self, facts: SceneFacts, cand: NDArray[np.bool_]) -> NDArray[np.bool_]:
        row = facts.landmark_row(self.landmark)
        gap = facts.gap_to_box(facts.box[row])
        not_self = np.arange(len(facts.ids)) != row
        if self.relation == "next to":
            return cand & not_self & (gap <= NEXT_TO_M)
        d = facts.center - facts.center[row]
        ang = np.degrees(np.arctan2(d[:, 1], d[:, 0]))
        diff = np.abs((ang - _DIRECTIONS[self.relation] + 180.0) % 360.0 - 180.0)
        return cand & not_self & (gap <= NEAR_M) & (diff < 45.0)


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
        r = facts.roads[self.road]
        row = facts.landmark_row(self.landmark)
        fronts = facts.gap_to_box(r.strip()) <= _per_class(_ROAD_GAP, facts)
        across, along = (1, 0) if r.axis == "x" else (0, 1)
        side = np.sign(facts.center[:, across] - r.coord)
        near = np.abs(facts.center[:, along] - facts.center[row, along]) <= ACROSS_M
        not_self = np.arange(len(facts.ids)) != row
        return cand & not_self & fronts & bool(fronts[row]) & (side * side[row] < 0) & near


@dataclass(frozen=True, slots=True)
class InParking:
    """Centre inside a parking lot (any lot when ``lot`` is ``""``, else the named one)."""

    lot: str = ""

    def mask(self, facts: SceneFacts, cand: NDArray[np.bool_]) -> NDArray[np.bool_]:
        rows = facts.parking_rows if not self.lot else np.array([facts.landmark_row(self.lot)])
        inside = np.zeros(len(facts.ids), bool)
        for r in rows:
            b = facts.box[r]
            c = facts.center
            inside |= (c[:, 0] > b[0]) & (c[:, 0] < b[2]) & (c[:, 1] > b[1]) & (c[:, 1] < b[3])
        return cand & inside & (facts.cls != "Parking")


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


Filter = HasColour | OnRoad | AtCorner | NearLandmark | AcrossRoad | InParking | IsLandmark
Selector = Extreme | Ordinal


@dataclass(frozen=True, slots=True, kw_only=True)
class Expression:
    """A referring expression: class + filters (applied in order) + optional selector."""

    object_name: str
    filters: tuple[Filter, ...] = ()
    selector: Selector | None = None

    def __post_init__(self) -> None:
        if self.object_name not in CITYREFER_LABELS:
            raise ValueError(
                f"Expression.object_name: expected one of {sorted(CITYREFER_LABELS)}, got {self.object_name!r}"
            )
        for f in self.filters:
            if not isinstance(f, Filter):
                raise TypeError(f"Expression.filters: {f!r} is not a filter predicate")
        if self.selector is not None and not isinstance(self.selector, Selector):
            raise TypeError(f"Expression.selector: {self.selector!r} is not a selector")


def filter_names(f: Filter) -> tuple[str, ...]:
    """The place names (roads, landmarks, car parks) a filter mentions, in phrase order.

    >>> filter_names(AcrossRoad("Mill Lane", "Merton Hall")), filter_names(HasColour("red"))
    (('Mill Lane', 'Merton Hall'), ())
    """
    if isinstance(f, OnRoad):
        return (f.road,)
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
        The expression.
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
    return np.sort(facts.ids[cand]).astype(np.int32)


# -- search ----------------------------------------------------------------------------------


def _near_landmarks(facts: SceneFacts, row: int, limit: int = 3) -> list[NearLandmark]:
    out: list[tuple[float, NearLandmark]] = []
    for lrow in np.flatnonzero(facts.landmark != ""):
        if lrow == row:
            continue
        gap = float(facts.gap_to_box(facts.box[lrow])[row])
        name = str(facts.landmark[lrow])
        if gap <= NEXT_TO_M:
            out.append((gap, NearLandmark(name, "next to")))
        if gap <= NEAR_M:
            d = facts.center[row] - facts.center[lrow]
            ang = float(np.degrees(np.arctan2(d[1], d[0])))
            for rel, a0 in _DIRECTIONS.items():
                if abs((ang - a0 + 180.0) % 360.0 - 180.0) < 45.0:
                    out.append((gap + 0.01, NearLandmark(name, rel)))  # type: ignore[arg-type]
    out.sort(key=lambda t: t[0])
    return [p for _, p in out[:limit]]


def candidate_expressions(facts: SceneFacts, row: int) -> list[Expression]:
    """Every expression tried for the instance at ``row``, from simple to rich (not yet checked)."""
    cls = str(facts.cls[row])
    one = np.zeros(len(facts.ids), bool)
    one[row] = True
    singles: list[Filter] = []
    colour = [HasColour(str(facts.colour[row]))] if cls in ("Car", "Building") else []
    roads = [OnRoad(n) for n in facts.roads if OnRoad(n).mask(facts, one)[row]]
    xs = [n for n, r in facts.roads.items() if r.axis == "x"]
    ys = [n for n, r in facts.roads.items() if r.axis == "y"]
    corners = [AtCorner(a, b) for a in xs for b in ys if AtCorner(a, b).mask(facts, one)[row]]
    near = _near_landmarks(facts, row)
    named = [str(n) for n in facts.landmark[facts.landmark != ""]]
    across: list[Filter] = []
    for f in roads:
        across += [
            AcrossRoad(f.road, n) for n in named if AcrossRoad(f.road, n).mask(facts, one)[row]
        ]
    across = across[:2]
    lots: list[Filter] = []
    if cls == "Car" and InParking().mask(facts, one)[row]:
        lots.append(InParking())
        for lrow in facts.parking_rows:
            if facts.landmark[lrow] and InParking(str(facts.landmark[lrow])).mask(facts, one)[row]:
                lots.append(InParking(str(facts.landmark[lrow])))
    singles = [*roads, *corners, *near, *across, *lots]
    exprs: list[Expression] = []
    e = lambda *fs, sel=None: Expression(object_name=cls, filters=tuple(fs), selector=sel)  # noqa: E731
    exprs += [e(*colour)] if colour else []
    exprs += [e(f) for f in singles]
    exprs += [e(*colour, f) for f in singles] if colour else []
    exprs += [
        e(a, b)
        for i, a in enumerate(singles)
        for b in singles[i + 1 :]
        if type(a) is not type(b) and not set(filter_names(a)) & set(filter_names(b))
    ]
    exprs += [e(*colour, a, b) for a in roads for b in near] if colour else []
    if facts.landmark[row]:
        exprs.append(e(IsLandmark(str(facts.landmark[row]))))
        exprs += [e(IsLandmark(str(facts.landmark[row])), f) for f in roads[:1]]
    if cls != "Car":
        for m in (
            ("largest", "smallest", "tallest") if cls == "Building" else ("largest", "smallest")
        ):
            exprs += [e(sel=Extreme(m))] + [e(f, sel=Extreme(m)) for f in (*roads, *corners, *near)]  # type: ignore[arg-type]
    else:
        for f in roads:
            r = facts.roads[f.road]
            for end in ("east", "west") if r.axis == "x" else ("north", "south"):
                for k in range(1, 5):
                    exprs.append(e(sel=Ordinal(k, f.road, end)))  # type: ignore[arg-type]
                    exprs += [e(*colour, sel=Ordinal(k, f.road, end))]  # type: ignore[arg-type]
    return exprs
