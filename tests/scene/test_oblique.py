"""Tests for urbex.scene.oblique: camera convention and z-buffer splatting."""

from __future__ import annotations

import numpy as np
import pytest

from urbex.errors import EmptyRegionError
from urbex.pointcloud import PointCloud
from urbex.scene.oblique import look_at_camera, render_oblique


def _cube_scene(seed: int = 0) -> tuple[PointCloud, np.ndarray]:
    """A grey ground plane 60×60 m with a 6 m cube at (1020, 515); north face green, south blue,
    other faces and top red. World offset (1000, 500, 10)."""
    rng = np.random.default_rng(seed)
    ground = np.c_[rng.uniform(0, 60, (40000, 2)), np.zeros(40000)]
    g_rgb = np.full((len(ground), 3), 90)
    c = np.array([20.0, 15.0, 3.0])
    n = 6000
    u, v = rng.uniform(-3, 3, (2, n))
    faces, cols = [], []
    for axis, sign, col in [
        (1, 1, (0, 255, 0)),
        (1, -1, (0, 0, 255)),
        (0, 1, (255, 0, 0)),
        (0, -1, (255, 0, 0)),
        (2, 1, (255, 0, 0)),
    ]:
        p = np.zeros((n, 3))
        others = [a for a in range(3) if a != axis]
        p[:, others[0]], p[:, others[1]] = u, v
        p[:, axis] = 3 * sign
        faces.append(p + c)
        cols.append(np.tile(col, (n, 1)))
    xyz = np.vstack([ground, *faces]).astype(np.float32)
    rgb = np.vstack([g_rgb, *cols]).astype(np.uint8)
    cloud = PointCloud(xyz=xyz, offset=np.array([1000.0, 500.0, 10.0]), rgb=rgb)
    return cloud, c + cloud.offset


@pytest.mark.parametrize("azimuth", [0.0, 120.0, 180.0, 270.0])
def test_render_oblique_cube_appears_at_projected_position(azimuth: float) -> None:
    cloud, centre = _cube_scene()
    box = [centre[0] - 15, centre[1] - 15, centre[0] + 15, centre[1] + 15]
    r = render_oblique(
        cloud, target_box=box, azimuth_deg=azimuth, elevation_deg=35, size=(256, 256)
    )
    img = r.image.astype(int)
    cube = (img[..., 0] + img[..., 1] + img[..., 2] >= 250) & ~(
        (img[..., 0] == 90) & (img[..., 1] == 90)
    )
    assert cube.sum() > 200
    rows, cols = np.nonzero(cube)
    u, v, d = r.camera.project(centre)
    assert d[0] > 0
    assert abs(cols.mean() - u[0]) < 6 and abs(rows.mean() - v[0]) < 6
    green = ((img[..., 1] == 255) & (img[..., 0] == 0)).sum()
    blue = ((img[..., 2] == 255) & (img[..., 0] == 0)).sum()
    # the hidden face may leak a few silhouette pixels through splat edges, nothing more
    if azimuth == 0.0:  # camera north of the cube: sees the green north face, not the blue one
        assert green > 100 and blue < 0.02 * green
    if azimuth == 180.0:
        assert blue > 100 and green < 0.02 * blue


def test_look_at_camera_azimuth_is_bearing_of_camera() -> None:
    for az, expect in [(0, (0, 1)), (90, (1, 0)), (180, (0, -1)), (270, (-1, 0))]:
        cam = look_at_camera(
            [0, 0, 0], azimuth_deg=az, elevation_deg=30, distance=2.0, size=(64, 64), fov_deg=60
        )
        horiz = cam.eye[:2] / np.linalg.norm(cam.eye[:2])
        np.testing.assert_allclose(horiz, expect, atol=1e-9)
        assert cam.eye[2] == pytest.approx(2.0 * np.sin(np.radians(30)))
        u, v, d = cam.project([0, 0, 0])
        assert (u[0], v[0]) == pytest.approx((32, 32)) and d[0] == pytest.approx(2.0)
        assert cam.project([0, 0, 1])[1][0] < 32  # up is up in the image
        np.testing.assert_allclose(-cam.R.T @ cam.t, cam.eye, atol=1e-12)


def test_look_at_camera_straight_down_is_well_defined() -> None:
    cam = look_at_camera(
        [5, 5, 0], azimuth_deg=180, elevation_deg=90, distance=10, size=(64, 64), fov_deg=60
    )
    assert np.isfinite(cam.R).all()
    np.testing.assert_allclose(cam.R @ cam.R.T, np.eye(3), atol=1e-12)
    u, v, _ = cam.project([[6, 5, 0], [5, 6, 0]])
    assert u[0] > 32 and v[1] < 32  # east right, north up


