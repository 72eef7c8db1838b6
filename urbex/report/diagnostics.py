"""The paper's diagnostic tables (appendix D.3, D.5, D.6) over the warehouse's evaluation rows.

Pure functions over polars frames (one table each, one row per run × split × bin);
:func:`urbex.report.diagnose.diagnose` reads the warehouse, computes them, and writes every table to
``<assets>/eval/diagnostics/<name>.parquet`` (the warehouse's ``diagnostics_<name>`` views), a
Markdown summary ``diagnostics.md`` and two PNG plots.

=========================  =====================================================================
table                      answers
=========================  =====================================================================
``matching_rules``         Table 12: is Hit@1/3 stable across candidate-matching rules (IoU,
                           non-zero overlap, CIoU)?
``box_extent``             Tables 13–15: how much Hit@1 survives an IoU ≥ 0.25 threshold; how
                           many candidates a predicted box overlaps; how oversized it is.
``area_ratio``             The predicted/target area-ratio histogram (valid answers).
``disambiguation``         Table 16: regional-search success (a zoom region holds the target's
                           BEV centre) and local-disambiguation success (Hit@1 given regional
                           success) vs nearby same-class distractors, and regional success vs
                           the distance from the target to the nearest mentioned landmark.
``landmark_availability``  Table 10: Hit@1 of queries with / without a landmark mention, per
                           run, and the change against the clean run of a landmark-perturbation
                           run (``eval.landmark_perturbation``).
``tool_use``               Mean calls per tool, invalid-call rate, turns, share of L→Z→O→A
                           trajectories.
=========================  =====================================================================

Rates are fractions in [0, 1] (the Markdown shows percent). Frames: boxes and centres are world
metres (BEV, scene frame); distances are metres.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import polars as pl

from urbex.env.trajectory import TOOL_NAMES
from urbex.errors import DuplicateEpisodesError
from urbex.eval.runspec import RunSpec, clean_twins
from urbex.tool_vocabulary import ENV_TOOLS, ToolName

if TYPE_CHECKING:
    pass

__all__ = [
    "DIAGNOSTIC_TABLES",
    "area_ratio_histogram",
    "bin_labels",
    "box_extent",
    "check_unique_episodes",
    "disambiguation",
    "landmark_availability",
    "matching_rules",
    "query_context",
    "regional_success",
    "tool_use",
]

#: The tables :func:`diagnose` writes (``diagnostics_<name>`` in the warehouse).
DIAGNOSTIC_TABLES: tuple[str, ...] = (
    "matching_rules",
    "box_extent",
    "area_ratio",
    "disambiguation",
    "landmark_availability",
    "tool_use",
    "repeated_decoding",
)
_KEYS = ["run_id", "policy", "split"]


def _rate(expr: pl.Expr) -> pl.Expr:
    return expr.fill_null(False).cast(pl.Float64).mean()


def _hit(col: str, k: int) -> pl.Expr:
    r = pl.col(col).fill_null(0)
    return _rate((r >= 1) & (r <= k))


def bin_labels(edges: Sequence[float], *, zero_bin: bool = False, unit: str = "") -> list[str]:
    """Labels of the bins cut at ``edges``: ``<e0``, ``e0-e1``, …, ``>=eN``.

    With ``zero_bin`` (integer counts) the first bin is ``0`` and the others are inclusive
    integer ranges.

    >>> bin_labels([1, 5, 10], zero_bin=True)
    ['0', '1-4', '5-9', '>=10']
    >>> bin_labels([50, 100, 200], unit=" m")
    ['<50 m', '50-100 m', '100-200 m', '>=200 m']
    """
    e = [f"{v:g}" for v in edges]
    if zero_bin:
        ints = [int(v) for v in edges]
        mid = [f"{a}-{b - 1}" if b - 1 > a else f"{a}" for a, b in itertools.pairwise(ints)]
        return ["0" if ints[0] == 1 else f"0-{ints[0] - 1}", *mid, f">={ints[-1]}"]
    mid = [f"{a}-{b}{unit}" for a, b in itertools.pairwise(e)]
    return [f"<{e[0]}{unit}", *mid, f">={e[-1]}{unit}"]


def _cut(col: str, edges: Sequence[float], labels: Sequence[str]) -> pl.Expr:
    """Bin label of ``col`` (left-closed bins ``[e_i, e_{i+1})``); null stays null."""
    expr: Any = pl.when(pl.col(col) < edges[0]).then(pl.lit(labels[0]))
    for e, lab in zip(edges[1:], labels[1:]):
        expr = expr.when(pl.col(col) < e).then(pl.lit(lab))
    out: pl.Expr = expr.when(pl.col(col).is_not_null()).then(pl.lit(labels[-1])).otherwise(None)
    return out


def check_unique_episodes(episodes: pl.DataFrame) -> None:
    """Refuse episodes where a run holds a query more than once (its rows would count twice).

    >>> ep = pl.DataFrame({"run_id": ["r", "r", "s"], "query_id": ["q1", "q1", "q1"]})
    >>> check_unique_episodes(ep)
    Traceback (most recent call last):
    ...
    urbex.errors.DuplicateEpisodesError: run 'r' holds 1 queries more than once (e.g. ['q1'], 2 episodes of 'q1'); ...
    >>> check_unique_episodes(ep[1:])

    Raises
    ------
    DuplicateEpisodesError
        Names the first such run, how many queries repeat, and a few of their ids.
    """
    dup = (
        episodes.group_by("run_id", "query_id")
        .len()
        .filter(pl.col("len") > 1)
        .sort("run_id", "query_id")
    )
    if dup.height == 0:
        return
    run = dup["run_id"][0]
    rows = dup.filter(pl.col("run_id") == run)
    ids = rows["query_id"].to_list()
    raise DuplicateEpisodesError(
        f"run {run!r} holds {len(ids)} queries more than once (e.g. {ids[:3]}, "
        f"{rows['len'][0]} episodes of {ids[0]!r}); expected one episode per query (two writers "
        f"played it?). Delete the run directory eval/runs/{run} and rerun `urbex evaluate`"
    )


# ---------------------------------------------------------------------------------------------
# D.5: matching rules, box extent
# ---------------------------------------------------------------------------------------------


def matching_rules(episodes: pl.DataFrame) -> pl.DataFrame:
    """Table 12: Hit@1/Hit@3 under the three candidate-matching rules, per run × split × rule.

    ``rule``: ``iou`` (rank by BEV IoU), ``iou_nonzero`` (zero-overlap target never a hit),
    ``ciou`` (Complete IoU). ``hit1_spread``/``hit3_spread``: max − min over the rules.

    >>> ep = pl.DataFrame({"run_id": ["r", "r"], "policy": ["p", "p"], "split": ["s", "s"],
    ...     "target_rank": [1, 4], "target_rank_nz": [1, None], "target_rank_ciou": [2, 3]})
    >>> matching_rules(ep).select("rule", "hit1", "hit3", "hit1_spread").rows()
    [('ciou', 0.0, 1.0, 0.5), ('iou', 0.5, 0.5, 0.5), ('iou_nonzero', 0.5, 0.5, 0.5)]
    """
    parts = []
    for rule, col in (
        ("iou", "target_rank"),
        ("iou_nonzero", "target_rank_nz"),
        ("ciou", "target_rank_ciou"),
    ):
        parts.append(
            episodes.group_by(_KEYS).agg(
                pl.lit(rule).alias("rule"),
                pl.len().cast(pl.Int64).alias("n"),
                _hit(col, 1).alias("hit1"),
                _hit(col, 3).alias("hit3"),
            )
        )
    out = pl.concat(parts)
    spread = [
        (pl.col(c).max() - pl.col(c).min()).over(_KEYS).alias(f"{c}_spread")
        for c in ("hit1", "hit3")
    ]
    return out.with_columns(spread).sort([*_KEYS, "rule"])


def box_extent(episodes: pl.DataFrame) -> pl.DataFrame:
    """Tables 13–15: thresholded Hit@1, overlapped-candidate counts, area ratios, per run × split.

    ``hit1`` and ``hit1_iou25`` (Hit@1 whose predicted box also reaches IoU ≥ 0.25 with the
    target) are over all episodes (no answer = miss); ``hit1_drop = hit1 − hit1_iou25``. Over
    valid answers only: ``n_pos_overlap_mean`` (candidates with positive BEV overlap),
    ``n_iou25_median`` (candidates reaching IoU 0.25), ``area_ratio_median``/``_p90``
    (predicted / target BEV area).

    >>> ep = pl.DataFrame({"run_id": ["r"] * 3, "policy": ["p"] * 3, "split": ["s"] * 3,
    ...     "valid_answer": [True, True, False], "hit1": [True, True, False],
    ...     "hit1_iou25": [True, False, False], "n_pos_overlap": [2, 6, 0], "n_iou25": [1, 0, 0],
    ...     "area_ratio": [1.0, 9.0, None]})
    >>> r = box_extent(ep).row(0, named=True)
    >>> round(r["hit1_drop"], 4), r["n_valid"], r["n_pos_overlap_mean"], r["area_ratio_median"]
    (0.3333, 2, 4.0, 5.0)
    """
    valid = pl.col("valid_answer").fill_null(False)
    ratio = pl.when(valid).then(pl.col("area_ratio").fill_nan(None))
    return (
        episodes.group_by(_KEYS)
        .agg(
            pl.len().cast(pl.Int64).alias("n"),
            valid.cast(pl.Int64).sum().alias("n_valid"),
            _rate(pl.col("hit1")).alias("hit1"),
            _rate(pl.col("hit1_iou25")).alias("hit1_iou25"),
            pl.when(valid)
            .then(pl.col("n_pos_overlap"))
            .cast(pl.Float64)
            .mean()
            .alias("n_pos_overlap_mean"),
            pl.when(valid)
            .then(pl.col("n_iou25"))
            .cast(pl.Float64)
            .median()
            .alias("n_iou25_median"),
            ratio.median().alias("area_ratio_median"),
            ratio.quantile(0.9, interpolation="linear").alias("area_ratio_p90"),
        )
        .with_columns((pl.col("hit1") - pl.col("hit1_iou25")).alias("hit1_drop"))
        .sort(_KEYS)
    )


def area_ratio_histogram(episodes: pl.DataFrame, edges: Sequence[float]) -> pl.DataFrame:
    """Predicted/target area-ratio histogram over valid answers, per run × split × bin.

    ``share`` is the bin's fraction of the run's valid answers; every bin is listed (count 0
    included), ordered by ``bin_order``.

    >>> ep = pl.DataFrame({"run_id": ["r"] * 3, "policy": ["p"] * 3, "split": ["s"] * 3,
    ...     "valid_answer": [True, True, False], "area_ratio": [0.9, 3.0, None]})
    >>> area_ratio_histogram(ep, [1.0, 2.0]).select("bin", "count", "share").rows()
    [('<1', 1, 0.5), ('1-2', 0, 0.0), ('>=2', 1, 0.5)]
    """
    labels = bin_labels(edges)
    order = pl.DataFrame({"bin": labels, "bin_order": list(range(len(labels)))})
    v = episodes.filter(pl.col("valid_answer").fill_null(False)).with_columns(
        pl.col("area_ratio").fill_nan(None)
    )
    v = v.filter(pl.col("area_ratio").is_not_null()).with_columns(
        _cut("area_ratio", edges, labels).alias("bin")
    )
    runs = episodes.select(_KEYS).unique()
    grid = runs.join(order, how="cross")
    counts = v.group_by([*_KEYS, "bin"]).agg(pl.len().cast(pl.Int64).alias("count"))
    out = grid.join(counts, on=[*_KEYS, "bin"], how="left").with_columns(
        pl.col("count").fill_null(0)
    )
    tot = pl.col("count").sum().over(_KEYS)
    return out.with_columns(
        pl.when(tot > 0).then(pl.col("count") / tot).otherwise(None).alias("share")
    ).sort([*_KEYS, "bin_order"])


# ---------------------------------------------------------------------------------------------
# D.6: regional search and local disambiguation
# ---------------------------------------------------------------------------------------------


def query_context(
    queries: pl.DataFrame,
    instances: pl.DataFrame,
    mentions: pl.DataFrame,
    landmarks: pl.DataFrame,
    *,
    radius_m: float,
) -> pl.DataFrame:
    """Per query: the target's BEV centre, its same-class distractors, its landmark distance.

    Parameters
    ----------
    queries
        ``query_id, scene_id, object_id``.
    instances
        The GT instance table: ``scene_id, object_id, class_name, cx, cy`` (world metres).
    mentions
        ``query_id, name``: the landmark names each description mentions (may be empty).
    landmarks
        ``scene_id, name, x, y`` (world metres; the clean map).
    radius_m
        Same-class instances whose BEV centre lies within this distance of the target's count.

    Returns
    -------
    polars.DataFrame
        ``query_id, target_cx, target_cy, n_distractors, has_landmark, landmark_dist_m``
        (distance to the nearest mentioned landmark, null without one).

    Examples
    --------
    >>> q = pl.DataFrame({"query_id": ["q"], "scene_id": ["s"], "object_id": ["1"]})
    >>> inst = pl.DataFrame({"scene_id": ["s"] * 4, "object_id": ["1", "2", "3", "4"],
    ...     "class_name": ["Car", "Car", "Car", "Tree"], "cx": [0.0, 30.0, 80.0, 1.0],
    ...     "cy": [0.0, 40.0, 0.0, 0.0]})
    >>> lm = pl.DataFrame({"scene_id": ["s"], "name": ["Hall"], "x": [0.0], "y": [120.0]})
    >>> m = pl.DataFrame({"query_id": ["q"], "name": ["Hall"]})
    >>> query_context(q, inst, m, lm, radius_m=50.0).select(
    ...     "n_distractors", "has_landmark", "landmark_dist_m").row(0)
    (1, True, 120.0)
    """
    inst = instances.select(
        "scene_id",
        pl.col("object_id").cast(pl.String),
        "class_name",
        pl.col("cx").cast(pl.Float64),
        pl.col("cy").cast(pl.Float64),
    )
    tgt = (
        queries.select("query_id", "scene_id", pl.col("object_id").cast(pl.String))
        .unique("query_id")
        .join(inst, on=["scene_id", "object_id"], how="left")
        .rename({"cx": "target_cx", "cy": "target_cy", "class_name": "target_class"})
    )
    pairs = tgt.join(
        inst.rename({"object_id": "other_id"}),
        left_on=["scene_id", "target_class"],
        right_on=["scene_id", "class_name"],
        how="inner",
    ).filter(
        (pl.col("other_id") != pl.col("object_id"))
        & (
            ((pl.col("cx") - pl.col("target_cx")) ** 2 + (pl.col("cy") - pl.col("target_cy")) ** 2)
            <= radius_m**2
        )
    )
    nd = pairs.group_by("query_id").agg(pl.len().cast(pl.Int64).alias("n_distractors"))
    lm = (
        mentions.select("query_id", "name")
        .join(tgt.select("query_id", "scene_id", "target_cx", "target_cy"), on="query_id")
        .join(landmarks.select("scene_id", "name", "x", "y"), on=["scene_id", "name"])
        .with_columns(
            ((pl.col("x") - pl.col("target_cx")) ** 2 + (pl.col("y") - pl.col("target_cy")) ** 2)
            .sqrt()
            .alias("d")
        )
        .group_by("query_id")
        .agg(pl.col("d").min().alias("landmark_dist_m"))
    )
    has = mentions.select("query_id").unique().with_columns(pl.lit(True).alias("has_landmark"))
    return (
        tgt.select("query_id", "target_cx", "target_cy")
        .join(nd, on="query_id", how="left")
        .join(has, on="query_id", how="left")
        .join(lm, on="query_id", how="left")
        .with_columns(pl.col("n_distractors").fill_null(0), pl.col("has_landmark").fill_null(False))
        .sort("query_id")
    )


def regional_success(steps: pl.DataFrame, context: pl.DataFrame) -> pl.DataFrame:
    """Per (run, query): did some valid ``zoom_in`` region contain the target's BEV centre?

    ``steps`` needs ``run_id, query_id, tool, valid, region_x_min_m, region_y_min_m, region_x_max_m,
    region_y_max_m`` (world metres); ``context`` needs ``query_id, target_cx, target_cy``. Episodes
    without a valid zoom are absent here (the caller counts them as regional failures).

    >>> st = pl.DataFrame({"run_id": ["r", "r"], "query_id": ["q", "q"],
    ...     "tool": ["zoom_in", "zoom_in"], "valid": [True, True], "region_x_min_m": [50.0, -5.0],
    ...     "region_y_min_m": [0.0, -5.0], "region_x_max_m": [60.0, 5.0], "region_y_max_m": [10.0, 5.0]})
    >>> ctx = pl.DataFrame({"query_id": ["q"], "target_cx": [0.0], "target_cy": [0.0]})
    >>> regional_success(st, ctx).rows()
    [('r', 'q', True)]
    """
    z = steps.filter((pl.col("tool") == ToolName.ZOOM_IN) & pl.col("valid").fill_null(False))
    z = z.join(context.select("query_id", "target_cx", "target_cy"), on="query_id")
    inside = (
        (pl.col("region_x_min_m") <= pl.col("target_cx"))
        & (pl.col("target_cx") <= pl.col("region_x_max_m"))
        & (pl.col("region_y_min_m") <= pl.col("target_cy"))
        & (pl.col("target_cy") <= pl.col("region_y_max_m"))
    )
    return (
        z.group_by("run_id", "query_id")
        .agg(inside.fill_null(False).any().alias("regional"))
        .sort("run_id", "query_id")
    )


def disambiguation(
    episodes: pl.DataFrame,
    steps: pl.DataFrame,
    context: pl.DataFrame,
    *,
    distractor_bins: Sequence[int] = (1, 5, 10),
    distance_bins_m: Sequence[float] = (50.0, 100.0, 200.0),
) -> pl.DataFrame:
    """Table 16: search and disambiguation success per run × split × factor × bin.

    ``factor = "distractors"``: bins of same-class GT instances near the target
    (``context.n_distractors``); ``factor = "landmark_distance"``: bins of the target-to-nearest-
    mentioned-landmark distance, plus ``no landmark``. Per bin: ``n`` episodes,
    ``regional_success`` (a valid zoom region contains the target's BEV centre; no zoom = fail),
    ``n_regional``, ``local_success`` (Hit@1 among the regional successes; null when none) and
    ``hit1``. Every bin is listed (``n = 0`` included), in ``bin_order``.
    """
    reg = regional_success(steps, context)
    ep = (
        episodes.select(*_KEYS, "query_id", "hit1")
        .join(context, on="query_id", how="left")
        .join(reg, on=["run_id", "query_id"], how="left")
        .with_columns(pl.col("regional").fill_null(False), pl.col("hit1").fill_null(False))
    )
    d_labels = bin_labels(distractor_bins, zero_bin=True)
    l_labels = [*bin_labels(distance_bins_m, unit=" m"), "no landmark"]
    ep = ep.with_columns(
        _cut("n_distractors", [float(b) for b in distractor_bins], d_labels).alias("distractors"),
        pl.when(pl.col("landmark_dist_m").is_null())
        .then(pl.lit("no landmark"))
        .otherwise(_cut("landmark_dist_m", distance_bins_m, l_labels[:-1]))
        .alias("landmark_distance"),
    )
    frames = []
    for factor, labels in (("distractors", d_labels), ("landmark_distance", l_labels)):
        order = pl.DataFrame(
            {"factor": [factor] * len(labels), "bin": labels, "bin_order": list(range(len(labels)))}
        )
        agg = (
            ep.rename({factor: "bin"})
            .group_by([*_KEYS, "bin"])
            .agg(
                pl.len().cast(pl.Int64).alias("n"),
                pl.col("regional").cast(pl.Float64).mean().alias("regional_success"),
                pl.col("regional").cast(pl.Int64).sum().alias("n_regional"),
                pl.col("hit1")
                .filter(pl.col("regional"))
                .cast(pl.Float64)
                .mean()
                .alias("local_success"),
                pl.col("hit1").cast(pl.Float64).mean().alias("hit1"),
            )
        )
        grid = episodes.select(_KEYS).unique().join(order, how="cross")
        frames.append(
            grid.join(agg, on=[*_KEYS, "bin"], how="left").with_columns(
                pl.col("n").fill_null(0), pl.col("n_regional").fill_null(0)
            )
        )
    return pl.concat(frames).sort([*_KEYS, "factor", "bin_order"])


# ---------------------------------------------------------------------------------------------
# D.3: landmark availability; tool use
# ---------------------------------------------------------------------------------------------


def landmark_availability(
    episodes: pl.DataFrame, context: pl.DataFrame, runs: pl.DataFrame | None = None
) -> pl.DataFrame:
    """Table 10: Hit@1 by landmark mention, per run × split × subset, against the clean run.

    ``subset``: ``with landmark`` (the description mentions a landmark), ``without landmark``,
    ``all``. ``runs`` holds each run's spec: ``run_id`` and the columns of
    :data:`urbex.eval.runspec.SPEC_COLUMNS` (:meth:`~urbex.eval.runspec.RunSpec.columns`); a run
    absent from it, or without spec columns, is taken as clean unless its
    ``landmark_perturbation`` says otherwise. For a perturbation run, ``clean_run_id`` is its
    clean twin — the run whose spec equals ``spec.clean()``
    (:func:`urbex.eval.runspec.clean_twins`) — ``clean_hit1`` that run's Hit@1 on the same
    subset of queries (the same query ids), and ``delta_hit1 = hit1 − clean_hit1`` (null
    without a clean run).

    >>> from urbex.eval.perturb import LandmarkPerturbation
    >>> from urbex.eval.runspec import RunSpec
    >>> clean = RunSpec(policy="o", split="s")
    >>> miss = RunSpec(policy="o", split="s", perturbation=LandmarkPerturbation(mode="missing"))
    >>> runs = pl.DataFrame([{"run_id": "c", **clean.columns()}, {"run_id": "m", **miss.columns()}])
    >>> ep = pl.DataFrame({"run_id": ["c", "c", "m", "m"], "policy": ["o"] * 4,
    ...     "split": ["s"] * 4, "query_id": ["a", "b", "a", "b"], "hit1": [True, True, False, True]})
    >>> ctx = pl.DataFrame({"query_id": ["a", "b"], "has_landmark": [True, False]})
    >>> t = landmark_availability(ep, ctx, runs).filter(pl.col("subset") == "with landmark")
    >>> t.select("run_id", "clean_run_id", "hit1", "delta_hit1").rows()
    [('c', None, 1.0, None), ('m', 'c', 0.0, -1.0)]
    """

    specs: dict[str, RunSpec | None] = {}
    tag_of: dict[str, str] = {}
    for row in () if runs is None else runs.unique("run_id").iter_rows(named=True):
        rid = str(row["run_id"])
        specs[rid] = spec = RunSpec.from_columns(row)
        tag = spec.perturbation_tag if spec is not None else row.get("landmark_perturbation")
        tag_of[rid] = tag or "none"
    twins = clean_twins(specs)
    tags = pl.DataFrame(
        {
            "run_id": list(tag_of),
            "landmark_perturbation": list(tag_of.values()),
            "clean_run_id": [twins.get(r) for r in tag_of],
        },
        schema={"run_id": pl.String, "landmark_perturbation": pl.String, "clean_run_id": pl.String},
    )
    ep = (
        episodes.select(*_KEYS, "query_id", "hit1")
        .join(context.select("query_id", "has_landmark"), on="query_id", how="left")
        .join(tags, on="run_id", how="left")
        .with_columns(
            pl.col("landmark_perturbation").fill_null("none"),
            pl.col("hit1").fill_null(False),
            pl.when(pl.col("has_landmark").fill_null(False))
            .then(pl.lit("with landmark"))
            .otherwise(pl.lit("without landmark"))
            .alias("subset"),
        )
    )
    ep = pl.concat([ep, ep.with_columns(pl.lit("all").alias("subset"))])
    clean = ep.filter(pl.col("landmark_perturbation") == "none").select(
        pl.col("run_id").alias("clean_run_id"),
        "split",
        "query_id",
        "subset",
        pl.col("hit1").alias("_clean_hit1"),
    )
    paired = ep.join(clean, on=["clean_run_id", "split", "query_id", "subset"], how="left")
    is_pert = pl.col("landmark_perturbation") != "none"
    out = paired.group_by([*_KEYS, "landmark_perturbation", "subset"]).agg(
        pl.first("clean_run_id"),
        pl.len().cast(pl.Int64).alias("n"),
        pl.col("hit1").cast(pl.Float64).mean().alias("hit1"),
        pl.col("_clean_hit1").cast(pl.Float64).mean().alias("clean_hit1"),
        pl.col("_clean_hit1").is_not_null().sum().alias("_n_clean"),
    )
    out = out.with_columns(
        pl.when(is_pert & (pl.col("_n_clean") > 0))
        .then(pl.col("clean_run_id"))
        .alias("clean_run_id"),
        pl.when(is_pert & (pl.col("_n_clean") > 0)).then(pl.col("clean_hit1")).alias("clean_hit1"),
    ).with_columns((pl.col("hit1") - pl.col("clean_hit1")).alias("delta_hit1"))
    return out.drop("_n_clean").sort([*_KEYS, "subset"])


#: The paper's free trajectory pattern (appendix D.2): landmark → zoom → oblique → answer.
_LZOA = [*ENV_TOOLS, ToolName.ANSWER]


def tool_use(episodes: pl.DataFrame, steps: pl.DataFrame) -> pl.DataFrame:
    """Tool use per run × split: mean calls per tool, invalid rate, turns, L→Z→O→A share.

    ``invalid_rate`` = invalid turns / all turns. ``lzoa_share``: episodes whose valid actions,
    with consecutive repeats merged, are exactly landmark_query → zoom_in → oblique_render →
    answer (appendix D.2's pattern).

    >>> ep = pl.DataFrame({"run_id": ["r", "r"], "policy": ["p", "p"], "split": ["s", "s"],
    ...     "query_id": ["a", "b"], "n_landmark_query": [1, 0], "n_zoom_in": [2, 0],
    ...     "n_oblique_render": [1, 0], "n_invalid": [1, 0], "turns": [6, 1]})
    >>> st = pl.DataFrame({"run_id": ["r"] * 7, "query_id": ["a"] * 6 + ["b"],
    ...     "turn": [1, 2, 3, 4, 5, 6, 1], "tool": ["landmark_query", "zoom_in", None, "zoom_in",
    ...     "oblique_render", "answer", "answer"], "valid": [True, True, False, True, True, True,
    ...     True]})
    >>> r = tool_use(ep, st).row(0, named=True)
    >>> r["zoom_in"], round(r["invalid_rate"], 4), r["lzoa_share"]
    (1.0, 0.1429, 0.5)
    """
    seq = (
        steps.filter(pl.col("valid").fill_null(False))
        .sort("run_id", "query_id", "turn")
        .group_by("run_id", "query_id", maintain_order=True)
        .agg(pl.col("tool").alias("tools"))
        .with_columns(
            pl.col("tools")
            .map_elements(
                lambda ts: [t for i, t in enumerate(ts) if i == 0 or ts[i - 1] != t] == _LZOA,
                return_dtype=pl.Boolean,
            )
            .alias("lzoa")
        )
        .select("run_id", "query_id", "lzoa")
    )
    ep = episodes.join(seq, on=["run_id", "query_id"], how="left")
    return (
        ep.group_by(_KEYS)
        .agg(
            pl.len().cast(pl.Int64).alias("n"),
            *(pl.col(f"n_{t}").cast(pl.Float64).mean().alias(t) for t in TOOL_NAMES),
            (pl.col("n_invalid").sum() / pl.col("turns").sum().clip(1)).alias("invalid_rate"),
            pl.col("turns").cast(pl.Float64).mean().alias("turns"),
            _rate(pl.col("lzoa")).alias("lzoa_share"),
        )
        .sort(_KEYS)
    )
