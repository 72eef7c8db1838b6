"""``make learn``: the full tiny CPU recipe trained into this project, its rows in the report.

``make demo`` trains at smoke length (its rows are marked ``(smoke)``). This trains the recipe
itself — ``params-cpu.yaml``, the settings ``benchmarks/bench_learning.py`` measures: the tiny
model (3.8 M parameters, built offline) → the reader stage's drills → SFT → GRPO — into the
project's own assets (``assets/checkpoints/tiny``, ``reader``, ``sft``, ``grpo``: the outputs of
``training/dvc.yaml``), then evaluates the GRPO checkpoint on both test splits, free and under
the fixed workflow, and rebuilds the warehouse, the diagnostics, the report and the results page,
so the recipe's rows stand beside the baselines'. Everything runs through the same Dagster
assets as the demo (the runs show in ``make ui``); at the end ``dvc commit training/dvc.yaml``
records the checkpoints in ``training/dvc.lock``. A project without the demo's data runs the
demo first.

    python -m pipelines.learn            # one line per stage, tqdm bars while training
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import dagster as dg

from pipelines.defs.resources import RESOURCES
from pipelines.defs.training import CHECKPOINT_SPLITS

#: The recipe's wall time on this project, measured (docs/training.md, "make learn").
EXPECTED = "about 85 minutes on 2 cores (reader 60, SFT 12, GRPO 9, evaluation 4)"
#: The training assets, in order; each gets tqdm bars on the terminal.
TRAINING = ("base_model", "reader_model", "sft_checkpoint", "grpo_checkpoint")
#: The resources of the recipe's runs: the default training params (params.yaml + params-cpu.yaml).
LEARN_RESOURCES = RESOURCES


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.parse_args(argv)
    from pipelines import demo

    t_all = time.perf_counter()
    instance = dg.DagsterInstance.get()
    params = LEARN_RESOURCES["training_params"].load()
    r, s, t = params.reader, params.sft, params.train
    print(
        f"learn: the CPU recipe `{params.recipe.name}` — reader {r.steps} + SFT {s.steps} + GRPO "
        f"{t.max_steps} steps, then {t.run_name} on {' and '.join(CHECKPOINT_SPLITS)} (free and "
        f"fixed workflow); expected {EXPECTED}",
        flush=True,
    )
    if instance.get_latest_materialization_event(dg.AssetKey("splits")) is None:
        print("learn: this project has no splits yet — running `make demo` first", flush=True)
        demo.main([])
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # "Loading weights" bars; the trainers' own bars stay
    res = LEARN_RESOURCES
    for asset in TRAINING:
        ops = {asset: {"config": {"progress": True}}} if asset != "base_model" else None
        demo._run(instance, [asset], resources=res, ops=ops)
    keys = [
        dg.MultiPartitionKey({"checkpoint": t.run_name, "split": sp}) for sp in CHECKPOINT_SPLITS
    ]
    for asset in ("checkpoint_evaluation", "checkpoint_workflow_evaluation"):
        demo._run_partitions(instance, asset, keys, f"{t.run_name} × split", resources=res)
    demo._run(instance, ["warehouse", "evaluation_report", "diagnostics"], resources=res)
    demo.record_with_dvc(Path(__file__).resolve().parents[1], "training/dvc.yaml")
    report = params.layout.report_md.read_text()
    print(report.partition("\n## ")[0].rstrip())
    print(
        f"learn: done in {(time.perf_counter() - t_all) / 60:.1f} min. Results page: "
        f"{params.layout.results_page}; the reader's curves: "
        f"{params.layout.checkpoint(r.run_name) / 'reader_curves.png'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
