"""Writing a scene cache's rasters: the banded BEV rasterization, PNG and COG exports, ``.npy``.

The BEV frame is GDAL's (:class:`urbex.geometry.Affine`): ``X = x_min + (col + 0.5)·r``,
``Y = y_max − (row + 0.5)·r``, ``r`` metres per pixel; every layer is written as a ``.npy``
stream band by band (``BEV_LAYERS``: dtype per layer), so a 10,000-pixel mosaic is never held
in memory twice. Called by :func:`urbex.scene.build.build_scene_cache` only.
"""

from __future__ import annotations

import math
import os
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
from numpy.typing import NDArray
from PIL import Image

from urbex.errors import CacheError
from urbex.scene import _kernels as K
from urbex.scene import _resample as R
from urbex.scene.meta import BEV_LAYERS, CacheMeta

__all__ = ["BAND_PIXELS", "export_cog", "npy_stream", "rasterize", "save_npy", "write_png"]

#: Pixels per raster band (~44 MB of band layers + fill scratch; three sets in flight). 2 M, not
#: 3 M: the 25 M-point build's peak RSS 2.09× → 1.96× the raw arrays at the same build time
#: (scatter 4 % slower: more cell rows straddle two bands; benchmarks/bench_scene.py).
BAND_PIXELS = 2_000_000
_RASTER_THREADS = 2  # bands rasterised concurrently (+ one being written)


def npy_stream(path: Path, dtype: np.dtype, shape: tuple[int, ...]) -> BinaryIO:
    f = open(path, "wb")  # closed by the caller
    np.lib.format.write_array_header_1_0(
        f, {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False, "shape": shape}
    )
    return f


def save_npy(path: Path, arr: NDArray) -> None:
    with open(path, "wb") as f:
        np.lib.format.write_array(f, np.ascontiguousarray(arr), allow_pickle=False)


