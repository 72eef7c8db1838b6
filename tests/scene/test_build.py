"""Tests for urbex.scene.build: rasters, hashing, atomic rebuilds, bad input."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from urbex.config import SceneParams
from urbex.errors import CacheError, PointCloudFormatError, StaleCacheError
from urbex.layout import AssetLayout
from urbex.pointcloud import PointCloud
from urbex.scene import SceneCache, build_scene_cache, cache_is_fresh, content_hash
from urbex.scene import raster as raster_mod

P = SceneParams(resolution=0.5, cell_size=4.0, global_view_size=64, hole_fill_iterations=2)


@dataclasses.dataclass(frozen=True)
class _Box:  # stand-in for urbex.io.cityrefer.BoxRecord (same attribute names)
    object_id: str
    object_name: str
    landmark: str
    instance_id: int


def _pixel(sc: SceneCache, x: float, y: float) -> tuple[int, int]:
    col, row = sc.bev_transform.world_to_pixel(x, y)
    return int(np.floor(row)), int(np.floor(col))


def test_bev_transform_pixel_world_round_trip(tmp_path: Path, cloud: PointCloud) -> None:
    build_scene_cache(cloud, tmp_path / "s", P, scene_id="s")
    sc = SceneCache.open(tmp_path / "s")
    h, w = sc.bev_shape
    t = sc.bev_transform
    cols = np.array([0.5, w - 0.5, 3.25])
    rows = np.array([0.5, h - 0.5, 7.75])
    x, y = t.pixel_to_world(cols, rows)
    c2, r2 = t.world_to_pixel(x, y)
    np.testing.assert_allclose(c2, cols, atol=1e-9)
    np.testing.assert_allclose(r2, rows, atol=1e-9)
    # GDAL convention: centre of pixel (0, 0) is x_min + r/2, y_max - r/2
    b = sc.bounds
    assert t.pixel_to_world(0.5, 0.5) == pytest.approx((b[0] + 0.25, b[4] - 0.25))


def test_bev_highest_point_wins_colour_height_class_instance(tmp_path: Path, make_cloud) -> None:
    base = make_cloud(1, n=2000)
    # three points stacked in one pixel-sized column at world (510.1, 210.1); the middle one is highest
    extra = np.array([[10.1, 10.1, 2.0], [10.1, 10.1, 25.0], [10.12, 10.08, 1.0]], np.float32)
    cloud = PointCloud(
        xyz=np.vstack([base.xyz, extra]),
        offset=base.offset,
        rgb=np.vstack([base.rgb, [[1, 2, 3], [250, 7, 9], [4, 5, 6]]]).astype(np.uint8),
        semantic=np.concatenate([base.semantic, [3, 11, 4]]).astype(np.int32),
        instance=np.concatenate([base.instance, [77, 88, 99]]).astype(np.int32),
    )
    build_scene_cache(cloud, tmp_path / "s", P, scene_id="s")
    sc = SceneCache.open(tmp_path / "s")
    r, c = _pixel(sc, 510.1, 210.1)
    assert sc.bev_layer("rgb")[r, c].tolist() == [250, 7, 9]
    assert sc.bev_layer("z_max")[r, c] == pytest.approx(25.0 + 3.0)  # world metres
    assert sc.bev_layer("semantic")[r, c] == 11
    assert sc.bev_layer("instance")[r, c] == 88
    # z_min is the lowest point of that pixel (the random points may be lower still)
    assert sc.bev_layer("z_min")[r, c] <= 1.0 + 3.0 + 1e-5
    assert not sc.bev_layer("filled")[r, c]


def test_bev_hole_fill_takes_highest_neighbour(tmp_path: Path) -> None:
    # a 5x5 grid of points at pixel centres (r = 1 m) with the centre missing
    g = np.arange(5, dtype=np.float32) + 0.5
    xx, yy = np.meshgrid(g, g)
    keep = ~((xx == 2.5) & (yy == 2.5))
    xy = np.c_[xx[keep], yy[keep]]
    z = np.zeros(len(xy), np.float32)
    z[(xy[:, 0] == 3.5) & (xy[:, 1] == 2.5)] = 9.0  # east neighbour is the highest
    rgb = np.zeros((len(xy), 3), np.uint8)
    rgb[z == 9.0] = [10, 20, 30]
    cloud = PointCloud(xyz=np.c_[xy, z].astype(np.float32), rgb=rgb)
    # add corners so that the extent is exactly 0..5
    params = SceneParams(resolution=1.0, cell_size=2.0, global_view_size=64, hole_fill_iterations=1)
    build_scene_cache(cloud, tmp_path / "a", params, scene_id="a")
    sc = SceneCache.open(tmp_path / "a")
    r, c = _pixel(sc, 2.5, 2.5)
    assert sc.bev_layer("filled")[r, c]
    assert sc.bev_layer("z_max")[r, c] == pytest.approx(9.0)
    assert sc.bev_layer("rgb")[r, c].tolist() == [10, 20, 30]
    assert int(sc.bev_layer("filled")[...].sum()) == 1
    no_fill = params.model_copy(update={"hole_fill_iterations": 0})
    build_scene_cache(cloud, tmp_path / "b", no_fill, scene_id="b")
    sc0 = SceneCache.open(tmp_path / "b")
    assert np.isnan(sc0.bev_layer("z_max")[r, c])
    assert sc0.bev_layer("instance")[r, c] == -1


def test_bev_bands_match_single_band(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make_cloud
) -> None:
    cloud = make_cloud(2, n=3000, extent=(30.0, 40.0, 5.0))  # sparse: holes everywhere
    params = SceneParams(
        resolution=0.25, cell_size=3.0, global_view_size=70, hole_fill_iterations=3
    )
    build_scene_cache(cloud, tmp_path / "one", params, scene_id="x")
    monkeypatch.setattr(raster_mod, "BAND_PIXELS", 1)  # → 8-row bands
    build_scene_cache(cloud, tmp_path / "many", params, scene_id="x")
    for rel in [
        "bev/rgb.npy",
        "bev/z_max.npy",
        "bev/z_min.npy",
        "bev/semantic.npy",
        "bev/instance.npy",
        "bev/filled.npy",
        "global_view.png",
    ]:
        assert (tmp_path / "one" / rel).read_bytes() == (tmp_path / "many" / rel).read_bytes(), rel


def test_bev_pixels_with_points_all_covered(tmp_path: Path, cloud: PointCloud) -> None:
    build_scene_cache(cloud, tmp_path / "s", P, scene_id="s")
    sc = SceneCache.open(tmp_path / "s")
    w = cloud.world_xyz()
    col, row = sc.bev_transform.world_to_pixel(w[:, 0], w[:, 1])
    h, wd = sc.bev_shape
    r = np.clip(np.floor(row).astype(int), 0, h - 1)
    c = np.clip(np.floor(col).astype(int), 0, wd - 1)
    zmax = sc.bev_layer("z_max")
    assert not np.isnan(zmax[r, c]).any()
    # z_max of every pixel ≥ every point in it; equal to the max (brute force)
    brute = np.full((h, wd), -np.inf)
    np.maximum.at(brute, (r, c), w[:, 2])
    has = np.isfinite(brute)
    np.testing.assert_allclose(zmax[has], brute[has], atol=1e-4)


def test_build_rebuild_gives_identical_bytes(tmp_path: Path, cloud: PointCloud) -> None:
    """Every versioned file of a rebuild is byte-identical (meta.json and the scenes row too);
    the build's seconds and the source's path are in the unversioned timings/build.json."""
    boxes = [_Box("3", "Car", "Blue Garage", 3)]
    cloud_a = dataclasses.replace(cloud, source=str(tmp_path / "here" / "s.ply"))
    cloud_b = dataclasses.replace(cloud, source=str(tmp_path / "elsewhere" / "s.ply"))
    build_scene_cache(cloud_a, tmp_path / "a", P, scene_id="s", boxes=boxes)
    build_scene_cache(cloud_b, tmp_path / "b", P, scene_id="s", boxes=boxes)
    files = sorted(
        p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file()
    )
    assert Path("instances.parquet") in files and Path("meta.json") in files
    assert Path("scene.parquet") in files and Path("points/xyz.npy") in files
    lay = AssetLayout(tmp_path)
    versioned = [rel for rel in files if not lay.unversioned(tmp_path / "scenes" / "s" / rel)]
    assert versioned == [rel for rel in files if rel.parts[0] != "timings"]
    for rel in versioned:
        assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes(), rel
    timing = json.loads((tmp_path / "b" / "timings" / "build.json").read_text())
    assert timing["source"] == cloud_b.source and timing["build_seconds"] >= 0


def test_build_reuses_fresh_cache_unless_forced(tmp_path: Path, cloud: PointCloud) -> None:
    m1 = build_scene_cache(cloud, tmp_path / "s", P, scene_id="s")
    stamp = (tmp_path / "s" / "points" / "xyz.npy").stat().st_mtime_ns
    m2 = build_scene_cache(cloud, tmp_path / "s", P, scene_id="s")
    assert m2 == m1
    assert (tmp_path / "s" / "points" / "xyz.npy").stat().st_mtime_ns == stamp
    build_scene_cache(cloud, tmp_path / "s", P, scene_id="s", force=True)
    assert cache_is_fresh(tmp_path / "s", m1.content_hash)
    leftovers = [p.name for p in tmp_path.iterdir() if p.name != "s"]
    assert leftovers == []


def test_build_changed_param_invalidates_cache(tmp_path: Path, cloud: PointCloud) -> None:
    m1 = build_scene_cache(cloud, tmp_path / "s", P, scene_id="s")
    p2 = P.model_copy(update={"resolution": 0.25})
    h2 = content_hash(cloud, p2)
    assert h2 != m1.content_hash
    assert content_hash(cloud, P, "files-v2") != m1.content_hash
    assert not cache_is_fresh(tmp_path / "s", h2)
    with pytest.raises(StaleCacheError, match="rebuild"):
        SceneCache.open(tmp_path / "s", expected_hash=h2)
    m2 = build_scene_cache(cloud, tmp_path / "s", p2, scene_id="s")
    assert m2.content_hash == h2 and m2.bev_width > m1.bev_width
    with pytest.raises(StaleCacheError):
        SceneCache.open(tmp_path / "s", expected_hash=m1.content_hash)


def test_build_nonfinite_points_dropped_and_counted(tmp_path: Path, make_cloud) -> None:
    c = make_cloud(3, n=1000)
    xyz = c.xyz.copy()
    xyz[[1, 5, 9], [0, 1, 2]] = [np.nan, np.inf, -np.inf]
    bad = dataclasses.replace(c, xyz=xyz)
    with pytest.warns(RuntimeWarning, match="dropped 3 of 1000"):
        m = build_scene_cache(bad, tmp_path / "s", P, scene_id="s")
    assert m.n_points == 997 and m.n_dropped_nonfinite == 3
    sc = SceneCache.open(tmp_path / "s")
    assert np.isfinite(sc.crop_points(sc.bounds).xyz).all()
    assert sum(m.class_histogram.values()) == 997


@pytest.mark.parametrize("kind", ["empty", "all_nan"])
def test_build_empty_cloud_raises_cache_error(tmp_path: Path, kind: str) -> None:
    xyz = np.zeros((0, 3), np.float32) if kind == "empty" else np.full((4, 3), np.nan, np.float32)
    with pytest.raises(CacheError, match=r"empty|NaN"):
        build_scene_cache(PointCloud(xyz=xyz), tmp_path / "s", P, scene_id="s")
    assert not any(tmp_path.iterdir())


def test_build_single_point_gives_one_pixel_raster(tmp_path: Path) -> None:
    c = PointCloud(xyz=np.array([[3.3, 4.4, 5.5]]), rgb=np.array([[9, 8, 7]], np.uint8))
    m = build_scene_cache(c, tmp_path / "s", P, scene_id="s")
    assert (m.bev_width, m.bev_height) == (1, 1)
    sc = SceneCache.open(tmp_path / "s")
    assert sc.bev_layer("rgb")[0, 0].tolist() == [9, 8, 7]
    assert sc.bev_layer("z_max")[0, 0] == pytest.approx(5.5)
    assert sc.global_view().image.shape == (64, 64, 3)
    assert sc.crop_points([3, 4, 4, 5]).n_points == 1


def test_build_zero_extent_axis_gives_one_pixel_wide_raster(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    xyz = np.c_[np.full(500, 7.0), rng.random(500) * 20, rng.random(500)].astype(np.float32)
    m = build_scene_cache(PointCloud(xyz=xyz), tmp_path / "s", P, scene_id="s")
    assert m.bev_width == 1 and m.bev_height == 40
    sc = SceneCache.open(tmp_path / "s")
    assert sc.crop_points([6.9, 0, 7.1, 20]).n_points == 500
    gv = sc.global_view().image
    assert gv.shape[0] == 64 and gv.shape[1] >= 1
    assert (sc.bev_layer("rgb")[..., 0] > 0).any()  # grey ramp by height without colours


def test_build_instance_table(tmp_path: Path) -> None:
    xyz = np.array([[0, 0, 0], [2, 1, 3], [1, 1, 1], [5, 5, 5], [9, 9, 9]], np.float32)
    c = PointCloud(
        xyz=xyz,
        offset=np.array([100.0, 0.0, 0.0]),
        rgb=np.array([[10, 0, 0], [20, 0, 0], [30, 0, 0], [0, 0, 0], [0, 0, 0]], np.uint8),
        semantic=np.array([9, 9, 2, 2, 0], np.int32),
        instance=np.array([4, 4, 4, 11, -1], np.int32),
    )
    boxes = [_Box("4", "Car", "Rover Garage", 4), _Box("not-an-int", "Building", "X", 11)]
    build_scene_cache(c, tmp_path / "s", P, scene_id="s", boxes=boxes)
    df = SceneCache.open(tmp_path / "s").instances
    assert df["object_id"].to_list() == ["4", "11"]
    row = df.row(0, named=True)
    assert (
        row["class_id"] == 9
        and row["class_name"] == "Car"
        and row["landmark_name"] == "Rover Garage"
    )
    assert (row["x_min"], row["x_max"], row["z_max"]) == (100.0, 102.0, 3.0)
    assert (row["cx"], row["dx"], row["n_points"], row["mean_r"]) == (101.0, 2.0, 3, 20.0)
    row11 = df.row(1, named=True)
    assert row11["class_name"] == "Building" and row11["landmark_name"] == "X"  # by instance_id
    assert df["scene_id"].unique().to_list() == ["s"]


def test_build_global_view_is_area_averaged(tmp_path: Path) -> None:
    # stripes of 1-px red/blue columns: an area average is purple, nearest would be red or blue
    xs = np.arange(0, 128, dtype=np.float32) + 0.5
    xx, yy = np.meshgrid(xs, xs)
    xyz = np.c_[xx.ravel(), yy.ravel(), np.zeros(xx.size)].astype(np.float32)
    red = (np.floor(xyz[:, 0]).astype(int) % 2) == 0
    rgb = np.where(red[:, None], [[255, 0, 0]], [[0, 0, 255]]).astype(np.uint8)
    params = SceneParams(
        resolution=1.0, cell_size=16.0, global_view_size=64, hole_fill_iterations=0
    )
    build_scene_cache(PointCloud(xyz=xyz, rgb=rgb), tmp_path / "s", params, scene_id="s")
    v = SceneCache.open(tmp_path / "s").global_view()
    assert v.image.shape == (64, 64, 3)
    np.testing.assert_allclose(v.image[5:-5, 5:-5, 0], 128, atol=2)
    np.testing.assert_allclose(v.image[5:-5, 5:-5, 2], 128, atol=2)


def test_build_cog_export_writes_georeferenced_tiff(tmp_path: Path, cloud: PointCloud) -> None:
    rasterio = pytest.importorskip("rasterio")
    params = P.model_copy(update={"cog_export": True})
    c = dataclasses.replace(cloud, crs="EPSG:27700")
    m = build_scene_cache(c, tmp_path / "s", params, scene_id="s")
    with rasterio.open(tmp_path / "s" / "bev_cog.tif") as ds:
        assert (ds.width, ds.height, ds.count) == (m.bev_width, m.bev_height, 3)
        assert ds.transform.c == pytest.approx(m.bev_transform[2])
        assert ds.crs.to_epsg() == 27700
        rgb = np.load(tmp_path / "s" / "bev" / "rgb.npy")
        np.testing.assert_array_equal(np.moveaxis(ds.read(), 0, -1), rgb)


def test_build_refuses_a_huge_sparse_bev_with_a_units_hint(tmp_path: Path) -> None:
    # two points 5 km apart (e.g. feet read as metres): a 2.5 Gpx raster must not be attempted
    xyz = np.array([[0.0, 0.0, 0.0], [5000.0, 5000.0, 1.0]], np.float32)
    out = tmp_path / "huge"
    with pytest.raises(CacheError, match=r"scene\.resolution") as exc:
        build_scene_cache(PointCloud(xyz=xyz), out, SceneParams(), scene_id="huge")
    assert "Mpx" in str(exc.value) and "units" in str(exc.value)
    assert not out.exists()
    coarse = SceneParams(resolution=5.0)
    meta = build_scene_cache(PointCloud(xyz=xyz), out, coarse, scene_id="huge")
    assert meta.bev_width == 1000


# -- issue 11: a corrupt cloud is blamed on its points, not on scene.cell_size ----------------


def test_build_single_far_outlier_names_the_source_not_cell_size(
    tmp_path: Path, make_cloud
) -> None:
    # one point at (1e7, 1e7) used to be reported as "... cells (max ...); raise scene.cell_size"
    c = make_cloud(2, n=3000)
    xyz = c.xyz.copy()
    xyz[123, :2] = 1e7
    bad = dataclasses.replace(c, xyz=xyz, source="/data/block.ply")
    with pytest.raises(PointCloudFormatError, match=r"1 far outlier point.*row 123") as e:
        build_scene_cache(bad, tmp_path / "s", P, scene_id="s")
    msg = str(e.value)
    assert msg.startswith("/data/block.ply: field 'x'") and "cell_size" not in msg
    assert "2999 of 3000 points lie within" in msg
    assert list(tmp_path.iterdir()) == []  # no cache, no staging folder


def test_build_absurd_coordinates_raise_instead_of_overflow(tmp_path: Path, make_cloud) -> None:
    # float32 values near 3e38 (a random PLY body) used to end in
    # "OverflowError: cannot convert float infinity to integer"
    c = make_cloud(4, n=500)
    xyz = c.xyz.copy()
    xyz[[10, 11], 1] = [3e38, -3e38]
    bad = dataclasses.replace(c, xyz=xyz, source=None)
    with pytest.raises(PointCloudFormatError, match=r"2 of 500 points have \|y\| beyond") as e:
        build_scene_cache(bad, tmp_path / "s", P, scene_id="s")
    assert e.value.field == "y" and "in-memory cloud" in str(e.value)


def test_build_large_but_dense_scene_still_blames_cell_size(tmp_path: Path) -> None:
    # no outliers: a genuinely huge extent keeps the parameter message
    rng = np.random.default_rng(0)
    xyz = rng.random((4000, 3)) * np.array([4e5, 4e5, 10.0])
    big = PointCloud(xyz=xyz, offset=np.zeros(3), source="big.las")
    with pytest.raises(CacheError, match=r"scene\.(cell_size|resolution)"):
        build_scene_cache(big, tmp_path / "s", P, scene_id="s")


def test_build_side_task_error_propagates_and_leaves_no_staging_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cloud: PointCloud
) -> None:
    from urbex.scene import build as build_mod

    def broken(**kwargs):  # type: ignore[no-untyped-def]
        raise RuntimeError("instance table exploded")

    monkeypatch.setattr(build_mod, "instance_table", broken)
    with pytest.raises(RuntimeError, match="exploded"):
        build_scene_cache(cloud, tmp_path / "s", P, scene_id="s")
    assert list(tmp_path.iterdir()) == []  # neither the cache nor a staging sibling


def test_build_fresh_cache_check_waits_for_the_hash_only_when_a_meta_exists(
    tmp_path: Path, cloud: PointCloud
) -> None:
    a = build_scene_cache(cloud, tmp_path / "s", P, scene_id="s")
    timing = (tmp_path / "s" / "timings" / "build.json").read_bytes()
    b = build_scene_cache(cloud, tmp_path / "s", P, scene_id="s")  # fresh: reused
    assert a.content_hash == b.content_hash == content_hash(cloud, P)
    assert (tmp_path / "s" / "timings" / "build.json").read_bytes() == timing  # not rebuilt
