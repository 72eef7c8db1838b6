"""Columnar facts about a block's instances: what every predicate of an expression reads.

:class:`SceneFacts` is built once per block (:meth:`SceneFacts.from_block`) and holds, per
instance, its class, BEV box, size, colours, shape and landmark name, plus the roads, the map's
extent and each instance's *front road* (the road it faces, from which "in front of" and
"behind" are meant). :func:`front_mask` and :func:`pair_gap` are the pairwise geometry that
the relation predicates share.

Frames
------
All geometry is the block's local world frame (metres, x east, y north). The *map* is the
block seen from above with north up: its top is north, its left is west.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np
from numpy.typing import NDArray

from urbex.geometry import gap_2d
from urbex.synth.block import Block

__all__ = ["FRONT_MAX_M", "Predicate", "SceneFacts", "front_mask", "pair_gap"]

#: The farthest (m) a building may stand from its road and still face it (have a front).
FRONT_MAX_M = 15.0
#: How far (m) behind an object's back edge "behind it" reaches.
_BEHIND_M = 15.0


@dataclass(frozen=True, slots=True)
class SceneFacts:
    """Columnar facts about a block's instances, the inputs of every predicate.

    Arrays have one row per instance (M rows); boxes are BEV ``[x_min, y_min, x_max, y_max]``
    in local world metres. ``front_road`` is the index into ``road_list`` of the road each
    instance faces (its nearest, if within :data:`FRONT_MAX_M`; -1 if none);
    ``front_sign`` is +1 when that road lies on the instance's north / east side (for an
    east–west / north–south road), -1 otherwise. ``extent`` is the map: the block's BEV box.
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
    shade: NDArray[np.str_]
    wall_colour: NDArray[np.str_]
    wall_shade: NDArray[np.str_]
    shape: NDArray[np.str_]
    extent: NDArray[np.float64]  # (4,)
    road_list: tuple[Any, ...]
    front_road: NDArray[np.int64]
    front_sign: NDArray[np.float64]
    _memo: dict[Hashable, NDArray[np.bool_]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_memo", {})

    def memo(self, key: Hashable, compute: Callable[[], NDArray[np.bool_]]) -> NDArray[np.bool_]:
        """``compute()`` — a mask over every row that depends on these facts alone — computed
        once per ``key`` (a predicate is its own key): every expression of the block re-uses
        it. A copy made with :func:`dataclasses.replace` starts with no memo."""
        hit = self._memo.get(key)
        if hit is None:
            hit = self._memo[key] = compute()
        return hit

    @classmethod
    def from_block(cls, block: Block) -> SceneFacts:
        o = block.objects
        box = o.box[:, [0, 1, 3, 4]]
        m = len(o)

        def col(values: tuple[str, ...]) -> NDArray[np.str_]:
            return np.array(values, dtype=str) if m else np.zeros(0, str)

        names = col(o.object_name)
        center = (box[:, :2] + box[:, 2:]) / 2
        roads = tuple(block.roads)
        gaps = (
            np.stack([np.asarray(gap_2d(box, r.strip()), np.float64) for r in roads], axis=1)
            if roads and m
            else np.full((m, max(len(roads), 1)), np.inf)
        )
        near = np.argmin(gaps, axis=1) if m else np.zeros(0, np.int64)
        front = np.where(gaps[np.arange(m), near] <= FRONT_MAX_M, near, -1).astype(np.int64)
        sign = np.zeros(m)
        for k, r in enumerate(roads):
            on = front == k
            across = center[on, 1] if r.axis == "x" else center[on, 0]
            sign[on] = np.where(r.coord >= across, 1.0, -1.0)
        return cls(
            ids=o.instance_id,
            cls=names,
            box=box,
            center=center,
            area=(box[:, 2] - box[:, 0]) * (box[:, 3] - box[:, 1]),
            height=o.box[:, 5] - o.box[:, 2],
            colour=col(o.colour),
            landmark=col(o.landmark),
            roads={r.name: r for r in roads},
            parking_rows=np.flatnonzero(names == "Parking"),
            shade=col(o.shade),
            wall_colour=col(o.wall_colour),
            wall_shade=col(o.wall_shade),
            shape=col(o.shape),
            extent=np.array([0.0, 0.0, block.size, block.size]),
            road_list=roads,
            front_road=front,
            front_sign=sign,
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


def pair_gap(facts: SceneFacts, a: NDArray[np.int64], b: NDArray[np.int64]) -> NDArray:
    """BEV gap (m) between every row of ``a`` and every row of ``b``, shape (len(a), len(b))."""
    return np.asarray(gap_2d(facts.box[a][:, None, :], facts.box[b][None, :, :]), np.float64)


def front_mask(
    facts: SceneFacts,
    ref: NDArray[np.int64],
    obj: NDArray[np.int64],
    side: Literal["front", "back"],
) -> NDArray[np.bool_]:
    """Which ``obj`` rows stand in front of / behind which ``ref`` rows, shape (len(ref), len(obj)).

    A reference object's front faces its front road (``facts.front_road``). An object is **in
    front** of it when its centre lies between the reference's road-side edge and the road's
    centreline, and within the reference's extent along the road (a car parked at the kerb
    outside a house); **behind** it when its centre lies beyond the opposite edge, within
    15 m of it, again within the extent along the road. A car, or a reference without a front
    road (more than :data:`FRONT_MAX_M` from every road), has neither; nothing is in front of
    or behind itself.
    """
    out = np.zeros((len(ref), len(obj)), bool)
    c = facts.center[obj]
    for k, r in enumerate(ref.tolist()):
        road_i = int(facts.front_road[r])
        if road_i < 0 or facts.cls[r] == "Car":
            continue
        road = facts.road_list[road_i]
        lo_a, hi_a, lo_c, hi_c, a, x = (
            (0, 2, 1, 3, 0, 1) if road.axis == "x" else (1, 3, 0, 2, 1, 0)
        )  # along-road axis a, across axis x, and the box columns of each
        b = facts.box[r]
        along = (c[:, a] >= b[lo_a]) & (c[:, a] <= b[hi_a])
        s = facts.front_sign[r]
        edge_front, edge_back = (b[hi_c], b[lo_c]) if s > 0 else (b[lo_c], b[hi_c])
        d = (c[:, x] - edge_front) * s  # > 0: on the road side of the front edge
        if side == "front":
            reach = (road.coord - edge_front) * s
            where = (d > 0) & (d <= reach)
        else:
            d_back = (edge_back - c[:, x]) * s  # > 0: beyond the back edge
            where = (d_back > 0) & (d_back <= _BEHIND_M)
        out[k] = along & where & (obj != r)
    return out
