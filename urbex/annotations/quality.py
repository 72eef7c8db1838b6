"""Data-quality suites (great-expectations 1.x) for cleaned queries, splits and landmarks.

Stage → check → publish: a stage builds its table in memory, :func:`validate_queries` /
:func:`validate_splits` / :func:`validate_landmarks` run a GX suite on it (ephemeral context,
pandas batch), and :func:`publish_checked` writes the table to the path downstream stages read
only if the suite passed; otherwise it raises :class:`QualityCheckError` (a
:class:`~urbex.errors.DataQualityError`) carrying the report and leaves that path untouched.

Checks that need a join or a cross-row rule (object exists in its scene, landmark inside the
scene bounds, no leakage between splits) are precomputed as boolean columns and checked with
``expect_column_values_to_be_in_set([True])``. great_expectations is imported lazily (≈2.5 s).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from urbex.annotations.clean import normalize_description
from urbex.annotations.splits import SPLITS
from urbex.atomic import atomic_path, atomic_write
from urbex.config_data import AnnotationParams
from urbex.errors import DataQualityError
from urbex.landmarks import LANDMARK_KINDS

__all__ = [
    "Expectation",
    "QualityCheckError",
    "QualityReport",
    "publish_checked",
    "run_suite",
    "validate_landmarks",
    "validate_queries",
    "validate_splits",
    "write_report",
]

#: One expectation: (GX expectation class name, keyword arguments).
Expectation = tuple[str, dict[str, Any]]


@dataclass(frozen=True, slots=True, kw_only=True)
class QualityReport:
    """The outcome of one suite run.

    Attributes
    ----------
    suite : str
    success : bool
    failed : tuple[dict, ...]
        ``{"expectation": type, "column": name or None, "details": {...}}`` per failed one.
    statistics : dict
        GX statistics (evaluated/successful/unsuccessful counts) plus ``rows``.
    """

    suite: str
    success: bool
    failed: tuple[dict[str, Any], ...] = ()
    statistics: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.success and self.failed:
            raise ValueError("QualityReport: success=True with failed expectations")

    def summary(self) -> str:
        """One line per failed expectation, e.g. ``expect_column_values_to_be_unique(query_id): 2 unexpected``."""
        lines = []
        for f in self.failed:
            d = f["details"]
            n = d.get("unexpected_count", d.get("observed_value"))
            sample = d.get("partial_unexpected_list")
            lines.append(
                f"{f['expectation']}({f['column'] or ''}): {n} unexpected"
                + (f", e.g. {sample[:3]!r}" if sample else "")
            )
        return "; ".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (Dagster asset-check metadata, report files)."""
        return json.loads(
            json.dumps(
                {"suite": self.suite, "success": self.success, "failed": list(self.failed),
                 "statistics": self.statistics},
                default=str,
            )
        )  # fmt: skip


class QualityCheckError(DataQualityError):
    """A suite failed; ``.report`` holds the :class:`QualityReport`."""

    def __init__(self, report: QualityReport, *, path: str | Path | None = None):
        super().__init__(
            f"quality suite {report.suite!r} failed, data not published: {report.summary()}",
            path=path,
        )
        self.report = report


def _to_pandas(df: Any, columns: Sequence[str] | None = None) -> Any:
    if isinstance(df, pl.DataFrame):
        if columns is not None:
            df = df.select([c for c in columns if c in df.columns])
        return df.to_pandas()
    return df if columns is None else df[[c for c in columns if c in df.columns]]


def run_suite(df: Any, name: str, expectations: Sequence[Expectation]) -> QualityReport:
    """Run a GX suite on a frame (ephemeral context, whole-dataframe batch, no progress bars).

    Parameters
    ----------
    df
        polars or pandas frame (polars is converted: GX has no polars support).
    name
        Suite name (reported).
    expectations
        ``[("ExpectColumnValuesToNotBeNull", {"column": "query_id"}), ...]``.
    """
    import great_expectations as gx
    import great_expectations.expectations as gxe
    from great_expectations.data_context.types.base import ProgressBarsConfig

    pdf = _to_pandas(df)
    ctx = gx.get_context(mode="ephemeral")
    ctx.variables.progress_bars = ProgressBarsConfig(globally=False)
    batch = (
        ctx.data_sources.add_pandas(f"{name}_source")
        .add_dataframe_asset(name)
        .add_batch_definition_whole_dataframe(f"{name}_batch")
    )
    suite = ctx.suites.add(gx.ExpectationSuite(name=name))
    for cls_name, kwargs in expectations:
        suite.add_expectation(getattr(gxe, cls_name)(**kwargs))
    vd = ctx.validation_definitions.add(
        gx.ValidationDefinition(name=f"{name}_v", data=batch, suite=suite)
    )
    res = vd.run(batch_parameters={"dataframe": pdf})
    failed = []
    for r in res.results:
        if r.success:
            continue
        cfg = r.expectation_config
        details = {
            k: v
            for k, v in (r.result or {}).items()
            if k in ("unexpected_count", "unexpected_percent", "partial_unexpected_list", "observed_value", "element_count")
        }  # fmt: skip
        if r.exception_info and r.exception_info.get("raised_exception"):
            details["exception"] = str(r.exception_info.get("exception_message"))
        failed.append(
            {
                "expectation": cfg.type if cfg is not None else "unknown",
                "column": cfg.kwargs.get("column") if cfg is not None else None,
                "details": details,
            }
        )
    stats = dict(res.statistics)
    stats["rows"] = len(pdf)
    return QualityReport(
        suite=name, success=bool(res.success), failed=tuple(failed), statistics=stats
    )


