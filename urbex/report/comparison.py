"""The Table-1-shaped comparison: rows = methods (policy [+ checkpoint]), columns = split × metric.

A *method* is a run's :class:`~urbex.eval.runspec.RunSpec` without its split
(:attr:`~urbex.eval.runspec.RunSpec.method`): the runs ``oracle-test_nd`` and ``oracle-test_no``
are one row ``oracle``; a vlm run from checkpoint ``ckpt`` is row ``vlm-ckpt``; a
landmark-perturbation run is row ``<policy>-lm_<tag>``. The spec comes from the metrics row's
spec columns, else the run's ``run.json``; a run without a spec is a row named by its run id.
When several runs give the same method × split (e.g. ``--run-id mine`` beside
``oracle-test_no``), the run under the spec's default id keeps the plain label and the others
are rows ``<method> [<run_id>]``, so every run is shown and the choice never depends on order.

Read from the warehouse's ``metrics`` view (DuckDB over ``<assets>/eval/runs/*/metrics.parquet``;
an in-memory connection, so a run writing Parquet meanwhile is never blocked), printed, and
written by :func:`urbex.report.publish.report` as ``<assets>/eval/report.md`` and
``<assets>/eval/report.csv`` (atomically). The Markdown also holds, when their runs exist, the Table-11 block (box and point quality on
``test_no``), the Table-9 block (free policy vs fixed workflow over the same backend,
:mod:`urbex.report.table9`) and Table 2 (zero-shot, :mod:`urbex.report.table2`).

Fractions (Hit@k, IoU, F1, rates) are shown in percent with one decimal, as in the paper;
latency in seconds per query (warm online); ``n`` as a count. The CSV keeps full precision (in
the same units as the Markdown: percent for fractions).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from urbex.agents.checkpoints import read_recipe
from urbex.eval.repeats import group_repeats, t_interval
from urbex.eval.rundir import resolve_specs
from urbex.report.warehouse import refresh_warehouse

if TYPE_CHECKING:
    import polars as pl

    from urbex.config import EvalParams
    from urbex.eval.runspec import RunSpec
    from urbex.layout import AssetLayout

__all__ = [
    "METRIC_LABELS",
    "SMOKE_MARK",
    "TABLE11_METRICS",
    "fmt_metric",
    "method_labels",
    "report_table",
    "smoke_note",
    "smoke_recipes",
    "split_metric",
    "table11",
    "table11_markdown",
    "to_markdown",
]

#: Column labels of the metrics the report knows (others are shown under their own name).
METRIC_LABELS: dict[str, str] = {
    "n": "n",
    "valid_rate": "Valid",
    "hit1": "Hit@1",
    "hit3": "Hit@3",
    "hit5": "Hit@5",
    "hit1_nz": "Hit@1 (nz)",
    "hit1_ciou": "Hit@1 (CIoU)",
    "hit1_iou25": "Hit@1 (IoU≥.25)",
    "iou_bev": "IoU",
    "iou_3d": "3D IoU",
    "point_f1": "Point F1",
    "area_ratio_median": "Area ratio (med)",
    "area_ratio_p90": "Area ratio (P90)",
    "center_dist_m": "Dist (m)",
    "latency_s": "s/query",
    "turns": "Turns",
}
#: Appended to the row label of a run whose checkpoint was trained at smoke length
#: (``recipe.smoke``: ``make demo``): the row shows that the stages run, not the method's result.
SMOKE_MARK = " (smoke)"
_PERCENT = {"valid_rate", "iou_bev", "iou_3d", "point_f1"}
_SPLIT_LABELS = {"test_nd": "ND", "test_no": "NO", "val": "Val", "train": "Train"}


def _is_percent(metric: str) -> bool:
    return metric in _PERCENT or metric.startswith("hit")


def report_table(
    lay: AssetLayout,
    ev: EvalParams,
    base_dir: Path,
    *,
    splits: Sequence[str] | None = None,
    metrics: Sequence[str] | None = None,
    missing_as_null: bool = False,
) -> pl.DataFrame:
    """The comparison of the runs under ``lay`` as a frame: ``method, policy`` then
    ``<split>_<metric>`` columns.

    Parameters
    ----------
    ev
        Gives the default splits and metrics (``report_splits``, ``report_metrics``).
    base_dir
        The params file's folder: relative checkpoint paths in the runs' specs resolve against
        it (the smoke marks).
    splits
        Column groups (default ``ev.report_splits``; those without any run are dropped, and if
        none has a run, every split present is used).
    metrics
        Metrics per split (default ``ev.report_metrics``), columns of the ``metrics`` table.
    missing_as_null
        A metric no run has is a column of nulls instead of an error.

    Raises
    ------
    ValueError
        A metric is not a column of the ``metrics`` table.
    """
    return _comparison(
        lay,
        base_dir,
        list(splits or ev.report_splits),
        list(metrics or ev.report_metrics),
        missing_as_null=missing_as_null,
    )


def _comparison(
    lay: AssetLayout,
    base_dir: Path,
    wanted: list[str],
    mets: list[str],
    *,
    missing_as_null: bool,
) -> pl.DataFrame:
    """:func:`report_table` over the splits ``wanted`` and the metrics ``mets``."""
    import duckdb
    import polars as pl

    con = duckdb.connect(":memory:")
    try:
        refresh_warehouse(lay.root, con=con)
        df = pl.from_arrow(
            con.cursor()
            .sql("SELECT * FROM metrics ORDER BY policy, run_id, split")
            .to_arrow_table()
        )
    finally:
        con.close()
    if not isinstance(df, pl.DataFrame):  # from_arrow of a Table is always a DataFrame
        raise TypeError(f"metrics table: expected a polars DataFrame, got {type(df).__name__}")
    if "benchmark" in df.columns:  # zero-shot benchmarks have their own block (Table 2)
        df = df.filter(pl.col("benchmark").fill_null("cityrefer") == "cityrefer")
    missing = [m for m in mets if m not in df.columns]
    if missing and missing_as_null:  # columns no run file has yet (e.g. hand-made metrics)
        df = df.with_columns(pl.lit(None, dtype=pl.Float64).alias(m) for m in missing)
    elif missing:
        raise ValueError(
            f"metrics: {missing} are not columns of the metrics table; known: {df.columns}"
        )
    present = df["split"].unique().to_list() if df.height else []
    cols = [s for s in wanted if s in present] or sorted(present)

    specs = resolve_specs(df.iter_rows(named=True), lay.runs)
    df, intervals = _fold_repeats(df, specs, mets)
    keys = list(zip(df["run_id"].to_list(), df["split"].to_list()))
    labels = method_labels(keys, specs, smoke=smoke_recipes(specs, base_dir))
    df = df.with_columns(pl.Series("method", [labels[k] for k in keys], dtype=pl.String))
    rows = df.select("method", "policy").unique(maintain_order=True)
    for s in cols:
        part = df.filter(pl.col("split") == s).select(
            "method",
            *(
                (pl.col(m).cast(pl.Float64) * (100.0 if _is_percent(m) else 1.0)).alias(f"{s}_{m}")
                for m in mets
            ),
            *(
                (pl.col(f"{m}{b}").cast(pl.Float64) * (100.0 if _is_percent(m) else 1.0)).alias(
                    f"{s}_{m}{b}"
                )
                for m in mets
                if intervals
                for b in ("_lo", "_hi")
            ),
        )
        rows = rows.join(part, on="method", how="left")
    return rows.sort(["policy", "method"])


def _fold_repeats(
    df: pl.DataFrame, specs: dict[str, RunSpec | None], mets: Sequence[str]
) -> tuple[pl.DataFrame, bool]:
    """Repeats (runs whose spec has a ``repeat_seed``) folded into one row per method × split:
    the mean of each metric, with ``<metric>_lo`` / ``_hi`` its Student-t 95 % interval
    (:func:`urbex.eval.repeats.t_interval`). Returns the frame and whether any repeat was
    folded (else no ``_lo``/``_hi`` columns are added)."""
    import polars as pl

    rep = [
        i
        for i, rid in enumerate(df["run_id"].to_list())
        if (sp := specs.get(rid)) is not None and sp.repeat_seed is not None
    ]
    if not rep:
        return df, False

    keep = df.with_row_index("_i").filter(~pl.col("_i").is_in(rep)).drop("_i")
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for base, members in group_repeats(df[rep].iter_rows(named=True), specs).items():
        # the row is labelled by this id (a spec-less id is its own label), the same per split
        rid = f"{replace(base, split='_').method} (repeats)"
        groups[(rid, base.split)] = members
    for rid, _ in groups:
        specs[rid] = None
    folded = []
    for (rid, split), rows in groups.items():
        rec: dict[str, Any] = {"run_id": rid, "policy": rows[0]["policy"], "split": split}
        for m in mets:
            mean, lo, hi = t_interval([r[m] for r in rows if r[m] is not None])
            rec[m], rec[f"{m}_lo"], rec[f"{m}_hi"] = mean, lo, hi
        folded.append(rec)
    keep = keep.select(
        "run_id", "policy", "split", *(pl.col(m).cast(pl.Float64) for m in mets)
    ).with_columns(
        pl.lit(None, dtype=pl.Float64).alias(f"{m}{b}") for m in mets for b in ("_lo", "_hi")
    )
    back = pl.DataFrame(folded, schema=keep.schema)
    return pl.concat([keep, back]), True


def smoke_recipes(specs: Mapping[str, RunSpec | None], base_dir: Path) -> dict[str, dict[str, Any]]:
    """Run id → the recipe record (:func:`urbex.agents.checkpoints.read_recipe`) of every run
    whose checkpoint was trained at smoke length; relative checkpoint paths are read against
    ``base_dir`` (the params file's folder, as :meth:`urbex.config.Params.portable` wrote them)."""
    out: dict[str, dict[str, Any]] = {}
    seen: dict[str, dict[str, Any] | None] = {}
    for rid, spec in specs.items():
        if spec is None or spec.checkpoint is None:
            continue
        if spec.checkpoint not in seen:
            path = Path(spec.checkpoint)
            seen[spec.checkpoint] = read_recipe(path if path.is_absolute() else base_dir / path)
        rec = seen[spec.checkpoint]
        if rec is not None and rec.get("smoke"):
            out[rid] = rec
    return out


def smoke_note(lay: AssetLayout, methods: Sequence[str]) -> str | None:
    """A paragraph for the report under a table that has smoke rows (labels ending in
    :data:`SMOKE_MARK`): which checkpoints were trained at smoke length, with the recipe and
    the steps of each stage, and where the recipe's real figures are. None without smoke rows.
    """
    marked = [m for m in methods if m.endswith(SMOKE_MARK)]
    if not marked:
        return None
    ckpts = []
    root = lay.checkpoints
    for d in sorted(root.iterdir()) if root.is_dir() else []:
        rec = read_recipe(d)
        named = any(re.search(rf"-{re.escape(d.name)}(-|\s|$)", m) for m in marked)
        if rec is None or not rec.get("smoke") or not named:
            continue
        steps = " + ".join(f"{k} {v}" for k, v in (rec.get("steps") or {}).items())
        ckpts.append(f"`{d.name}` (recipe `{rec.get('name')}`: {steps} steps)")
    return (
        f"Rows marked “{SMOKE_MARK.strip()}” come from checkpoints trained at smoke length"
        f"{': ' + ', '.join(ckpts) if ckpts else ''}. They show that the training stages run "
        "and write loadable checkpoints, not what the method achieves: `make learn` trains the "
        "full CPU recipe into this project, and docs/reader.md and docs/training.md hold its "
        "measured figures."
    )


def method_labels(
    runs: Sequence[tuple[str, str]],
    specs: Mapping[str, RunSpec | None],
    *,
    smoke: Mapping[str, Any] = {},
) -> dict[tuple[str, str], str]:
    """The report row of each ``(run_id, split)``: its spec's method, made unique per split.

    A run without a spec is labelled by its run id. Runs sharing a label on one split keep it
    only under their spec's default id; the others become ``<label> [<run_id>]``. A run in
    ``smoke`` (:func:`smoke_recipes`) gets :data:`SMOKE_MARK` after its label.

    >>> from urbex.eval.runspec import RunSpec
    >>> o = RunSpec(policy="oracle", split="test_no")
    >>> method_labels([("oracle-test_no", "test_no"), ("oracle", "test_no"), ("x", "val")],
    ...               {"oracle-test_no": o, "oracle": o, "x": None})
    {('oracle-test_no', 'test_no'): 'oracle', ('oracle', 'test_no'): 'oracle [oracle]', ('x', 'val'): 'x'}
    """
    base: dict[tuple[str, str], str] = {}
    for rid, split in runs:
        spec = specs.get(rid)
        base[(rid, split)] = spec.method if spec is not None else rid
    groups: dict[tuple[str, str], list[str]] = {}
    for (rid, split), label in base.items():
        groups.setdefault((label, split), []).append(rid)
    out: dict[tuple[str, str], str] = {}
    for (rid, split), label in base.items():
        spec = specs.get(rid)
        canonical = spec is not None and spec.run_id == rid
        shared = len(set(groups[(label, split)])) > 1
        label = f"{label} [{rid}]" if shared and not canonical else label
        out[(rid, split)] = label + SMOKE_MARK if rid in smoke else label
    return out


def to_markdown(table: pl.DataFrame) -> str:
    """A Markdown table of :func:`report_table`'s frame (labels like ``NO Hit@1``).

    >>> import polars as pl
    >>> print(to_markdown(pl.DataFrame({"method": ["r"], "policy": ["oracle"], "test_no_hit1": [100.0],
    ...                                 "test_no_n": [20.0]})))
    | method | policy | NO Hit@1 | NO n |
    |---|---|---:|---:|
    | r | oracle | 100.0 | 20 |
    """
    heads, fmts = ["method", "policy"], []
    value_cols = [c for c in table.columns[2:] if not c.endswith(("_lo", "_hi"))]
    for c in value_cols:
        split, metric = split_metric(c)
        heads.append(f"{_SPLIT_LABELS.get(split, split)} {METRIC_LABELS.get(metric, metric)}")
        fmts.append(metric)
    lines = ["| " + " | ".join(heads) + " |", "|---|---|" + "---:|" * len(fmts)]
    for row in table.iter_rows(named=True):
        cells = [str(row["method"]), str(row["policy"])]
        for c, m in zip(value_cols, fmts):
            cell = fmt_metric(row[c], m)
            lo, hi = row.get(f"{c}_lo"), row.get(f"{c}_hi")
            if lo is not None and hi is not None and lo == lo and hi == hi:
                cell += (
                    f" [{fmt_metric(lo, m)}, {fmt_metric(hi, m)}]"  # repeats: mean [95 % interval]
                )
            cells.append(cell)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def table11_markdown(t: pl.DataFrame) -> str:
    """``| method | policy | BEV IoU | 3D IoU | Point F1 |`` rows of :func:`table11`."""
    lines = [
        "| method | policy | n | BEV IoU | 3D IoU | Point F1 |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for r in t.iter_rows(named=True):
        vals = " | ".join(fmt_metric(r[m], m) for m in TABLE11_METRICS)
        lines.append(f"| {r['method']} | {r['policy']} | {r['n']} | {vals} |")
    return "\n".join(lines)


def split_metric(col: str) -> tuple[str, str]:
    for split in _SPLIT_LABELS:
        if col.startswith(split + "_"):
            return split, col[len(split) + 1 :]
    head, _, tail = col.partition("_")
    return head, tail


def fmt_metric(v: float | None, metric: str) -> str:
    if v is None or v != v:
        return "–"
    if metric == "n":
        return f"{int(v)}"
    if metric.endswith("_s"):
        return f"{v:.3g}"
    return f"{v:.1f}"


#: Table 11's columns (the paper's With-GT / Without-GT comparison) and its split.
TABLE11_METRICS: tuple[str, ...] = ("iou_bev", "iou_3d", "point_f1")
TABLE11_SPLIT = "test_no"


def table11(lay: AssetLayout, base_dir: Path) -> pl.DataFrame:
    """The Table-11-shaped comparison: one row per method, BEV IoU, 3D IoU and point F1 (percent)
    on ``test_no`` (empty when no run covers it).

    Columns ``run_id`` (the method), ``policy``, ``split``, ``method``, ``n``, the metrics.
    """
    import polars as pl

    t = _comparison(lay, base_dir, [TABLE11_SPLIT], ["n", *TABLE11_METRICS], missing_as_null=True)
    cols = [f"{TABLE11_SPLIT}_{m}" for m in ("n", *TABLE11_METRICS)]
    if not all(c in t.columns for c in cols):
        return pl.DataFrame(
            schema={
                "run_id": pl.String, "policy": pl.String, "split": pl.String,
                "method": pl.String, "n": pl.Int64,
                **{m: pl.Float64 for m in TABLE11_METRICS},
            }
        )  # fmt: skip
    t = t.filter(pl.col(cols[0]).is_not_null())
    return t.select(
        pl.col("method").alias("run_id"),
        "policy",
        pl.lit(TABLE11_SPLIT).alias("split"),
        "method",
        pl.col(cols[0]).cast(pl.Int64).alias("n"),
        *(pl.col(f"{TABLE11_SPLIT}_{m}").alias(m) for m in TABLE11_METRICS),
    )