def test_render_oblique_whole_box_fits_in_frame() -> None:
    cloud, centre = _cube_scene(1)
    box = np.array([centre[0] - 15, centre[1] - 15, centre[0] + 15, centre[1] + 15])
    r = render_oblique(cloud, target_box=box, azimuth_deg=45, size=(128, 96))
    corners = np.array([[x, y, z] for x in box[[0, 2]] for y in box[[1, 3]] for z in (10.0, 16.0)])
    u, v, d = r.camera.project(corners)
    assert (d > 0).all() and (u >= -1e-6).all() and (u <= 128 + 1e-6).all()
    assert (v >= -1e-6).all() and (v <= 96 + 1e-6).all()
    assert max(u.max() - u.min(), v.max() - v.min()) > 80  # fills the frame


def test_render_oblique_point_size_adapts_to_density() -> None:
    rng = np.random.default_rng(3)
    xyz = np.c_[rng.uniform(0, 50, (4000, 2)), np.zeros(4000)].astype(np.float32)
    cloud = PointCloud(xyz=xyz)
    kw = dict(target_box=[0, 0, 50, 50], azimuth_deg=200, elevation_deg=60, size=(200, 200))
    auto = render_oblique(cloud, **kw)
    one = render_oblique(cloud, point_size=1, **kw)
    cov_auto = (auto.image.sum(-1) > 0).mean()
    cov_one = (one.image.sum(-1) > 0).mean()
    assert cov_auto > 2 * cov_one and cov_auto > 0.3


def test_render_oblique_background_and_nearest_wins() -> None:
    # two points on the camera's line of sight: the nearer colour must win regardless of order
    cam_side = np.array([[0.0, -1.0, 0.0], [0.0, 1.0, 0.0]], np.float32)
    for order in ([0, 1], [1, 0]):
        cloud = PointCloud(
            xyz=cam_side[order], rgb=np.array([[255, 0, 0], [0, 255, 0]], np.uint8)[order]
        )
        r = render_oblique(
            cloud,
            target_box=[-1, -1, 1, 1],
            azimuth_deg=180,
            elevation_deg=0,
            size=(33, 33),
            point_size=3,
            background=(1, 2, 3),
        )
        assert r.image[16, 16].tolist() == [255, 0, 0]
        assert r.image[0, 0].tolist() == [1, 2, 3]


def test_render_oblique_bad_input() -> None:
    with pytest.raises(EmptyRegionError, match="no points"):
        render_oblique(
            PointCloud(xyz=np.zeros((0, 3), np.float32)), target_box=[0, 0, 1, 1], azimuth_deg=0
        )
    one = PointCloud(xyz=np.zeros((1, 3), np.float32))
    with pytest.raises(ValueError, match="elevation"):
        render_oblique(one, target_box=[0, 0, 1, 1], azimuth_deg=0, elevation_deg=120)
    with pytest.raises(ValueError, match="target_box"):
        render_oblique(one, target_box=[1, 0, 0, 1], azimuth_deg=0)
    r = render_oblique(one, target_box=[0, 0, 0, 0], azimuth_deg=10)  # a single point, zero box
    assert r.image.any()


def test_render_oblique_same_image_on_the_pool_and_inline() -> None:
    from urbex.scene import oblique

    rng = np.random.default_rng(5)
    n = oblique._PARALLEL_MIN_POINTS + 1000  # enough points for parallel chunks
    xyz = np.c_[rng.uniform(0, 40, (n, 2)), rng.uniform(0, 8, n)].astype(np.float32)
    cloud = PointCloud(xyz=xyz, rgb=rng.integers(0, 255, (n, 3), dtype=np.uint8))
    kw = {"target_box": [5, 5, 35, 35], "azimuth_deg": 200, "size": (64, 48)}
    pooled = render_oblique(cloud, **kw).image
    with oblique._POOL_FREE:  # another render holds the pool: the chunks run in this thread
        inline = render_oblique(cloud, **kw).image
    np.testing.assert_array_equal(pooled, inline)


