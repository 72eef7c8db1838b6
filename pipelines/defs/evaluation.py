"""Evaluation runs (policy × split), the warehouse views and the comparison report."""

import dagster as dg

from pipelines.defs.annotations import landmark_tables, splits
from pipelines.defs.resources import UrbexParams
from urbex.agents.ranker import fit_ranker_from_params, ranker_summary
from urbex.agents.registry import POLICY_NAMES
from urbex.eval.diagnose import diagnose
from urbex.eval.report import report
from urbex.eval.runner import evaluate
from urbex.eval.runspec import RunSpec
from urbex.stages import refresh

EVAL_PARTITIONS = dg.MultiPartitionsDefinition(
    {
        "policy": dg.StaticPartitionsDefinition(list(POLICY_NAMES)),
        "split": dg.StaticPartitionsDefinition(["val", "test_nd", "test_no"]),
    }
)


@dg.asset(deps=[splits, landmark_tables], group_name="evaluation")
def ranker_model(urbex_params: UrbexParams) -> dg.MaterializeResult:
    """The trained With-GT ranker (policy ``ranking``): fitted on train, selected on val."""
    model, path = fit_ranker_from_params(urbex_params.load())
    return dg.MaterializeResult(
        metadata={
            **{k: v for k, v in ranker_summary(model).items() if v is not None},
            "path": dg.MetadataValue.path(str(path)),
        }
    )


@dg.asset(
    partitions_def=EVAL_PARTITIONS,
    deps=[splits, landmark_tables, ranker_model],
    group_name="evaluation",
)
def evaluation(
    context: dg.AssetExecutionContext, urbex_params: UrbexParams
) -> dg.MaterializeResult:
    """One evaluation run: episodes, steps and metrics of a policy on a split (resumable).

    The partition names the run's :class:`~urbex.eval.runspec.RunSpec` (with ``params``'
    perturbation and sample); its fields are the metadata, beside the headline metrics.
    """
    key = context.partition_key.keys_by_dimension
    params = urbex_params.load()
    spec = RunSpec.from_params(params, policy=key["policy"], split=key["split"])
    r = evaluate(params, spec=spec, progress=False)
    m = r.metrics.row(0, named=True) if r.metrics.height else {}
    return dg.MaterializeResult(
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
        }
    )


@dg.asset(deps=[evaluation], group_name="evaluation")
def warehouse(urbex_params: UrbexParams) -> dg.MaterializeResult:
    """``assets/warehouse.duckdb``: DuckDB views over every Parquet table."""
    counts = refresh(urbex_params.load())
    return dg.MaterializeResult(metadata={f"rows_{k}": v for k, v in counts.items()})


@dg.asset(deps=[warehouse, dg.AssetKey("zero_shot_evaluation")], group_name="evaluation")
def evaluation_report(urbex_params: UrbexParams) -> dg.MaterializeResult:
    """The Table-1-shaped comparison (+ the Table-2 block of the zero-shot runs), as
    ``assets/eval/report.md`` and ``report.csv``."""
    path = report(urbex_params.load(), echo=False)
    return dg.MaterializeResult(
        metadata={
            "report": dg.MetadataValue.md(path.read_text()),
            "path": dg.MetadataValue.path(str(path)),
        }
    )


@dg.asset(deps=[evaluation], group_name="evaluation")
def diagnostics(urbex_params: UrbexParams) -> dg.MaterializeResult:
    """The paper's diagnostic tables (appendix D) under ``assets/eval/diagnostics/`` + plots."""
    paths = diagnose(urbex_params.load())
    md = next(p for p in paths if p.suffix == ".md")
    return dg.MaterializeResult(
        metadata={
            "summary": dg.MetadataValue.md(md.read_text()),
            "path": dg.MetadataValue.path(str(md.parent)),
            "files": len(paths),
        }
    )
