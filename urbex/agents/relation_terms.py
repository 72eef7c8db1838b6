"""The geometry of a parse: how far each candidate is from satisfying what the description says.

Both rankers read a description through its parse (:func:`urbex.language.parse`) and measure it
here, once: :func:`relation_terms` turns every mention's relation (and the unnamed context
objects' ones, :func:`urbex.language.context_objects`) into a per-candidate violation, and
:func:`ordinal_positions` ranks candidates from what an ordinal counts from. ``ranking_rules``
sums the violations with hand-set weights (:func:`urbex.agents.ranking.score_candidates`), the
trained ranker learns them (:func:`urbex.agents.ranker_features.pair_features`).

Relations, with the tolerance past which a violation grows (in tolerance units):

* compass and map-frame directions (``north_of`` … ``left_of``; the map has north up, left is
  west): the bearing landmark → candidate within ±45° of the relation's
  (:attr:`urbex.language.Mention.bearing`), BEV gap ≤ :data:`NEAR_M`; beside a road, the
  bearing from its nearest point;
* ``in_front_of`` / ``behind`` an object are meant from the road it faces (its nearest road
  within :data:`FRONT_MAX_M`): towards that road (not past its centreline) / away from it,
  gap ≤ :data:`FRONT_MAX_M`; an object facing no road falls back to the map frame (behind is up
  the map, in front down);
* ``next_to`` gap ≤ :data:`NEXT_M`; ``near``/``off``/``facing``/``other`` gap ≤ :data:`NEAR_M`;
  ``in`` centre inside the footprint;
* a road (a line landmark) with ``on``/``next_to``/``near``/``in``/``facing``/``at_end_of``: gap
  to its centreline ≤ a class tolerance (:data:`ROAD_TOL`);
* ``corner`` of two landmarks: gap to where they cross ≤ :data:`CORNER_TOL`; ``between`` two:
  gap to A + gap to B − gap between A and B ≤ :data:`NEXT_M`; ``across_from`` L (across road
  R; or ``facing`` L across R): near L and on the other side of R;
* a description that *names* the target ("called X", "X, the red building"): the candidate is X;
* an unnamed context object ("in a parking lot", "with a red car parked in front of it",
  "behind a white van"): the relation to the best-placed other candidate of its class and
  colour (:func:`urbex.language.context_objects`);
* a region of the map ("at the top of the map"): the candidate's centre in that quarter of the
  candidates' extent (:data:`MAP_EDGE`).

Frames: boxes are BEV ``[x_min, y_min, x_max, y_max]`` in world metres (x east, y north).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from urbex.agents.ranking_records import Anchor, Candidates
from urbex.colour import PALETTE, colour_log_likelihood, exposure_gain
from urbex.geometry import gap_2d, overlap_bounds_2d
from urbex.landmarks.names import normalize_name
from urbex.language import ContextObject, Mention, Parse

__all__ = [
    "CORNER_TOL",
    "FRONT_MAX_M",
    "MAP_EDGE",
    "NEAR_M",
    "NEXT_M",
    "ROAD_TOL",
    "Term",
    "ordinal_positions",
    "relation_terms",
]

#: Tolerances (metres): near and compass gap, next-to gap.
NEAR_M, NEXT_M = 35.0, 6.0
#: An object faces its nearest road within this gap (m): "in front of" it is towards that road.
FRONT_MAX_M = 15.0
#: Share of the map's side that a map region ("the top of the map") covers.
MAP_EDGE = 0.25
#: Gap to a crossing ("at the corner of A and B"), per class (default 15 m).
CORNER_TOL: Mapping[str, float] = {"Car": 10.0}
#: Gap to a road's centreline, per class (default 15 m; a car: half a carriageway).
ROAD_TOL: Mapping[str, float] = {"Car": 5.0}
_DEFAULT_TOL = 15.0
_DIRECTIONAL = frozenset(
    "north_of south_of east_of west_of left_of right_of behind in_front_of".split()
)
_FRONT_BACK = frozenset({"in_front_of", "behind"})
_ROAD_RELS = frozenset({"on", "next_to", "near", "in", "facing", "at_end_of"})


@dataclass(frozen=True, slots=True)
class Term:
    """One thing the description says, measured on every candidate.

    Attributes
    ----------
    kind : str
        ``named``, ``direction``, ``next``, ``near``, ``road``, ``in``, ``between``,
        ``corner``, ``across``, ``end`` or ``context``.
    violation : ndarray, shape (K,), float64
        0 where the candidate satisfies it, growing in tolerance units past the tolerance
        (``named``: 1 for every candidate that is not the landmark).
    is_self : ndarray, shape (K,), bool
        The candidate is the landmark itself (it cannot be "north of" itself).
    agreement : ndarray, shape (K,), float64, or None
        ``direction``: cosine between the relation's bearing and landmark → candidate.
    gap_m : ndarray, shape (K,), float64
        BEV gap to the landmark (or crossing), metres.
    """

    kind: str
    violation: NDArray[np.float64]
    is_self: NDArray[np.bool_]
    gap_m: NDArray[np.float64]
    agreement: NDArray[np.float64] | None = None


def _gap(boxes: NDArray[np.float64], other: ArrayLike) -> NDArray[np.float64]:
    return np.asarray(gap_2d(boxes, other), dtype=np.float64)


def over(x: NDArray[np.float64], tol: float | NDArray[np.float64]) -> NDArray[np.float64]:
    """Violation in tolerance units past the tolerance (0 inside).

    >>> over(np.array([3.0, 10.0]), 5.0).tolist()
    [0.0, 1.0]
    """
    return np.maximum(0.0, x - tol) / tol


def per_class(table: Mapping[str, float], cls: NDArray[np.str_]) -> NDArray[np.float64]:
    """A per-class tolerance for each candidate (:data:`_DEFAULT_TOL` for other classes)."""
    return np.array([table.get(str(c), _DEFAULT_TOL) for c in cls], dtype=np.float64)


def _centre(box: NDArray[np.float64]) -> NDArray[np.float64]:
    return (box[..., :2] + box[..., 2:]) / 2


def _crossing(a: Anchor, b: Anchor) -> NDArray[np.float64]:
    """Where two landmarks meet: the centre of their bounds' overlap (or of the gap)."""
    o = overlap_bounds_2d(a.box, b.box)
    p = (o[:2] + o[2:]) / 2
    return np.concatenate([p, p])


