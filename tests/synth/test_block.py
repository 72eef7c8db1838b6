import numpy as np
import pytest

from urbex.synth.block import CITYREFER_LABELS, generate_block, instance_bounds


@pytest.fixture(scope="module")
def block():
    return generate_block(3, size=90.0, density=6.0)


def test_generate_block_same_seed_identical_arrays(block):
    again = generate_block(3, size=90.0, density=6.0)
    for name in ("xyz", "rgb", "semantic", "instance", "offset"):
        np.testing.assert_array_equal(getattr(block.cloud, name), getattr(again.cloud, name))
    np.testing.assert_array_equal(block.objects.box, again.objects.box)
    assert block.objects.landmark == again.objects.landmark
    assert [r.name for r in block.roads] == [r.name for r in again.roads]


def test_generate_block_other_seed_differs(block):
    other = generate_block(4, size=90.0, density=6.0)
    assert other.cloud.n_points != block.cloud.n_points or not np.array_equal(
        other.cloud.xyz, block.cloud.xyz
    )


def test_generate_block_point_count_at_least_density_times_area(block):
    assert block.cloud.n_points >= 6.0 * 90.0 * 90.0
    assert block.cloud.xyz.dtype == np.float32
    lo, hi = block.cloud.xyz.min(0), block.cloud.xyz.max(0)
    assert lo[0] >= -3 and hi[0] <= 93 and lo[1] >= -3 and hi[1] <= 93
    assert 5.0 < lo[2] < 45.0  # SensatUrban-like ground height


def test_generate_block_sensaturban_classes_present(block):
    present = set(np.unique(block.cloud.semantic).tolist())
    assert {0, 1, 2, 7, 9, 10} <= present
    assert present <= set(range(13))
    assert block.cloud.class_scheme == "sensaturban" and block.cloud.crs == "EPSG:27700"


def test_generate_block_objects_boxes_contain_instance_points(block):
    inst = block.cloud.instance
    ids = set(np.unique(inst[inst >= 0]).tolist())
    assert ids == set(block.objects.instance_id.tolist())
    for k, iid in enumerate(block.objects.instance_id):
        pts = block.cloud.xyz[inst == iid]
        assert len(pts) == block.objects.n_points[k]
        assert np.all(pts >= block.objects.box[k, :3] - 1e-4) and np.all(
            pts <= block.objects.box[k, 3:] + 1e-4
        )
        assert block.objects.label_id[k] == CITYREFER_LABELS[block.objects.object_name[k]]


def test_generate_block_instance_classes_match_semantics(block):
    inst, sem = block.cloud.instance, block.cloud.semantic
    for name, allowed in (("Building", {2}), ("Car", {9}), ("Parking", {5}), ("Ground", {0})):
        ids = block.objects.instance_id[np.array(block.objects.object_name) == name]
        if len(ids):
            assert set(np.unique(sem[np.isin(inst, ids)]).tolist()) <= allowed


def test_generate_block_realistic_sizes():
    b = generate_block(0, size=200.0, density=2.0)
    size = b.objects.box[:, 3:] - b.objects.box[:, :3]
    names = np.array(b.objects.object_name)
    car = size[names == "Car"]
    assert np.all(np.sort(car[:, :2], axis=1)[:, 1] < 5.2) and np.all(car[:, 2] < 2.0)
    bld = size[names == "Building"]
    assert 8 < bld[:, :2].mean() < 40 and 5 < bld[:, 2].mean() < 30


def test_generate_block_landmarks_are_named_instances(block):
    by_id = dict(zip(block.objects.instance_id.tolist(), block.objects.landmark))
    for lm in block.landmarks:
        if lm.kind == "road":
            assert lm.instance_id == -1 and lm.name in {r.name for r in block.roads}
        else:
            assert by_id[lm.instance_id] == lm.name
            assert np.allclose(lm.geometry[0], lm.geometry[-1])  # closed ring


def test_generate_block_stpls3d_style_uses_its_scheme():
    b = generate_block(1, size=80.0, density=3.0, style="stpls3d")
    assert b.cloud.class_scheme == "stpls3d" and b.cloud.crs == "EPSG:32611"
    assert set(np.unique(b.cloud.semantic).tolist()) <= {0, 1, 4, 5, 11, 13, 14, 15, 19}


@pytest.mark.parametrize("kwargs", [{"size": 10.0}, {"density": 0.0}, {"style": "nope"}])
def test_generate_block_bad_arguments_raise(kwargs):
    with pytest.raises(ValueError):
        generate_block(0, **{"size": 60.0, "density": 1.0, **kwargs})


def test_instance_bounds_empty_ids_are_infinite():
    b, c = instance_bounds(np.zeros((2, 3), np.float32), np.array([1, 1], np.int32), 3)
    assert c.tolist() == [0, 2, 0]
    assert np.isinf(b[0]).all() and b[1].tolist() == [0.0] * 6


def test_generate_block_shape_words_follow_the_plan_footprints():
    b = generate_block(0, size=160.0, density=1.0)
    o = b.objects
    shapes = {s for n, s in zip(o.object_name, o.shape) if n == "Building"}
    assert {"L-shaped", "square", "rectangular"} <= shapes
    assert all(s == "" for n, s in zip(o.object_name, o.shape) if n == "Car")
    for k in np.flatnonzero(np.array(o.shape) == "square"):
        w, h = o.box[k, 3] - o.box[k, 0], o.box[k, 4] - o.box[k, 1]
        assert max(w, h) / min(w, h) < 1.3  # the points' box: the footprint, give or take a wall
    walls = [w for n, w in zip(o.object_name, o.wall_colour) if n == "Building"]
    assert (
        walls
        and all(walls)
        and not any(w for n, w in zip(o.object_name, o.wall_colour) if n != "Building")
    )


@pytest.mark.parametrize(
    ("parts", "word"),
    [
        ([[0, 0, 10, 10]], "square"),
        ([[0, 0, 10, 11.1]], "square"),
        ([[0, 0, 10, 12]], ""),
        ([[0, 0, 10, 13.1]], "rectangular"),
        ([[0, 0, 20, 8], [0, 8, 8, 16]], "L-shaped"),
    ],
)
def test_footprint_shape_words(parts, word):
    from urbex.synth.block import footprint_shape

    assert footprint_shape(np.array(parts, float)) == word


def test_generate_block_shades_leave_the_plan_alone(block):
    """Shades come from their own stream: the block's names and basic colours are those of the
    plan drawn from the seed alone (which is plain)."""
    from urbex.synth.palette import CAR_COLOURS, ROOF_COLOURS
    from urbex.synth.plan import plan_city

    plan = plan_city(np.random.default_rng(3), 90.0, "sensaturban")
    o = block.objects
    by_id = dict(zip(o.instance_id.tolist(), zip(o.colour, o.landmark)))
    for iid, c in zip(plan.car_instance.tolist(), plan.car_colour.tolist()):
        assert by_id.get(iid, (CAR_COLOURS[c],))[0] == CAR_COLOURS[c]
    for iid, c, name in zip(
        plan.building_instance.tolist(), plan.roof_colour.tolist(), plan.building_name
    ):
        assert by_id.get(iid, (ROOF_COLOURS[c], name)) == (ROOF_COLOURS[c], name)
    assert not plan.car_shade.any() and {s for s in o.shade} - {""}
