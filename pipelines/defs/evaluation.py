"""Evaluation runs (policy × split), the warehouse views and the comparison report.

Two assets play the runs, by what the policy needs: ``evaluation`` (the model-free policies:
oracle, heuristics, ranking; CPU, many partitions in parallel) and ``model_evaluation`` (the
model-backed ones: ``vlm``, ``openai``, ``workflow``, ``no_tools``; pool ``gpu``, a GPU per
step pod on Kubernetes, :mod:`pipelines.defs.executors`). Both call the same
:func:`urbex.eval.runner.evaluate`.
"""

import dagster as dg

from pipelines.defs.annotations import landmark_tables, splits
from pipelines.defs.executors import CPU_OP_TAGS, GPU_OP_TAGS, GPU_POOL
from pipelines.defs.resources import UrbexParams
from pipelines.defs.versions import data_version
from urbex.agents.ranker import ranker_summary
from urbex.agents.registry import POLICY_NAMES, policy_info
from urbex.eval.runner import evaluate
from urbex.eval.runspec import RunSpec
from urbex.report.diagnose import diagnose
from urbex.report.page import thumbnails
from urbex.report.publish import report
from urbex.stages import refresh, stage_ranker
from urbex.viz.thumbnails import thumbnail_markdown

EVAL_SPLITS = ["val", "test_nd", "test_no"]
#: Policies that play through a model (a checkpoint or an endpoint).
MODEL_POLICIES = [p for p in POLICY_NAMES if policy_info(p).model_backed]
#: The others: oracle, heuristics, ranking.
FREE_POLICIES = [p for p in POLICY_NAMES if not policy_info(p).model_backed]

EVAL_PARTITIONS = dg.MultiPartitionsDefinition(
    {
        "policy": dg.StaticPartitionsDefinition(FREE_POLICIES),
        "split": dg.StaticPartitionsDefinition(EVAL_SPLITS),
    }
)
MODEL_EVAL_PARTITIONS = dg.MultiPartitionsDefinition(
    {
        "policy": dg.StaticPartitionsDefinition(MODEL_POLICIES),
        "split": dg.StaticPartitionsDefinition(EVAL_SPLITS),
    }
)


@dg.asset(deps=[splits, landmark_tables], group_name="evaluation")
def ranker_model(urbex_params: UrbexParams) -> dg.MaterializeResult:
    """The trained With-GT ranker (policy ``ranking``): fitted on train, selected on val."""
    params = urbex_params.load()
    model, path = stage_ranker(params)
    return dg.MaterializeResult(
        data_version=data_version(params, path),
        metadata={
            **{k: v for k, v in ranker_summary(model).items() if v is not None},
            "path": dg.MetadataValue.path(str(path)),
        },
    )


@dg.asset(
    partitions_def=EVAL_PARTITIONS,
    deps=[splits, landmark_tables, ranker_model],
    group_name="evaluation",
    op_tags=CPU_OP_TAGS,
)
def evaluation(
    context: dg.AssetExecutionContext, urbex_params: UrbexParams
) -> dg.MaterializeResult:
    """One evaluation run of a model-free policy on a split (resumable): episodes, steps, metrics.

    The partition names the run's :class:`~urbex.eval.runspec.RunSpec` (with ``params``'
    perturbation and sample); its fields are the metadata, beside the headline metrics.
    """
    return _evaluate(context, urbex_params)


@dg.asset(
    partitions_def=MODEL_EVAL_PARTITIONS,
    deps=[splits, landmark_tables],
    group_name="evaluation",
    pool=GPU_POOL,
    op_tags=GPU_OP_TAGS,
)
def model_evaluation(
    context: dg.AssetExecutionContext, urbex_params: UrbexParams
) -> dg.MaterializeResult:
    """One evaluation run of a model-backed policy (``vlm``, ``openai``, ``workflow``,
    ``no_tools``) on a split: as ``evaluation``, in the ``gpu`` pool."""
    return _evaluate(context, urbex_params)


def _evaluate(context: dg.AssetExecutionContext, urbex_params: UrbexParams) -> dg.MaterializeResult:
    key = context.partition_key.keys_by_dimension
    params = urbex_params.load()
    spec = RunSpec.from_params(params, policy=key["policy"], split=key["split"])
    r = evaluate(params, spec=spec, progress=False)
    refresh(params)
    m = r.metrics.row(0, named=True) if r.metrics.height else {}
    return dg.MaterializeResult(
        data_version=data_version(params, r.run_dir),  # DVC's evaluate@<policy>-<split> out
        metadata={
            "run_id": r.run_id,
            "spec": dg.MetadataValue.json(spec.to_dict()),
            "n": r.n_queries,
            "played": r.n_played,
            "resumed": r.n_skipped,
            "hit1": float(m.get("hit1") or 0.0),
            "hit3": float(m.get("hit3") or 0.0),
            "iou_bev": float(m.get("iou_bev") or 0.0),
            "run_dir": dg.MetadataValue.path(str(r.run_dir)),
        },
    )


@dg.asset(deps=[evaluation, model_evaluation], group_name="evaluation")
def warehouse(urbex_params: UrbexParams) -> dg.MaterializeResult:
    """``assets/warehouse.duckdb``: DuckDB views over every Parquet table."""
    counts = refresh(urbex_params.load())
    return dg.MaterializeResult(metadata={f"rows_{k}": v for k, v in counts.items()})


@dg.asset(deps=[evaluation, model_evaluation], group_name="evaluation")
def diagnostics(urbex_params: UrbexParams) -> dg.MaterializeResult:
    """The paper's diagnostic tables (appendix D) under ``assets/eval/diagnostics/`` + plots."""
    params = urbex_params.load()
    paths = diagnose(params)
    md = next(p for p in paths if p.suffix == ".md")
    return dg.MaterializeResult(
        data_version=data_version(params, params.layout.diagnostics),
        metadata={
            "summary": dg.MetadataValue.md(md.read_text()),
            "path": dg.MetadataValue.path(str(md.parent)),
            "files": len(paths),
        },
    )


@dg.asset(
    deps=[warehouse, diagnostics, dg.AssetKey("zero_shot_evaluation")], group_name="evaluation"
)
def evaluation_report(urbex_params: UrbexParams) -> dg.MaterializeResult:
    """The Table-1-shaped comparison (``assets/eval/report.md``, ``report.csv``) and the static
    results page ``assets/eval/index.html`` (after the diagnostics, whose plots it shows)."""
    params = urbex_params.load()
    path = report(params, echo=False)
    pics = thumbnails(params.layout.results_page, k=2)
    return dg.MaterializeResult(
        data_version=data_version(params, path),  # report.md (the page is not versioned)
        metadata={
            "report": dg.MetadataValue.md(path.read_text()),
            "path": dg.MetadataValue.path(str(path)),
            "results_page": dg.MetadataValue.url(params.layout.results_page.resolve().as_uri()),
            "thumbnails": dg.MetadataValue.md(
                "\n\n".join(thumbnail_markdown(p, alt=p.stem, max_side=320) for p in pics)
                or "no trajectory pictures yet"
            ),
        },
    )