def _direction(
    centre: NDArray[np.float64], a: Anchor, bearing: tuple[float, float]
) -> NDArray[np.float64]:
    """Cosine between ``bearing`` and the landmark → candidate displacement (from a road's
    nearest point when the landmark is a line)."""
    u = np.asarray(bearing, dtype=np.float64)
    d = centre - np.clip(centre, a.box[:2], a.box[2:]) if a.is_line else centre - _centre(a.box)
    n = np.hypot(d[:, 0], d[:, 1])
    return np.where(n > 1e-9, (d @ u) / np.maximum(n, 1e-9), 0.0)


def _side(centre: NDArray[np.float64], road: Anchor) -> NDArray[np.float64]:
    """Which side of a road's long axis each point lies (−1, 0, +1)."""
    b = road.box
    axis = 1 if (b[2] - b[0]) >= (b[3] - b[1]) else 0  # the road runs along x: sides in y
    mid = (b[axis] + b[axis + 2]) / 2
    return np.sign(centre[..., axis] - mid)


def _pairs(ms: Sequence[tuple[Mention, Anchor]], relation: str) -> list[list[Anchor]]:
    """Consecutive mentions of one two-place relation grouped in twos (a lone one alone)."""
    out: list[list[Anchor]] = []
    for m, a in ms:
        if m.relation != relation:
            continue
        if out and len(out[-1]) == 1:
            out[-1].append(a)
        else:
            out.append([a])
    return out


