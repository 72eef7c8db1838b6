"""Build a scene cache: spatially sorted points, full-resolution BEV rasters, views, instances.

Frames
------
* **World**: metres, z up; ``world = cloud.xyz + cloud.offset``. All boxes, bounds and
  transforms in ``meta.json`` are world metres.
* **Cache frame**: ``world − meta.origin`` stored as float32 (``points/xyz.npy``); the origin is
  the cloud's offset plus its whole-metre minimum corner, so float32 keeps millimetres.
* **BEV pixels**: GDAL convention, ``X = x_min + (col + 0.5)·r``, ``Y = y_max − (row + 0.5)·r``
  (``meta.bev_transform``). A point at ``x`` lands in ``col = floor((x − x_min)/r)`` clamped to the
  raster, likewise rows from ``y_max`` down.

The BEV is rasterised band by band (a few hundred rows at a time, with a halo of
``hole_fill_iterations`` rows so that filling is exact across bands) and streamed to ``.npy``
files, so memory stays near the size of the point arrays whatever the raster size.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import time
import warnings
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from urbex import __version__
from urbex.atomic import publish_dir, remove_stale, staging_path, write_json_atomic
from urbex.config import SceneParams
from urbex.errors import CacheError, PointCloudFormatError
from urbex.geometry import Affine
from urbex.io._checks import MAX_ABS_COORD
from urbex.layout import GLOBAL_VIEW_FILE, INSTANCES_FILE, META_FILE, PROPOSALS_FILE
from urbex.pointcloud import PointCloud
from urbex.scene import _points as P
from urbex.scene.instances import instance_table, label_histogram, write_parquet_deterministic
from urbex.scene.meta import (
    BEV_LAYERS,
    CACHE_FORMAT_VERSION,
    CacheMeta,
    read_meta,
    write_build_timing,
    write_scene_row,
)
from urbex.scene.proposals import PROPOSALS_VERSION, propose, write_proposals
from urbex.scene.raster import export_cog, rasterize, save_npy, write_png

if TYPE_CHECKING:
    from urbex.io.cityrefer import BoxRecord

__all__ = ["build_scene_cache", "cache_is_fresh", "content_hash", "global_view_shape"]

_MAX_CELLS = 1 << 26
_CORE_QUANTILE = 0.001  # outliers: beyond the 0.1 %..99.9 % range by more than that range
_SAMPLE = 1_000_000  # points the quantiles are estimated from


_PARALLEL_MIN_POINTS = 1_000_000


def _threads(n_points: int) -> int:
    """Threads the point passes run on: the cores (at most 2) for a large cloud, else 1."""
    return max(1, min(2, os.cpu_count() or 1)) if n_points >= _PARALLEL_MIN_POINTS else 1


def _source_error(cloud: PointCloud, scene_id: str, msg: str, axis: str) -> PointCloudFormatError:
    if cloud.source:
        return PointCloudFormatError(f"scene {scene_id!r}: {msg}", path=cloud.source, field=axis)
    return PointCloudFormatError(f"scene {scene_id!r} (in-memory cloud): {msg}", field=axis)


def _check_extent(xyz: NDArray, cloud: PointCloud, lo: NDArray, hi: NDArray, scene_id: str) -> None:
    """Raise :class:`PointCloudFormatError` on absurd coordinates or a few far outliers.

    Both would otherwise surface as a grid "too large for ``scene.cell_size``" (or an overflow)
    although the parameter is fine and the points are at fault. ``lo``/``hi`` are the finite
    bounds of ``xyz`` (cloud frame).
    """
    wlo, whi = lo + cloud.offset, hi + cloud.offset
    for i, axis in enumerate("xyz"):
        worst = max(abs(float(wlo[i])), abs(float(whi[i])))
        if worst > MAX_ABS_COORD:
            col = np.asarray(xyz[:, i], np.float64) + cloud.offset[i]
            far = np.isfinite(col) & (np.abs(col) > MAX_ABS_COORD)
            k = int(np.argmax(far))
            raise _source_error(
                cloud,
                scene_id,
                f"{int(far.sum())} of {cloud.n_points} points have |{axis}| beyond "
                f"{MAX_ABS_COORD:.0e} m (first at row {k}: {col[k]:.6g}); expected world "
                "metres of one city: the file is corrupt or not in metres",
                axis,
            )
    ext = hi - lo
    if max(float(ext[0]), float(ext[1])) <= 10_000.0:  # a city-scale extent: nothing to explain
        return
    step = max(1, len(xyz) // _SAMPLE)
    for i, axis in enumerate("xy"):
        col = np.asarray(xyz[:, i], np.float64)
        sample = col[::step]
        sample = sample[np.isfinite(sample)]
        q_lo, q_hi = np.quantile(sample, [_CORE_QUANTILE, 1.0 - _CORE_QUANTILE])
        core = max(float(q_hi - q_lo), 1.0)
        if float(ext[i]) <= 10.0 * core:
            continue
        far = np.isfinite(col) & ((col < q_lo - core) | (col > q_hi + core))
        k = int(np.argmax(far))
        off = float(cloud.offset[i])
        raise _source_error(
            cloud,
            scene_id,
            f"{axis} spans {lo[i] + off:.6g}..{hi[i] + off:.6g} m, but {len(col) - int(far.sum())} "
            f"of {len(col)} points lie within {q_lo + off:.6g}..{q_hi + off:.6g} m: "
            f"{int(far.sum())} far outlier point(s) (first at row {k}: {axis} = {col[k] + off:.6g}) "
            "would blow up the scene grid; remove them from the file",
            axis,
        )


def content_hash(cloud: PointCloud, params: SceneParams, input_hash: str = "") -> str:
    """sha256 hex digest identifying a cache's inputs.

    Covers ``input_hash`` (the caller's hash of the input files), the bytes of every array of
    ``cloud`` (xyz, offset, rgb, semantic, instance) with their dtypes and shapes, its
    ``class_scheme``/``crs``, the ``SceneParams`` dict and :data:`CACHE_FORMAT_VERSION`.

    Examples
    --------
    >>> c = PointCloud(xyz=np.zeros((2, 3), np.float32))
    >>> content_hash(c, SceneParams()) == content_hash(c, SceneParams())
    True
    >>> content_hash(c, SceneParams()) == content_hash(c, SceneParams(resolution=0.2))
    False
    """
    arrays = hashlib.sha256()
    for name in ("xyz", "offset", "rgb", "semantic", "instance"):
        arr = getattr(cloud, name)
        if arr is None:
            arrays.update(f"{name}:none;".encode())
            continue
        a = np.ascontiguousarray(arr)
        arrays.update(f"{name}:{a.dtype.str}:{a.shape};".encode())
        arrays.update(a.reshape(-1).view(np.uint8).data)
    arrays.update(f"scheme:{cloud.class_scheme};crs:{cloud.crs};".encode())
    h = hashlib.sha256()
    h.update(f"urbex-scene-cache-v{CACHE_FORMAT_VERSION}\n".encode())
    h.update(f"proposals-v{PROPOSALS_VERSION}\n".encode())
    h.update(f"input:{input_hash}\n".encode())
    h.update(f"cloud:{arrays.hexdigest()}\n".encode())
    h.update(("params:" + json.dumps(params.model_dump(mode="json"), sort_keys=True)).encode())
    return h.hexdigest()


def cache_is_fresh(out_dir: str | Path, content_hash: str) -> bool:
    """True when ``out_dir`` holds a complete cache whose ``meta.json`` records ``content_hash``.

    Never raises for a missing or broken cache (returns False).
    """
    out = Path(out_dir)
    try:
        meta = read_meta(out)
    except CacheError:
        return False
    if meta.content_hash != content_hash or meta.format_version != CACHE_FORMAT_VERSION:
        return False
    return all((out / rel).is_file() for rel in _required_files(meta))


def _required_files(meta: CacheMeta) -> list[str]:
    files = ["points/xyz.npy", "points/cell_offsets.npy", GLOBAL_VIEW_FILE, INSTANCES_FILE]
    if meta.n_proposals is not None:
        files.append(PROPOSALS_FILE)
        if meta.has_semantic:
            files.append("points/proposal.npy")
    files += [
        f"points/{n}.npy"
        for n, has in (
            ("rgb", meta.has_rgb),
            ("semantic", meta.has_semantic),
            ("instance", meta.has_instance),
        )
        if has
    ]
    files += [f"bev/{n}.npy" for n in BEV_LAYERS]
    return files


def global_view_shape(width: int, height: int, long_side: int) -> tuple[int, int]:
    """``(width, height)`` of the global view: long side ``long_side``, aspect ratio kept.

    >>> global_view_shape(10000, 5000, 1024)
    (1024, 512)
    >>> global_view_shape(1, 1, 1024)
    (1024, 1024)
    """
    if width >= height:
        return long_side, max(1, round(height * long_side / width))
    return max(1, round(width * long_side / height)), long_side


def build_scene_cache(
    cloud: PointCloud,
    out_dir: Path,
    params: SceneParams,
    *,
    scene_id: str,
    boxes: Sequence[BoxRecord] = (),
    input_hash: str = "",
    force: bool = False,
    progress: bool = False,
) -> CacheMeta:
    """Build (or reuse) the scene cache of ``cloud`` in ``out_dir``.

    The cache is built in a staging sibling (:func:`urbex.atomic.staging_path`) and renamed into
    place, so ``out_dir`` is never half-written; staging siblings left by killed builds of this
    scene are removed first (:func:`urbex.atomic.remove_stale`). If ``out_dir`` already holds a complete cache with
    the same :func:`content_hash`, it is reused (not rebuilt) unless ``force``. See
    :mod:`urbex.scene.meta` for the layout.

    Parameters
    ----------
    cloud : PointCloud
        Any source; world = ``xyz + offset`` (metres). Points with a NaN/inf coordinate are
        dropped, counted in ``meta.n_dropped_nonfinite`` and reported with a warning.
    out_dir : Path
        The cache directory, e.g. ``assets/scenes/<scene_id>``.
    params : SceneParams
        ``resolution`` (BEV m/px), ``cell_size`` (index cell, m), ``global_view_size`` (px),
        ``hole_fill_iterations``, ``cog_export``.
    scene_id : str
    boxes : sequence of BoxRecord
        Optional annotations; matched to instance ids for class and landmark names.
    input_hash : str
        The caller's hash of the input files; part of the content hash.
    force : bool
        Rebuild even if a fresh cache exists.
    progress : bool
        Show a tqdm bar over the build stages.

    Returns
    -------
    CacheMeta
        The (new or reused) cache's metadata.

    Raises
    ------
    CacheError
        The cloud has no finite point, or the grid would be unreasonably large.
    """
    t_start = time.perf_counter()
    out_dir = Path(out_dir)
    if not scene_id:
        raise ValueError("scene_id: expected a non-empty string, got ''")
    if out_dir.parent.is_dir():
        remove_stale(out_dir.parent, name=out_dir.name)  # before the freshness check: restores
    # side tasks (the content hash, writing the points, the instance table) run on threads
    # beside the main line; leaving the block waits for them, whatever happened
    with ThreadPoolExecutor(max_workers=4, thread_name_prefix="urbex-cache") as side:
        hashing = side.submit(content_hash, cloud, params, input_hash)
        if not force and (out_dir / META_FILE).is_file():  # else it cannot be fresh
            if cache_is_fresh(out_dir, hashing.result()):
                return read_meta(out_dir)
        if cloud.n_points == 0:
            raise CacheError(
                f"scene {scene_id!r}: the point cloud is empty (0 points); cannot build a "
                f"cache (source {cloud.source!r})",
                path=out_dir,
            )
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        tmp = staging_path(out_dir)
        try:
            try:
                meta = _build(
                    cloud, tmp, out_dir, params, scene_id, boxes, input_hash, hashing, side,
                    progress, t_start,
                )  # fmt: skip
            finally:  # no side task may still write into the staging folder below
                side.shutdown(wait=True, cancel_futures=True)
            publish_dir(tmp, out_dir)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return meta


def _build(
    cloud: PointCloud,
    tmp: Path,
    out_dir: Path,
    params: SceneParams,
    scene_id: str,
    boxes: Sequence[BoxRecord],
    input_hash: str,
    hashing: Future[str],
    side: ThreadPoolExecutor,
    progress: bool,
    t_start: float,
) -> CacheMeta:
    from tqdm.auto import tqdm

    bar = tqdm(total=5, desc=f"cache {scene_id}", disable=not progress, leave=False)
    (tmp / "points").mkdir(parents=True)
    (tmp / "bev").mkdir()
    xyz_in = cloud.xyz
    if not xyz_in.flags.c_contiguous:
        xyz_in = np.ascontiguousarray(xyz_in)
    threads = _threads(cloud.n_points)
    n_bad, lo, hi = P.finite_bounds(xyz_in, threads)
    n_valid = cloud.n_points - n_bad
    if n_valid == 0:
        raise CacheError(
            f"scene {scene_id!r}: all {cloud.n_points} points have NaN/inf coordinates; "
            "nothing to cache",
            path=out_dir,
        )
    if n_bad:
        warnings.warn(
            f"scene {scene_id!r}: dropped {n_bad} of {cloud.n_points} points with NaN/inf "
            "coordinates",
            RuntimeWarning,
            stacklevel=3,
        )
    _check_extent(xyz_in, cloud, lo, hi, scene_id)
    shift = np.floor(lo)
    origin = cloud.offset + shift
    rel_lo = np.asarray(lo - shift, np.float32).astype(np.float64)
    rel_hi = np.asarray(hi - shift, np.float32).astype(np.float64)
    res = float(params.resolution)
    cs = float(params.cell_size)
    ext = rel_hi - rel_lo
    ncx = max(1, math.ceil(ext[0] / cs))
    ncy = max(1, math.ceil(ext[1] / cs))
    if ncx * ncy > _MAX_CELLS:
        raise CacheError(
            f"scene {scene_id!r}: a {ext[0]:.0f}×{ext[1]:.0f} m scene at cell_size {cs} m needs "
            f"{ncx * ncy} cells (max {_MAX_CELLS}); raise scene.cell_size",
            field="scene.cell_size",
        )
    width = max(1, math.ceil(ext[0] / res))
    height = max(1, math.ceil(ext[1] / res))
    mpx = width * height / 1e6
    if mpx > params.max_bev_megapixels:
        fit = res * math.sqrt(mpx / params.max_bev_megapixels)
        raise CacheError(
            f"scene {scene_id!r}: a {ext[0]:.0f}×{ext[1]:.0f} m scene at {res} m/px needs a "
            f"{width}×{height} px BEV ({mpx:,.0f} Mpx, ~{mpx * 18 / 1e3:,.1f} GB of rasters), over "
            f"scene.max_bev_megapixels = {params.max_bev_megapixels:g}. Check the units of the "
            f"input (feet read as metres?) or set scene.resolution ≥ {fit:.2g} m/px, or raise "
            "scene.max_bev_megapixels",
            field="scene.resolution",
        )
    gx0, gy0 = float(rel_lo[0]), float(rel_lo[1])

    # 1. sort into grid cells (a stable counting sort), shift into the cache frame
    has_rgb, has_sem, has_inst = (
        cloud.rgb is not None,
        cloud.semantic is not None,
        cloud.instance is not None,
    )
    dummy_rgb = np.zeros((1, 3), np.uint8)
    dummy_i = np.zeros(1, np.int32)
    xyz, rgb, sem, inst, offsets = P.grid_sort(
        xyz_in,
        shift,
        (gx0, gy0, cs, ncx, ncy),
        cloud.rgb,
        cloud.semantic,
        cloud.instance,
        threads=threads if ncx * ncy <= cloud.n_points // 8 else 1,
    )
    bar.update()

    # 2. points to disk; instance table, class histogram, proposals: on side threads, beside the
    # rasters
    def write_points() -> None:
        save_npy(tmp / "points" / "xyz.npy", xyz)
        save_npy(tmp / "points" / "cell_offsets.npy", offsets)
        for name, arr, has in (("rgb", rgb, has_rgb), ("semantic", sem, has_sem),
                               ("instance", inst, has_inst)):  # fmt: skip
            if has:
                save_npy(tmp / "points" / f"{name}.npy", arr)

    def instances() -> tuple[int, dict[str, int]]:
        table = instance_table(
            scene_id=scene_id,
            xyz=xyz,
            origin=origin,
            rgb=rgb if has_rgb else None,
            semantic=sem if has_sem else None,
            instance=inst if has_inst else None,
            class_scheme=cloud.class_scheme,
            boxes=boxes,
        )
        write_parquet_deterministic(table, tmp / INSTANCES_FILE)
        return table.height, label_histogram(sem) if has_sem else {}

    def proposals() -> int:
        """The scene's Without-GT instance proposals (classes and points, never instance ids)."""
        found, proposal_of = propose(
            xyz,
            sem if has_sem else None,
            rgb if has_rgb else None,
            class_scheme=cloud.class_scheme,
            origin_m=origin.tolist(),
        )
        write_proposals(found, tmp / PROPOSALS_FILE)
        if has_sem:  # streamed in chunks: the build never holds a label per point
            proposal_of.save_npy(tmp / "points" / "proposal.npy")
        return len(found)

    writing = side.submit(write_points)
    tabling = side.submit(instances)
    proposing = side.submit(proposals)
    bar.update()

    # 3. BEV rasters band by band + global view
    gw, gh = global_view_shape(width, height, int(params.global_view_size))
    global_rgb = rasterize(
        tmp / "bev",
        xyz,
        rgb if has_rgb else dummy_rgb,
        has_rgb,
        sem if has_sem else dummy_i,
        has_sem,
        inst if has_inst else dummy_i,
        has_inst,
        offsets,
        grid=(gx0, gy0, cs, ncx, ncy),
        bev=(gx0, float(rel_hi[1]), res, width, height),
        zrange=(float(rel_lo[2]), float(rel_hi[2])),
        iterations=int(params.hole_fill_iterations),
        global_shape=(gh, gw),
        z_origin=float(origin[2]),
    )
    write_png(tmp / GLOBAL_VIEW_FILE, global_rgb)
    bar.update()

    # 4. the side tasks' results
    writing.result()
    n_instances, hist = tabling.result()
    n_proposals = proposing.result()
    chash = hashing.result()
    bar.update()

    # 5. meta (+ optional COG)
    x_min, y_max = origin[0] + gx0, origin[1] + float(rel_hi[1])
    bev_t = Affine.north_up(x_min=x_min, y_max=y_max, resolution=res)
    gv_t = Affine(width * res / gw, 0.0, x_min, 0.0, -height * res / gh, y_max)

    meta = CacheMeta(
        scene_id=scene_id,
        n_points=n_valid,
        n_dropped_nonfinite=n_bad,
        bounds=tuple((origin + rel_lo).tolist() + (origin + rel_hi).tolist()),
        origin=tuple(origin.tolist()),
        offset=tuple(cloud.offset.tolist()),
        crs=cloud.crs,
        class_scheme=cloud.class_scheme,
        has_rgb=has_rgb,
        has_semantic=has_sem,
        has_instance=has_inst,
        resolution=res,
        cell_size=cs,
        grid_origin=(gx0, gy0),
        grid_shape=(ncx, ncy),
        bev_width=width,
        bev_height=height,
        bev_transform=bev_t.to_tuple(),
        global_view_width=gw,
        global_view_height=gh,
        global_view_transform=gv_t.to_tuple(),
        class_histogram=hist,
        n_instances=n_instances,
        n_proposals=n_proposals,
        content_hash=chash,
        input_hash=input_hash,
        params=params.model_dump(mode="json"),
        urbex_version=__version__,
    )
    if params.cog_export:
        export_cog(tmp, meta)
    write_json_atomic(meta.to_dict(), tmp / META_FILE)
    write_build_timing(tmp, seconds=time.perf_counter() - t_start, source=cloud.source)

    write_scene_row(tmp)  # published with the cache: no moment with a cache but no scenes row
    bar.update()
    bar.close()
    return meta
