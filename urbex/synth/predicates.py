"""The predicates people use that the first generator lacked: map frame, front/behind, between,
off, at the end of, context objects, parts, shapes and counts.

Each is a filter of an :class:`~urbex.synth.expressions.Expression` (a frozen dataclass with a
``mask``), so :func:`~urbex.synth.expressions.satisfying` evaluates it over every same-class
instance like the others and a description that uses it stays unique by construction.

Frames
------
The block's local world frame (metres, x east, y north). The **map** is the block seen from
above, north up: "top" is north, "left" is west (:class:`MapRegion`, :class:`MapRelation`).
"In front of" and "behind" an object are meant from the road it faces
(:func:`urbex.synth.facts.front_mask`), as people say of houses.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from urbex.synth.facts import SceneFacts, front_mask, pair_gap

__all__ = [
    "BETWEEN_MAX_M",
    "CONTEXT_RELATIONS",
    "END_M",
    "MAP_EDGE",
    "MAP_SIDES",
    "NEAR_M",
    "NEXT_TO_M",
    "ROAD_GAP",
    "AtRoadEnd",
    "Between",
    "Context",
    "Counted",
    "FacingSide",
    "HasShape",
    "HasWalls",
    "MapRegion",
    "MapRelation",
    "OffRoad",
    "per_class",
]

#: Max BEV gap (m) between an object and a landmark for a compass or map relation.
NEAR_M = 35.0
#: Max BEV gap (m) for "next to".
NEXT_TO_M = 6.0
#: Max BEV gap (m) to a road's carriageway for an object "on" / fronting it, per class.
ROAD_GAP = {"Car": 0.3, "Building": 10.0, "Parking": 10.0, "Ground": 10.0}
#: Share of the map's side that its top / bottom / left / right edge band covers.
MAP_EDGE = 0.25
#: Map regions :class:`MapRegion` knows.
MAP_SIDES = (
    "top",
    "bottom",
    "left",
    "right",
    "top left",
    "top right",
    "bottom left",
    "bottom right",
)
#: "At the end of" a road: within this many metres (along it) of one of its ends.
END_M = 20.0
#: Max BEV gap (m) between the two landmarks of "between".
BETWEEN_MAX_M = 60.0
#: How far an object "off" a road may be from its carriageway (m).
_OFF_M = 15.0
#: Relations of a context object to the target (or of the target to it).
CONTEXT_RELATIONS = ("in front of", "behind", "next to", "in")


def per_class(table: dict[str, float], facts: SceneFacts) -> NDArray[np.float64]:
    """``table[class]`` per instance row (10.0 for a class not in it)."""
    out = np.full(len(facts.cls), 10.0)
    for c, v in table.items():
        out[facts.cls == c] = v
    return out


@dataclass(frozen=True, slots=True)
class HasWalls:
    """A building's walls are ``colour`` (and of ``shade``, when given)."""

    colour: str
    shade: str = ""

    def mask(self, facts: SceneFacts, cand: NDArray[np.bool_]) -> NDArray[np.bool_]:
        out = cand & (facts.wall_colour == self.colour)
        return out & (facts.wall_shade == self.shade) if self.shade else out


@dataclass(frozen=True, slots=True)
class HasShape:
    """The footprint is ``L-shaped``, ``square`` or ``rectangular`` (:func:`footprint_shape`)."""

    shape: str

    def mask(self, facts: SceneFacts, cand: NDArray[np.bool_]) -> NDArray[np.bool_]:
        return cand & (facts.shape == self.shape)


@dataclass(frozen=True, slots=True)
class MapRegion:
    """The centre lies in one edge band of the map (:data:`MAP_EDGE` of its side), or in a
    corner (both bands): "at the top of the map", "in the bottom left corner of the map"."""

    side: str

    def __post_init__(self) -> None:
        if self.side not in MAP_SIDES:
            raise ValueError(f"MapRegion.side: expected one of {MAP_SIDES}, got {self.side!r}")

    def mask(self, facts: SceneFacts, cand: NDArray[np.bool_]) -> NDArray[np.bool_]:
        return cand & facts.memo(self, lambda: self._where(facts))

    def _where(self, facts: SceneFacts) -> NDArray[np.bool_]:
        x0, y0, x1, y1 = facts.extent
        f = MAP_EDGE
        cx, cy = facts.center[:, 0], facts.center[:, 1]
        band = {
            "top": cy >= y1 - f * (y1 - y0),
            "bottom": cy <= y0 + f * (y1 - y0),
            "left": cx <= x0 + f * (x1 - x0),
            "right": cx >= x1 - f * (x1 - x0),
        }
        out = np.ones(len(facts.ids), bool)
        for word in self.side.split():
            out &= band[word]
        return out


