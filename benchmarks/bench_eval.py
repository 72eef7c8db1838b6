"""Evaluation harness cost: ``evaluate()`` against a bare reset → act → step loop, and 1 vs 2
worker processes, for ``oracle`` and ``landmark_prior`` over the synthetic test splits.

Peer: the bare loop over the same episodes with the same policy and environment, built from
the same params (the world's environment, the policy, the split's queries, each scene opened
and its global view built), then reset → act → step per query, and nothing else: no
trajectory record, no metrics, no Parquet, no run directory, no lock, no warm-up bookkeeping.
Its clock covers that setup as ``evaluate()``'s covers its own (the same work on both sides),
so ``bare ep/s / ep/s`` is what the harness itself costs; ``loop ep/s`` (the loop alone, setup
not timed) is printed too. The two sides alternate, round by round; figures are the best of
``--rounds`` with their ranges.

``evaluate()`` keeps its worker processes in the :class:`~urbex.eval.workers.WorkerPool` it is
given, for the next run given the same pool: here one pool serves the whole benchmark; its
processes start in the first 2-worker run, ``oracle`` on the largest split, measured apart
(``cold``), and serve every later 2-worker run. Also measured:
how long a spawned worker takes to start (``pool_start_s``, what ``eval.parallel_min_s`` is set
from).

    .venv/bin/python benchmarks/bench_eval.py            # 4 blocks of 160 m, 20 pts/m², 122 + 232 queries
    .venv/bin/python benchmarks/bench_eval.py --quick    # 2 blocks of 100 m, 10 pts/m² (seconds)
    .venv/bin/python benchmarks/bench_eval.py --assets assets   # an existing project (splits built)

The last line is one JSON object of the figures: per policy (on the largest split)
``<policy>_wall_vs_bare_w1`` (evaluate's ep/s over the peer's, 1 worker) and
``<policy>_w2_vs_w1`` (2 workers' ep/s over 1's, worker processes running); per policy and split
``<policy>_<split>_`` + ``episodes``, ``eps_bare``, ``eps_loop``, ``eps_w1``, ``eps_w2``,
``wall_vs_bare_w1``, ``wall_vs_loop_w1``, ``w2_vs_w1``; ``oracle_w2_cold_vs_w1`` (the run
that starts the worker processes), ``pool_start_s``, ``rounds``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import numpy as np
import polars as pl

from urbex.agents.registry import make_policy, policy_class_sizes
from urbex.annotations.splits import load_queries
from urbex.config import Params
from urbex.env.prompts import system_prompt
from urbex.env.world import World
from urbex.eval.episodes import read_episodes
from urbex.eval.runner import evaluate
from urbex.eval.runspec import RunSpec
from urbex.eval.workers import WorkerPool
from urbex.layout import AssetLayout

POLICIES = ("oracle", "landmark_prior")
#: The policy whose first run with 2 workers is timed cold (its worker process starting).
COLD_POLICY = POLICIES[0]


def build_project(
    root: Path, *, blocks: int, size: float, density: float, targets: int = 8, per_target: int = 2
) -> Path:
    """A synthetic project: scene caches, landmark tables, splits (the last half of the blocks →
    test_no, every other description of the others → test_nd)."""
    from urbex.config import SceneParams
    from urbex.io.cityrefer import BoxRecord
    from urbex.landmarks import landmarks_from_instances, write_landmark_table
    from urbex.scene import SceneCache, build_scene_cache
    from urbex.synth import generate_block, scene_queries

    assets = root / "assets"
    rows = []
    for k in range(blocks):
        block = generate_block(100 + k, size=size, density=density)
        off = np.asarray(block.cloud.offset, dtype=np.float64)
        o = block.objects
        recs = [
            BoxRecord(object_id=str(int(i)), object_name=n, landmark=lm,
                      center=tuple((o.box[j, :3] + o.box[j, 3:]) / 2 + off),
                      size=tuple(o.box[j, 3:] - o.box[j, :3]), label_id=int(o.label_id[j]),
                      instance_id=int(i))
            for j, (i, n, lm) in enumerate(zip(o.instance_id, o.object_name, o.landmark))
        ]  # fmt: skip
        out = AssetLayout(assets).scene(block.scene_id)
        build_scene_cache(block.cloud, out, SceneParams(), scene_id=block.scene_id, boxes=recs)
        cache = SceneCache.open(out)
        write_landmark_table(
            landmarks_from_instances(cache.instances, scene_id=block.scene_id),
            AssetLayout(assets).landmark_table(block.scene_id),
        )
        for i, q in enumerate(
            scene_queries(block, seed=k, max_targets_per_class=targets, max_per_target=per_target)
        ):
            split = "test_no" if k >= blocks // 2 else ("test_nd" if i % 2 else "train")
            rows.append(
                {
                    "query_id": f"{block.scene_id}:{i}",
                    "scene_id": block.scene_id,
                    "object_id": q.object_id,
                    "class_name": q.object_name,
                    "description": q.description,
                    "split": split,
                }
            )
    lay = AssetLayout(assets)
    lay.splits.mkdir(parents=True, exist_ok=True)
    splits = pl.DataFrame(rows)
    splits.write_parquet(lay.queries)
    from urbex.annotations.class_sizes import class_sizes_from_splits, write_class_sizes
    from urbex.annotations.stages import load_instances

    inst = load_instances(Params(paths={"assets": assets}).layout, sorted(set(splits["scene_id"])))
    write_class_sizes(class_sizes_from_splits(splits, inst), lay.class_sizes)
    return assets


def bare_rollouts(params: Params, policy: str, split: str) -> tuple[int, float, float]:
    """The peer: ``(episodes, seconds with setup, seconds of the loop alone)``."""
    t0 = time.perf_counter()
    env = World.from_params(params).env()
    pol = make_policy(
        policy,
        params,
        env=env,
        class_sizes=policy_class_sizes(policy, params.policy, params.layout),
    )
    qs = load_queries(params.layout, split)
    for sid in sorted({q.scene_id for q in qs}):  # open each scene, build its global view
        env.reset(query=next(q for q in qs if q.scene_id == sid))
    system = {"role": "system", "content": system_prompt(env.params)}
    t1 = time.perf_counter()
    for q in qs:
        obs, _ = env.reset(query=q, seed=0)
        messages = [system, {"role": "user", "content": obs["text"]}]
        images = list(obs["images"])
        done = False
        while not done:
            text = pol.act(messages, images)
            obs, _, terminated, truncated, _ = env.step(text)
            done = terminated or truncated
            messages += [
                {"role": "assistant", "content": text},
                {"role": "user", "content": obs["text"]},
            ]
            images += obs["images"]
    t2 = time.perf_counter()
    return len(qs), t2 - t0, t2 - t1


def timed_evaluate(
    assets: Path, policy: str, split: str, workers: int, pool: WorkerPool
) -> tuple[float, dict]:
    """Wall seconds of one fresh ``evaluate()`` run (worker processes from ``pool``); its
    episodes' env/policy shares and Hit@1 (the run directory is deleted afterwards, untimed)."""
    p = Params(paths={"assets": assets}, eval={"workers": workers, "chunk_size": 8})
    rid = f"bench-{policy}-{split}-w{workers}-{time.time_ns()}"
    t = time.perf_counter()
    spec = RunSpec.from_params(p, policy=policy, split=split)
    r = evaluate(p, spec, run_id=rid, progress=False, pool=pool)
    wall = time.perf_counter() - t
    ep = read_episodes(r.run_dir)
    lat = float(ep["latency_s"].sum())
    info = {
        "n": r.n_played,
        "env": float(ep["env_s"].sum()) / lat if lat else float("nan"),
        "policy": float(ep["policy_s"].sum()) / lat if lat else float("nan"),
        "hit1": float(r.metrics["hit1"][0]),
        "schedule": r.schedule,
    }
    shutil.rmtree(r.run_dir, ignore_errors=True)
    return wall, info


