"""The block plan: roads, terrain and objects as geometry; reproducible from the RNG."""

from __future__ import annotations

import numpy as np
import pytest

from urbex.synth.plan import CAR_COLOURS, ROOF_COLOURS, STYLES, Road, Terrain, plan_city


@pytest.fixture(scope="module", params=STYLES)
def plan(request):
    return plan_city(np.random.default_rng(3), 120.0, request.param)


def test_plan_is_a_pure_function_of_the_rng_state(plan):
    again = plan_city(np.random.default_rng(3), 120.0, plan.style)
    assert again.roads == plan.roads and again.building_name == plan.building_name
    np.testing.assert_array_equal(again.part_box, plan.part_box)
    np.testing.assert_array_equal(again.car_center, plan.car_center)
    other = plan_city(np.random.default_rng(4), 120.0, plan.style)
    assert not np.array_equal(other.part_box, plan.part_box)


def test_instance_ids_are_unique_and_dense_from_zero(plan):
    ids = np.concatenate(
        [plan.building_instance, plan.park_instance, plan.parking_instance, plan.car_instance]
    )
    assert sorted(ids.tolist()) == list(range(plan.n_instances)) and plan.n_instances > 0


def test_objects_lie_in_the_block_with_valid_codes(plan):
    assert plan.size == 120.0
    for boxes in (plan.part_box, plan.park_box, plan.parking_box):
        if len(boxes):
            assert (boxes[:, 2] > boxes[:, 0]).all() and (boxes[:, 3] > boxes[:, 1]).all()
            assert boxes.min() >= -1e-9 and boxes.max() <= 120.0 + 1e-9
    assert ((plan.car_center >= 0) & (plan.car_center <= 120.0)).all()
    assert set(plan.car_colour.tolist()) <= set(range(len(CAR_COLOURS)))
    assert set(plan.roof_colour.tolist()) <= set(range(len(ROOF_COLOURS)))
    assert len(plan.building_name) == len(plan.building_instance) == len(plan.building_base)
    assert set(plan.part_building.tolist()) == set(range(len(plan.building_instance)))


def test_roads_are_named_uniquely_and_cross_the_block(plan):
    names = [r.name for r in plan.roads]
    assert len(plan.roads) >= 2 and len(set(names)) == len(names)
    assert {r.axis for r in plan.roads} == {"x", "y"}
    for r in plan.roads:
        assert 0 <= r.coord <= 120.0 and r.start < r.end


def test_road_strip_and_line_per_axis():
    ew = Road(name="Mill Lane", axis="x", coord=10.0, start=0.0, end=50.0, width=6.0, footpath=2.0)
    assert ew.strip().tolist() == [0.0, 7.0, 50.0, 13.0]
    assert ew.strip(extra=2.0).tolist() == [0.0, 5.0, 50.0, 15.0]
    assert ew.line().tolist() == [[0.0, 10.0], [50.0, 10.0]]
    ns = Road(name="High St", axis="y", coord=20.0, start=5.0, end=9.0, width=4.0, footpath=0.0)
    assert ns.strip().tolist() == [18.0, 5.0, 22.0, 9.0]
    assert ns.line().tolist() == [[20.0, 5.0], [20.0, 9.0]]


@pytest.mark.parametrize(
    ("kw", "match"),
    [({"axis": "z"}, "axis: expected"), ({"end": 0.0}, "start < end"), ({"width": 0.0}, "width")],
)
def test_road_invalid_fields_raise(kw, match):
    base = {"name": "r", "axis": "x", "coord": 0.0, "start": 0.0, "end": 1.0, "width": 1.0,
            "footpath": 0.0}  # fmt: skip
    with pytest.raises(ValueError, match=match):
        Road(**{**base, **kw})


def test_terrain_height_interpolates_bilinearly_and_clamps():
    t = Terrain(grid=np.array([[0.0, 2.0], [4.0, 6.0]]), spacing=10.0)
    h = t.height(np.array([0.0, 5.0, 5.0, -3.0]), np.array([0.0, 0.0, 5.0, 0.0]))
    assert h.dtype == np.float64
    np.testing.assert_allclose(h, [0.0, 1.0, 3.0, 0.0], atol=1e-5)


@pytest.mark.parametrize(
    ("size", "style", "match"), [(30.0, "stpls3d", "size"), (100.0, "x", "style")]
)
def test_plan_city_bad_arguments_raise(size, style, match):
    with pytest.raises(ValueError, match=match):
        plan_city(np.random.default_rng(0), size, style)
