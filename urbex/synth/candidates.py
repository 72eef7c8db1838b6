"""What can be said about one instance: the candidate expressions the generator checks.

:func:`candidate_expressions` lists, from simple to rich, the expressions tried for one
instance — its colour, walls and shape, every location relation true of it (roads, corners,
landmarks by compass and on the map, in front of / behind, between, off a road, at a road's
end, the map's edges, a context object), pairs of those, superlatives and ordinals. None is
checked here: :mod:`urbex.synth.queries` keeps those that select exactly the target
(:func:`urbex.synth.expressions.satisfying`).

Frames: the block's local world frame (metres), as in :mod:`urbex.synth.facts`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from urbex.synth.expressions import (
    COMPASS_DEG,
    AcrossRoad,
    AtCorner,
    Expression,
    Extreme,
    Filter,
    HasColour,
    InParking,
    IsLandmark,
    NearLandmark,
    OnRoad,
    Ordinal,
    SceneFacts,
    filter_names,
)
from urbex.synth.predicates import (
    MAP_SIDES,
    NEAR_M,
    NEXT_TO_M,
    AtRoadEnd,
    Between,
    Context,
    FacingSide,
    HasShape,
    HasWalls,
    MapRegion,
    MapRelation,
    OffRoad,
)

__all__ = ["LOCATION", "candidate_expressions", "context_facts", "location_singles"]

#: Filters that say where the target is (the rest say what it looks like, or count).
LOCATION = (
    OnRoad,
    AtCorner,
    NearLandmark,
    AcrossRoad,
    InParking,
    MapRegion,
    MapRelation,
    FacingSide,
    Between,
    OffRoad,
    AtRoadEnd,
)
_MAX_SINGLES = 12  # location relations combined pairwise (the first ones, types interleaved)


def _one(facts: SceneFacts, row: int) -> np.ndarray:
    one = np.zeros(len(facts.ids), bool)
    one[row] = True
    return one


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
            for rel, a0 in COMPASS_DEG.items():
                if abs((ang - a0 + 180.0) % 360.0 - 180.0) < 45.0:
                    out.append((gap + 0.01, NearLandmark(name, rel)))  # type: ignore[arg-type]
    out.sort(key=lambda t: t[0])
    return [p for _, p in out[:limit]]


def context_facts(facts: SceneFacts, row: int, limit: int = 3) -> list[Context]:
    """Context objects true of the instance at ``row``, nearest kinds first (at most ``limit``).

    A building, car park or green space: a car (by colour) in front of / behind / next to it,
    a building (by roof colour) behind or next to it, a car in it (car parks). A car: in front
    of or behind a building (by roof colour), next to a car (by colour).
    """
    cls = str(facts.cls[row])
    one = _one(facts, row)
    near = facts.gap_to_box(facts.box[row]) <= NEAR_M
    near[row] = False
    tried: list[Context] = []
    for r in np.flatnonzero(near & np.isin(facts.cls, ["Car", "Building"])).tolist():
        c, colour = str(facts.cls[r]), str(facts.colour[r])
        if cls == "Car":
            rels: tuple[str, ...] = ("in front of", "behind") if c == "Building" else ("next to",)
            tried += [Context(c, colour, rel, target_first=True) for rel in rels]
        else:
            rels = ("in front of", "behind", "next to") if c == "Car" else ("behind", "next to")
            rels += ("in",) if cls == "Parking" and c == "Car" else ()
            tried += [Context(c, colour, rel) for rel in rels]
    out: list[Context] = []
    for ctx in dict.fromkeys(tried):
        if ctx.mask(facts, one)[row]:
            out.append(ctx)
        if len(out) >= limit:
            break
    return out


def location_singles(facts: SceneFacts, row: int) -> list[Filter]:
    """Every location relation true of the instance at ``row`` (filters of one predicate),
    their kinds interleaved (roads, corners, landmarks, across, lots, map, front/behind,
    between, off, end, context...)."""
    cls = str(facts.cls[row])
    one = _one(facts, row)
    ok = lambda f: bool(f.mask(facts, one)[row])  # noqa: E731
    roads: list[Filter] = [OnRoad(n) for n in facts.roads if ok(OnRoad(n))]
    xs = [n for n, r in facts.roads.items() if r.axis == "x"]
    ys = [n for n, r in facts.roads.items() if r.axis == "y"]
    corners: list[Filter] = [AtCorner(a, b) for a in xs for b in ys if ok(AtCorner(a, b))]
    near: list[Filter] = list(_near_landmarks(facts, row))
    lm_rows = [
        r
        for r in np.flatnonzero(facts.landmark != "").tolist()
        if r != row and float(facts.gap_to_box(facts.box[r])[row]) <= NEAR_M
    ]
    named = [str(n) for n in facts.landmark[facts.landmark != ""]]
    across = [
        AcrossRoad(f.road, n)
        for f in roads
        if isinstance(f, OnRoad)
        for n in named
        if ok(AcrossRoad(f.road, n))
    ][:2]
    lots: list[Filter] = []
    if cls == "Car" and ok(InParking()):
        lots.append(InParking())
        lots += [
            InParking(str(facts.landmark[r]))
            for r in facts.parking_rows
            if facts.landmark[r] and ok(InParking(str(facts.landmark[r])))
        ]
    lm_names = [str(facts.landmark[r]) for r in lm_rows]
    on_map = [
        f
        for n in lm_names
        for f in (MapRelation(n, "left"), MapRelation(n, "right"))  # type: ignore[arg-type]
        if ok(f)
    ][:2]
    facing = [
        f
        for n in lm_names
        for f in (FacingSide(n, "front"), FacingSide(n, "back"))  # type: ignore[arg-type]
        if ok(f)
    ][:2]
    between = [
        Between(a, b)
        for i, a in enumerate(lm_names)
        for b in lm_names[i + 1 :]
        if ok(Between(a, b))
    ][:2]
    off = [OffRoad(n) for n in facts.roads if ok(OffRoad(n))]
    ends = [AtRoadEnd(n) for n in facts.roads if ok(AtRoadEnd(n))][:1]
    region = [MapRegion(s) for s in MAP_SIDES[::-1] if ok(MapRegion(s))][:1]  # corners first
    context: list[Filter] = list(context_facts(facts, row, limit=2))
    kinds: list[Sequence[Filter]] = [
        roads,
        on_map,
        near,
        facing,
        corners,
        context,
        across,
        between,
        lots,
        off,
        region,
        ends,
    ]
    out: list[Filter] = []
    for i in range(max(map(len, kinds))):
        out += [k[i] for k in kinds if i < len(k)]
    return out


def candidate_expressions(facts: SceneFacts, row: int) -> list[Expression]:
    """Every expression tried for the instance at ``row``, from simple to rich (not yet checked)."""
    cls = str(facts.cls[row])
    attrs: list[Filter] = []
    if cls in ("Car", "Building"):
        attrs.append(HasColour(str(facts.colour[row])))
    if facts.wall_colour[row]:
        attrs.append(HasWalls(str(facts.wall_colour[row])))
    if facts.shape[row] and cls != "Car":
        attrs.append(HasShape(str(facts.shape[row])))
    colour = attrs[:1] if cls in ("Car", "Building") else []
    singles = location_singles(facts, row)
    roads = [f for f in singles if isinstance(f, OnRoad)]
    near = [f for f in singles if isinstance(f, NearLandmark)]
    corners = [f for f in singles if isinstance(f, AtCorner)]
    exprs: list[Expression] = []
    e = lambda *fs, sel=None: Expression(object_name=cls, filters=tuple(fs), selector=sel)  # noqa: E731
    exprs += [e(a) for a in attrs]
    exprs += [e(f) for f in singles]
    exprs += [e(a, f) for a in attrs for f in singles]
    top = singles[:_MAX_SINGLES]
    exprs += [
        e(a, b)
        for i, a in enumerate(top)
        for b in top[i + 1 :]
        if type(a) is not type(b) and not set(filter_names(a)) & set(filter_names(b))
    ]
    exprs += [e(*colour, a, b) for a in roads for b in near] if colour else []
    if facts.landmark[row]:
        exprs.append(e(IsLandmark(str(facts.landmark[row]))))
        exprs += [e(IsLandmark(str(facts.landmark[row])), f) for f in roads[:1]]
    if cls != "Car":
        measures = (
            ("largest", "smallest", "tallest") if cls == "Building" else ("largest", "smallest")
        )
        for m in measures:
            exprs += [e(sel=Extreme(m))] + [e(f, sel=Extreme(m)) for f in (*roads, *corners, *near)]  # type: ignore[arg-type]
            exprs += [e(a, sel=Extreme(m)) for a in attrs]  # type: ignore[arg-type]
    else:
        for f in roads:
            r = facts.roads[f.road]
            for end in ("east", "west") if r.axis == "x" else ("north", "south"):
                for k in range(1, 5):
                    exprs.append(e(sel=Ordinal(k, f.road, end)))  # type: ignore[arg-type]
                    exprs += [e(*colour, sel=Ordinal(k, f.road, end))]  # type: ignore[arg-type]
    return exprs
