"""The paper's Table 2: zero-shot results on a second benchmark, method × subset.

Rows: every complete run on a zero-shot benchmark (:data:`urbex.benchmarks.ZERO_SHOT`; its
:class:`~urbex.eval.runspec.RunSpec` names the benchmark), labelled by the spec's method (as
the main report); subsets :data:`SUBSETS`: ``all`` expressions and the ``landmark_free`` ones
(the benchmark's ``queries.parquet`` column, decided by the landmark index's ``mentions()``).
Each subset: ``n``, Hit@1, Hit@3 and BEV IoU, aggregated by :func:`urbex.eval.metrics.aggregate`
(the one place metrics are computed) over the run's episodes.
"""

from __future__ import annotations

import polars as pl

from urbex.benchmarks import ZERO_SHOT
from urbex.eval.episodes import read_episodes
from urbex.eval.metrics import aggregate
from urbex.eval.rundir import read_run
from urbex.layout import AssetLayout
from urbex.report.comparison import method_labels
from urbex.report.warehouse import readable_runs

__all__ = ["SUBSETS", "TABLE2_METRICS", "subset_metrics", "table2", "table2_markdown"]

#: Table 2's subsets, in order.
SUBSETS: tuple[str, ...] = ("all", "landmark_free")
#: Table 2's metrics per subset (fractions; the Markdown shows percent).
TABLE2_METRICS: tuple[str, ...] = ("n", "hit1", "hit3", "iou_bev")
_KEYS = ("run_id", "policy", "split", "subset")


def subset_metrics(episodes: pl.DataFrame, queries: pl.DataFrame) -> pl.DataFrame:
    """Metrics rows per run × subset (:data:`SUBSETS`) of episodes on a zero-shot benchmark.

    Parameters
    ----------
    episodes
        Episode rows (:mod:`urbex.eval.episodes`) with ``run_id, policy, split, query_id``.
    queries
        ``query_id, landmark_free`` (the benchmark's ``queries.parquet``); an episode whose
        query is not there counts in ``all`` only.

    Returns
    -------
    polars.DataFrame
        :func:`urbex.eval.metrics.aggregate`'s columns with ``subset``; a subset without
        episodes has no row.
    """

    ep = episodes.join(
        queries.select("query_id", pl.col("landmark_free").fill_null(False)),
        on="query_id",
        how="left",
    ).with_columns(pl.col("landmark_free").fill_null(False))
    parts = [ep.with_columns(pl.lit("all").alias("subset"))]
    parts.append(
        ep.filter(pl.col("landmark_free")).with_columns(pl.lit("landmark_free").alias("subset"))
    )
    parts = [p for p in parts if p.height]
    if not parts:
        return pl.DataFrame(schema={k: pl.String for k in _KEYS} | {"n": pl.Int64})
    out = pl.concat([aggregate(p, by=_KEYS) for p in parts], how="vertical")
    order = {s: i for i, s in enumerate(SUBSETS)}
    return out.sort(pl.col("run_id"), pl.col("subset").replace_strict(order, return_dtype=pl.Int64))


def table2(lay: AssetLayout) -> pl.DataFrame:
    """Table 2 as a frame: ``benchmark, method, policy, run_id, subset, n, hit1, hit3, iou_bev``
    (fractions), one row per complete zero-shot run × subset; empty when there is none."""
    schema = {"benchmark": pl.String, "method": pl.String, "policy": pl.String,
              "run_id": pl.String, "subset": pl.String, "n": pl.Int64,
              **{m: pl.Float64 for m in TABLE2_METRICS if m != "n"}}  # fmt: skip
    specs = {}
    for d in readable_runs(lay.root):
        path = d / "run.json"
        if not path.is_file():
            continue
        record = read_run(path)
        if record.spec.benchmark in ZERO_SHOT and record.status == "complete":
            specs[d.name] = record.spec
    if not specs:
        return pl.DataFrame(schema=schema)
    labels = method_labels([(rid, s.split) for rid, s in specs.items()], dict(specs))
    frames = []
    queries: dict[str, pl.DataFrame] = {}
    for rid, spec in specs.items():
        if spec.benchmark not in queries:
            qp = AssetLayout(lay.root, benchmark=spec.benchmark).queries
            queries[spec.benchmark] = (
                pl.read_parquet(qp, columns=["query_id", "landmark_free"], glob=False)
                if qp.is_file()
                else pl.DataFrame(schema={"query_id": pl.String, "landmark_free": pl.Boolean})
            )
        m = subset_metrics(read_episodes(lay.run(rid)), queries[spec.benchmark])
        if m.height == 0:
            continue
        frames.append(
            m.select(
                pl.lit(spec.benchmark).alias("benchmark"),
                pl.lit(labels[(rid, spec.split)]).alias("method"),
                "policy",
                "run_id",
                "subset",
                "n",
                *(pl.col(c).cast(pl.Float64) for c in TABLE2_METRICS if c != "n"),
            )
        )
    if not frames:
        return pl.DataFrame(schema=schema)
    return pl.concat(frames, how="vertical").sort("benchmark", "policy", "method", "subset")


def table2_markdown(t: pl.DataFrame) -> str:
    """Markdown of :func:`table2`: one line per method, column groups per subset (percent).

    >>> t = pl.DataFrame({"benchmark": ["b", "b"], "method": ["oracle"] * 2, "policy": ["oracle"] * 2,
    ...     "run_id": ["r"] * 2, "subset": ["all", "landmark_free"], "n": [10, 4],
    ...     "hit1": [1.0, 0.75], "hit3": [1.0, 1.0], "iou_bev": [0.99, 0.5]})
    >>> print(table2_markdown(t))
    | benchmark | method | policy | All n | All Hit@1 | All Hit@3 | All IoU | LM-free n | LM-free Hit@1 | LM-free Hit@3 | LM-free IoU |
    |---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|
    | b | oracle | oracle | 10 | 100.0 | 100.0 | 99.0 | 4 | 75.0 | 100.0 | 50.0 |
    """
    names = {"all": "All", "landmark_free": "LM-free"}
    mets = {"n": "n", "hit1": "Hit@1", "hit3": "Hit@3", "iou_bev": "IoU"}
    heads = ["benchmark", "method", "policy"] + [
        f"{names[s]} {mets[m]}" for s in SUBSETS for m in TABLE2_METRICS
    ]
    lines = ["| " + " | ".join(heads) + " |", "|---|---|---|" + "---:|" * (len(heads) - 3)]
    for (b, method, policy), g in t.group_by("benchmark", "method", "policy", maintain_order=True):
        by = {r["subset"]: r for r in g.iter_rows(named=True)}
        cells = [str(b), str(method), str(policy)]
        for s in SUBSETS:
            r = by.get(s)
            for m in TABLE2_METRICS:
                v = None if r is None else r[m]
                cells.append(
                    "–" if v is None else (f"{int(v)}" if m == "n" else f"{100.0 * v:.1f}")
                )
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