def relation_terms(
    parse: Parse,
    candidates: Candidates,
    anchors: Mapping[str, Anchor],
    context: Sequence[ContextObject] = (),
    *,
    roads: Sequence[Anchor] = (),
    regions: Sequence[str] = (),
) -> list[Term]:
    """Every relation of ``parse`` (and of its unnamed ``context`` objects and ``regions`` of
    the map) measured on the candidates (see the module docstring); mentions without an anchor
    are skipped.

    Parameters
    ----------
    parse
        The description's parse.
    candidates
        K candidates, world-metre BEV boxes.
    anchors
        Mention name → its located landmark.
    context
        :func:`urbex.language.context_objects` of the description.
    roads
        The scene's roads (line landmarks): "in front of" / "behind" an object are meant from
        the road it faces, when one runs within :data:`FRONT_MAX_M` of it.
    regions
        :func:`urbex.language.map_regions` of the description; the map is the candidates'
        extent, north up.

    Returns
    -------
    list of Term
    """
    box, cls = candidates.box, candidates.class_name
    centre = _centre(box)
    norm_lm = np.array([normalize_name(n) for n in candidates.landmark_name], dtype=str)
    located = [(m, anchors[m.name]) for m in parse.mentions if m.name in anchors]
    terms: list[Term] = []

    def add(kind: str, v: NDArray[np.float64], a: Anchor | None, gap: NDArray[np.float64],
            agree: NDArray[np.float64] | None = None) -> None:  # fmt: skip
        me = np.zeros(len(box), dtype=bool)
        if a is not None:
            me = (norm_lm == normalize_name(a.name)) & (norm_lm != "")
        terms.append(Term(kind, v, me, gap, agree))

    for pair in _pairs(located, "corner"):
        if len(pair) == 2:
            g = _gap(box, _crossing(pair[0], pair[1]))
            add("corner", over(g, per_class(CORNER_TOL, cls)), None, g)
        else:
            g = _gap(box, pair[0].box)
            add("near", over(g, NEAR_M), pair[0], g)
    for pair in _pairs(located, "between"):
        ga = _gap(box, pair[0].box)
        if len(pair) == 2:
            gb = _gap(box, pair[1].box)
            gab = float(_gap(pair[0].box[None], pair[1].box)[0])
            add("between", over(np.maximum(ga + gb - gab, 0.0), NEXT_M), pair[0], ga + gb)
            add("between", np.zeros(len(box)), pair[1], gb)  # self only
        else:
            add("near", over(ga, NEAR_M) + 0.1 * ga / NEAR_M, pair[0], ga)
    across = [a for m, a in located if a.is_line and m.relation == "other" and not m.names_target]
    for m, a in located:
        g = _gap(box, a.box)
        if m.relation in ("corner", "between"):
            continue
        if m.names_target:
            me = (norm_lm == normalize_name(a.name)) & (norm_lm != "")
            terms.append(Term("named", (~me).astype(np.float64), me, g))
        elif a.is_line and m.relation in _ROAD_RELS:
            road = over(g, per_class(ROAD_TOL, cls))
            add("end" if m.relation == "at_end_of" else "road", road, None, g)
        elif m.bearing is not None:
            front = _front_bearing(a.box, roads) if m.relation in _FRONT_BACK else None
            bearing = m.bearing if front is None else front[0]
            if front is not None and m.relation == "behind":
                bearing = (-front[0][0], -front[0][1])
            cos = _direction(centre, a, bearing)
            if front is not None:  # from the road the landmark faces
                v = _front_violation(centre - _centre(a.box), g, front, m.relation)
            else:
                ang = np.degrees(np.arccos(np.clip(cos, -1.0, 1.0)))
                v = over(ang, 45.0) + over(g, NEAR_M) + 0.1 * g / NEAR_M
            add("direction", v, a, g, cos)
        elif m.relation == "next_to":
            add("next", over(g, NEXT_M) + 0.1 * g / NEXT_M, a, g)
        elif m.relation == "in":
            inside = np.all((centre > a.box[:2]) & (centre < a.box[2:]), axis=1)
            out_d = _gap(np.concatenate([centre, centre], axis=1), a.box)
            add("in", (~inside) * (1.0 + out_d / 5.0), a, g)
        elif m.relation == "across_from" or (m.relation == "facing" and across):
            v = over(g, NEAR_M) + 0.1 * g / NEAR_M
            for r in across:  # strictly on the other side of the road
                v = v + (_side(centre, r) * _side(_centre(a.box), r) >= 0)
            add("across", v, a, g)
        else:  # near, off, facing, on or other for a place, at_end_of a non-road
            add("near", over(g, NEAR_M) + 0.1 * g / NEAR_M, a, g)
    for c in context:
        terms.extend(_context_term(c, candidates, roads))
    if regions:
        terms.append(_region_term(regions, box))
    return terms


