"""``urbex diagnose``: warehouse → the diagnostic tables, their Markdown and plots (I/O side).

The tables themselves are pure functions in :mod:`urbex.report.diagnostics`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from urbex.agents.proposals import proposal_recall_table
from urbex.agents.registry import policies
from urbex.atomic import atomic_write, write_table_atomic
from urbex.env.world import World
from urbex.eval.repeats import repeated_decoding
from urbex.eval.rundir import resolve_specs
from urbex.eval.runspec import SPEC_COLUMNS
from urbex.report.diagnostics import (
    DIAGNOSTIC_TABLES,
    area_ratio_histogram,
    box_extent,
    check_unique_episodes,
    disambiguation,
    landmark_availability,
    matching_rules,
    query_context,
    tool_use,
)
from urbex.report.plots import plot_panels
from urbex.report.warehouse import TABLES, refresh_warehouse

if TYPE_CHECKING:
    from urbex.config import DiagnoseParams, Params
    from urbex.landmarks.lookup import LandmarkIndex
    from urbex.layout import AssetLayout

__all__ = ["compute_tables", "diagnose", "markdown_table"]


_PERCENT = ("hit", "success", "share", "rate", "delta", "recall")


def _fmt(name: str, v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if isinstance(v, float):
        if any(k in name for k in _PERCENT):
            return f"{100 * v:.1f}"
        return f"{v:.2f}"
    return str(v)


def markdown_table(df: pl.DataFrame, *, drop: Sequence[str] = ()) -> str:
    """A Markdown table of ``df`` (rates as percent with one decimal, other floats two).

    >>> print(markdown_table(pl.DataFrame({"run_id": ["r"], "hit1": [0.25], "n": [4]})))
    | run_id | hit1 | n |
    |---|---|---|
    | r | 25.0 | 4 |
    """
    cols = [c for c in df.columns if c not in drop]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in df.select(cols).iter_rows(named=True):
        lines.append("| " + " | ".join(_fmt(c, row[c]) for c in cols) + " |")
    return "\n".join(lines)


_TITLES = {
    "matching_rules": "Matching rules (Table 12): Hit@1/3 per candidate-matching rule",
    "box_extent": "Box extent (Tables 13-15): thresholded Hit@1, overlap counts, area ratios "
    "(valid answers)",
    "area_ratio": "Area-ratio histogram (predicted / target BEV area, valid answers)",
    "disambiguation": "Search and disambiguation (Table 16): regional success = a zoom region "
    "holds the target centre; local success = Hit@1 given regional success",
    "landmark_availability": "Landmark availability (Table 10): Hit@1 by landmark mention; "
    "perturbation runs against their clean run",
    "tool_use": "Tool use: mean calls per episode, invalid-turn rate, L→Z→O→A share",
    "repeated_decoding": "Repeated decoding (Table 8): mean and Student-t 95 % interval over "
    "the repeats (`urbex evaluate --repeats N`) of each method × split",
    "proposal_recall": "Without-GT proposals: recall of the split's targets at BEV IoU 0.25 "
    "and 0.5, per split and class (the `ranking_proposals` runs' candidates)",
    "step_skills": "Where a marks episode fails, per step (runs with numbered marks): share of "
    "episodes whose landmark_query named a mentioned landmark, whose zoom holds the target, "
    "whose zooms listed the target's mark, and — of those — whose answer named it",
}


def _load(lay: AssetLayout) -> dict[str, pl.DataFrame]:
    import duckdb

    # the views over the files now on disk, in memory: reading never writes warehouse.duckdb
    con = duckdb.connect(":memory:")
    try:
        refresh_warehouse(lay.root, con=con)

        def q(table: str, cols: str, distinct: bool = False) -> pl.DataFrame:
            # Columns added later (e.g. steps.view_*) are NULL over shards written before them.
            have = set(con.sql(f"SELECT * FROM {table} LIMIT 0").columns)
            types = dict(TABLES[table].columns)
            sel = ", ".join(
                c if c in have else f"CAST(NULL AS {types.get(c, 'VARCHAR')}) AS {c}"
                for c in (c.strip() for c in cols.split(","))
            )
            sql = f"SELECT {'DISTINCT ' if distinct else ''}{sel} FROM {table}"
            return pl.from_arrow(con.sql(sql).to_arrow_table())  # type: ignore[return-value]

        return {
            "episodes": q(
                "episodes",
                "run_id, policy, split, query_id, scene_id, object_id, valid_answer, hit1, "
                "hit1_iou25, target_rank, target_rank_nz, target_rank_ciou, n_pos_overlap, "
                "n_iou25, area_ratio, n_landmark_query, n_zoom_in, n_oblique_render, n_invalid, "
                "turns, answer_mark",
            ),
            "steps": q(
                "steps",
                "run_id, query_id, turn, tool, arguments, valid, region_x_min_m, region_y_min_m, "
                "region_x_max_m, region_y_max_m",
            ),
            "queries": q("queries", "query_id, scene_id, object_id, description"),
            "instances": q("instances", "scene_id, object_id, class_name, cx, cy"),
            "runs": _runs(
                q("metrics", ", ".join(["run_id", *(c for c, _ in SPEC_COLUMNS)]), distinct=True),
                lay.runs,
            ),
            "metrics": q(
                "metrics",
                ", ".join(["run_id", "hit1", "hit3", "iou_bev", *(c for c, _ in SPEC_COLUMNS)]),
            ),
        }
    finally:
        con.close()


def _runs(metrics: pl.DataFrame, runs_dir: Path) -> pl.DataFrame:
    """``run_id`` + the spec columns of each run; metrics written before specs get their spec
    from ``run.json`` (:func:`urbex.eval.rundir.resolve_specs`)."""
    specs = resolve_specs(metrics.iter_rows(named=True), runs_dir)
    rows = []
    for row in metrics.unique("run_id", maintain_order=True).iter_rows(named=True):
        spec = specs.get(row["run_id"])
        rows.append({**row, **spec.columns()} if spec is not None else row)
    return pl.DataFrame(rows, schema=metrics.schema)


def _mentions(
    index: LandmarkIndex | None, queries: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``(query_id, name)`` mentions with the clean landmark map, and that map."""
    if index is None or queries.height == 0:
        empty = pl.DataFrame(schema={"query_id": pl.String, "name": pl.String})
        return empty, pl.DataFrame(
            schema={"scene_id": pl.String, "name": pl.String, "x": pl.Float64, "y": pl.Float64}
        )
    names = index.mentions_many(queries["description"].to_list(), queries["scene_id"].to_list())
    m = pl.DataFrame(
        {"query_id": queries["query_id"], "name": names},
        schema={"query_id": pl.String, "name": pl.List(pl.String)},
    ).explode("name")
    return m.drop_nulls("name"), index.table.select("scene_id", "name", "x", "y")


