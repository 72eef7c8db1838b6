"""Scene facts: each instance's front road, and which objects stand in front of / behind it."""

from __future__ import annotations

import numpy as np
import pytest

from urbex.geometry import gap_2d
from urbex.synth.block import generate_block
from urbex.synth.facts import FRONT_MAX_M, SceneFacts, front_mask, pair_gap
from urbex.synth.plan import Road


def _toy(boxes, classes, roads) -> SceneFacts:
    """Facts of hand-placed BEV boxes (local metres) beside hand-placed roads; the front road
    of each non-car is the nearest one, as :meth:`SceneFacts.from_block` sets it."""
    box = np.array(boxes, float)
    m = len(box)
    center = (box[:, :2] + box[:, 2:]) / 2
    gaps = np.stack([gap_2d(box, r.strip()) for r in roads], axis=1)
    front = np.argmin(gaps, axis=1)
    sign = np.array(
        [
            1.0
            if roads[k].coord >= (center[i, 1] if roads[k].axis == "x" else center[i, 0])
            else -1.0
            for i, k in enumerate(front)
        ]
    )
    s = lambda v: np.array(v, dtype=str)  # noqa: E731
    return SceneFacts(
        ids=np.arange(m, dtype=np.int32), cls=s(classes), box=box, center=center,
        area=(box[:, 2] - box[:, 0]) * (box[:, 3] - box[:, 1]), height=np.ones(m),
        colour=s(["red"] * m), landmark=s([""] * m), roads={r.name: r for r in roads},
        parking_rows=np.zeros(0, np.int64), shade=s([""] * m), wall_colour=s([""] * m),
        wall_shade=s([""] * m), shape=s([""] * m), extent=np.array([0.0, 0.0, 100.0, 100.0]),
        road_list=tuple(roads), front_road=front.astype(np.int64), front_sign=sign,
    )  # fmt: skip


ROAD = Road(name="Mill Lane", axis="x", coord=30.0, start=0.0, end=100.0, width=8.0, footpath=2.0)


@pytest.fixture()
def street():
    """A house (row 0) south of an east-west road; cars around it."""
    return _toy(
        [
            [10, 10, 20, 20],  # 0 house, its front faces north (the road at y=30)
            [14, 24, 16, 26],  # 1 car between the house and the road: in front
            [14, 27, 16, 29],  # 2 car at the kerb, still this side of the centreline: in front
            [14, 31, 16, 33],  # 3 car across the centreline: not in front
            [14, 3, 16, 5],  # 4 car south of the house: behind
            [24, 24, 26, 26],  # 5 car in front of the road, beyond the house's extent: neither
            [14, -12, 16, -10],  # 6 car 20 m behind: too far to be behind it
        ],
        ["Building", "Car", "Car", "Car", "Car", "Car", "Car"],
        [ROAD],
    )


def test_front_mask_in_front_means_between_the_object_and_its_road(street):
    front = front_mask(street, np.array([0]), np.arange(7), "front")[0]
    assert front.tolist() == [False, True, True, False, False, False, False]


def test_front_mask_behind_means_beyond_its_back_edge_within_15_m(street):
    back = front_mask(street, np.array([0]), np.arange(7), "back")[0]
    assert back.tolist() == [False, False, False, False, True, False, False]


def test_front_mask_a_car_has_no_front(street):
    assert not front_mask(street, np.array([1, 2]), np.arange(7), "front").any()


def test_pair_gap_matches_gap_2d(street):
    got = pair_gap(street, np.array([0, 1]), np.array([4, 5, 6]))
    for i, a in enumerate((0, 1)):
        for j, b in enumerate((4, 5, 6)):
            assert got[i, j] == pytest.approx(gap_2d(street.box[a], street.box[b]))


def test_from_block_front_road_is_the_nearest_road_within_reach():
    b = generate_block(0, size=120.0, density=1.0)
    f = SceneFacts.from_block(b)
    for i in range(len(f.ids)):
        gaps = [float(gap_2d(f.box[i], r.strip())) for r in b.roads]
        k = int(np.argmin(gaps))
        if gaps[k] <= FRONT_MAX_M:
            assert f.front_road[i] == k
            r = b.roads[k]
            across = f.center[i, 1] if r.axis == "x" else f.center[i, 0]
            assert f.front_sign[i] == (1.0 if r.coord >= across else -1.0)
        else:
            assert f.front_road[i] == -1
    assert (f.front_road >= 0).mean() > 0.5


def test_memo_is_per_facts_and_dropped_by_replace():
    import dataclasses

    b = generate_block(1, size=100.0, density=1.0)
    f = SceneFacts.from_block(b)
    calls = []
    f.memo("k", lambda: calls.append(1) or np.ones(len(f.ids), bool))
    f.memo("k", lambda: calls.append(1) or np.ones(len(f.ids), bool))
    assert calls == [1]
    g = dataclasses.replace(f, colour=np.full(len(f.ids), "red"))
    g.memo("k", lambda: calls.append(2) or np.zeros(len(f.ids), bool))
    assert calls == [1, 2]