def _front_bearing(
    box: NDArray[np.float64], roads: Sequence[Anchor]
) -> tuple[tuple[float, float], float] | None:
    """The road an object faces (its nearest road within :data:`FRONT_MAX_M`; a road runs
    along its longer side): the unit vector ``(east, north)`` from the object's centre towards
    it, and the distance (m) from that centre to the road's centreline. None without one."""
    if not roads:
        return None
    g = np.array([float(_gap(box[None], r.box)[0]) for r in roads])
    k = int(np.argmin(g))
    if g[k] > FRONT_MAX_M:
        return None
    r, c = roads[k].box, _centre(box)
    if (r[2] - r[0]) >= (r[3] - r[1]):  # along x: the road is north or south of it
        y = (r[1] + r[3]) / 2
        return ((0.0, 1.0) if y >= c[1] else (0.0, -1.0)), abs(y - c[1])
    x = (r[0] + r[2]) / 2
    return ((1.0, 0.0) if x >= c[0] else (-1.0, 0.0)), abs(x - c[0])


def _front_violation(
    d: NDArray[np.float64], gap: NDArray[np.float64], front: tuple[tuple[float, float], float],
    relation: str,
) -> NDArray[np.float64]:  # fmt: skip
    """How far displacements ``d`` (reference centre → object, (N, 2) m) with BEV ``gap`` are
    from "in front of" (towards the reference's road, not past its centreline) or "behind"."""
    u = np.asarray(front[0]) * (1.0 if relation == "in_front_of" else -1.0)
    along = d @ u
    cos = along / np.maximum(np.hypot(d[:, 0], d[:, 1]), 1e-9)
    v = over(np.degrees(np.arccos(np.clip(cos, -1.0, 1.0))), 45.0) + over(gap, FRONT_MAX_M)
    if relation == "in_front_of":  # not across the road
        v = v + np.maximum(0.0, along - front[1] - 1.0) / 5.0
    return v


def _colour_ok(candidates: Candidates, colours: Sequence[str]) -> NDArray[np.bool_]:
    """Candidates whose mean colour (exposure-corrected) is nearest to one of ``colours`` or at
    least a 1 in 4 chance of one (every candidate when none is said or colours are unknown)."""
    if not colours:
        return np.ones(len(candidates), dtype=bool)
    rgb = candidates.rgb * exposure_gain(candidates.rgb)
    ll = np.stack([colour_log_likelihood(w, rgb) for w in PALETTE], axis=1)
    best = np.array(list(PALETTE))[np.argmax(ll, axis=1)]
    said = ll[:, [list(PALETTE).index(w) for w in colours if w in PALETTE]].max(axis=1)
    unknown = np.isnan(candidates.rgb).any(axis=1)
    return np.isin(best, list(colours)) | (said >= np.log(0.25)) | unknown


def _context_term(c: ContextObject, candidates: Candidates, roads: Sequence[Anchor]) -> list[Term]:
    """A context object ("in a parking lot", "with a red car in front of it", "behind a white
    van"): the relation to the best-placed other candidate of its class (and colours)."""
    box, cls = candidates.box, candidates.class_name
    k = len(box)
    of = np.flatnonzero((cls == c.cls) & _colour_ok(candidates, c.colours))
    if of.size == 0 or c.relation not in ("in", "next_to", "near", "in_front_of", "behind"):
        return []
    none = np.zeros(k, dtype=bool)
    centre, oc = _centre(box), _centre(box[of])
    if c.relation == "in":
        inner, outer = (
            (oc[None, :], box[:, None]) if c.reverse else (centre[:, None], box[of][None])
        )
        inside = (
            (inner[..., 0] > outer[..., 0]) & (inner[..., 0] < outer[..., 2])
            & (inner[..., 1] > outer[..., 1]) & (inner[..., 1] < outer[..., 3])
        )  # fmt: skip
        inside[of, np.arange(of.size)] = False  # not in itself
        miss = np.asarray(~inside.any(axis=1), dtype=np.float64)
        return [Term("context", miss, none, np.zeros(k))]
    g = np.asarray(gap_2d(box[:, None], box[of][None]), dtype=np.float64)  # (K, |of|)
    g[of, np.arange(of.size)] = np.inf  # not to itself
    if c.relation in ("next_to", "near"):
        g0 = np.where(np.isfinite(g.min(axis=1)), g.min(axis=1), 1e3)
        tol = NEXT_M if c.relation == "next_to" else NEAR_M
        return [Term("context", over(g0, tol), none, g0)]
    # in front of / behind: of the reference's front road (the candidate's when reverse)
    v = np.full((k, of.size), 10.0)
    for i in range(k):
        if c.reverse:  # the object stands in front of / behind the candidate
            f = _front_bearing(box[i], roads)
            if f is not None:
                v[i] = _front_violation(oc - centre[i], g[i], f, c.relation)
            continue
        for j, o in enumerate(of.tolist()):  # the candidate stands in front of / behind it
            f = _front_bearing(box[o], roads)
            if f is not None:
                v[i, j] = _front_violation(
                    (centre[i] - oc[j])[None], g[i, j : j + 1], f, c.relation
                )[0]
    v[~np.isfinite(g)] = 10.0
    return [Term("context", np.minimum(v.min(axis=1), 10.0), none, g.min(axis=1))]


