"""``make demo``: materialize the whole graph on the synthetic default, partition by partition.

Runs in-process against the Dagster instance in ``$DAGSTER_HOME`` (``make`` sets it to
``.dagster_home``), so the runs show up in ``make ui`` afterwards; the terminal gets one timed
line per step, warnings, the report and where to look next (Dagster's DEBUG event stream stays
in the instance's event log).

**DVC records what Dagster wrote** (``dvc commit dvc.yaml`` at the end), rather than the demo
driving the stages through ``dvc repro``: the demo is the Dagster door (its runs, metadata and
checks are what ``make ui`` shows), both doors write the same files, and ``dvc commit`` hashes
them into ``dvc.lock`` without running anything twice, so ``dvc status dvc.yaml`` is clean
right after and ``dvc push`` can store that version. Every file the demo writes is a function
of its inputs and params (measured seconds go to unversioned ``timings/`` folders), so on a
fresh clone the committed ``dvc.lock`` is what the demo records and ``git status`` stays clean.
The training pipeline (``training/dvc.yaml``, the full CPU recipe) is *not* run or committed:
the demo trains the recipe at smoke length, ``params-demo.yaml`` (an overlay of
``params-cpu.yaml``: a few steps per stage, ``recipe.smoke`` so the report marks its rows,
checkpoint names of its own: ``demo-tiny``, ``demo-reader``, ``demo-sft``, ``demo-grpo``), so it
never writes that pipeline's outputs; ``make learn`` (:mod:`pipelines.learn`) trains the recipe.

    python -m pipelines.demo                          # in-process, one partition after another
    python -m pipelines.demo --executor multiprocess  # independent partitions at once

``--executor multiprocess`` runs the scene-cache partitions and the evaluation partitions as
concurrent runs (``--max-parallel``, default the core count), each step in its own process
(Dagster's multiprocess executor, :mod:`pipelines.parallel`); the stages that depend on each
other stay in order. It prints the wall time either way.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import dagster as dg

from pipelines.defs.benchmarks import BENCHMARK, BENCHMARK_SCENES
from pipelines.defs.executors import EXECUTOR_ENV
from pipelines.defs.partitions import SCENES
from pipelines.defs.resources import DEFAULT_TRAINING_OVERLAY, REPO, RESOURCES, UrbexParams
from pipelines.defs.training import CHECKPOINT_SPLITS

#: Unpartitioned stages after the scene caches, in order (each selection is one run).
STAGES = [["landmark_tables", "clean_annotations", "splits"], ["stpls3d_refer"], ["ranker_model"]]
#: Evaluation partitions the demo runs (the policies that need no model checkpoint or endpoint).
DEMO_EVALS = [
    (p, s)
    for p in ("oracle", "landmark_prior", "ranking_rules", "ranking", "ranking_proposals")
    for s in ("test_nd", "test_no")
]
#: Queries per test split the fixed workflow over the demo's checkpoint plays first (a probe:
#: its partitions materialized on that sample); with no valid answer among them the demo plays
#: no more (see main).
DEMO_WORKFLOW_PROBE = 4
#: Zero-shot runs on STPLS3D-Refer (Table 2): ``zero_shot_evaluation`` partitions (benchmark ×
#: policy), the same policies and fitted ranker, nothing fitted on the benchmark.
DEMO_ZERO_SHOT = ("oracle", "landmark_prior", "ranking_rules", "ranking", "ranking_proposals")
#: Landmark-perturbation runs (paper D.3, Table 10) of the landmark-reading baseline, as
#: (perturbation mode, split); each is a :class:`~urbex.eval.runspec.RunSpec` (its run id
#: ``spec.run_id``). Not partitions of ``evaluation`` (its partitions are policy × split), so the
#: demo plays them through the same library call.
DEMO_PERTURBATIONS = [(m, s) for m in ("noise", "missing", "wrong") for s in ("test_nd", "test_no")]
#: The demo's training: the tiny CPU recipe (``params-cpu.yaml``: the measured one) at smoke
#: length, so the whole demo stays within ~5 minutes on 2 cores, with checkpoint names of its own
#: (not ``training/dvc.yaml``'s outputs). An overlay, loaded after ``params-cpu.yaml``.
DEMO_TRAINING_OVERLAY = REPO / "params-demo.yaml"
#: Torch threads of the demo's training and model evaluation, whatever the machine's core count:
#: CPU training is not bit-identical across thread counts (reductions are split per thread), and
#: the committed ``dvc.lock`` hashes the smoke checkpoint's evaluation runs as a 2-core machine
#: trains it. Other CPU kinds may still differ.
DEMO_TORCH_THREADS = 2
#: The resources of the demo's runs: the training assets read the demo's recipe.
DEMO_RESOURCES = {
    **RESOURCES,
    "training_params": UrbexParams(
        overlays=[str(DEFAULT_TRAINING_OVERLAY), str(DEMO_TRAINING_OVERLAY)]
    ),
}
#: The demo's checkpoint on STPLS3D-Refer: a seeded sample of its queries (all 83 took 326 s of
#: a 902 s demo on 2 shared cores; `urbex evaluate --benchmark stpls3d_refer` plays them all).
DEMO_ZERO_SHOT_VLM_LIMIT = 24
#: Dagster's console logger at WARNING: the event stream (DEBUG) stays in ``$DAGSTER_HOME``'s
#: event log, viewable in ``make ui``; warnings and errors still reach the terminal.
QUIET_LOGGERS: dict[str, Any] = {"console": {"config": {"log_level": "WARNING"}}}


def _run(
    instance: dg.DagsterInstance,
    selection: list[str],
    partition_key: str | None = None,
    *,
    echo: bool = True,
    resources: dict[str, Any] | None = None,
    ops: dict[str, Any] | None = None,
) -> float:
    """Materialize ``selection`` (one partition) with ``resources`` (default the demo's) and
    op config ``ops``; print a timed line (``echo``); the seconds."""
    from pipelines.definitions import defs  # after --executor set its environment variable

    label = ",".join(selection) + (f" [{partition_key}]" if partition_key else "")
    run_config: dict[str, Any] = {"loggers": QUIET_LOGGERS, **({"ops": ops} if ops else {})}
    t0 = time.perf_counter()
    result = dg.materialize(
        list(defs.assets or []),
        instance=instance,
        resources=DEMO_RESOURCES if resources is None else resources,
        partition_key=partition_key,
        selection=selection,
        run_config=run_config,
    )
    if not result.success:
        raise SystemExit(f"demo: {label} failed (the event log: make ui)")
    seconds = time.perf_counter() - t0
    if echo:
        print(f"▶ {label}: {seconds:.1f} s", flush=True)
    return seconds


def _run_partitions(
    instance: dg.DagsterInstance,
    asset: str,
    keys: list[Any],
    what: str,
    resources: dict[str, Any] | None = None,
    ops: dict[str, Any] | None = None,
) -> None:
    """Every partition of one asset, then one line: the asset, the count, the seconds."""
    seconds = sum(
        _run(instance, [asset], k, echo=False, resources=resources, ops=ops) for k in keys
    )
    print(f"▶ {asset}: {len(keys)} partitions ({what}): {seconds:.1f} s", flush=True)


#: Where ``scripts/setup.sh`` installs DVC, relative to the checkout: an environment of its own,
#: since dagster's asset-selection parser needs antlr4 4.13 and dvc's hydra integration (``dvc exp
#: run -S``) pins 4.9. setup also writes ``.venv/bin/dvc``, which runs this DVC with the project's
#: ``.venv/bin`` first on PATH (the stages call the project's ``urbex``).
DVC_VENV = ".venv-dvc"


def dvc_executable(repo: Path) -> Path | None:
    """The ``dvc`` to run for ``repo``: ``$URBEX_DVC``, else the isolated one setup installs
    (``<repo>/.venv-dvc/bin/dvc``), else one beside this Python or on ``PATH``; None if none."""
    found = [os.environ.get("URBEX_DVC"), str(repo / DVC_VENV / "bin" / "dvc")]
    found += [str(Path(sys.executable).with_name("dvc")), shutil.which("dvc")]
    return next((Path(p) for p in found if p and Path(p).is_file()), None)


def dvc_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """``env`` (default ``os.environ``) with this Python's ``bin`` first on ``PATH``: the DVC
    stages' ``urbex`` is the project's, whichever environment DVC runs from."""
    env = dict(os.environ if env is None else env)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def record_with_dvc(repo: Path, dvc_yaml: str = "dvc.yaml") -> None:
    """``dvc commit -f <dvc_yaml>`` in ``repo`` (the module docstring says why); a line saying
    so, or why it was skipped (no DVC project, no ``dvc`` command)."""
    dvc = dvc_executable(repo)
    if not (repo / ".dvc").is_dir() or dvc is None:
        print("▶ dvc commit: skipped (no DVC project or no dvc command)", flush=True)
        return
    t0 = time.perf_counter()
    r = subprocess.run(
        [str(dvc), "commit", "-f", "-q", dvc_yaml],
        cwd=repo,
        capture_output=True,
        text=True,
        env=dvc_env(),
    )
    if r.returncode != 0:
        raise SystemExit(f"demo: dvc commit failed:\n{r.stdout}{r.stderr}")
    lock = str(Path(dvc_yaml).with_suffix(".lock"))
    print(f"▶ dvc commit {dvc_yaml} ({lock}): {time.perf_counter() - t0:.1f} s", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--executor", choices=["in_process", "multiprocess"], default="in_process")
    ap.add_argument("--max-parallel", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args(argv)
    parallel = args.executor == "multiprocess"
    if parallel:  # before the code location loads (its step processes inherit it)
        os.environ[EXECUTOR_ENV] = "multiprocess"
    from pipelines import parallel as par

    t_demo = time.perf_counter()
    import torch

    torch.set_num_threads(DEMO_TORCH_THREADS)
    instance = dg.DagsterInstance.get()
    params = RESOURCES["urbex_params"].load()
    _run(instance, ["raw_dataset"])
    scenes = list(instance.get_dynamic_partitions(SCENES.name))
    jobs = {"scene_caches": par.scene_caches_job, "evaluation": par.evaluation_job}

    def partitions(asset: str, keys: list[Any], what: str) -> None:
        if not parallel:
            _run_partitions(instance, asset, keys, what)
            return
        t0 = time.perf_counter()
        par.run_partitions(jobs[asset], keys, max_parallel=args.max_parallel)
        print(f"▶ {asset}: {len(keys)} partitions, {args.max_parallel} at a time: "
              f"{time.perf_counter() - t0:.1f} s", flush=True)  # fmt: skip

    partitions("scene_caches", scenes, "scenes")
    for selection in STAGES:
        if selection == ["stpls3d_refer"] and params.data.source not in ("synthetic", "stpls3d"):
            continue
        _run(instance, selection)
    zero_shot = params.data.source in ("synthetic", "stpls3d")  # STPLS3D-Refer was built
    if zero_shot:
        _run(instance, ["benchmark_scenes"])
        keys = list(instance.get_dynamic_partitions(BENCHMARK_SCENES.name))
        _run_partitions(instance, "benchmark_scene_caches", keys, "benchmark scenes")
        _run(instance, ["benchmark_landmark_tables", "benchmark_queries"])
    evals = [dg.MultiPartitionKey({"policy": p, "split": s}) for p, s in DEMO_EVALS]
    partitions("evaluation", evals, "policy × split")
    if zero_shot:
        keys = [dg.MultiPartitionKey({"benchmark": BENCHMARK, "policy": p}) for p in DEMO_ZERO_SHOT]
        _run_partitions(instance, "zero_shot_evaluation", keys, f"{BENCHMARK} × policy")
    from urbex.eval.runner import evaluate
    from urbex.eval.runspec import RunSpec
    from urbex.eval.workers import WorkerPool

    t0, played, resumed = time.perf_counter(), 0, 0
    with WorkerPool() as pool:  # worker processes started by one run serve the next
        for mode, split in DEMO_PERTURBATIONS:
            p = params.with_updates(eval={"landmark_perturbation": mode})
            spec = RunSpec.from_params(p, policy="landmark_prior", split=split)
            r = evaluate(params, spec=spec, progress=False, pool=pool)
            played, resumed = played + r.n_played, resumed + r.n_skipped
    print(
        f"▶ landmark-perturbation runs: {len(DEMO_PERTURBATIONS)} ({played} episodes played, "
        f"{resumed} resumed): {time.perf_counter() - t0:.1f} s",
        flush=True,
    )
    # training (the tiny CPU recipe, shortened) and the checkpoint's evaluation on both test splits
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # "Loading weights" / "Writing model shards" bars
    train_params = DEMO_RESOURCES["training_params"].load()
    _run(instance, ["base_model"])
    _run(instance, ["reader_model"])
    _run(instance, ["sft_checkpoint"])
    _run(instance, ["grpo_checkpoint"])
    name = train_params.train.run_name
    keys = [dg.MultiPartitionKey({"checkpoint": name, "split": s}) for s in CHECKPOINT_SPLITS]
    _run_partitions(instance, "checkpoint_evaluation", keys, f"{name} × split")
    # the fixed workflow over the same checkpoint: Table 9 (free vs fixed) in the report. Its
    # partitions are materialized on a probe of the first queries per split first; the whole
    # splits (the same runs, extended) only when the checkpoint answered any of them validly:
    # a smoke checkpoint that answers none under the fixed order would spend minutes on zeros
    t0 = time.perf_counter()
    probe = {"checkpoint_workflow_evaluation": {"config": {"limit": DEMO_WORKFLOW_PROBE}}}
    for key in keys:
        _run(instance, ["checkpoint_workflow_evaluation"], key, echo=False, ops=probe)
    valid = _valid_answers(train_params, name)
    if valid:
        _run_partitions(instance, "checkpoint_workflow_evaluation", keys, f"{name} × split")
    else:
        print(
            f"▶ checkpoint_workflow_evaluation: 2 partitions on {DEMO_WORKFLOW_PROBE} queries per "
            f"split ({time.perf_counter() - t0:.1f} s): under the fixed workflow {name} answered "
            "none of them validly. The whole splits: urbex --params params-demo.yaml evaluate "
            f"--policy workflow --checkpoint assets/checkpoints/{name} --split test_no",
            flush=True,
        )
    if zero_shot:  # the demo's checkpoint on the benchmark, with its training params' views
        from urbex.benchmarks import ZERO_SHOT_SPLIT, benchmark_params

        t0 = time.perf_counter()
        bp = benchmark_params(train_params, BENCHMARK)
        ckpt = train_params.layout.checkpoint(train_params.train.run_name)
        spec = RunSpec.from_params(
            bp, policy="vlm", split=ZERO_SHOT_SPLIT, checkpoint=ckpt, limit=DEMO_ZERO_SHOT_VLM_LIMIT
        )
        r = evaluate(bp, spec=spec, progress=False)
        print(f"▶ {r.run_id}: {r.n_played} played, {r.n_skipped} resumed: "
              f"{time.perf_counter() - t0:.1f} s", flush=True)  # fmt: skip
    _run(instance, ["warehouse", "evaluation_report", "diagnostics"])
    record_with_dvc(Path(__file__).resolve().parents[1])
    report = params.layout.report_md.read_text()
    print(report.partition("\n## ")[0].rstrip())  # the comparison table; the other blocks: on file
    titles = [line[3:].split(":")[0] for line in report.splitlines() if line.startswith("## ")]
    if titles:
        print(f"({', '.join(titles)}: in {params.layout.report_md} and the results page)")
    print(
        f"demo: done. Results page: {params.layout.results_page}\n"
        "  the Dagster event log: make ui\n"
        "  the warehouse (see README):\n"
        "  .venv/bin/python -c \"import duckdb; con = duckdb.connect('assets/warehouse.duckdb', "
        "read_only=True); print(con.sql('SELECT * FROM metrics'))\""
    )
    print(f"demo: wall time {time.perf_counter() - t_demo:.1f} s ({args.executor} executor)")
    return 0


def _valid_answers(params: Any, checkpoint: str) -> int:
    """Valid answers of the fixed ``workflow`` over ``checkpoint`` in its runs on each of
    :data:`CHECKPOINT_SPLITS` (the ``checkpoint_workflow_evaluation`` partitions' runs, played on
    the probe's sample)."""
    from urbex.eval.episodes import read_episodes
    from urbex.eval.runspec import RunSpec

    ckpt = params.layout.checkpoint(checkpoint)
    n = 0
    for split in CHECKPOINT_SPLITS:
        spec = RunSpec.from_params(params, policy="workflow", split=split, checkpoint=ckpt)
        n += int(
            read_episodes(params.layout.run(spec.run_id))["valid_answer"].fill_null(False).sum()
        )
    return n


if __name__ == "__main__":
    sys.exit(main())
