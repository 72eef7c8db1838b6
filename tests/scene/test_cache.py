"""Tests for urbex.scene.cache: SceneCache opening, crops, zoom windows, views."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from urbex.config import SceneParams
from urbex.errors import CacheError, EmptyRegionError
from urbex.geometry import Affine
from urbex.pointcloud import PointCloud
from urbex.scene import SceneCache, View, build_scene_cache

P = SceneParams(resolution=0.5, cell_size=4.0, global_view_size=64, hole_fill_iterations=2)


@pytest.fixture
def built(tmp_path: Path, cloud: PointCloud) -> SceneCache:
    build_scene_cache(cloud, tmp_path / "s", P, scene_id="s")
    return SceneCache.open(tmp_path / "s")


def _brute(cloud: PointCloud, box: np.ndarray) -> np.ndarray:
    w = cloud.world_xyz()
    if box.size == 4:
        m = (w[:, 0] >= box[0]) & (w[:, 0] <= box[2]) & (w[:, 1] >= box[1]) & (w[:, 1] <= box[3])
    else:
        m = np.all((w >= box[:3]) & (w <= box[3:]), axis=1)
    return w[m]


def _sorted_rows(a: np.ndarray) -> np.ndarray:
    return a[np.lexsort(a.T[::-1])]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_crop_points_matches_brute_force_mask(tmp_path: Path, make_cloud, seed: int) -> None:
    cloud = make_cloud(seed, n=4000)
    build_scene_cache(cloud, tmp_path / "s", P, scene_id="s")
    sc = SceneCache.open(tmp_path / "s")
    rng = np.random.default_rng(100 + seed)
    lo = np.array([490.0, 190.0, 0.0])
    hi = np.array([550.0, 240.0, 16.0])
    for k in range(30):
        a, b = rng.uniform(lo, hi), rng.uniform(lo, hi)
        box3 = np.r_[np.minimum(a, b), np.maximum(a, b)]
        box = box3 if k % 2 else box3[[0, 1, 3, 4]]
        got = sc.crop_points(box)
        want = _brute(cloud, box)
        assert got.n_points == len(want), (k, box)
        np.testing.assert_allclose(_sorted_rows(got.world_xyz()), _sorted_rows(want), atol=1e-4)
        assert got.rgb is not None and got.semantic is not None and got.instance is not None


def test_crop_points_carries_attributes_of_the_same_points(
    built: SceneCache, cloud: PointCloud
) -> None:
    got = built.crop_points([505, 205, 520, 215])
    key_in = {
        tuple(r)
        for r in np.c_[
            cloud.world_xyz().round(4), cloud.rgb, cloud.semantic, cloud.instance
        ].tolist()
    }
    key_out = {
        tuple(r)
        for r in np.c_[got.world_xyz().round(4), got.rgb, got.semantic, got.instance].tolist()
    }
    assert key_out and key_out <= key_in


@pytest.mark.parametrize(
    "box",
    [[0, 0, 10, 10], [600, 200, 700, 300], [510, 210, 520, 220, 50, 60, 70], [520, 220, 510, 210]],
    ids=["far", "east", "bad-shape", "inverted"],
)
def test_crop_points_outside_scene_is_empty(built: SceneCache, box: list[float]) -> None:
    if len(box) not in (4, 6):
        with pytest.raises(ValueError, match="world_box"):
            built.crop_points(box)
        return
    got = built.crop_points(box)
    assert got.n_points == 0 and got.xyz.shape == (0, 3)


def test_crop_points_touches_only_cells_under_box(built: SceneCache) -> None:
    xyz = built._array("points/xyz.npy")
    reads: list[int] = []

    class Spy:
        def __getitem__(self, key: slice) -> np.ndarray:
            reads.append(key.stop - key.start)
            return xyz[key]

    built._arrays["points/xyz.npy"] = Spy()  # type: ignore[assignment]
    idx = built.crop_indices([510, 210, 514, 213])
    built._arrays["points/xyz.npy"] = xyz
    # the box spans at most 2×2 cells of 4 m; ~4000 pts / (10×8 cells) ≈ 50 per cell
    assert 0 < sum(reads) <= 4 * 120 and len(idx) <= sum(reads)


def test_bev_window_transform_maps_corners_to_world_box(built: SceneCache) -> None:
    box = np.array([505.3, 207.1, 521.9, 219.4])
    v = built.bev_window(box, (300, 200))
    assert v.image.shape == (200, 300, 3) and v.image.dtype == np.uint8
    assert v.transform.pixel_to_world(0, 0) == pytest.approx((box[0], box[3]))
    assert v.transform.pixel_to_world(300, 200) == pytest.approx((box[2], box[1]))
    np.testing.assert_allclose(v.world_box, box)
    np.testing.assert_allclose(v.to_world_box([0, 0, 1000, 1000]), box)


def test_bev_window_native_resolution_equals_raster(built: SceneCache) -> None:
    t = built.bev_transform
    c0, r0 = 10, 6
    box = t.box_to_world([c0, r0, c0 + 40, r0 + 30])
    v = built.bev_window(box, (40, 30))
    rgb = built.bev_layer("rgb")[r0 : r0 + 30, c0 : c0 + 40]
    valid = ~np.isnan(built.bev_layer("z_max")[r0 : r0 + 30, c0 : c0 + 40])
    np.testing.assert_array_equal(v.image[valid], rgb[valid])
    assert (v.image[~valid] == 0).all()


def test_bev_window_downsample_is_area_average(tmp_path: Path) -> None:
    xs = np.arange(0, 64, dtype=np.float32) + 0.5
    xx, yy = np.meshgrid(xs, xs)
    xyz = np.c_[xx.ravel(), yy.ravel(), np.zeros(xx.size)].astype(np.float32)
    white = (np.floor(xyz[:, 0]).astype(int) + np.floor(xyz[:, 1]).astype(int)) % 2 == 0
    rgb = np.where(white[:, None], 255, 0).astype(np.uint8).repeat(3, axis=1)
    params = SceneParams(resolution=1.0, cell_size=8.0, global_view_size=64, hole_fill_iterations=0)
    build_scene_cache(PointCloud(xyz=xyz, rgb=rgb), tmp_path / "c", params, scene_id="c")
    v = SceneCache.open(tmp_path / "c").bev_window([0.5, 0.5, 60.5, 60.5], (15, 15))
    np.testing.assert_allclose(v.image.astype(float), 127.5, atol=1)


def test_bev_window_outside_scene_is_black(built: SceneCache) -> None:
    b = built.bounds
    v = built.bev_window([b[3] + 10, b[4] + 10, b[3] + 30, b[4] + 30], (32, 32))
    assert (v.image == 0).all()
    half = built.bev_window([b[0] - 20, b[1], b[0] + 20, b[4]], (40, 20))
    assert (half.image[:, :19] == 0).all() and half.image[:, 21:].any()


def test_bev_window_bad_arguments_raise_value_error(built: SceneCache) -> None:
    with pytest.raises(ValueError, match="x_min < x_max"):
        built.bev_window([510, 210, 510, 220], (10, 10))
    with pytest.raises(ValueError, match="out_size"):
        built.bev_window([510, 210, 520, 220], (0, 10))


def test_global_view_covers_scene(built: SceneCache) -> None:
    g = built.global_view()
    assert max(g.image.shape[:2]) == 64
    b = built.bounds
    assert g.world_box[0] == pytest.approx(b[0]) and g.world_box[3] == pytest.approx(b[4])
    assert g.world_box[2] >= b[3] - 1e-6 and g.world_box[1] <= b[1] + 1e-6


def test_view_agent_box_round_trip() -> None:
    v = View(
        image=np.zeros((768, 1024, 3), np.uint8),
        transform=Affine(0.05, 0, 100.0, 0, -0.04, 300.0),
        world_box=np.array([100.0, 269.28, 151.2, 300.0]),
    )
    b = np.array([120.0, 35.0, 640.0, 990.0])
    np.testing.assert_allclose(v.from_world_box(v.to_world_box(b)), b, atol=1e-9)
    wb = v.to_world_box([0, 0, 1000, 1000])
    np.testing.assert_allclose(wb, v.world_box, atol=1e-9)


def test_open_missing_or_incomplete_cache_raises(tmp_path: Path, built: SceneCache) -> None:
    with pytest.raises(CacheError, match="not found"):
        SceneCache.open(tmp_path / "nope")
    (tmp_path / "s" / "bev" / "z_min.npy").unlink()
    with pytest.raises(CacheError, match="z_min"):
        SceneCache.open(tmp_path / "s")
    shutil.rmtree(tmp_path / "s" / "bev")
    (tmp_path / "s" / "meta.json").write_text("{")
    with pytest.raises(CacheError, match="JSON"):
        SceneCache.open(tmp_path / "s")


def test_bev_layer_unknown_name_raises(built: SceneCache) -> None:
    with pytest.raises(ValueError, match="z_max"):
        built.bev_layer("height")
    assert built.bev_layer("semantic").dtype == np.int16


def test_render_oblique_empty_region_raises_readable_error(built: SceneCache) -> None:
    with pytest.raises(
        EmptyRegionError, match="no points under that box; pick a region with content"
    ):
        built.render_oblique([0, 0, 10, 10], azimuth_deg=90)
    r = built.render_oblique([505, 205, 525, 225], azimuth_deg=90, size=(64, 48))
    assert r.image.shape == (48, 64, 3) and r.image.any()


def test_bev_window_same_image_on_the_pool_and_inline(built: SceneCache) -> None:
    from urbex.scene import oblique

    b = built.bounds
    box = [b[0] + 1.3, b[1] + 2.1, b[0] + 31.7, b[1] + 25.9]
    pooled = built.bev_window(box, (320, 256)).image  # ≥ 2**16 px: split in row bands
    with oblique._POOL_FREE:  # another render holds the pool: the bands run in this thread
        inline = built.bev_window(box, (320, 256)).image
    np.testing.assert_array_equal(pooled, inline)


@pytest.mark.parametrize("seed", [0, 1])
def test_count_instance_points_equals_counting_the_crop(tmp_path: Path, make_cloud, seed) -> None:
    # boxes holding an instance, cutting it, missing it, 2D and 3D, edges on its points
    cloud = make_cloud(seed, n=4000)
    build_scene_cache(cloud, tmp_path / "s", P, scene_id="s")
    sc = SceneCache.open(tmp_path / "s")
    rng = np.random.default_rng(seed)
    inst = sc.instances
    for k in range(60):
        row = inst.row(int(rng.integers(inst.height)), named=True)
        oid = int(row["object_id"])
        lo = np.array([row["x_min"], row["y_min"], row["z_min"]])
        hi = np.array([row["x_max"], row["y_max"], row["z_max"]])
        box3 = np.r_[lo - rng.uniform(-5, 5, 3), hi + rng.uniform(-5, 5, 3)]
        if k % 4 == 0:
            box3 = np.r_[lo, hi]  # exactly the table's box: every edge on a point
        box3 = np.r_[np.minimum(box3[:3], box3[3:]), np.maximum(box3[:3], box3[3:])]
        box = box3 if k % 2 else box3[[0, 1, 3, 4]]
        crop = sc.crop_points(box)
        assert sc.count_instance_points(oid, box) == int(np.count_nonzero(crop.instance == oid))
    assert sc.count_instance_points(999, [490, 190, 550, 240]) == 0  # no point has this id
    assert sc.count_instance_points(int(inst["object_id"][0]), [0, 0, 1, 1]) == 0


def test_count_instance_points_without_instance_ids_is_none(tmp_path: Path, cloud) -> None:
    bare = PointCloud(xyz=cloud.xyz, offset=cloud.offset, rgb=cloud.rgb, source="test")
    build_scene_cache(bare, tmp_path / "s", P, scene_id="s")
    assert SceneCache.open(tmp_path / "s").count_instance_points(1, [0, 0, 1e4, 1e4]) is None