def _region_term(regions: Sequence[str], box: NDArray[np.float64]) -> Term:
    """The candidate's centre in the band of the map (the candidates' extent, north up) that
    each region names (a quarter of the map's side), in band widths past its edge."""
    x0, y0 = box[:, 0].min(), box[:, 1].min()
    x1, y1 = box[:, 2].max(), box[:, 3].max()
    c = _centre(box)
    bw, bh = max(x1 - x0, 1.0) * MAP_EDGE, max(y1 - y0, 1.0) * MAP_EDGE
    past = {
        "top": np.maximum(0.0, (y1 - bh) - c[:, 1]) / bh,
        "bottom": np.maximum(0.0, c[:, 1] - (y0 + bh)) / bh,
        "left": np.maximum(0.0, c[:, 0] - (x0 + bw)) / bw,
        "right": np.maximum(0.0, (x1 - bw) - c[:, 0]) / bw,
    }
    v = np.zeros(len(box))
    for r in regions:
        for side in r.split():
            v = v + past.get(side, 0.0)
    return Term("region", v, np.zeros(len(box), dtype=bool), np.zeros(len(box)))


def ordinal_positions(
    parse: Parse,
    candidates: Candidates,
    anchors: Mapping[str, Anchor],
    rows: NDArray[np.int64],
) -> NDArray[np.float64] | None:
    """Each of ``rows``' 1-based position counted the way the parse's ordinal says, or None.

    "From the east end" / "from the right" (a compass end or a map side): by how far east
    (right) a candidate's centre lies; "from the corner": by distance to where the corner's two
    landmarks cross; "from X": by BEV gap to landmark X. "At the north end of X" without an
    ordinal counts as the first from the north. None when there is nothing to count from.

    >>> from urbex.agents.ranking_records import Candidates
    >>> from urbex.language import parse
    >>> c = Candidates.build(class_name=["Car"] * 3, box=[[0, 0, 2, 2], [10, 0, 12, 2], [5, 0, 7, 2]])
    >>> ordinal_positions(parse("the second car from the east"), c, {}, np.arange(3)).tolist()
    [3.0, 1.0, 2.0]
    """
    centre = _centre(candidates.box[rows])
    o = parse.ordinal
    end = next((m for m in parse.mentions if m.relation == "at_end_of"), None)
    bearing = o.bearing if o is not None else None
    if bearing is None and end is not None and (o is None or o.from_ is None):
        bearing = end.bearing
        if o is None and bearing is None:
            return None
    elif o is None:
        return None
    if bearing is not None:
        key = -(centre @ np.asarray(bearing, dtype=np.float64))
    elif o is not None and o.from_ == "corner":
        corner = [
            anchors[m.name] for m in parse.mentions if m.relation == "corner" and m.name in anchors
        ]
        if not corner:
            return None
        p = _crossing(corner[0], corner[1]) if len(corner) > 1 else corner[0].box
        key = _gap(candidates.box[rows], p)
    elif o is not None and o.from_ is not None and o.from_ in anchors:
        key = _gap(candidates.box[rows], anchors[o.from_].box)
    else:
        return None
    pos = np.empty(rows.size, dtype=np.float64)
    pos[np.argsort(key, kind="stable")] = np.arange(1, rows.size + 1)
    return pos
