"""Does the policy learn to ground? Reader drills, SFT, then GRPO, measured on val beside baselines.

The tiny CPU recipe (``params-cpu.yaml``: numbered marks on, answers by mark) end to end in a
fresh temporary project of its own: a synthetic city of :data:`CITY_SCENES` blocks (so that val
holds ≥ 150 queries) → scene caches → landmark tables → splits → the trained ranker → ``urbex
make-tiny-model`` (seeded) → ``urbex train-reader`` (reading drills) → ``urbex sft`` (from the
reader) → ``urbex train`` (GRPO from the SFT checkpoint), with
the ``vlm`` policy (greedy) evaluated on the whole val split after each stage (``--quick``: a
seeded sample). Peers on the same val queries: ``landmark_prior`` (no vision), the trained
``ranking`` (With-GT), the random model the recipe starts from and the SFT checkpoint (the floor
GRPO is measured against). ``--protocol box`` plays today's box protocol (no marks, the
anchored teacher of the box recipe) on the same city.

    .venv/bin/python benchmarks/bench_learning.py [--seed S]   # full size (~2.3 h on one busy core)
    .venv/bin/python benchmarks/bench_learning.py --quick      # a 2-minute plumbing run

Prints the figures, then as its LAST line one JSON object: ``seed``, ``protocol``, ``marks``,
``n_val``, ``hit1_val_landmark_prior``, ``hit1_val_ranking``, ``valid_rate_base``,
``valid_rate_sft``, ``valid_rate_grpo`` (share of val episodes ending in a valid answer),
``iou_val_sft``, ``iou_val_grpo``, ``hit1_val_sft``, ``hit1_val_grpo``, ``reward_first10``,
``reward_last10`` (mean episode return over the first / last ten GRPO steps), ``reward_sem``
(standard error of their difference, from the per-step means), ``frac_zero_std`` (share of
groups whose rollouts all got the same reward, mean over steps), ``s_per_step`` (GRPO),
``env_share`` (the environment's share of a GRPO step), plus ``sft_steps``, ``grpo_steps``,
``sft_s_per_step``, ``sft_recovery_kept`` (episodes the SFT recovery round added),
``reader_acc_mark_lookup``, ``reader_acc_name_copy``, ``reader_acc_box_copy``,
``reader_acc_whole_turn`` (held-out drills at full length, :mod:`urbex.train.reader`),
``reader_steps``, ``reader_s``, ``reader_level`` (marks per listing reached),
``hit1_val_reader_only`` (the reader checkpoint playing val directly, on ``n_reader`` queries),
the per-step skills of SFT and GRPO on val (``sft_landmark_named``, ``sft_zoom_on_target``,
``sft_target_mark_shown``, ``sft_right_class_given_shown``, ``sft_right_mark_given_shown``,
and the same for ``grpo_``;
:mod:`urbex.eval.skills`) and ``wall_s``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from urbex.config import Params
from urbex.params_files import read_params_files

REPO = Path(__file__).resolve().parents[1]

#: Full size: the recipe's own steps; the whole val split evaluated after each stage (n_val None).
FULL = {"sft_steps": None, "grpo_steps": 40, "n_val": None, "n_base": 8, "reader_steps": None,
        "n_reader": 40}  # fmt: skip
#: Blocks of the recipe's own city: 18 % of them are val scenes (urbex.synth.dataset.scene_split),
#: ~35 queries each, so val holds ≥ 150 queries (a Hit@1 difference of 0.1 is > 2 s.e.).
CITY_SCENES = 28
#: ``--protocol box``: today's box recipe (no marks; 70 % of the teacher's episodes anchored).
BOX_PROTOCOL = {"env": {"marks": {"enabled": False}}, "sft": {"anchor_rate": 0.7}}
#: --quick: a small city and a few steps of each (plumbing, not learning).
QUICK = {"sft_steps": 8, "grpo_steps": 2, "n_val": 2, "n_base": 1, "reader_steps": 4, "n_reader": 1}
#: The tiny model of the recipe (README): 3.8 M parameters, protocol BPE.
TINY = ["--tokenizer", "protocol", "--hidden", "256", "--layers", "4", "--heads", "8",
        "--kv-heads", "4", "--head-dim", "32", "--vision-hidden", "64", "--vocab", "4096",
        "--number-tokens", "--tie-embeddings", "--words", "names"]  # fmt: skip


def _merge(base: dict[str, Any], over: dict[str, Any]) -> None:
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(base.get(k), dict):
            _merge(base[k], v)
        else:
            base[k] = v


def write_project(root: Path, *, seed: int, quick: bool, protocol: str = "marks") -> Path:
    """``root/params.yaml``: params-cpu.yaml (merged over its base) with its assets under ``root``
    and a city of :data:`CITY_SCENES` blocks (quick: a small city), written as one full file;
    ``protocol="box"`` overlays :data:`BOX_PROTOCOL`."""
    p = read_params_files([REPO / "params-cpu.yaml"], Params).data
    if protocol == "box":
        _merge(p, BOX_PROTOCOL)
    p["paths"]["assets"] = "assets"
    p["data"]["scenes"] = None
    p["train"]["seed"] = p["sft"]["seed"] = seed
    p["reader"]["seed"] = seed
    p["reader"]["checkpoint"] = "assets/checkpoints/tiny"
    p["sft"]["checkpoint"] = "assets/checkpoints/reader"
    p["train"]["checkpoint"] = "assets/checkpoints/sft"
    if quick:
        p["synth"].update(scenes=3, size=80.0, density=5.0, las_copy=False, stpls3d_scenes=0)
        p["scene"].update(resolution=0.25, global_view_size=256)
        p["sft"].update(per_query=1, batch_size=2, limit=8)
        p["reader"].update(batch_size=4, held_out=8, eval_every=2, per_query=1)
        p["train"].update(max_completion_length=256, num_generations=2,
                          per_device_train_batch_size=4, limit=8)  # fmt: skip
        p["env"].update(max_turns=3)
        p["vlm"].update(max_new_tokens=32)
    else:
        p["synth"].update(scenes=CITY_SCENES, las_copy=False, stpls3d_scenes=0)
    root.mkdir(parents=True, exist_ok=True)
    out = root / "params.yaml"
    out.write_text(yaml.safe_dump(p, sort_keys=False))
    return out


def val_figures(
    params: Any, checkpoint: Path | None, *, n: int | None, name: str, policy: str = "vlm"
) -> dict[str, float]:
    """``policy`` (``vlm``: greedy, from ``checkpoint``) on a seeded sample of ``n`` val queries
    (None: all)."""
    from urbex.eval.episodes import read_episodes
    from urbex.eval.runner import evaluate
    from urbex.eval.runspec import RunSpec

    spec = RunSpec.from_params(params, policy=policy, split="val", limit=n, checkpoint=checkpoint)
    r = evaluate(params, spec, run_id=f"bench-{name}", progress=False)
    ep = read_episodes(r.run_dir)
    valid = (~ep["truncated"] & ~ep["timed_out"]).mean()
    row = r.metrics.row(0, named=True)
    return {
        "valid_rate": float(valid),  # type: ignore[arg-type]
        "iou": float(row["iou_bev"]),
        "hit1": float(row["hit1"]),
        "n": float(ep.height),
        "s_per_episode": r.seconds / max(1, ep.height),
    }


def val_skills(params: Any, name: str) -> dict[str, float]:
    """Per-step skill shares (:mod:`urbex.eval.skills`) of the run ``bench-{name}`` on val."""
    from urbex.annotations.splits import load_queries
    from urbex.env.world import World
    from urbex.eval.episodes import read_episodes, read_steps
    from urbex.eval.skills import episode_skills, skill_shares

    run_dir = params.layout.run(f"bench-{name}")
    world = World.from_params(params)
    queries = {q.query_id: q for q in load_queries(params.layout, "val")}
    idx = world.landmarks
    ep = read_episodes(run_dir)
    skills = episode_skills(
        ep,
        read_steps(run_dir),
        targets_m={k: q.target_box_2d for k, q in queries.items()},
        mentions={
            k: (idx.mentions(q.description, q.scene_id) if idx is not None else [])
            for k, q in queries.items()
            if k in set(ep["query_id"].to_list())
        },
        proposals=lambda scene_id: world.scenes(scene_id).proposals,
        max_listed=params.env.marks.max_listed,
    )
    return skill_shares(skills)


def reward_change(rewards: list[float]) -> tuple[float, float, float]:
    """Mean of the first and last ten per-step rewards and the standard error of their difference
    (Welch, per-step means as the samples; fewer than 20 steps: halves)."""
    k = min(10, len(rewards) // 2)
    if k < 1:
        return math.nan, math.nan, math.nan
    a, b = np.asarray(rewards[:k]), np.asarray(rewards[-k:])
    sem = math.sqrt(a.var(ddof=1) / k + b.var(ddof=1) / k) if k > 1 else math.nan
    return float(a.mean()), float(b.mean()), sem


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--keep", type=Path, default=None, help="build the project here and keep it")
    ap.add_argument("--sft-steps", type=int, default=None)
    ap.add_argument("--grpo-steps", type=int, default=None)
    ap.add_argument("--reader-steps", type=int, default=None)
    ap.add_argument("--protocol", choices=("marks", "box"), default="marks")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    size = dict(QUICK if args.quick else FULL)
    if args.sft_steps:
        size["sft_steps"] = args.sft_steps
    if args.grpo_steps:
        size["grpo_steps"] = args.grpo_steps
    if args.reader_steps:
        size["reader_steps"] = args.reader_steps

    from urbex.cli import main as urbex
    from urbex.config import load_params
    from urbex.train.grpo import train
    from urbex.train.logs import read_training_log
    from urbex.train.reader import train_reader
    from urbex.train.sft import sft

    t_all = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-learning-") as tmp:
        root = args.keep or Path(tmp)
        pfile = write_project(root, seed=args.seed, quick=args.quick, protocol=args.protocol)
        t0 = time.perf_counter()
        for cmd in ("synth", "cache", "landmarks", "splits", "fit-ranker"):
            if urbex(["--params", str(pfile), "-q", cmd]) != 0:
                raise SystemExit(f"bench_learning: `urbex {cmd}` failed")
        params = load_params(pfile)
        print(f"project: {root} ({time.perf_counter() - t0:.0f} s)", flush=True)
        peers = {
            name: val_figures(params, None, n=size["n_val"], name=name, policy=name)
            for name in ("landmark_prior", "ranking")
        }
        for name, f in peers.items():
            print(f"{name}: val Hit@1 {f['hit1']:.3f}  IoU {f['iou']:.3f} "
                  f"({f['n']:.0f} episodes)", flush=True)  # fmt: skip

        t0 = time.perf_counter()
        tiny = params.layout.checkpoint("tiny")
        cmd = ["--params", str(pfile), "-q", "make-tiny-model", str(tiny), "--seed", str(args.seed)]
        if urbex([*cmd, *TINY]) != 0:
            raise SystemExit("bench_learning: `urbex make-tiny-model` failed")
        print(f"tiny model: {time.perf_counter() - t0:.0f} s", flush=True)
        base = val_figures(params, tiny, n=size["n_base"], name="base")
        print(f"base  (random weights): val valid {base['valid_rate']:.3f} "
              f"on {base['n']:.0f} episodes", flush=True)  # fmt: skip

        rd = train_reader(params, steps=size["reader_steps"], progress=False)
        acc = "  ".join(f"{k} {v:.3f}" for k, v in rd.accuracy.items())
        print(f"reader: {rd.steps} steps, {rd.s_per_step:.2f} s/step, level {rd.level} marks "
              f"(full length at step {rd.reached_full_at}); held-out {acc}", flush=True)  # fmt: skip
        v_reader = val_figures(params, rd.checkpoint_dir, n=size["n_reader"], name="reader")
        print(f"reader only: val valid {v_reader['valid_rate']:.3f}  Hit@1 {v_reader['hit1']:.3f} "
              f"({v_reader['n']:.0f} episodes)", flush=True)  # fmt: skip

        s = sft(params, steps=size["sft_steps"], progress=False)
        print(f"sft: {s.steps} steps, {s.s_per_step:.2f} s/step, loss {s.loss_first:.2f} → "
              f"{s.loss_last:.2f} ({s.n_examples} conversations)", flush=True)  # fmt: skip
        if s.recovery is not None:
            rc = s.recovery
            print(f"sft recovery round: {rc.episodes} student episodes, {rc.with_errors} with a "
                  f"mistake ({rc.error_rate:.0%} of its proposals rejected), {rc.kept} kept, "
                  f"{rc.seconds:.0f} s", flush=True)  # fmt: skip
        v_sft = val_figures(params, s.checkpoint_dir, n=size["n_val"], name="sft")
        k_sft = val_skills(params, "sft")
        print("sft skills: " + "  ".join(f"{k} {v:.3f}" for k, v in k_sft.items()), flush=True)
        print(f"sft:  val valid {v_sft['valid_rate']:.3f}  Hit@1 {v_sft['hit1']:.3f}  "
              f"IoU {v_sft['iou']:.3f} ({v_sft['n']:.0f} episodes)", flush=True)  # fmt: skip

        g = train(params, checkpoint=s.checkpoint_dir, max_steps=size["grpo_steps"], progress=False)
        log = read_training_log(params.layout.checkpoint(g.run_name))
        v_grpo = val_figures(params, g.checkpoint_dir, n=size["n_val"], name="grpo")
        k_grpo = val_skills(params, "grpo")
        print("grpo skills: " + "  ".join(f"{k} {v:.3f}" for k, v in k_grpo.items()), flush=True)
        rewards = [float(x) for x in log["reward_mean"].to_list()]
        first, last, sem = reward_change(rewards)
        print(f"grpo: {g.steps} steps, {g.wall_s / max(1, g.steps):.2f} s/step, reward "
              f"first10 {first:.3f} → last10 {last:.3f} (sem {sem:.3f}); frac_zero_std "
              f"{log['frac_zero_std'].mean():.2f}; env share {log['env_share'].mean():.3f}",
              flush=True)  # fmt: skip
        print(f"grpo: val valid {v_grpo['valid_rate']:.3f}  Hit@1 {v_grpo['hit1']:.3f}  "
              f"IoU {v_grpo['iou']:.3f}", flush=True)  # fmt: skip
        print(f"curves: {params.layout.train_curves(g.run_name)}", flush=True)
        out = {
            "seed": args.seed,
            "protocol": args.protocol,
            "marks": bool(params.env.marks.enabled),
            "n_val": int(v_grpo["n"]),
            "hit1_val_landmark_prior": peers["landmark_prior"]["hit1"],
            "hit1_val_ranking": peers["ranking"]["hit1"],
            "valid_rate_base": base["valid_rate"],
            "valid_rate_sft": v_sft["valid_rate"],
            "valid_rate_grpo": v_grpo["valid_rate"],
            "iou_val_sft": v_sft["iou"],
            "iou_val_grpo": v_grpo["iou"],
            "hit1_val_sft": v_sft["hit1"],
            "hit1_val_grpo": v_grpo["hit1"],
            "reward_first10": first,
            "reward_last10": last,
            "reward_sem": sem,
            "frac_zero_std": float(log["frac_zero_std"].mean()),  # type: ignore[arg-type]
            "s_per_step": g.wall_s / max(1, g.steps),
            "env_share": float(log["env_share"].mean()),  # type: ignore[arg-type]
            "sft_steps": s.steps,
            "grpo_steps": g.steps,
            "sft_s_per_step": s.s_per_step,
            "sft_recovery_kept": s.recovery.kept if s.recovery is not None else 0,
            **{f"reader_acc_{k}": v for k, v in rd.accuracy.items()},
            "reader_steps": rd.steps,
            "reader_s": rd.wall_s,
            "reader_level": rd.level,
            "hit1_val_reader_only": v_reader["hit1"],
            "n_reader": int(v_reader["n"]),
            **{f"sft_{k}": v for k, v in k_sft.items() if k != "valid_answer"},
            **{f"grpo_{k}": v for k, v in k_grpo.items() if k != "valid_answer"},
            "wall_s": time.perf_counter() - t_all,
        }
        targets = [
            ("n_val >= 150", out["n_val"] >= 150),
            (
                "hit1_val_grpo >= landmark_prior + 0.10",
                out["hit1_val_grpo"] >= out["hit1_val_landmark_prior"] + 0.10,
            ),
            (
                "hit1_val_grpo >= hit1_val_sft + 0.05",
                out["hit1_val_grpo"] >= out["hit1_val_sft"] + 0.05,
            ),
            ("valid_rate_grpo >= 0.9", out["valid_rate_grpo"] >= 0.9),
            ("valid_rate_grpo >= valid_rate_sft", out["valid_rate_grpo"] >= out["valid_rate_sft"]),
            ("reader_acc_mark_lookup >= 0.90", out["reader_acc_mark_lookup"] >= 0.90),
            ("reader_acc_name_copy >= 0.95", out["reader_acc_name_copy"] >= 0.95),
            ("wall_s <= 3600", out["wall_s"] <= 3600),
            ("valid_rate_sft >= 0.8", out["valid_rate_sft"] >= 0.8),
            ("reward gain > 2 sem", (last - first) > 2 * sem if math.isfinite(sem) else False),
            ("frac_zero_std < 0.5", out["frac_zero_std"] < 0.5),
            ("iou_val_grpo >= iou_val_sft", out["iou_val_grpo"] >= out["iou_val_sft"]),
            ("env_share < 0.1", out["env_share"] < 0.1),
        ]
        for name, ok in targets:
            print(f"target {name}: {'PASS' if ok else 'MISS'}")
        print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