@dataclass(frozen=True, slots=True)
class MapRelation:
    """Directly ``left`` (west) or ``right`` (east) of the named instance on the map.

    The object's box lies wholly on that side of the landmark's box (0.5 m tolerance), its
    centre within the landmark's north–south extent, and its gap at most :data:`NEAR_M`.
    """

    landmark: str
    side: Literal["left", "right"]

    def mask(self, facts: SceneFacts, cand: NDArray[np.bool_]) -> NDArray[np.bool_]:
        return cand & facts.memo(self, lambda: self._where(facts))

    def _where(self, facts: SceneFacts) -> NDArray[np.bool_]:
        row = facts.landmark_row(self.landmark)
        b = facts.box[row]
        if self.side == "left":
            beside = facts.box[:, 2] <= b[0] + 0.5
        else:
            beside = facts.box[:, 0] >= b[2] - 0.5
        cy = facts.center[:, 1]
        level = (cy >= b[1]) & (cy <= b[3])
        close = facts.gap_to_box(b) <= NEAR_M
        return beside & level & close & (np.arange(len(facts.ids)) != row)


@dataclass(frozen=True, slots=True)
class FacingSide:
    """``front``: in front of the named instance (between it and the road it faces);
    ``back``: behind it (:func:`urbex.synth.facts.front_mask`)."""

    landmark: str
    side: Literal["front", "back"]

    def mask(self, facts: SceneFacts, cand: NDArray[np.bool_]) -> NDArray[np.bool_]:
        return cand & facts.memo(self, lambda: self._where(facts))

    def _where(self, facts: SceneFacts) -> NDArray[np.bool_]:
        row = facts.landmark_row(self.landmark)
        return front_mask(facts, np.array([row]), np.arange(len(facts.ids)), self.side)[0]


@dataclass(frozen=True, slots=True)
class Between:
    """Between two named instances: in the corridor that separates them.

    The landmarks' boxes are at most :data:`BETWEEN_MAX_M` apart and separated along x or y
    (the axis of the larger separation); the object's centre lies strictly inside that gap and,
    across it, within the span both landmarks share (3 m tolerance).
    """

    a: str
    b: str

    def mask(self, facts: SceneFacts, cand: NDArray[np.bool_]) -> NDArray[np.bool_]:
        return cand & facts.memo(self, lambda: self._where(facts))

    def _where(self, facts: SceneFacts) -> NDArray[np.bool_]:
        ra, rb = facts.landmark_row(self.a), facts.landmark_row(self.b)
        ba, bb = facts.box[ra], facts.box[rb]
        out = np.zeros(len(facts.ids), bool)
        if float(facts.gap_to_box(ba)[rb]) > BETWEEN_MAX_M:
            return out
        sep = [max(bb[0] - ba[2], ba[0] - bb[2]), max(bb[1] - ba[3], ba[1] - bb[3])]
        ax = int(np.argmax(sep))
        if sep[ax] <= 0:
            return out  # overlapping: nothing lies between them
        lo, hi = sorted((ba, bb), key=lambda b: b[ax])
        c = facts.center
        inside = (c[:, ax] > lo[ax + 2]) & (c[:, ax] < hi[ax])
        o = 1 - ax  # across the gap
        s_lo, s_hi = max(ba[o], bb[o]) - 3.0, min(ba[o + 2], bb[o + 2]) + 3.0
        level = (c[:, o] >= s_lo) & (c[:, o] <= s_hi)
        return inside & level


