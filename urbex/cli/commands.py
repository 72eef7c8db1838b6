"""The ``urbex`` commands: one function per subcommand, ``(args, params) -> exit status``.

Each resolves its flags into the params (a flag with a params twin is validated as the file
would be), calls the library (stages, runner, training, report) and prints what it did; see
:mod:`urbex.cli` for the parser and the error contract. Each imports the library it calls
when it runs, so that ``urbex --help`` or a mistyped flag costs the parser and the params
model, not the whole library (``tests/test_imports.py``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from urbex.config import Params
from urbex.errors import ConfigError, OutputExistsError, UrbexError
from urbex.layout import safe_name

if TYPE_CHECKING:
    from urbex.eval.runspec import RunSpec

__all__ = [
    "cmd_benchmark",
    "cmd_cache",
    "cmd_diagnose",
    "cmd_evaluate",
    "cmd_fit_ranker",
    "cmd_ground",
    "cmd_landmarks",
    "cmd_proposals",
    "cmd_report",
    "cmd_splits",
    "cmd_stpls3d_refer",
    "cmd_synth",
    "cmd_warehouse",
    "refuse_overwrite",
    "repeat_count",
    "tool_list",
]


def _with_flags(params: Params, args: argparse.Namespace, twins: dict[str, str]) -> Params:
    """``params`` with each given flag written into its params twin (``{"--limit": "eval.limit"}``).

    The flag is validated by its field's rule (range, type), so the command line accepts exactly
    what ``params.yaml`` accepts.

    Raises
    ------
    ConfigError
        A flag's value breaks its field's rule; the message names the flag and the field.
    """
    for flag, twin in twins.items():
        value = getattr(args, flag.lstrip("-").replace("-", "_"))
        if value is None:
            continue
        section, name = twin.split(".")
        try:
            params = params.with_updates(**{section: {name: value}})
        except ConfigError as exc:
            why = str(exc).removeprefix("invalid override: ")
            raise ConfigError(f"{flag} {value}: {why}") from exc
    return params


def tool_list(value: str) -> list[str]:
    """``--tools``: comma-separated tool names, or ``none`` (no tool offered).

    >>> tool_list("zoom_in, landmark_query"), tool_list("none")
    (['zoom_in', 'landmark_query'], [])
    """
    if value.strip().lower() == "none":
        return []
    names = [t.strip() for t in value.split(",") if t.strip()]
    if not names:  # an unset shell variable must not run the no-tool ablation silently
        raise argparse.ArgumentTypeError(
            f"{value!r} names no tool: give tool names (landmark_query,zoom_in,oblique_render) "
            "or 'none' for the no-tool ablation"
        )
    return names


def repeat_count(value: str) -> int:
    """``--repeats``: an int >= 2 (an interval needs two repeats).

    >>> repeat_count("3")
    3
    """
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
    if n < 2:
        raise argparse.ArgumentTypeError(
            f"got {n}: repeated decoding needs at least 2 repeats for its interval (one run "
            "is a plain `urbex evaluate`)"
        )
    return n


def _run_id(value: str | None) -> str | None:
    """``--run-id`` if it is a safe name (:func:`urbex.layout.safe_name`), else a ConfigError."""
    if value is None:
        return None
    try:
        return safe_name(value, what="--run-id")
    except ValueError as exc:
        raise ConfigError(f"{exc}; pick another run id") from exc


def _require_raw(params: Params) -> None:
    """A ConfigError saying to run ``urbex synth`` when the synthetic set is not generated yet."""
    from urbex.raw import raw_dataset

    ds = raw_dataset(params)
    if ds.generated and not ds.root.is_dir():
        raise ConfigError(
            f"'synthetic' (the default): the synthetic data set is not generated yet "
            f"({ds.root} does not exist); run `urbex synth` first, or set data.source and "
            "data.root in params.yaml to use your own data",
            field="data.source",
        )


def refuse_overwrite(path: Path, *, force: bool, what: str) -> None:
    """Raise :class:`OutputExistsError` when ``path`` holds anything and ``force`` is off.

    ``urbex synth OUT`` and ``urbex make-tiny-model PATH`` write into a folder the user names;
    what is there may be the user's own data set or checkpoint.
    """
    if force or not path.exists():
        return
    if path.is_dir():
        entries = sorted(e.name for e in path.iterdir())
        if not entries:
            return
        shown = ", ".join(entries[:5]) + (
            f" and {len(entries) - 5} more" if len(entries) > 5 else ""
        )
        raise OutputExistsError(
            f"the folder is not empty ({shown}); writing {what} here would replace files of the "
            "same name. Pass --force to write over it, or choose an empty folder",
            path=path,
        )
    raise OutputExistsError(
        f"a file is in the way of {what}; pass --force to replace it, or choose another path",
        path=path,
    )


def cmd_synth(args: argparse.Namespace, params: Params) -> int:
    from urbex.stages import stage_raw
    from urbex.synth import generate_dataset

    p = _with_flags(
        params,
        args,
        {
            "--scenes": "synth.scenes",
            "--seed": "synth.seed",
            "--density": "synth.density",
            "--size": "synth.size",
        },
    )
    if args.out is None:
        if args.format is not None:
            raise ConfigError(
                "--format applies to a data set written to OUT; the raw asset is always the "
                "CityRefer layout (+ las/ and stpls3d/ copies per synth.las_copy / "
                "synth.stpls3d_scenes). Give OUT, or drop --format"
            )
        ds = stage_raw(p, force=args.force, progress=not args.quiet)
        print(f"raw data set: {ds.root} ({len(ds.scene_ids)} scenes: {', '.join(ds.scene_ids)})")
        return 0

    refuse_overwrite(Path(args.out), force=args.force, what="a data set")
    s = p.synth
    fmt = args.format or "cityrefer"
    formats = ("cityrefer",) if fmt == "cityrefer" else ("cityrefer", fmt)
    generate_dataset(
        Path(args.out),
        scenes=s.scenes,
        seed=s.seed,
        density=s.density,
        size=s.size,
        formats=formats,
        las_copy=fmt == "las" or s.las_copy,
        stpls3d_scenes=max(1, s.stpls3d_scenes) if fmt == "stpls3d" else s.stpls3d_scenes,
        progress=not args.quiet,
    )
    print(f"synthetic data set written to {args.out}")
    return 0


def cmd_cache(args: argparse.Namespace, params: Params) -> int:
    from urbex.raw import raw_dataset
    from urbex.stages import build_scene, refresh

    ds = raw_dataset(params)
    ids = [args.scene] if args.scene else list(ds.scene_ids)
    if args.scene and args.scene not in ds.scene_ids:
        raise UrbexError(
            f"--scene {args.scene!r} is not in the data set; known scenes: {list(ds.scene_ids)}"
        )
    _require_raw(params)
    for sid in ids:
        b = build_scene(params, sid, force=args.force, progress=not args.quiet)
        state = "reused (fresh)" if b.reused else f"built in {b.build_seconds:.1f} s"
        print(f"{sid}: {b.n_points:,} points, {state} → {b.cache_dir}")
    refresh(params)  # the warehouse's scenes / instances tables
    return 0


def cmd_landmarks(args: argparse.Namespace, params: Params) -> int:
    import polars as pl

    from urbex.stages import refresh, stage_landmarks

    for path in stage_landmarks(params):
        print(f"{path.stem}: {pl.read_parquet(path, glob=False).height} landmarks → {path}")
    refresh(params)
    return 0


def cmd_splits(args: argparse.Namespace, params: Params) -> int:
    import polars as pl

    from urbex.stages import refresh, stage_clean_annotations, stage_splits

    _require_raw(params)
    clean = stage_clean_annotations(params)
    drops = pl.read_parquet(params.layout.annotation_drops, glob=False)
    print(
        f"cleaned: {pl.read_parquet(clean, glob=False).height} queries kept, {drops.height} dropped"
    )
    for reason, n in drops.group_by("reason").len().sort("reason").iter_rows():
        print(f"  dropped {n:4d} × {reason}")
    path = stage_splits(params)
    for split, n in (
        pl.read_parquet(path, glob=False).group_by("split").len().sort("split").iter_rows()
    ):
        print(f"  {split:8s} {n:5d} queries")
    print(f"splits → {path}")
    refresh(params)
    return 0


def cmd_stpls3d_refer(args: argparse.Namespace, params: Params) -> int:
    from urbex.annotations.stpls3d_refer import refer_counts
    from urbex.stages import stage_stpls3d_refer

    path = stage_stpls3d_refer(params)
    c = refer_counts(path)
    print(
        f"STPLS3D-Refer → {path}: {c['expressions']} expressions ({c['landmark_free']} "
        f"landmark-free) for {c['targets']} targets, {c['ambiguous']} dropped as ambiguous "
        f"({100 * c['ambiguity_drop_rate']:.1f} %)"
    )
    return 0


def cmd_benchmark(args: argparse.Namespace, params: Params) -> int:
    from urbex.stages import build_benchmark, refresh

    b = build_benchmark(params, args.name, force=args.force)
    print(
        f"{b.name}: {len(b.scene_ids)} scenes ({', '.join(b.scene_ids)}), {b.n_queries} queries "
        f"in split test, {b.n_landmark_free} landmark-free → {b.queries}"
    )
    refresh(params)
    return 0


def cmd_evaluate(args: argparse.Namespace, params: Params) -> int:
    from urbex.eval.repeats import REPEAT_METRICS, t_interval
    from urbex.eval.runner import evaluate
    from urbex.eval.workers import WorkerPool
    from urbex.stages import refresh

    run_id = _run_id(args.run_id)
    if args.benchmark not in (None, "cityrefer") and args.split is None:
        args.split = "test"  # a zero-shot benchmark's one split
    params = _with_flags(
        params,
        args,
        {
            "--benchmark": "eval.benchmark",
            "--policy": "eval.policy",
            "--split": "eval.split",
            "--limit": "eval.limit",
            "--landmark-perturbation": "eval.landmark_perturbation",
            "--tools": "env.tools",
        },
    )
    specs = _evaluate_specs(args, params, run_id)
    rows = []
    with WorkerPool() as pool:  # worker processes started by one repeat serve the next
        for spec in specs:
            r = evaluate(
                params,
                spec,
                run_id=run_id,
                progress=not args.quiet,
                restart_stale=args.restart_stale,
                pool=pool,
            )
            done = f"{r.n_played} episodes played, {r.n_skipped} already done"
            print(f"{r.run_id}: {done}" + ("" if args.repeats else f" → {r.run_dir}"))
            rows.append(r.metrics.row(0, named=True) if args.repeats else None)
    refresh(params)
    if args.repeats is None:
        print(r.metrics.select("split", "n", "hit1", "hit3", "hit5", "iou_bev", "latency_s"))
        return 0
    for m in REPEAT_METRICS:
        mean, lo, hi = t_interval([float(row[m]) for row in rows if row is not None])
        print(f"{m}: {100 * mean:.2f} [{100 * lo:.2f}, {100 * hi:.2f}] over {len(rows)} repeats")
    return 0


def _evaluate_specs(args: argparse.Namespace, params: Params, run_id: str | None) -> list[RunSpec]:
    """The runs ``urbex evaluate`` plays, resolved once from the flags: one, or with
    ``--repeats N`` N runs of sampled decoding (seeds ``eval.seed + k``; a repeat of the local
    model samples: :meth:`RunSpec.play_params`)."""
    from urbex.agents.registry import policy_info
    from urbex.eval.repeats import repeat_specs
    from urbex.eval.runspec import RunSpec

    base = RunSpec.from_params(
        params,
        policy=params.eval.policy,
        split=params.eval.split,
        limit=params.eval.limit,
        checkpoint=args.checkpoint,
    )
    if args.repeats is None:
        return [base]
    if run_id is not None:
        raise ConfigError("--repeats names its runs <policy>-<split>-rep<seed>: drop --run-id")
    info = policy_info(base.policy)
    if info.needs_server(params.policy.backend) and params.openai.temperature == 0:
        raise ConfigError(
            "--repeats with openai.temperature 0 repeats greedy decoding; set openai.temperature "
            "> 0 in the params",
            field="openai.temperature",
        )
    return repeat_specs(base, seed=params.eval.seed, repeats=args.repeats)


def cmd_fit_ranker(args: argparse.Namespace, params: Params) -> int:
    from urbex.agents.ranker import ranker_summary
    from urbex.stages import stage_ranker

    model, path = stage_ranker(params)
    s = ranker_summary(model)
    print(
        f"ranker fitted on {s['n_train']} train queries (l2={s['l2']} chosen on {s['n_val']} val "
        f"queries) in {s['fit_s']:.2f} s (+ {s['features_s']:.2f} s features): "
        f"Hit@1 train {s['train_hit1']:.3f}, val "
        + ("n/a" if s["val_hit1"] is None else f"{s['val_hit1']:.3f}")
        + f" → {path}"
    )
    return 0


def cmd_proposals(args: argparse.Namespace, params: Params) -> int:
    from urbex.agents.proposals import proposal_recall_table
    from urbex.env.world import World

    world = World.from_params(params)
    df = proposal_recall_table(world, params.layout, params.eval.candidate_classes)
    print("Without-GT proposal recall (BEV IoU ≥ 0.25 / 0.5) per split and class:")
    print(df.drop("run_id", "policy"))
    return 0


def cmd_ground(args: argparse.Namespace, params: Params) -> int:
    from urbex.eval.ground import ground

    r = ground(
        params,
        scene_id=args.scene,
        query=args.query,
        policy=args.policy,
        object_id=args.object_id,
        checkpoint=args.checkpoint,
        out_dir=args.out,
    )
    print(f"{r.scene_id} | {r.policy} | {r.query!r}")
    for s in r.steps:
        state = "ok" if s.valid else f"INVALID: {s.error}"
        made = f" -> {s.view_id}" if s.view_id else ""
        print(
            f"  turn {s.turn}: {s.tool} {json.dumps(s.arguments)}{made}  "
            f"[{state}, {s.latency_s:.2f} s]"
        )
    if r.answered and r.pred_box_2d is not None:
        world = ", ".join(f"{v:.1f}" for v in r.pred_box_2d)
        said = f"mark {r.answer_mark}" if r.bbox_2d is None else f"{r.answer_view_id} {r.bbox_2d}"
        snap = f" (snapped to mark {r.answer_mark})" if r.bbox_2d and r.answer_mark else ""
        print(f"answer: {said}{snap} -> world BEV [{world}] m")
    else:
        print("answer: none (the turn budget ran out)")
    if r.iou_bev is not None:
        print(f"IoU_bev {r.iou_bev:.3f}, IoU_3d {r.iou_3d:.3f} against object {r.object_id}")
    print(
        f"{r.turns} turns, {r.seconds:.2f} s -> {r.out_dir} (trajectory.png, steps.jsonl, "
        f"answer.json, views/)"
    )
    return 0


def cmd_diagnose(args: argparse.Namespace, params: Params) -> int:
    from urbex.report.diagnose import diagnose

    paths = diagnose(params, echo=True)
    print(f"diagnostics → {paths[0].parent} ({len(paths)} files)")
    return 0


def cmd_report(args: argparse.Namespace, params: Params) -> int:
    from urbex.report.publish import report

    path = report(params, echo=True)
    print(f"report → {path} (+ .csv); results page → {params.layout.results_page}")
    return 0


def cmd_warehouse(args: argparse.Namespace, params: Params) -> int:
    from urbex.stages import refresh

    counts = refresh(params)
    print(json.dumps(counts, indent=2))
    return 0