def _splat_reference(points: PointCloud, render, spacing: float, fixed: int) -> np.ndarray:
    """The z-buffer splat of ``render``'s camera one point after another, in Python."""
    cam = render.camera
    M = np.concatenate([cam.R, (cam.R @ points.offset + cam.t)[:, None]], axis=1)
    fx, fy, cx, cy = cam.K[0, 0], cam.K[1, 1], cam.K[0, 2], cam.K[1, 2]
    h, w = cam.height, cam.width
    depth = np.full((h, w), np.inf, np.float32)
    img = np.zeros((h, w, 3), np.uint8)
    z_one = 1.001 * (fx * spacing) / 1.5
    for i, (x, y, z) in enumerate(points.xyz.astype(np.float64)):
        Z = M[2, 0] * x + M[2, 1] * y + M[2, 2] * z + M[2, 3]
        if Z <= 1e-3:
            continue
        X = M[0, 0] * x + M[0, 1] * y + M[0, 2] * z + M[0, 3]
        Y = M[1, 0] * x + M[1, 1] * y + M[1, 2] * z + M[1, 3]
        u, v = fx * X / Z + cx, fy * Y / Z + cy
        s = fixed if fixed > 0 else 1 if Z > z_one else min(max(int(fx * spacing / Z + 0.5), 1), 9)
        zf = np.float32(Z)
        c0, r0 = int(np.floor(u)) - (s - 1) // 2, int(np.floor(v)) - (s - 1) // 2
        for r in range(max(r0, 0), min(r0 + s, h)):
            for c in range(max(c0, 0), min(c0 + s, w)):
                if zf < depth[r, c]:
                    depth[r, c] = zf
                    img[r, c] = points.rgb[i]
    return img


@pytest.mark.parametrize("point_size", [None, 1, 3])
def test_render_oblique_equals_splatting_point_after_point(point_size) -> None:
    rng = np.random.default_rng(3)
    n = 1500
    xyz = (rng.random((n, 3)) * [20.0, 15.0, 6.0]).astype(np.float32)
    xyz[:, 2] = np.round(xyz[:, 2] * 2) / 2  # ties in depth: the first point keeps the pixel
    pts = PointCloud(xyz=xyz, offset=np.array([100.0, 50.0, 2.0]),
                     rgb=rng.integers(0, 256, (n, 3), dtype=np.uint8))  # fmt: skip
    box = [101.0, 51.0, 119.0, 64.0]
    for az, el in [(30.0, 45.0), (200.0, 10.0), (90.0, 90.0)]:
        r = render_oblique(pts, target_box=box, azimuth_deg=az, elevation_deg=el,
                           size=(96, 64), point_size=point_size)  # fmt: skip
        spacing = 1.5 * np.sqrt((box[2] - box[0]) * (box[3] - box[1]) / n)
        want = _splat_reference(pts, r, spacing, point_size or 0)
        assert r.image.tobytes() == want.tobytes(), (az, el)


def test_fit_distance_equals_testing_every_bisection_step() -> None:
    from urbex.scene.oblique import _fit_distance

    def reference(corners, center, az, el, size, fov):
        radius = max(float(np.max(np.linalg.norm(corners - center, axis=1))), 1e-3)
        w, h = size
        half_v = np.radians(fov) / 2
        half_h = np.arctan(np.tan(half_v) * w / h)
        lo, hi = 0.0, radius / np.sin(min(half_v, half_h)) * 1.01
        for _ in range(40):
            mid = (lo + hi) / 2
            cam = look_at_camera(center, azimuth_deg=az, elevation_deg=el, distance=mid,
                                 size=size, fov_deg=fov)  # fmt: skip
            u, v, d = cam.project(corners)
            ok = bool(np.all(d > 1e-6) and np.all((u >= 0) & (u <= w) & (v >= 0) & (v <= h)))
            hi, lo = (mid, lo) if ok else (hi, mid)
        return hi

    rng = np.random.default_rng(0)
    for k in range(40):
        x0, y0 = rng.uniform(-1e5, 1e5, 2)
        wx, wy, dz = rng.uniform(0.5, 300, 3)
        corners = np.array([[x, y, z] for x in (x0, x0 + wx) for y in (y0, y0 + wy)
                            for z in (0.0, dz)])  # fmt: skip
        center = corners.mean(axis=0)
        az, el = float(rng.uniform(0, 360)), float(rng.choice([0.0, 90.0, rng.uniform(0, 90)]))
        size = [(512, 512), (320, 200), (100, 700)][k % 3]
        fov = float(rng.uniform(5, 170))
        assert _fit_distance(corners, center, az, el, size, fov) == reference(
            corners, center, az, el, size, fov
        )
