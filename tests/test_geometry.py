import numpy as np
import pytest

from urbex.geometry import (
    Affine,
    box2d_from_center_size,
    center_distance_2d,
    ciou_2d,
    clip_box_2d,
    gap_2d,
    intersection_2d,
    iou_2d,
    iou_3d,
    overlap_bounds_2d,
)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ([0, 0, 2, 2], [1, 1, 3, 3], 1 / 7),
        ([0, 0, 1, 1], [0, 0, 1, 1], 1.0),
        ([0, 0, 1, 1], [1, 0, 2, 1], 0.0),  # touching edges
        ([0, 0, 0, 1], [0, 0, 0, 1], 0.0),  # zero width
        ([2, 2, 1, 1], [0, 0, 3, 3], 0.0),  # inverted box = empty
        ([0, 0, 4, 4], [1, 1, 2, 2], 1 / 16),  # containment
    ],
)
def test_iou_2d_known_cases(a, b, expected):
    assert iou_2d(a, b) == pytest.approx(expected)


def test_iou_2d_never_nan_on_degenerate_arrays():
    rng = np.random.default_rng(0)
    a = rng.uniform(-5, 5, (1000, 4))
    b = rng.uniform(-5, 5, (1000, 4))
    out = iou_2d(a, b)
    assert np.isfinite(out).all()
    assert ((out >= 0) & (out <= 1)).all()


def test_iou_2d_broadcasts_one_against_many():
    pred = np.array([0, 0, 2, 2])
    gts = np.array([[0, 0, 2, 2], [1, 1, 3, 3], [5, 5, 6, 6]])
    np.testing.assert_allclose(iou_2d(pred, gts), [1.0, 1 / 7, 0.0])


def test_iou_2d_is_symmetric_and_matches_bruteforce_raster():
    rng = np.random.default_rng(1)
    for _ in range(20):
        a = np.sort(rng.integers(0, 20, (2, 2)), axis=0).T.reshape(-1)[[0, 2, 1, 3]]
        b = np.sort(rng.integers(0, 20, (2, 2)), axis=0).T.reshape(-1)[[0, 2, 1, 3]]
        grid = np.zeros((2, 20, 20), bool)
        grid[0, a[1] : a[3], a[0] : a[2]] = True
        grid[1, b[1] : b[3], b[0] : b[2]] = True
        union = (grid[0] | grid[1]).sum()
        want = (grid[0] & grid[1]).sum() / union if union else 0.0
        assert iou_2d(a, b) == pytest.approx(want)
        assert iou_2d(b, a) == pytest.approx(want)


def test_iou_3d_flat_box_is_zero_not_nan():
    assert iou_3d([0, 0, 0, 1, 1, 0], [0, 0, 0, 1, 1, 1]) == 0.0
    assert iou_3d([0, 0, 0, 2, 2, 2], [0, 0, 0, 2, 2, 1]) == pytest.approx(0.5)


def test_ciou_2d_bounds_and_identity():
    rng = np.random.default_rng(2)
    lo = rng.uniform(0, 10, (500, 2))
    a = np.concatenate([lo, lo + rng.uniform(0, 3, (500, 2))], 1)
    lo2 = rng.uniform(0, 10, (500, 2))
    b = np.concatenate([lo2, lo2 + rng.uniform(0, 3, (500, 2))], 1)
    c = ciou_2d(a, b)
    assert np.isfinite(c).all() and (c <= 1).all() and (c >= -1.5).all()
    assert (c <= iou_2d(a, b) + 1e-12).all()
    np.testing.assert_allclose(ciou_2d(a, a)[(a[:, 2] > a[:, 0]) & (a[:, 3] > a[:, 1])], 1.0)


def test_center_distance_2d_vectorised():
    a = box2d_from_center_size([[0, 0], [1, 1]], [[2, 2], [2, 2]])
    np.testing.assert_allclose(center_distance_2d(a, [[3, 4, 3, 4]]), [5.0, np.hypot(2, 3)])


def test_clip_box_2d_clips_each_axis():
    np.testing.assert_allclose(clip_box_2d([-5, -5, 50, 3], [0, 0, 10, 10]), [0, 0, 10, 3])


def test_affine_north_up_matches_gdal_pixel_centre_convention():
    r, x_min, y_max = 0.1, 100.0, 250.0
    t = Affine.north_up(x_min=x_min, y_max=y_max, resolution=r)
    cols = np.array([0, 7, 3999])
    rows = np.array([0, 12, 3999])
    x, y = t.pixel_to_world(cols + 0.5, rows + 0.5)
    np.testing.assert_allclose(x, x_min + (cols + 0.5) * r)
    np.testing.assert_allclose(y, y_max - (rows + 0.5) * r)
    c2, r2 = t.world_to_pixel(x, y)
    np.testing.assert_allclose(c2, cols + 0.5)
    np.testing.assert_allclose(r2, rows + 0.5)
    assert t.to_gdal() == (x_min, r, 0.0, y_max, 0.0, -r)


def test_affine_box_round_trip_orders_corners():
    t = Affine.north_up(x_min=0, y_max=100, resolution=0.5)
    world = np.array([10.0, 20.0, 30.0, 60.0])
    px = t.box_to_pixel(world)
    assert px[0] < px[2] and px[1] < px[3]
    np.testing.assert_allclose(t.box_to_world(px), world)