def _object_exists(df: pl.DataFrame, instances: Any) -> pl.DataFrame:
    if isinstance(instances, pl.DataFrame):
        inst = instances
    else:
        inst = pl.from_pandas(instances)
    keys = inst.select(
        pl.col("scene_id").cast(pl.String), pl.col("object_id").cast(pl.String)
    ).unique()
    df = df.with_columns(pl.col("scene_id").cast(pl.String), pl.col("object_id").cast(pl.String))
    return df.join(keys.with_columns(pl.lit(True).alias("object_in_scene")), on=["scene_id", "object_id"], how="left").with_columns(
        pl.col("object_in_scene").fill_null(False)
    )  # fmt: skip


def _query_expectations(
    df: pl.DataFrame, a: AnnotationParams | None, classes: Sequence[str] | None, min_chars: int | None,
    max_chars: int | None, has_exists: bool,
) -> list[Expectation]:  # fmt: skip
    classes = list(classes) if classes is not None else (list(a.target_classes) if a else None)
    lo = min_chars if min_chars is not None else (a.min_chars if a else 1)
    hi = max_chars if max_chars is not None else (a.max_chars if a else 10_000)
    ex: list[Expectation] = [("ExpectTableRowCountToBeBetween", {"min_value": 1})]
    for c in ("query_id", "scene_id", "object_id", "class_name", "description"):
        ex.append(("ExpectColumnValuesToNotBeNull", {"column": c}))
    ex.append(("ExpectColumnValuesToBeUnique", {"column": "query_id"}))
    ex.append(
        (
            "ExpectColumnValueLengthsToBeBetween",
            {"column": "description", "min_value": lo, "max_value": hi},
        )
    )
    if classes is not None:
        ex.append(("ExpectColumnValuesToBeInSet", {"column": "class_name", "value_set": classes}))
    if has_exists:
        ex.append(
            ("ExpectColumnValuesToBeInSet", {"column": "object_in_scene", "value_set": [True]})
        )
    return ex


def _strip_description(df: pl.DataFrame) -> pl.DataFrame:
    """Descriptions with surrounding whitespace removed: the length bounds count content, so a
    blank description fails them however long it is."""
    if "description" not in df.columns:
        return df
    return df.with_columns(pl.col("description").cast(pl.String).str.strip_chars())


_QUERY_COLS = ("query_id", "scene_id", "object_id", "class_name", "description", "object_in_scene")


def validate_queries(
    df: pl.DataFrame,
    *,
    annotation_params: AnnotationParams | None = None,
    instances: Any | None = None,
    target_classes: Sequence[str] | None = None,
    min_chars: int | None = None,
    max_chars: int | None = None,
) -> QualityReport:
    """Suite ``queries``: ≥1 row; non-null ids, class and description; unique ``query_id``;
    description length in ``[min_chars, max_chars]``; class in the target set; with
    ``instances`` (``scene_id``, ``object_id``), every object exists in its scene.
    """
    if instances is not None:
        df = _object_exists(df, instances)
    df = _strip_description(df)
    ex = _query_expectations(
        df, annotation_params, target_classes, min_chars, max_chars, instances is not None
    )
    return run_suite(_to_pandas(df, _QUERY_COLS), "queries", ex)