@dataclass(frozen=True, slots=True)
class OffRoad:
    """Reached from ``road``: it is the object's nearest road, within 15 m, and a car is off
    its carriageway (in a car park or a drive beside it, not parked on it)."""

    road: str

    def mask(self, facts: SceneFacts, cand: NDArray[np.bool_]) -> NDArray[np.bool_]:
        return cand & facts.memo(self, lambda: self._where(facts))

    def _where(self, facts: SceneFacts) -> NDArray[np.bool_]:
        gaps = np.stack([facts.gap_to_box(r.strip()) for r in facts.road_list], axis=1)
        k = [r.name for r in facts.road_list].index(self.road)
        nearest = np.argmin(gaps, axis=1) == k
        g = gaps[:, k]
        is_car = facts.cls == "Car"
        ok = np.where(
            is_car, (g > ROAD_GAP["Car"]) & (g <= _OFF_M), g <= per_class(ROAD_GAP, facts)
        )
        return nearest & ok


@dataclass(frozen=True, slots=True)
class AtRoadEnd:
    """At the end of ``road``: fronting it (as ``OnRoad``) within :data:`END_M` of one of its
    two ends, measured along it."""

    road: str

    def mask(self, facts: SceneFacts, cand: NDArray[np.bool_]) -> NDArray[np.bool_]:
        return cand & facts.memo(self, lambda: self._where(facts))

    def _where(self, facts: SceneFacts) -> NDArray[np.bool_]:
        r = facts.roads[self.road]
        fronts = facts.gap_to_box(r.strip()) <= per_class(ROAD_GAP, facts)
        along = facts.center[:, 0 if r.axis == "x" else 1]
        return fronts & ((along <= r.start + END_M) | (along >= r.end - END_M))


@dataclass(frozen=True, slots=True)
class Context:
    """An unnamed context object: some ``cls`` instance (of basic ``colour``, when given)
    stands in ``relation`` to the target ("a house *with a red car parked in front of it*":
    ``Context("Car", "red", "in front of")``), or, with ``target_first``, the target stands in
    ``relation`` to it ("a car *parked behind a white van*").

    ``in``: the context object's centre lies inside the target's box (a car in a car park).
    """

    cls: str
    colour: str
    relation: str
    target_first: bool = False

    def __post_init__(self) -> None:
        if self.relation not in CONTEXT_RELATIONS:
            raise ValueError(
                f"Context.relation: expected one of {CONTEXT_RELATIONS}, got {self.relation!r}"
            )
        if self.relation == "in" and self.target_first:
            raise ValueError("Context: 'in' is said of the context object (a car in the lot)")

    def mask(self, facts: SceneFacts, cand: NDArray[np.bool_]) -> NDArray[np.bool_]:
        out = np.zeros_like(cand)
        for c in np.unique(facts.cls[cand]).tolist():  # computed per target class, once
            out |= cand & facts.memo((self, c), partial(self._where, facts, facts.cls == c))
        return out

    def _where(self, facts: SceneFacts, cand: NDArray[np.bool_]) -> NDArray[np.bool_]:
        rows = np.flatnonzero(cand)
        ctx = facts.cls == self.cls
        if self.colour:
            ctx &= facts.colour == self.colour
        crow = np.flatnonzero(ctx)
        out = np.zeros_like(cand)
        if not rows.size or not crow.size:
            return out
        if self.relation == "next to":
            rel = pair_gap(facts, rows, crow) <= NEXT_TO_M
        elif self.relation == "in":
            b, c = facts.box[rows], facts.center[crow]
            rel = (
                (c[None, :, 0] > b[:, None, 0])
                & (c[None, :, 0] < b[:, None, 2])
                & (c[None, :, 1] > b[:, None, 1])
                & (c[None, :, 1] < b[:, None, 3])
            )
        elif self.target_first:
            side: Literal["front", "back"] = "front" if self.relation == "in front of" else "back"
            rel = front_mask(facts, crow, rows, side).T
        else:
            side = "front" if self.relation == "in front of" else "back"
            rel = front_mask(facts, rows, crow, side)
        rel &= rows[:, None] != crow[None, :]
        out[rows] = rel.any(axis=1)
        return out


@dataclass(frozen=True, slots=True)
class Counted:
    """A count: exactly ``n`` candidates remain at this point of the filter chain ("one of
    the *three* cars on Mill Lane"); otherwise nothing is selected."""

    n: int

    def __post_init__(self) -> None:
        if self.n < 2:
            raise ValueError(f"Counted.n: expected >= 2 (a group), got {self.n}")

    def mask(self, facts: SceneFacts, cand: NDArray[np.bool_]) -> NDArray[np.bool_]:
        return cand if int(cand.sum()) == self.n else np.zeros_like(cand)
