"""Turn a stage's great-expectations outcome into a blocking Dagster asset check.

The stage itself checks before it publishes (stage → check → publish). Here the outcome becomes
an ``AssetCheckResult`` whose metadata lists the failing expectations; on failure the check result
is emitted and the stage's error is re-raised, so the step fails, nothing is published and
downstream assets are not run.
"""

from collections.abc import Callable, Iterator
from typing import Any

import dagster as dg

from urbex.annotations.quality import QualityCheckError

QUALITY = "quality"


def quality_spec(asset: str) -> dg.AssetCheckSpec:
    """The blocking ``quality`` check of ``asset``."""
    return dg.AssetCheckSpec(
        QUALITY, asset=asset, blocking=True, description="great-expectations suite"
    )


def _md(report: dict[str, Any]) -> dict[str, Any]:
    return {
        "suite": report["suite"],
        "failed_expectations": dg.MetadataValue.json(report["failed"]),
        "n_failed": len(report["failed"]),
        "statistics": dg.MetadataValue.json(report["statistics"]),
    }


def run_checked(
    stage: Callable[[], Any],
    *,
    metadata: Callable[[Any], dict[str, Any]],
    version: Callable[[Any], dg.DataVersion] | None = None,
) -> Iterator[dg.AssetCheckResult | dg.MaterializeResult]:
    """Run ``stage``; yield its materialization with a passed check, or a failed check then raise.

    ``metadata`` and ``version`` (the data version, :mod:`pipelines.defs.versions`) are computed
    from the stage's return value."""
    try:
        out = stage()
    except QualityCheckError as exc:
        yield dg.AssetCheckResult(
            check_name=QUALITY,
            passed=False,
            severity=dg.AssetCheckSeverity.ERROR,
            metadata=_md(exc.report.to_dict()),
        )
        raise
    yield dg.MaterializeResult(
        metadata=metadata(out),
        data_version=None if version is None else version(out),
        check_results=[
            dg.AssetCheckResult(check_name=QUALITY, passed=True, metadata={"n_failed": 0})
        ],
    )