def test_affine_composition_and_inverse():
    t = Affine(2.0, 0.5, 3.0, -0.25, 1.5, -7.0)
    ident = (t.inverse() * t).to_tuple()
    np.testing.assert_allclose(ident, (1, 0, 0, 0, 1, 0), atol=1e-12)
    with pytest.raises(ValueError, match="singular"):
        Affine(0, 0, 0, 0, 0, 0).inverse()


def test_affine_north_up_rejects_bad_resolution():
    with pytest.raises(ValueError, match="resolution"):
        Affine.north_up(x_min=0, y_max=0, resolution=0)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ([0, 0, 1, 1], [4, 5, 6, 6], 5.0),  # diagonal: dx 3, dy 4
        ([0, 0, 1, 1], [3, 0, 4, 1], 2.0),  # beside in x only
        ([0, 0, 1, 1], [0, -3, 1, -1], 1.0),  # below in y only
        ([0, 0, 1, 1], [1, 0, 2, 1], 0.0),  # touching edges
        ([0, 0, 1, 1], [1, 1, 2, 2], 0.0),  # touching corners
        ([0, 0, 2, 2], [1, 1, 3, 3], 0.0),  # overlapping
        ([0, 0, 10, 10], [2, 2, 3, 3], 0.0),  # contained
        ([2, 2, 3, 3], [0, 0, 10, 10], 0.0),  # containing
        ([5, 5, 5, 5], [0, 0, 1, 1], float(np.hypot(4, 4))),  # a point to a box
    ],
)
def test_gap_2d_known_cases(a, b, expected):
    assert gap_2d(a, b) == pytest.approx(expected)
    assert gap_2d(b, a) == gap_2d(a, b)  # symmetric, bit for bit


def test_gap_2d_matches_shapely_distance():
    shapely = pytest.importorskip("shapely")
    rng = np.random.default_rng(3)
    lo = rng.uniform(-50, 50, (500, 2))
    a = np.concatenate([lo, lo + rng.uniform(0, 20, (500, 2))], axis=1)
    lo = rng.uniform(-50, 50, (500, 2))
    b = np.concatenate([lo, lo + rng.uniform(0, 20, (500, 2))], axis=1)
    ref = shapely.distance(shapely.box(*a.T), shapely.box(*b.T))
    np.testing.assert_allclose(gap_2d(a, b), ref, rtol=0, atol=1e-9)
    assert (np.asarray(gap_2d(a, b)) == 0).sum() == (ref == 0).sum()


def test_gap_2d_broadcasts_and_handles_empty_arrays():
    boxes = np.array([[0, 0, 1, 1], [10, 0, 11, 1]], dtype=float)
    others = np.array([[3, 0, 4, 1], [0, 0, 1, 1], [5, 0, 6, 1]], dtype=float)
    table = np.asarray(gap_2d(boxes[:, None], others))  # (2, 3)
    assert table.shape == (2, 3)
    np.testing.assert_array_equal(table, [[2.0, 0.0, 4.0], [6.0, 9.0, 4.0]])
    assert np.asarray(gap_2d(np.zeros((0, 4)), [0, 0, 1, 1])).shape == (0,)
    assert np.asarray(gap_2d(np.zeros((0, 4)), np.zeros((0, 4)))).shape == (0,)
    with pytest.raises(ValueError, match=r"a: expected shape \(\.\.\., 4\)"):
        gap_2d([0, 0, 1], [0, 0, 1, 1])


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ([0, 0, 2, 2], [1, 1, 3, 3], [1, 1, 2, 2]),  # overlapping: the intersection
        ([0, 0, 4, 4], [1, 1, 2, 2], [1, 1, 2, 2]),  # contained: the inner box
        ([0, 0, 1, 1], [1, 0, 2, 1], [1, 0, 1, 1]),  # touching: a zero-width strip
        ([0, 0, 1, 1], [3, 5, 4, 6], [3, 5, 1, 1]),  # disjoint: inverted, spans the gap
    ],
)
def test_overlap_bounds_2d_known_cases(a, b, expected):
    assert overlap_bounds_2d(a, b).tolist() == expected
    assert overlap_bounds_2d(b, a).tolist() == expected


def test_overlap_bounds_2d_area_is_the_intersection_and_empty_arrays():
    rng = np.random.default_rng(4)
    lo = rng.uniform(-5, 5, (300, 2))
    a = np.concatenate([lo, lo + rng.uniform(0, 6, (300, 2))], axis=1)
    b = np.array([0.0, 0.0, 3.0, 2.0])
    o = overlap_bounds_2d(a, b)
    assert o.shape == (300, 4)
    w = np.clip(o[:, 2] - o[:, 0], 0, None)
    h = np.clip(o[:, 3] - o[:, 1], 0, None)
    np.testing.assert_array_equal(w * h, intersection_2d(a, b))
    # the intersection area against a brute-force raster of 0.01 m cells, for a few pairs
    xs = np.arange(-5, 11, 0.01) + 0.005
    for box in a[:5]:
        inside = lambda q: (xs[:, None] > q[0]) & (xs[:, None] < q[2]) & (xs > q[1]) & (xs < q[3])  # noqa: E731
        raster = (inside(box) & inside(b)).sum() * 1e-4
        assert intersection_2d(box, b) == pytest.approx(raster, abs=0.05)
    assert overlap_bounds_2d(np.zeros((0, 4)), np.zeros((0, 4))).shape == (0, 4)
