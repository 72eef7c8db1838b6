"""Benchmark the synthetic city generator: points/s generated and written (PLY, LAZ).

Usage: ``.venv/bin/python benchmarks/bench_synth.py [--quick] [--size M] [--density D]``

Peers measured in the same run:
* generation vs a *floor*: drawing the same number of uniform random float32 xyz + uint8 rgb
  with numpy (no geometry at all) — the ratio says how close to "just random numbers" we are;
* PLY writing vs ``ndarray.tofile`` of the same packed records (raw memory dump).

The last line is one JSON object of the figures: ``points``, ``generate_mpts``,
``generate_vs_floor`` (time ratio), ``queries_s``, ``write_ply_mpts``, ``write_ply_vs_tofile``
(time ratio), ``write_laz_mpts`` (null with ``--no-laz``), ``end_to_end_mpts``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from urbex.io.las import write_las
from urbex.io.ply import write_ply
from urbex.pointcloud import PointCloud
from urbex.synth import generate_block, scene_queries
from urbex.synth.dataset import asprs_from_sensaturban


def _timed(fn, *a, **kw):
    t = time.perf_counter()
    out = fn(*a, **kw)
    return out, time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="small sizes, a few seconds")
    ap.add_argument(
        "--size", type=float, default=None, help="block side, metres (default 1000; quick 200)"
    )
    ap.add_argument("--density", type=float, default=20.0, help="points per m²")
    ap.add_argument("--no-laz", action="store_true", help="skip the LAZ write")
    args = ap.parse_args()
    size = args.size if args.size is not None else (200.0 if args.quick else 1000.0)
    figures: dict[str, float | None] = {"write_laz_mpts": None}

    generate_block(0, size=60.0, density=1.0)  # warm numba's cache / imports
    block, t_gen = _timed(generate_block, 0, size=size, density=args.density)
    n = block.cloud.n_points
    print(
        f"generate_block(size={size:g} m, density={args.density:g}): {n:,} points, "
        f"{len(block.objects):,} instances in {t_gen:.2f} s = {n / t_gen / 1e6:.2f} M pts/s"
    )

    rng = np.random.default_rng(0)

    def floor() -> None:
        rng.random((n, 3), dtype=np.float32)
        rng.integers(0, 256, (n, 3), dtype=np.uint8)

    _, t_floor = _timed(floor)
    print(
        f"  peer (numpy uniform xyz+rgb, no geometry): {n / t_floor / 1e6:.1f} M pts/s; "
        f"generator / peer time ratio = {t_gen / t_floor:.1f}x"
    )

    figures.update(points=n, generate_mpts=n / t_gen / 1e6, generate_vs_floor=t_gen / t_floor)
    _, t_q = _timed(scene_queries, block, seed=0)
    figures["queries_s"] = t_q
    print(f"scene_queries: {t_q:.2f} s")

    c = block.cloud
    ply_cloud = PointCloud(xyz=c.xyz, rgb=c.rgb, semantic=c.semantic)
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "b.ply"
        _, t_ply = _timed(write_ply, p, ply_cloud)
        mb = p.stat().st_size / 1e6
        print(
            f"write_ply: {t_ply:.2f} s = {n / t_ply / 1e6:.1f} M pts/s ({mb:.0f} MB, {mb / t_ply:.0f} MB/s)"
        )
        rec = np.empty(
            n,
            [
                ("x", "<f4"),
                ("y", "<f4"),
                ("z", "<f4"),
                ("r", "u1"),
                ("g", "u1"),
                ("b", "u1"),
                ("c", "u1"),
            ],
        )
        _, t_pack = _timed(
            lambda: [
                rec.__setitem__(k, v)
                for k, v in zip("xyzrgbc", (*c.xyz.T, *c.rgb.T, c.semantic.astype(np.uint8)))
            ]
        )
        _, t_raw = _timed(rec.tofile, str(Path(d) / "raw.bin"))
        print(
            f"  peer (pack + ndarray.tofile): {n / (t_pack + t_raw) / 1e6:.1f} M pts/s; "
            f"write_ply / peer time ratio = {t_ply / (t_pack + t_raw):.2f}x"
        )
        figures.update(write_ply_mpts=n / t_ply / 1e6, write_ply_vs_tofile=t_ply / (t_pack + t_raw))
        if not args.no_laz:
            las_cloud = PointCloud(
                xyz=c.xyz,
                offset=c.offset,
                rgb=c.rgb,
                semantic=asprs_from_sensaturban(c.semantic),
                instance=c.instance,
                class_scheme="asprs",
                crs=c.crs,
            )
            _, t_laz = _timed(write_las, Path(d) / "b.laz", las_cloud)
            print(f"write_las (.laz): {t_laz:.2f} s = {n / t_laz / 1e6:.1f} M pts/s")
            figures["write_laz_mpts"] = n / t_laz / 1e6
    total = t_gen + t_ply
    print(f"generate + write PLY: {n / total / 1e6:.2f} M pts/s end to end")
    figures["end_to_end_mpts"] = n / total / 1e6
    print(json.dumps(figures))  # the last line: the figures, compared run to run


if __name__ == "__main__":
    main()