def rasterize(
    bev_dir: Path,
    xyz: NDArray[np.float32],
    rgb: NDArray[np.uint8],
    has_rgb: bool,
    sem: NDArray[np.int32],
    has_sem: bool,
    inst: NDArray[np.int32],
    has_inst: bool,
    offsets: NDArray[np.int64],
    *,
    grid: tuple[float, float, float, int, int],
    bev: tuple[float, float, float, int, int],
    zrange: tuple[float, float],
    iterations: int,
    global_shape: tuple[int, int],
    z_origin: float,
) -> NDArray[np.uint8]:
    """Stream the full-resolution BEV layers to ``bev_dir`` band by band; return the global view.

    Bands are rasterised by :func:`_kernels.rasterize_band` on a small thread pool (the kernels
    release the GIL) while this thread, in band order, adds each finished band to the global
    view and writes it out, so the output does not depend on the thread count. The band
    buffers (one set per band in flight) are reused band after band: fresh memory would be
    page-faulted, and zeroed by the kernel, for every band.
    """
    gx0, gy0, cs, ncx, ncy = grid
    bx0, by1, res, width, height = bev
    gh, gw = global_shape
    acc = np.zeros((gh, gw, 3), np.float64)
    wsum = np.zeros((gh, gw), np.float64)
    sy, sx = height / gh, width / gw
    band = max(8, BAND_PIXELS // width)
    halo = max(0, iterations)

    idx_t = np.int32 if len(xyz) < 2**31 else np.int64
    rows_max = min(height, band + 2 * halo)
    spare: list[tuple[NDArray[Any], ...]] = []  # band buffers free for reuse

    def buffers() -> tuple[NDArray[Any], ...]:
        """winner, zmax, zmin, rgb, semantic, instance, filled for ``rows_max`` rows."""
        if spare:
            return spare.pop()
        shape = (rows_max, width)
        return (
            np.empty(shape, idx_t),
            *(np.empty(shape, BEV_LAYERS[k]) for k in ("z_max", "z_min")),
            np.empty((*shape, 3), BEV_LAYERS["rgb"]),
            *(np.empty(shape, BEV_LAYERS[k]) for k in ("semantic", "instance", "filled")),
        )

    def run_band(a: int, b: int, bufs: tuple[NDArray[Any], ...]) -> tuple[NDArray[Any], ...]:
        ha, hb = max(0, a - halo), min(height, b + halo)
        # cache-frame y range of rows [ha, hb), widened by a hair for rounding safety
        eps = 1e-3 * res
        y_top = by1 - ha * res + eps
        y_bot = by1 - hb * res - eps
        cy_lo = max(0, math.floor((y_bot - gy0) / cs))
        cy_hi = min(ncy - 1, math.floor((y_top - gy0) / cs))
        layers = tuple(buf[: hb - ha] for buf in bufs)
        K.rasterize_band(
            xyz, offsets, gx0, gy0, cs, ncx, cy_lo, cy_hi, rgb, has_rgb, sem, has_sem, inst,
            has_inst, bx0, by1, res, width, height, ha, zrange[0], zrange[1], iterations,
            z_origin, *layers,
        )  # fmt: skip
        core = slice(a - ha, a - ha + (b - a))
        return tuple(layer[core] for layer in layers[1:])  # zmax, zmin, rgb, sem, inst, filled

    files = {
        name: npy_stream(
            bev_dir / f"{name}.npy", dtype, (height, width, 3) if name == "rgb" else (height, width)
        )
        for name, dtype in BEV_LAYERS.items()
    }
    starts = list(range(0, height, band))
    workers = max(1, min(_RASTER_THREADS, os.cpu_count() or 1))
    try:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            pending: deque[tuple[int, tuple[NDArray[Any], ...], Future[Any]]] = deque()
            nxt = 0
            while nxt < len(starts) or pending:
                while nxt < len(starts) and len(pending) < workers + 1:
                    a = starts[nxt]
                    b = min(height, a + band)
                    bufs = buffers()
                    pending.append((a, bufs, pool.submit(run_band, a, b, bufs)))
                    nxt += 1
                a, bufs, fut = pending.popleft()
                zmax, zmin, out_rgb, out_sem, out_inst, filled = fut.result()
                for name, arr in (
                    ("rgb", out_rgb),
                    ("z_max", zmax),
                    ("z_min", zmin),
                    ("semantic", out_sem),
                    ("instance", out_inst),
                    ("filled", filled),
                ):
                    files[name].write(np.ascontiguousarray(arr).data)
                R.area_accumulate(out_rgb, zmax, a, 0, 0.0, 0.0, sy, sx, acc, wsum)
                del zmax, zmin, out_rgb, out_sem, out_inst, filled, fut
                spare.append(bufs)
    finally:
        for f in files.values():
            f.close()
    return R.area_finish(acc, wsum)


def write_png(path: Path, image: NDArray[np.uint8]) -> None:
    Image.fromarray(image, mode="RGB").save(path, format="PNG", optimize=False, compress_level=6)


def export_cog(cache_dir: Path, meta: CacheMeta) -> None:
    """Write ``bev_cog.tif``: the BEV RGB as a Cloud-Optimized GeoTIFF (needs rasterio)."""
    try:
        import rasterio
        from rasterio.shutil import copy as rio_copy
        from rasterio.transform import Affine as RioAffine
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise CacheError(
            "scene.cog_export is true but rasterio is not installed; `pip install rasterio` "
            "or set scene.cog_export: false",
            field="scene.cog_export",
        ) from exc
    rgb = np.load(cache_dir / "bev" / "rgb.npy", mmap_mode="r")
    t = meta.bev_affine
    profile: dict[str, Any] = {
        "driver": "GTiff",
        "width": meta.bev_width,
        "height": meta.bev_height,
        "count": 3,
        "dtype": "uint8",
        "transform": RioAffine(t.a, t.b, t.c, t.d, t.e, t.f),
        "tiled": True,
        "blockxsize": 512,
        "blockysize": 512,
    }
    if meta.crs:
        profile["crs"] = rasterio.crs.CRS.from_user_input(meta.crs)
    plain = cache_dir / "bev_plain.tif"
    with rasterio.open(plain, "w", **profile) as dst:
        step = 1024
        for r0 in range(0, meta.bev_height, step):
            r1 = min(meta.bev_height, r0 + step)
            block = np.moveaxis(np.asarray(rgb[r0:r1]), -1, 0)
            dst.write(block, window=((r0, r1), (0, meta.bev_width)))
    rio_copy(plain, cache_dir / "bev_cog.tif", driver="COG", compress="DEFLATE")
    plain.unlink()
