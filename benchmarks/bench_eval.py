"""Evaluation throughput: episodes/s of ``oracle`` and ``landmark_prior`` over the synthetic test
splits, 1 vs 2 worker processes, and each episode's time split between environment and policy.

Peer: a bare reset → act → step loop (no trajectory, no metrics, no
Parquet, no resume bookkeeping) over the same episodes in the same run — the ratio is the
runner's overhead (or, with 2 workers, its speed-up).

    .venv/bin/python benchmarks/bench_eval.py            # 4 blocks of 160 m, 20 pts/m², ~100s of queries
    .venv/bin/python benchmarks/bench_eval.py --quick    # 2 blocks of 100 m, 10 pts/m² (seconds)
    .venv/bin/python benchmarks/bench_eval.py --assets assets   # an existing project (splits built)
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

from urbex.annotations.splits import load_queries
from urbex.config import Params
from urbex.eval.episodes import read_episodes
from urbex.eval.runner import evaluate
from urbex.eval.runspec import RunSpec
from urbex.layout import AssetLayout


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

    inst = load_instances(Params(paths={"assets": assets}), sorted(set(splits["scene_id"])))
    write_class_sizes(class_sizes_from_splits(splits, inst), lay.class_sizes)
    return assets


def bare_rollouts(params: Params, policy: str, split: str) -> tuple[int, float]:
    """The peer: the bare reset → act → step loop over the split, no trajectory, no metrics, no
    rows (scene warm-up untimed)."""
    from urbex.agents.registry import make_policy
    from urbex.annotations.class_sizes import read_class_sizes
    from urbex.env.episode import CachedSceneProvider, GroundingEnv
    from urbex.env.protocol import system_prompt
    from urbex.landmarks.lookup import landmark_index

    env = GroundingEnv(params, CachedSceneProvider(params.layout.scenes), landmark_index(params))
    pol = make_policy(policy, params, env=env, class_sizes=read_class_sizes(params.assets))
    qs = load_queries(params, split)
    for sid in sorted({q.scene_id for q in qs}):
        env.reset(query=next(q for q in qs if q.scene_id == sid))
    system = {"role": "system", "content": system_prompt(env.params)}
    t = time.perf_counter()
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
    return len(qs), time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small blocks, a few seconds")
    ap.add_argument("--assets", type=Path, help="use an existing project's assets (splits built)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
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
        splits = [
            s
            for s in ("test_nd", "test_no")
            if s in set(pl.read_parquet(AssetLayout(assets).queries)["split"])
        ]
        out_root = Path(tmp) / "runs_assets"
        print(
            f"{'policy':15s} {'split':8s} {'workers':>7s} {'eps':>5s} {'ep/s':>8s} {'bare ep/s':>9s} "
            f"{'ratio':>6s} {'env %':>6s} {'policy %':>8s} {'Hit@1':>6s}"
        )
        for policy in ("oracle", "landmark_prior"):
            for split in splits:
                for workers in (1, 2):
                    p = Params(
                        paths={"assets": assets},
                        eval={"workers": workers, "chunk_size": 8, "parallel_min_episodes": 1},
                    )
                    rid = f"bench-{policy}-{split}-w{workers}-{time.time_ns()}"
                    t = time.perf_counter()
                    r = evaluate(
                        p,
                        RunSpec.from_params(p, policy=policy, split=split),
                        run_id=rid,
                        progress=False,
                    )
                    wall = time.perf_counter() - t
                    ep = read_episodes(r.run_dir)
                    n_bare, t_bare = bare_rollouts(p, policy, split)
                    lat = float(ep["latency_s"].sum())
                    env_share = float(ep["env_s"].sum()) / lat if lat else float("nan")
                    pol_share = float(ep["policy_s"].sum()) / lat if lat else float("nan")
                    eps_s = r.n_played / wall
                    bare = n_bare / t_bare
                    print(
                        f"{policy:15s} {split:8s} {workers:7d} {r.n_played:5d} {eps_s:8.1f} {bare:9.1f} "
                        f"{eps_s / bare:6.2f} {100 * env_share:6.1f} {100 * pol_share:8.1f} "
                        f"{100 * r.metrics['hit1'][0]:6.1f}"
                    )
                    import shutil

                    shutil.rmtree(r.run_dir, ignore_errors=True)
        del out_root
    print(
        "ep/s: wall time of evaluate() incl. process-pool start, metrics and Parquet; "
        "bare: a reset-act-step loop only; env %/policy %: share of summed warm-online episode latency"
    )


if __name__ == "__main__":
    main()
