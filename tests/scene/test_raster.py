"""Raster output helpers: streamed .npy files, PNGs, the COG export.

(The band-by-band rasteriser itself, :func:`urbex.scene.raster.rasterize`, is checked through
``build_scene_cache`` in test_build.py, with bands of one pixel row against one band.)
"""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from tests.fixtures.city import build_city_cache
from urbex.scene.meta import read_meta
from urbex.scene.raster import export_cog, npy_stream, save_npy, write_png


def test_npy_stream_written_row_by_row_loads_as_the_array(tmp_path):
    arr = np.arange(24, dtype=np.float32).reshape(4, 3, 2)
    with npy_stream(tmp_path / "a.npy", arr.dtype, arr.shape) as f:
        for row in arr:
            f.write(row.tobytes())
    back = np.load(tmp_path / "a.npy", mmap_mode="r")
    assert back.dtype == np.float32 and back.shape == (4, 3, 2)
    np.testing.assert_array_equal(back, arr)


def test_save_npy_non_contiguous_array_round_trips(tmp_path):
    arr = np.arange(30, dtype=np.int16).reshape(5, 6)[:, ::2]
    save_npy(tmp_path / "b.npy", arr)
    np.testing.assert_array_equal(np.load(tmp_path / "b.npy"), arr)


def test_save_npy_refuses_object_arrays(tmp_path):
    with pytest.raises(ValueError):
        save_npy(tmp_path / "c.npy", np.array([{"a": 1}], dtype=object))


def test_write_png_keeps_rgb_pixels(tmp_path):
    img = np.random.default_rng(0).integers(0, 256, (7, 5, 3), dtype=np.uint8)
    write_png(tmp_path / "v.png", img)
    with Image.open(tmp_path / "v.png") as im:
        assert im.mode == "RGB" and im.size == (5, 7)
        np.testing.assert_array_equal(np.asarray(im), img)


def test_export_cog_georeferences_the_bev(tmp_path):
    rasterio = pytest.importorskip("rasterio")
    cache, _ = build_city_cache(tmp_path, size=40.0, density=4.0)
    d = tmp_path / cache.scene_id
    meta = read_meta(d)
    export_cog(d, meta)
    assert not (d / "bev_plain.tif").exists()
    with rasterio.open(d / "bev_cog.tif") as src:
        assert (src.width, src.height, src.count) == (meta.bev_width, meta.bev_height, 3)
        t = meta.bev_affine
        assert src.transform.c == pytest.approx(t.c) and src.transform.f == pytest.approx(t.f)
        assert src.transform.a == pytest.approx(meta.resolution)
        np.testing.assert_array_equal(
            np.moveaxis(src.read(), 0, -1), np.load(d / "bev" / "rgb.npy")
        )
