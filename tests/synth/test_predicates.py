"""The predicates people use, each re-computed here from the geometry, instance by instance."""

from __future__ import annotations

import numpy as np
import pytest

from urbex.geometry import gap_2d
from urbex.synth.block import generate_block
from urbex.synth.expressions import Expression, satisfying
from urbex.synth.facts import SceneFacts, front_mask
from urbex.synth.predicates import (
    BETWEEN_MAX_M,
    END_M,
    MAP_EDGE,
    MAP_SIDES,
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
)


@pytest.fixture(scope="module")
def scene():
    b = generate_block(0, size=160.0, density=1.0)
    return b, SceneFacts.from_block(b)


def _ids(facts, pred, cls=None):
    cand = np.ones(len(facts.ids), bool) if cls is None else facts.cls == cls
    return set(facts.ids[pred.mask(facts, cand)].tolist())


def _landmarks(facts):
    return [(int(r), str(facts.landmark[r])) for r in np.flatnonzero(facts.landmark != "")]


@pytest.mark.parametrize("side", MAP_SIDES)
def test_map_region_is_the_edge_band_of_the_map(scene, side):
    b, f = scene
    want = set()
    for i, (x, y) in zip(f.ids.tolist(), f.center):
        ok = {"top": y >= b.size * (1 - MAP_EDGE), "bottom": y <= b.size * MAP_EDGE,
              "left": x <= b.size * MAP_EDGE, "right": x >= b.size * (1 - MAP_EDGE)}  # fmt: skip
        if all(ok[w] for w in side.split()):
            want.add(i)
    assert _ids(f, MapRegion(side)) == want


def test_map_region_rejects_an_unknown_side():
    with pytest.raises(ValueError, match=r"MapRegion\.side"):
        MapRegion("middle")


def test_map_relation_left_and_right_are_west_and_east_on_the_map(scene):
    _, f = scene
    n = 0
    for row, name in _landmarks(f):
        lb = f.box[row]
        for side in ("left", "right"):
            want = set()
            for i in range(len(f.ids)):
                if i == row or gap_2d(f.box[i], lb) > NEAR_M:
                    continue
                if not lb[1] <= f.center[i, 1] <= lb[3]:
                    continue
                if (side == "left" and f.box[i, 2] <= lb[0] + 0.5) or (
                    side == "right" and f.box[i, 0] >= lb[2] - 0.5
                ):
                    want.add(int(f.ids[i]))
            assert _ids(f, MapRelation(name, side)) == want  # type: ignore[arg-type]
            n += len(want)
    assert n > 0


def test_facing_side_matches_the_front_rule(scene):
    _, f = scene
    n = 0
    for row, name in _landmarks(f):
        for side in ("front", "back"):
            want = front_mask(f, np.array([row]), np.arange(len(f.ids)), side)[0]
            assert _ids(f, FacingSide(name, side)) == set(f.ids[want].tolist())  # type: ignore[arg-type]
            n += int(want.sum())
    assert n > 0


def test_between_is_inside_the_corridor_separating_two_landmarks(scene):
    _, f = scene
    lms = _landmarks(f)
    hits = 0
    for i, (ra, a) in enumerate(lms):
        for rb, bname in lms[i + 1 :]:
            got = _ids(f, Between(a, bname))
            A, B = f.box[ra], f.box[rb]
            if gap_2d(A, B) > BETWEEN_MAX_M:
                assert not got
                continue
            for k in got:  # every hit lies strictly between, within their shared span
                c = f.center[int(np.flatnonzero(f.ids == k)[0])]
                xs = (A[2] < c[0] < B[0]) or (B[2] < c[0] < A[0])
                ys = (A[3] < c[1] < B[1]) or (B[3] < c[1] < A[1])
                assert xs or ys
            hits += len(got)
    assert hits > 0


def test_off_road_is_the_nearest_road_and_not_on_its_carriageway(scene):
    b, f = scene
    for road in b.roads:
        want = set()
        for i in range(len(f.ids)):
            gaps = [float(gap_2d(f.box[i], r.strip())) for r in b.roads]
            g = gaps[b.roads.index(road)]
            if int(np.argmin(gaps)) != b.roads.index(road):
                continue
            car = f.cls[i] == "Car"
            if (car and ROAD_GAP["Car"] < g <= 15.0) or (not car and g <= ROAD_GAP[str(f.cls[i])]):
                want.add(int(f.ids[i]))
        assert _ids(f, OffRoad(road.name)) == want


def test_at_road_end_is_near_one_end_along_the_road(scene):
    b, f = scene
    for road in b.roads:
        got = _ids(f, AtRoadEnd(road.name))
        for i in range(len(f.ids)):
            along = f.center[i, 0 if road.axis == "x" else 1]
            fronts = gap_2d(f.box[i], road.strip()) <= ROAD_GAP[str(f.cls[i])]
            end = along <= road.start + END_M or along >= road.end - END_M
            assert (int(f.ids[i]) in got) == bool(fronts and end)


def test_context_next_to_and_in_front_by_brute_force(scene):
    _, f = scene
    buildings = np.flatnonzero(f.cls == "Building")
    for colour in ("red", "white", "black"):
        cars = [j for j in np.flatnonzero(f.cls == "Car") if f.colour[j] == colour]
        near = {int(f.ids[i]) for i in buildings
                if any(gap_2d(f.box[i], f.box[j]) <= NEXT_TO_M for j in cars)}  # fmt: skip
        assert _ids(f, Context("Car", colour, "next to"), "Building") == near
        front = {int(f.ids[i]) for i in buildings
                 if any(front_mask(f, np.array([i]), np.array([j]), "front")[0, 0] for j in cars)}  # fmt: skip
        assert _ids(f, Context("Car", colour, "in front of"), "Building") == front
        first = {int(f.ids[j]) for j in cars
                 if any(front_mask(f, np.array([i]), np.array([j]), "back")[0, 0] for i in buildings)}  # fmt: skip
        got = _ids(f, Context("Building", "", "behind", target_first=True), "Car")
        assert first <= got


def test_context_rejects_bad_relations():
    with pytest.raises(ValueError, match=r"Context\.relation"):
        Context("Car", "red", "under")
    with pytest.raises(ValueError, match="'in'"):
        Context("Car", "red", "in", target_first=True)


def test_counted_keeps_a_group_of_exactly_n(scene):
    _, f = scene
    cars = int((f.cls == "Car").sum())
    assert len(satisfying(Expression(object_name="Car", filters=(Counted(cars),)), f)) == cars
    assert len(satisfying(Expression(object_name="Car", filters=(Counted(cars - 1),)), f)) == 0
    with pytest.raises(ValueError, match=r"Counted\.n"):
        Counted(1)


def test_walls_and_shape_read_the_block_columns(scene):
    b, f = scene
    o = b.objects
    for colour in set(o.wall_colour) - {""}:
        want = {int(i) for i, c in zip(o.instance_id, o.wall_colour) if c == colour}
        assert _ids(f, HasWalls(colour)) == want
    for shape in ("L-shaped", "square", "rectangular"):
        want = {int(i) for i, s in zip(o.instance_id, o.shape) if s == shape}
        assert _ids(f, HasShape(shape)) == want