def validate_splits(
    df: pl.DataFrame,
    *,
    annotation_params: AnnotationParams | None = None,
    instances: Any | None = None,
    target_classes: Sequence[str] | None = None,
) -> QualityReport:
    """Suite ``splits``: the ``queries`` suite plus ``split`` in the four names and no leakage
    (column ``no_leak``: a test_nd description found in train, or a train row in a val/test_no
    scene, is a leak).
    """

    if "split" not in df.columns:  # reported as a failed not-null expectation on ``split``
        df = df.with_columns(pl.lit(None, dtype=pl.String).alias("split"))
    if instances is not None:
        df = _object_exists(df, instances)
    df = _strip_description(df)
    d = pl.col("description").map_elements(normalize_description, return_dtype=pl.String)
    df = df.with_columns(d.alias("_d"))
    train = df.filter(pl.col("split") == "train")
    held_scenes = df.filter(pl.col("split").is_in(["val", "test_no"]))["scene_id"].unique()
    df = df.with_columns(
        ~(
            ((pl.col("split") == "test_nd") & pl.col("_d").is_in(train["_d"].unique().implode()))
            | ((pl.col("split") == "train") & pl.col("scene_id").is_in(held_scenes.implode()))
        ).alias("no_leak")
    )
    ex = _query_expectations(
        df, annotation_params, target_classes, None, None, instances is not None
    )
    ex.append(("ExpectColumnValuesToNotBeNull", {"column": "split"}))
    ex.append(("ExpectColumnValuesToBeInSet", {"column": "split", "value_set": list(SPLITS)}))
    ex.append(("ExpectColumnValuesToBeInSet", {"column": "no_leak", "value_set": [True]}))
    return run_suite(_to_pandas(df, (*_QUERY_COLS, "split", "no_leak")), "splits", ex)


def validate_landmarks(
    df: pl.DataFrame,
    *,
    bounds: Mapping[str, Sequence[float]] | None = None,
    margin: float = 0.0,
) -> QualityReport:
    """Suite ``landmarks``: non-null ids, names and geometry; unique ``landmark_id``; ``kind`` and
    ``source`` in their sets; with ``bounds`` (scene_id → ``[x_min, y_min, x_max, y_max]`` world
    metres), every ``(x, y)`` within the scene bounds ± ``margin`` (column ``inside_bounds``).
    An empty table passes (a scene may have no named landmark).
    """

    cols = [
        "scene_id",
        "landmark_id",
        "name",
        "name_norm",
        "kind",
        "footprint_wkt",
        "x",
        "y",
        "source",
    ]
    ex: list[Expectation] = [("ExpectColumnValuesToNotBeNull", {"column": c}) for c in cols]
    ex.append(("ExpectColumnValuesToBeUnique", {"column": "landmark_id"}))
    ex.append(("ExpectColumnValueLengthsToBeBetween", {"column": "name_norm", "min_value": 1}))
    ex.append(
        ("ExpectColumnValuesToBeInSet", {"column": "kind", "value_set": list(LANDMARK_KINDS)})
    )
    ex.append(
        ("ExpectColumnValuesToBeInSet", {"column": "source", "value_set": ["box3d", "geojson"]})
    )
    if bounds is not None:
        b = pl.DataFrame(
            [{"scene_id": k, "_x0": v[0], "_y0": v[1], "_x1": v[2], "_y1": v[3]} for k, v in bounds.items()],
            schema={"scene_id": pl.String, "_x0": pl.Float64, "_y0": pl.Float64, "_x1": pl.Float64, "_y1": pl.Float64},
        )  # fmt: skip
        m = float(margin)
        df = df.join(b, on="scene_id", how="left").with_columns(
            (
                pl.col("x").is_between(pl.col("_x0") - m, pl.col("_x1") + m)
                & pl.col("y").is_between(pl.col("_y0") - m, pl.col("_y1") + m)
            )
            .fill_null(False)
            .alias("inside_bounds")
        )
        ex.append(("ExpectColumnValuesToBeInSet", {"column": "inside_bounds", "value_set": [True]}))
        cols.append("inside_bounds")
    return run_suite(_to_pandas(df, cols), "landmarks", ex)


def write_report(report: QualityReport, path: str | Path) -> Path:
    """Write a report as JSON (atomically); Dagster asset checks read it for their metadata."""

    path = Path(path)
    with atomic_write(path, "w", encoding="utf-8") as fh:
        json.dump(report.to_dict(), fh, indent=2)
    return path


def publish_checked(df: pl.DataFrame, path: str | Path, report: QualityReport) -> Path:
    """Write ``df`` to ``path`` (Parquet, or CSV when the suffix is ``.csv``) only if ``report``
    passed; atomic (temp file + ``os.replace``).

    Raises
    ------
    QualityCheckError
        The report failed; ``path`` is left untouched.
    """

    path = Path(path)
    if not report.success:
        raise QualityCheckError(report, path=path)
    with atomic_path(path) as tmp:
        if path.suffix == ".csv":
            df.write_csv(tmp)
        else:
            df.write_parquet(tmp)
    return path
