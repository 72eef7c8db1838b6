"""Environment overhead per 8-turn oracle episode on a synthetic block (everything but the model).

Run: ``.venv/bin/python benchmarks/bench_env.py [--quick] [--size 400] [--episodes 40]``.

Figures: median / p90 ms per 8-turn episode (reset + 8 steps, time measured inside the env:
parsing, tools, shaping, answer mapping and 3D lifting), per-tool medians (landmark_query,
zoom_in, oblique_render, answer), the one-off global-view build per scene, and two ratios:
the episode overhead against the paper's 3.2 s per-query budget, and ``zoom_in`` against a
naive peer (PIL crop + resize of the full-resolution raster) measured in the same run.

The last line is one JSON object of the figures: ``global_view_ms``, ``episode_ms_median``,
``episode_ms_p90``, ``episodes``, ``episode_vs_budget``, ``<tool>_ms_median`` per tool,
``zoom_ms_median``, ``zoom_vs_pil`` (``make bench`` collects it).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def _call(tool: str, **args: object) -> str:
    return f"<tool_call>{json.dumps({'name': tool, 'arguments': args})}</tool_call>"


def _build(root: Path, size: float, density: float, seed: int):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.fixtures.city import build_synth_cache

    return build_synth_cache(root, seed=seed, size=size, density=density)


def _episode(env, q, oracle) -> list[str]:
    """Eight turns: L, Z, O, L, Z, O, Z, A (the oracle's moves, repeated to fill the budget)."""
    texts = []
    for _ in range(3):  # landmark, zoom, oblique
        t = oracle.act([], [])
        texts.append(t)
        env.step(t)
    g = env.views["global"]
    z = env.views.last("zoom")
    tb = q.target_box_2d
    box_g = [
        int(v)
        for v in np.clip(
            np.round(g.from_world_box([tb[0] - 20, tb[1] - 20, tb[2] + 20, tb[3] + 20])), 0, 1000
        )
    ]
    box_g[2], box_g[3] = max(box_g[2], box_g[0] + 1), max(box_g[3], box_g[1] + 1)
    box_z = [int(v) for v in np.clip(np.round(z.from_world_box(tb)), 0, 1000)]
    box_z[2], box_z[3] = max(box_z[2], box_z[0] + 1), max(box_z[3], box_z[1] + 1)
    name = env.landmarks.table["name"][0]
    for t in (
        _call("landmark_query", name=name, view_id=z.view_id),
        _call("zoom_in", view_id="global", bbox_2d=box_g),
        _call("oblique_render", view_id=z.view_id, bbox_2d=box_z, azimuth_deg=90, elevation_deg=60),
        _call("zoom_in", view_id=z.view_id, bbox_2d=box_z),
    ):
        texts.append(t)
        env.step(t)
    t = oracle.act([], [])
    env.step(t)
    return texts


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="120 m block, 10 episodes (a few seconds)")
    ap.add_argument("--size", type=float, default=400.0, help="block side, metres")
    ap.add_argument("--density", type=float, default=10.0, help="points per m²")
    ap.add_argument("--episodes", type=int, default=40)
    ap.add_argument("--seed", type=int, default=5)
    a = ap.parse_args(argv)
    if a.quick:
        a.size, a.episodes = 120.0, 10

    from urbex.agents import OraclePolicy
    from urbex.config import EnvParams
    from urbex.env.episode import GroundingEnv, make_global_view

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        cache, index, queries = _build(Path(tmp), a.size, a.density, a.seed)
        t_build = time.perf_counter() - t0
        h, w = cache.bev_shape
        print(
            f"scene: {a.size:.0f} m block, {cache.n_points:,} points, BEV {w}x{h} px at 0.1 m, "
            f"{len(queries)} queries (build {t_build:.1f} s, not counted)"
        )
        params = EnvParams()
        env = GroundingEnv(params, lambda s: cache, index)

        t0 = time.perf_counter()
        make_global_view(cache, params)
        t_global = (time.perf_counter() - t0) * 1000

        # warm-up (numba compile, imports), not timed
        q0 = queries[0]
        env.reset(query=q0)
        _episode(env, q0, OraclePolicy(env))

        per_episode, per_tool = (
            [],
            {"landmark_query": [], "zoom_in": [], "oblique_render": [], "answer": []},
        )
        for i in range(a.episodes):
            q = queries[i % len(queries)]
            t0 = time.perf_counter()
            env.reset(query=q)
            t_reset = time.perf_counter() - t0
            oracle = OraclePolicy(env)
            _episode(env, q, oracle)
            steps = env.steps
            assert len(steps) == 8 and env.done, [s.tool for s in steps]
            per_episode.append((t_reset + sum(s.latency_s for s in steps)) * 1000)
            for s in steps:
                per_tool[s.tool].append(s.latency_s * 1000)

        # peer for zoom_in: PIL crop + resize of the full-resolution raster (same windows)
        from PIL import Image

        rgb = cache.bev_layer("rgb")
        t = cache.bev_transform
        peer, ours = [], []
        for q in queries[: max(5, min(len(queries), 20))]:
            c = (q.target_box_2d[:2] + q.target_box_2d[2:]) / 2
            box = np.array([c[0] - 25, c[1] - 25, c[0] + 25, c[1] + 25])
            c0, r0, c1, r1 = (round(v) for v in t.box_to_pixel(box))
            t0 = time.perf_counter()
            Image.fromarray(np.ascontiguousarray(rgb[max(r0, 0) : r1, max(c0, 0) : c1])).resize(
                params.zoom_size, Image.BOX
            )
            peer.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            cache.bev_window(box, out_size=params.zoom_size)
            ours.append((time.perf_counter() - t0) * 1000)

    med = statistics.median(per_episode)
    p90 = float(np.percentile(per_episode, 90))
    print(f"global view build (once per scene, cached): {t_global:.1f} ms")
    print(
        f"8-turn oracle episode overhead: median {med:.1f} ms, p90 {p90:.1f} ms over {a.episodes} episodes "
        f"(target <= 50 ms) -> {'OK' if med <= 50 else 'OVER'}"
    )
    for k, v in per_tool.items():
        print(f"  {k:15s} median {statistics.median(v):7.2f} ms  (n={len(v)})")
    print(f"ratio vs the paper's 3.2 s per-query budget: {med / 3200:.4f}")
    zoom, zoom_peer = statistics.median(ours), statistics.median(peer)
    print(
        f"zoom window (bev_window, area-weighted) median {zoom:.2f} ms vs peer "
        f"PIL crop+BOX resize {zoom_peer:.2f} ms -> ratio {zoom / zoom_peer:.2f}"
    )
    figures = {
        "global_view_ms": t_global,
        "episode_ms_median": med,
        "episode_ms_p90": p90,
        "episodes": a.episodes,
        "episode_vs_budget": med / 3200,
        **{f"{k}_ms_median": statistics.median(v) for k, v in per_tool.items()},
        "zoom_ms_median": zoom,
        "zoom_vs_pil": zoom / zoom_peer,
    }
    print(json.dumps(figures))  # the last line: the figures, compared run to run


if __name__ == "__main__":
    main()