def _ready() -> int:
    """A worker's first task: what evaluate's worker processes import."""
    import urbex.eval.workers  # noqa: F401

    return os.getpid()


def pool_start_s() -> float:
    """Seconds from spawning a worker process to its first answer, urbex's evaluation imported."""
    t = time.perf_counter()
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as pool:
        pool.submit(_ready).result()
        return time.perf_counter() - t


def _best(xs: list[float]) -> tuple[float, float, float]:
    """Best (max) rate and the range."""
    return max(xs), min(xs), max(xs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small blocks, a few seconds")
    ap.add_argument("--assets", type=Path, help="use an existing project's assets (splits built)")
    ap.add_argument("--rounds", type=int, default=None, help="rounds (default 3; quick 1)")
    args = ap.parse_args()
    rounds = args.rounds or (1 if args.quick else 3)
    figures: dict[str, float | int | None] = {"rounds": rounds}
    with tempfile.TemporaryDirectory() as tmp, WorkerPool() as pool:
        t0 = time.perf_counter()
        if args.assets is not None:
            assets = args.assets.resolve()
        elif args.quick:
            assets = build_project(Path(tmp), blocks=2, size=100.0, density=10.0)
        else:
            assets = build_project(
                Path(tmp), blocks=4, size=160.0, density=20.0, targets=40, per_target=3
            )
        print(f"project: {assets} (built in {time.perf_counter() - t0:.1f} s)")
        present = set(pl.read_parquet(AssetLayout(assets).queries)["split"])
        splits = [s for s in ("test_nd", "test_no") if s in present]
        p1 = Params(paths={"assets": assets})
        largest = max(splits, key=lambda s: len(load_queries(p1.layout, s)))
        figures["pool_start_s"] = start = pool_start_s()
        print(f"a spawned worker process answers its first task after {start:.2f} s")
        for policy in POLICIES:  # untimed warm-up: imports, compiled kernels, the page cache
            bare_rollouts(p1, policy, splits[0])
            timed_evaluate(assets, policy, splits[0], 1, pool)
        pool.close(wait=True)
        cold, cold_info = timed_evaluate(assets, COLD_POLICY, largest, 2, pool)
        print(
            f"cold: {COLD_POLICY}/{largest}, 2 workers, starting its worker process: {cold:.2f} s"
        )
        print(f"  {cold_info['schedule']}")
        print(
            f"{'policy':15s} {'split':8s} {'eps':>5s} {'bare ep/s':>9s} {'loop ep/s':>9s} "
            f"{'ep/s w1':>8s} {'w1/bare':>7s} {'ep/s w2':>8s} {'w2/w1':>6s} {'env %':>6s} "
            f"{'policy %':>8s} {'Hit@1':>6s}"
        )
        ranges = []
        for policy in POLICIES:
            for split in splits:
                bare, loop, w1, w2 = [], [], [], []
                for _ in range(rounds):  # interleaved: a load change hits every column alike
                    n, t_bare, t_loop = bare_rollouts(p1, policy, split)
                    bare.append(n / t_bare)
                    loop.append(n / t_loop)
                    t1, info1 = timed_evaluate(assets, policy, split, 1, pool)
                    w1.append(info1["n"] / t1)
                    t2, info2 = timed_evaluate(assets, policy, split, 2, pool)
                    w2.append(info2["n"] / t2)
                    assert info1["n"] == info2["n"] == n and info1["hit1"] == info2["hit1"]
                (b, *b_r), (lp, *_), (e1, *e1_r), (e2, *e2_r) = map(_best, (bare, loop, w1, w2))
                key = f"{policy}_{split}"
                figures |= {
                    f"{key}_episodes": n,
                    f"{key}_eps_bare": b,
                    f"{key}_eps_loop": lp,
                    f"{key}_eps_w1": e1,
                    f"{key}_eps_w2": e2,
                    f"{key}_wall_vs_bare_w1": e1 / b,
                    f"{key}_wall_vs_loop_w1": e1 / lp,
                    f"{key}_w2_vs_w1": e2 / e1,
                }
                if split == largest:
                    figures[f"{policy}_wall_vs_bare_w1"] = e1 / b
                    figures[f"{policy}_w2_vs_w1"] = e2 / e1
                print(
                    f"{policy:15s} {split:8s} {n:5d} {b:9.1f} {lp:9.1f} {e1:8.1f} {e1 / b:7.2f} "
                    f"{e2:8.1f} {e2 / e1:6.2f} {100 * info1['env']:6.1f} "
                    f"{100 * info1['policy']:8.1f} {100 * info1['hit1']:6.1f}"
                )
                ranges.append(
                    f"  {policy}/{split}: bare {b_r[0]:.1f}–{b_r[1]:.1f}, w1 {e1_r[0]:.1f}–"
                    f"{e1_r[1]:.1f}, w2 {e2_r[0]:.1f}–{e2_r[1]:.1f} ep/s"
                )
        pool.close(wait=True)
        n_cold, e1_warm = (figures[f"{COLD_POLICY}_{largest}_{k}"] for k in ("episodes", "eps_w1"))
        figures[f"{COLD_POLICY}_w2_cold_vs_w1"] = (n_cold / cold) / e1_warm
    print(
        f"ep/s: episodes / wall time, best of {rounds} (w1, w2: evaluate() with 1 or 2 workers, "
        "metrics and Parquet included; bare: the peer loop with its setup; loop: without); "
        "env %/policy %: share of summed warm-online episode latency (w1)"
    )
    print(f"ranges over the {rounds} rounds:")
    print("\n".join(ranges))
    print(json.dumps(figures))  # the last line: the figures, compared run to run


if __name__ == "__main__":
    main()
