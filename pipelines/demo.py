"""``make demo``: materialize the whole graph on the synthetic default, partition by partition.

Runs in-process against the Dagster instance in ``$DAGSTER_HOME`` (``make`` sets it to
``.dagster_home``), so the runs show up in ``make ui`` afterwards.
"""

from __future__ import annotations

import sys

import dagster as dg

from pipelines.definitions import defs
from pipelines.defs.benchmarks import BENCHMARK, BENCHMARK_SCENES
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
#: Zero-shot runs on STPLS3D-Refer (Table 2): ``zero_shot_evaluation`` partitions (benchmark ×
#: policy), the same policies and fitted ranker, nothing fitted on the benchmark.
DEMO_ZERO_SHOT = ("oracle", "landmark_prior", "ranking_rules", "ranking", "ranking_proposals")
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


def main() -> int:
    instance = dg.DagsterInstance.get()
    params = RESOURCES["urbex_params"].load()
    _run(instance, ["raw_dataset"])
    for key in instance.get_dynamic_partitions(SCENES.name):
        _run(instance, ["scene_caches"], key)
    for selection in STAGES:
        if selection == ["stpls3d_refer"] and params.data.source not in ("synthetic", "stpls3d"):
            continue
        _run(instance, selection)
    zero_shot = params.data.source in ("synthetic", "stpls3d")  # STPLS3D-Refer was built
    if zero_shot:
        _run(instance, ["benchmark_scenes"])
        for key in instance.get_dynamic_partitions(BENCHMARK_SCENES.name):
            _run(instance, ["benchmark_scene_caches"], key)
        _run(instance, ["benchmark_landmark_tables", "benchmark_queries"])
    for policy, split in DEMO_EVALS:
        _run(instance, ["evaluation"], dg.MultiPartitionKey({"policy": policy, "split": split}))
    for policy in DEMO_ZERO_SHOT if zero_shot else ():
        key = dg.MultiPartitionKey({"benchmark": BENCHMARK, "policy": policy})
        _run(instance, ["zero_shot_evaluation"], key)
    from urbex.eval.runner import evaluate
    from urbex.eval.runspec import RunSpec

    for mode, split in DEMO_PERTURBATIONS:
        p = params.with_updates(eval={"landmark_perturbation": mode})
        spec = RunSpec.from_params(p, policy="landmark_prior", split=split)
        r = evaluate(params, spec=spec, progress=False, refresh=False)
        print(f"▶ {r.run_id}: {r.n_played} played, {r.n_skipped} resumed", flush=True)
    # training (the tiny CPU recipe, shortened) and the checkpoint's evaluation on both test splits
    train_params = RESOURCES["training_params"].load()
    _run(instance, ["sft_checkpoint"], steps=DEMO_SFT_STEPS)
    _run(instance, ["grpo_checkpoint"], steps=DEMO_GRPO_STEPS)
    for split in CHECKPOINT_SPLITS:
        key = dg.MultiPartitionKey({"checkpoint": train_params.train.run_name, "split": split})
        _run(instance, ["checkpoint_evaluation"], key)
    if zero_shot:  # the demo's checkpoint on the benchmark, with its training params' views
        from urbex.benchmarks import ZERO_SHOT_SPLIT, benchmark_params

        bp = benchmark_params(train_params, BENCHMARK)
        ckpt = train_params.layout.checkpoint(train_params.train.run_name)
        spec = RunSpec.from_params(bp, policy="vlm", split=ZERO_SHOT_SPLIT, checkpoint=ckpt)
        r = evaluate(bp, spec=spec, progress=False, refresh=False)
        print(f"▶ {r.run_id}: {r.n_played} played, {r.n_skipped} resumed", flush=True)
    _run(instance, ["warehouse", "evaluation_report", "diagnostics"])
    print(params.layout.report_md.read_text())
    print(
        "demo: done. Query the warehouse (see README):\n"
        "  .venv/bin/python -c \"import duckdb; con = duckdb.connect('assets/warehouse.duckdb', "
        "read_only=True); print(con.sql('SELECT * FROM metrics'))\""
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