def compute_tables(
    frames: dict[str, pl.DataFrame], d: DiagnoseParams, index: LandmarkIndex | None
) -> dict[str, pl.DataFrame]:
    """Every diagnostic table from the warehouse frames of :func:`diagnose`, binned by ``d``;
    the landmark mentions come from ``index`` (None: no landmark table).

    Raises
    ------
    urbex.errors.DuplicateEpisodesError
        A run holds a query more than once (:func:`urbex.report.diagnostics.check_unique_episodes`).
    """
    ep, steps, queries = frames["episodes"], frames["steps"], frames["queries"]
    check_unique_episodes(ep)
    used = queries.filter(pl.col("query_id").is_in(ep["query_id"].unique().to_list()))
    mentions, landmarks = _mentions(index, used)
    ctx = query_context(
        used, frames["instances"], mentions, landmarks, radius_m=d.distractor_radius_m
    )
    return {
        "matching_rules": matching_rules(ep),
        "box_extent": box_extent(ep),
        "area_ratio": area_ratio_histogram(ep, d.area_ratio_bins),
        "disambiguation": disambiguation(
            ep,
            steps,
            ctx,
            distractor_bins=d.distractor_bins,
            distance_bins_m=d.distance_bins_m,
        ),
        "landmark_availability": landmark_availability(ep, ctx, frames["runs"]),
        "tool_use": tool_use(ep, steps),
        "repeated_decoding": repeated_decoding(frames["metrics"]),
    }


