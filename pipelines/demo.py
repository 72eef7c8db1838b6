"""``make demo``: materialize the whole graph on the synthetic default, partition by partition.

Runs against the Dagster instance in ``$DAGSTER_HOME`` (``make`` sets it to ``.dagster_home``),
so the runs show up in ``make ui`` afterwards.

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
import sys
import time

import dagster as dg

from pipelines.defs.executors import EXECUTOR_ENV
from pipelines.defs.partitions import SCENES
from pipelines.defs.resources import RESOURCES
from pipelines.defs.training import CHECKPOINT_SPLITS

#: Unpartitioned stages after the scene caches, in order (each selection is one run).
STAGES = [["landmark_tables", "clean_annotations", "splits"], ["stpls3d_refer"], ["ranker_model"]]
#: Evaluation partitions the demo runs (the policies that need no model checkpoint or endpoint).
DEMO_EVALS = [
    (p, s)
    for p in ("oracle", "landmark_prior", "ranking_rules", "ranking", "ranking_proposals")
    for s in ("test_nd", "test_no")
]
#: Landmark-perturbation runs (paper D.3, Table 10) of the landmark-reading baseline, as
#: (perturbation mode, split); each is a :class:`~urbex.eval.runspec.RunSpec` (its run id
#: ``spec.run_id``). Not partitions of ``evaluation`` (its partitions are policy × split), so the
#: demo plays them through the same library call.
DEMO_PERTURBATIONS = [(m, s) for m in ("noise", "missing", "wrong") for s in ("test_nd", "test_no")]
#: The demo's training, shortened from the tiny CPU recipe (``params-cpu.yaml``: the measured
#: one) so the whole demo stays within ~10 minutes on 2 cores: optimizer steps of SFT and GRPO.
DEMO_SFT_STEPS = 400
DEMO_GRPO_STEPS = 10


def _run(
    instance: dg.DagsterInstance,
    selection: list[str],
    partition_key: str | None = None,
    *,
    steps: int | None = None,
) -> None:
    from pipelines.definitions import defs

    label = ",".join(selection) + (f" [{partition_key}]" if partition_key else "")
    print(f"▶ materializing {label}" + (f" ({steps} steps)" if steps else ""), flush=True)
    run_config = {"ops": {selection[0]: {"config": {"steps": steps}}}} if steps else None
    result = dg.materialize(
        list(defs.assets or []),
        instance=instance,
        resources=RESOURCES,
        partition_key=partition_key,
        selection=selection,
        run_config=run_config,
    )
    if not result.success:
        raise SystemExit(f"demo: {label} failed")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--executor", choices=["in_process", "multiprocess"], default="in_process")
    ap.add_argument("--max-parallel", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args(argv)
    parallel = args.executor == "multiprocess"
    if parallel:  # before the code location loads (its step processes inherit it)
        os.environ[EXECUTOR_ENV] = "multiprocess"
    from pipelines import parallel as par

    t0 = time.perf_counter()
    instance = dg.DagsterInstance.get()
    params = RESOURCES["urbex_params"].load()
    _run(instance, ["raw_dataset"])
    scenes = instance.get_dynamic_partitions(SCENES.name)
    if parallel:
        print(
            f"▶ scene_caches: {len(scenes)} partitions, {args.max_parallel} at a time", flush=True
        )
        par.run_partitions(par.scene_caches_job, scenes, max_parallel=args.max_parallel)
    else:
        for key in scenes:
            _run(instance, ["scene_caches"], key)
    for selection in STAGES:
        if selection == ["stpls3d_refer"] and params.data.source not in ("synthetic", "stpls3d"):
            continue
        _run(instance, selection)
    evals = [dg.MultiPartitionKey({"policy": p, "split": s}) for p, s in DEMO_EVALS]
    if parallel:
        print(f"▶ evaluation: {len(evals)} partitions, {args.max_parallel} at a time", flush=True)
        par.run_partitions(par.evaluation_job, evals, max_parallel=args.max_parallel)
    else:
        for key in evals:
            _run(instance, ["evaluation"], key)
    from urbex.eval.runner import evaluate
    from urbex.eval.runspec import RunSpec

    for mode, split in DEMO_PERTURBATIONS:
        p = params.with_updates(eval={"landmark_perturbation": mode})
        spec = RunSpec.from_params(p, policy="landmark_prior", split=split)
        r = evaluate(params, spec=spec, progress=False, refresh=False)
        print(f"▶ {r.run_id}: {r.n_played} played, {r.n_skipped} resumed", flush=True)
    # training (the tiny CPU recipe, shortened) and the checkpoint's evaluation on both test splits
    train_params = RESOURCES["training_params"].load()
    _run(instance, ["base_model"])
    _run(instance, ["sft_checkpoint"], steps=DEMO_SFT_STEPS)
    _run(instance, ["grpo_checkpoint"], steps=DEMO_GRPO_STEPS)
    for split in CHECKPOINT_SPLITS:
        key = dg.MultiPartitionKey({"checkpoint": train_params.train.run_name, "split": split})
        _run(instance, ["checkpoint_evaluation"], key)
    _run(instance, ["warehouse", "evaluation_report", "diagnostics"])
    print(params.layout.report_md.read_text())
    print(
        "demo: done. Query the warehouse (see README):\n"
        "  .venv/bin/python -c \"import duckdb; con = duckdb.connect('assets/warehouse.duckdb', "
        "read_only=True); print(con.sql('SELECT * FROM metrics'))\""
    )
    print(f"demo: wall time {time.perf_counter() - t0:.1f} s ({args.executor} executor)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