def step_skills(
    world: World, lay: AssetLayout, frames: dict[str, pl.DataFrame]
) -> pl.DataFrame | None:
    """Per run with numbered marks (of ``lay``'s benchmark): the share of its episodes with
    each skill of :data:`urbex.eval.skills.SKILLS` (:func:`urbex.eval.skills.episode_skills`),
    over ``world``'s scenes and landmarks; None when no such run exists."""
    from urbex.annotations.splits import load_queries
    from urbex.eval.skills import SKILLS, episode_skills, skill_shares

    runs = frames["runs"]
    if "marks" not in runs.columns:
        return None
    mine = runs.filter(pl.col("marks").fill_null(False))
    if "benchmark" in runs.columns:
        bench = pl.col("benchmark").fill_null("cityrefer") == lay.benchmark
        mine = mine.filter(bench)
    if mine.height == 0:
        return None
    index = world.landmarks
    targets: dict[str, object] = {}
    mentions: dict[str, list[str]] = {}
    rows = []
    for run in mine.iter_rows(named=True):
        ep = frames["episodes"].filter(pl.col("run_id") == run["run_id"])
        if ep.height == 0:
            continue
        for split in ep["split"].unique().to_list():
            for q in load_queries(lay, split):
                targets.setdefault(q.query_id, q.target_box_2d)
                if index is not None and q.query_id not in mentions:
                    mentions[q.query_id] = index.mentions(q.description, q.scene_id)
        shares = skill_shares(
            episode_skills(
                ep,
                frames["steps"].filter(pl.col("run_id") == run["run_id"]),
                targets_m=targets,
                mentions=mentions,
                proposals=lambda sid: world.scenes(sid).proposals,
                max_listed=world.env_params.marks.max_listed,
            )
        )
        rows.append(
            {
                "run_id": run["run_id"],
                "policy": str(ep["policy"][0]),
                "split": str(ep["split"][0]),
                "n": ep.height,
                **{k: round(100 * shares[k], 1) for k in SKILLS},
            }
        )
    if not rows:
        return None
    return pl.DataFrame(rows).sort("run_id")


def diagnose(params: Params, *, echo: bool = False, refresh: bool = True) -> list[Path]:
    """Compute every diagnostic table over the warehouse's runs; write tables, summary, plots.

    Writes (atomically) ``<assets>/eval/diagnostics/<name>.parquet`` for each of
    :data:`DIAGNOSTIC_TABLES` (and ``proposal_recall`` when a ``ranking_proposals`` run exists,
    :func:`urbex.agents.proposals.proposal_recall_table`), ``diagnostics.md`` (the tables as
    Markdown) and the plots ``success_vs_distractors-<family>.png`` and
    ``area_ratio_hist-<family>.png``, one panel per policy family (:func:`urbex.report.plots.
    plot_panels`), then (``refresh``) refreshes the warehouse once so its
    ``diagnostics_<name>`` views see them; pass ``refresh=False`` when the caller refreshes
    after more work of its own.

    Returns
    -------
    list[Path]
        The files written (tables, then ``diagnostics.md``, then the plots).
    """

    out = params.layout.diagnostics
    frames = _load(params.layout)
    world = World.from_params(params)  # scenes opened lazily; its landmark index read once
    tables = compute_tables(frames, params.diagnose, world.landmarks)
    paths = []
    for name in DIAGNOSTIC_TABLES:
        paths.append(
            write_table_atomic(tables[name].to_arrow(), params.layout.diagnostic_table(name))
        )
    recall = None
    on_proposals = policies(lambda i: i.candidates == "proposals")  # Without-GT rankers
    if set(on_proposals) & set(frames["episodes"]["policy"].to_list()):
        splits = sorted(
            set(frames["episodes"].filter(pl.col("policy").is_in(list(on_proposals)))["split"])
        )
        recall = proposal_recall_table(  # diagnostics_proposal_recall
            world, params.layout, params.eval.candidate_classes, splits
        )
        paths.append(params.layout.diagnostic_table("proposal_recall"))
    skills = step_skills(world, params.layout, frames)
    if skills is not None:
        paths.append(
            write_table_atomic(skills.to_arrow(), params.layout.diagnostic_table("step_skills"))
        )
    n_runs = frames["episodes"]["run_id"].n_unique()
    md = [
        "# urbex diagnostics",
        "",
        f"{n_runs} runs, {frames['episodes'].height} episodes. Rates in percent. Distractors: "
        f"same-class GT instances within {params.diagnose.distractor_radius_m:g} m of the target.",
    ]
    for name in DIAGNOSTIC_TABLES:
        drop = ["bin_order"] if name in ("area_ratio", "disambiguation") else []
        md += ["", f"## {name}", "", _TITLES[name], "", markdown_table(tables[name], drop=drop)]
    if recall is not None:
        md += ["", "## proposal_recall", "", _TITLES["proposal_recall"], "", markdown_table(recall)]
    if skills is not None:
        md += ["", "## step_skills", "", _TITLES["step_skills"], "", markdown_table(skills)]
    text = "\n".join(md) + "\n"
    md_path = out / "diagnostics.md"
    with atomic_write(md_path, "w") as fh:
        fh.write(text)
    paths.append(md_path)
    paths += plot_panels("success_vs_distractors", tables["disambiguation"], out)
    paths += plot_panels("area_ratio_hist", tables["area_ratio"], out)
    if refresh:
        refresh_warehouse(params.assets)
    if echo:
        print(text)
    return paths
