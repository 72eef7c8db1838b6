"""Grounding metrics, computed the way the paper computes them (§4, appendix D.5). Pure, no I/O.

Hit@k
-----
The scene's ground-truth instances are ranked by their overlap with the **predicted BEV box**;
the *target rank* is the 1-based position of the query's target in that ranking, and
``Hit@k = 1 ≤ rank ≤ k``. Three ranking rules (the paper's Table 12):

``"iou"``          BEV IoU with the predicted box.
``"iou_nonzero"``  BEV IoU, but a target with zero overlap is *unranked* (never a hit).
``"ciou"``         Complete IoU (centre distance and aspect enter; disjoint boxes still rank).

Ties are broken **against** the target: it ranks behind every candidate whose score is greater
than *or equal to* its own. So a prediction that overlaps nothing cannot score a hit by luck of
candidate order (with ``"iou"`` it then ranks last of the ``K`` candidates). Rank ``0`` means
*not ranked* (no valid answer, or a zero-overlap target under ``"iou_nonzero"``).

Frames: BEV boxes are ``[x_min, y_min, x_max, y_max]`` and 3D boxes
``[x_min, y_min, z_min, x_max, y_max, z_max]``, world metres, axis-aligned.

Fractions (Hit@k, IoU, F1, valid-answer rate) are in ``[0, 1]``; the report multiplies by 100.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from urbex.eval.episodes import episode_schema
from urbex.eval.point_metrics import point_f1_counts
from urbex.geometry import area_2d, center_distance_2d, ciou_2d, iou_2d, iou_3d

if TYPE_CHECKING:
    import polars as pl

    from urbex.env.records import PointCounts
    from urbex.env.trajectory import Trajectory

__all__ = [
    "GROUP_KEYS",
    "RANK_RULES",
    "TIMING_COLUMNS",
    "RankRule",
    "aggregate",
    "area_ratio",
    "candidate_scores",
    "episode_metrics",
    "episodes_metrics",
    "hit_at_k",
    "metrics_schema",
    "target_ranks",
    "trajectories_metrics",
    "trajectory_metrics",
]

RankRule = Literal["iou", "iou_nonzero", "ciou"]
#: The ranking rules of Hit@k (see the module docstring).
RANK_RULES: tuple[RankRule, ...] = ("iou", "iou_nonzero", "ciou")
#: The grouping keys of :func:`aggregate` (one metrics row per run × split).
GROUP_KEYS: tuple[str, ...] = ("run_id", "policy", "split")
#: :func:`aggregate`'s measured columns (seconds): a run's ``metrics.parquet`` holds the others,
#: its unversioned ``timings/metrics.parquet`` these with :data:`GROUP_KEYS`.
TIMING_COLUMNS: tuple[str, ...] = (
    "latency_s",
    "latency_p50_s",
    "latency_p90_s",
    "env_s",
    "policy_s",
)


def _check_rule(rule: str) -> None:
    if rule not in RANK_RULES:
        raise ValueError(f"rule: expected one of {RANK_RULES}, got {rule!r}")


def candidate_scores(
    pred_box: ArrayLike, gt_boxes: ArrayLike, *, rule: RankRule = "iou"
) -> NDArray[np.float64]:
    """The ranking score of every GT candidate against the predicted BEV box.

    Parameters
    ----------
    pred_box : array_like, shape (..., 4)
        Predicted BEV box(es), world metres.
    gt_boxes : array_like, shape (..., K, 4)
        The candidates (every GT instance of the scene), world metres.
    rule : {"iou", "iou_nonzero", "ciou"}
        ``"iou"`` and ``"iou_nonzero"`` score by BEV IoU in [0, 1]; ``"ciou"`` by CIoU in
        [-1.5, 1].

    Returns
    -------
    ndarray, shape (..., K), float64

    Examples
    --------
    >>> candidate_scores([0, 0, 2, 2], [[0, 0, 2, 2], [1, 1, 3, 3], [5, 5, 6, 6]]).round(4).tolist()
    [1.0, 0.1429, 0.0]
    """
    _check_rule(rule)
    p = np.asarray(pred_box, dtype=np.float64)[..., None, :]
    g = np.asarray(gt_boxes, dtype=np.float64)
    fn = ciou_2d if rule == "ciou" else iou_2d
    return np.asarray(fn(p, g), dtype=np.float64)


def target_ranks(
    pred_boxes: ArrayLike,
    gt_boxes: ArrayLike,
    target_index: ArrayLike,
    *,
    valid: ArrayLike | None = None,
    candidate_mask: ArrayLike | None = None,
    rule: RankRule = "iou",
) -> NDArray[np.int64]:
    """The 1-based rank of each episode's target among its scene's GT instances (0 = unranked).

    Vectorised over episodes: pad scenes with fewer instances and mask the padding out with
    ``candidate_mask``.

    Parameters
    ----------
    pred_boxes : array_like, shape (E, 4)
        Predicted BEV boxes, world metres (rows of invalid episodes are ignored; a row with a
        non-finite coordinate counts as no valid answer).
    gt_boxes : array_like, shape (E, K, 4)
        Candidate boxes per episode, world metres.
    target_index : array_like, shape (E,), int
        Index of the target among the ``K`` candidates.
    valid : array_like, shape (E,), bool, optional
        False where the episode has no valid answer (→ rank 0). Default: all True.
    candidate_mask : array_like, shape (E, K), bool, optional
        False for padding candidates. Default: all True.
    rule : {"iou", "iou_nonzero", "ciou"}

    Returns
    -------
    ndarray, shape (E,), int64
        ``1 + #{other candidates scoring >= the target}``; 0 when unranked.

    Examples
    --------
    Three instances; the prediction overlaps the second most:

    >>> gt = [[[0, 0, 4, 4], [3, 0, 7, 4], [20, 20, 24, 24]]]
    >>> target_ranks([[2, 0, 6, 4]], gt, [1]).tolist()
    [1]
    >>> target_ranks([[2, 0, 6, 4]], gt, [0]).tolist()
    [2]
    >>> target_ranks([[2, 0, 6, 4]], gt, [2]).tolist()  # zero overlap: ranks last ...
    [3]
    >>> target_ranks([[2, 0, 6, 4]], gt, [2], rule="iou_nonzero").tolist()  # ... or unranked
    [0]
    >>> target_ranks([[2, 0, 6, 4]], gt, [1], valid=[False]).tolist()
    [0]
    """
    _check_rule(rule)
    p = np.asarray(pred_boxes, dtype=np.float64)
    g = np.asarray(gt_boxes, dtype=np.float64)
    t = np.asarray(target_index, dtype=np.int64)
    if p.ndim != 2 or p.shape[1] != 4:
        raise ValueError(f"pred_boxes: expected shape (E, 4), got {p.shape}")
    e = p.shape[0]
    if g.ndim != 3 or g.shape[0] != e or g.shape[2] != 4:
        raise ValueError(f"gt_boxes: expected shape ({e}, K, 4), got {g.shape}")
    k = g.shape[1]
    if t.shape != (e,):
        raise ValueError(f"target_index: expected shape ({e},), got {t.shape}")
    if e and (t.min() < 0 or t.max() >= k):
        raise ValueError(f"target_index: expected values in [0, {k}), got {t.min()}..{t.max()}")
    ok = np.ones(e, dtype=bool) if valid is None else np.asarray(valid, dtype=bool).reshape(e)
    cm = (
        np.ones((e, k), dtype=bool)
        if candidate_mask is None
        else np.asarray(candidate_mask, dtype=bool)
    )
    if cm.shape != (e, k):
        raise ValueError(f"candidate_mask: expected shape ({e}, {k}), got {cm.shape}")
    if e == 0:
        return np.zeros(0, dtype=np.int64)
    ok = ok & np.isfinite(p).all(axis=1)  # a non-finite box is no answer (never a hit)
    p_safe = np.where(ok[:, None], p, 0.0)
    s = candidate_scores(p_safe, g, rule=rule)
    return _ranks_of_scores(s, t, rule, ok, cm)


def _ranks_of_scores(
    s: NDArray[np.float64],
    t: NDArray[np.int64],
    rule: RankRule,
    ok: NDArray[np.bool_],
    cm: NDArray[np.bool_],
) -> NDArray[np.int64]:
    """:func:`target_ranks` from the candidates' scores ``s`` (E, K) under ``rule``."""
    rows = np.arange(s.shape[0])
    st = s[rows, t]
    others = cm.copy()
    others[rows, t] = False
    rank = 1 + ((s >= st[:, None]) & others).sum(axis=1)
    unranked = ~ok | ~cm[rows, t]
    if rule == "iou_nonzero":
        unranked |= st <= 0.0
    return np.where(unranked, 0, rank).astype(np.int64)


def hit_at_k(ranks: ArrayLike, k: int) -> NDArray[np.bool_]:
    """``1 ≤ rank ≤ k`` (rank 0 = unranked = miss).

    >>> hit_at_k([1, 3, 0, 6], 3).tolist()
    [True, True, False, False]
    """
    if k < 1:
        raise ValueError(f"k: expected >= 1, got {k}")
    r = np.asarray(ranks, dtype=np.int64)
    return (r >= 1) & (r <= k)


def area_ratio(pred_box: ArrayLike, target_box: ArrayLike) -> NDArray[np.float64] | float:
    """Predicted / target BEV area (NaN when the target area is 0).

    >>> area_ratio([0, 0, 4, 2], [0, 0, 2, 2])
    2.0
    """
    pa = np.asarray(area_2d(pred_box), dtype=np.float64)
    ta = np.asarray(area_2d(target_box), dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(ta > 0, pa / np.where(ta > 0, ta, 1.0), np.nan)
    return float(out) if out.ndim == 0 else out


def episode_metrics(
    pred_box_2d: ArrayLike | None,
    gt_boxes_2d: ArrayLike,
    target_index: int,
    *,
    pred_box_3d: ArrayLike | None = None,
    gt_box_3d: ArrayLike | None = None,
    point_counts: PointCounts | None = None,
) -> dict[str, Any]:
    """Every per-episode metric of one answer.

    Parameters
    ----------
    pred_box_2d : array_like, shape (4,), or None
        The answer's world BEV box (metres); None when the episode has no valid answer (a box
        with a non-finite coordinate is treated the same).
    gt_boxes_2d : array_like, shape (K, 4)
        BEV boxes of all the scene's GT instances, world metres.
    target_index : int
        The target's row in ``gt_boxes_2d``.
    pred_box_3d, gt_box_3d : array_like, shape (6,), optional
        The answer lifted to 3D (z-range of the points under its footprint) and the target's 3D
        box, world metres. ``iou_3d`` is 0.0 without them.
    point_counts : PointCounts, optional
        For point F1: over the points of a region covering both boxes, how many lie under the
        answer, belong to the target, and both (:class:`urbex.env.records.PointCounts`).
        ``point_f1`` is 0.0 without them.

    Returns
    -------
    dict
        ``valid_answer, iou_bev, iou_3d, point_precision, point_recall, point_f1,
        center_dist_m (NaN without answer), target_rank, target_rank_nz, target_rank_ciou (0 =
        unranked), hit1, hit3, hit5, hit1_iou25, area_ratio (NaN without answer),
        n_candidates, n_pos_overlap, n_iou25``.

    Examples
    --------
    >>> gt = [[0, 0, 4, 4], [3, 0, 7, 4], [20, 20, 24, 24]]
    >>> m = episode_metrics([2, 0, 6, 4], gt, 1)
    >>> m["target_rank"], m["hit1"], round(m["iou_bev"], 4), m["n_pos_overlap"]
    (1, True, 0.6, 2)
    >>> episode_metrics(None, gt, 1)["hit5"]
    False
    """
    return episodes_metrics(
        [pred_box_2d],
        [gt_boxes_2d],
        [target_index],
        pred_boxes_3d=[pred_box_3d],
        gt_boxes_3d=[gt_box_3d],
        point_counts=[point_counts],
    )[0]


_NO_ANSWER: dict[str, Any] = dict(
    iou_bev=0.0, iou_3d=0.0, point_precision=0.0, point_recall=0.0, point_f1=0.0,
    center_dist_m=float("nan"), target_rank=0, target_rank_nz=0, target_rank_ciou=0,
    hit1=False, hit3=False, hit5=False, hit1_iou25=False, area_ratio=float("nan"),
    n_pos_overlap=0, n_iou25=0,
)  # fmt: skip


def episodes_metrics(
    pred_boxes_2d: Sequence[ArrayLike | None],
    gt_boxes_2d: Sequence[ArrayLike],
    target_index: Sequence[int],
    *,
    pred_boxes_3d: Sequence[ArrayLike | None] | None = None,
    gt_boxes_3d: Sequence[ArrayLike | None] | None = None,
    point_counts: Sequence[PointCounts | None] | None = None,
) -> list[dict[str, Any]]:
    """:func:`episode_metrics` of ``E`` episodes at once (one vectorised pass, the same values).

    Parameters
    ----------
    pred_boxes_2d : sequence of E array_like (4,) or None
        The answers' world BEV boxes, metres (None: no valid answer).
    gt_boxes_2d : sequence of E array_like (K_e, 4)
        Each episode's candidates, world metres (the counts may differ).
    target_index : sequence of E int
        The target's row in each episode's candidates.
    pred_boxes_3d, gt_boxes_3d : sequence of E array_like (6,) or None, optional
    point_counts : sequence of E PointCounts or None, optional

    Returns
    -------
    list of E dicts, as :func:`episode_metrics` returns them.

    Examples
    --------
    >>> gt = [[0, 0, 4, 4], [3, 0, 7, 4], [20, 20, 24, 24]]
    >>> ms = episodes_metrics([[2, 0, 6, 4], None], [gt, gt[:2]], [1, 0])
    >>> [(m["target_rank"], m["n_candidates"]) for m in ms]
    [(1, 3), (0, 2)]
    """
    e = len(pred_boxes_2d)
    p3 = [None] * e if pred_boxes_3d is None else list(pred_boxes_3d)
    g3 = [None] * e if gt_boxes_3d is None else list(gt_boxes_3d)
    pc: list[PointCounts | None] = [None] * e if point_counts is None else list(point_counts)
    if not len(gt_boxes_2d) == len(target_index) == len(p3) == len(g3) == len(pc) == e:
        raise ValueError(f"episodes_metrics: expected {e} entries in every argument")
    gs = [np.asarray(g, dtype=np.float64).reshape(-1, 4) for g in gt_boxes_2d]
    t = np.array([int(i) for i in target_index], dtype=np.int64).reshape(e)
    for g, i in zip(gs, t):
        if not 0 <= i < g.shape[0]:
            raise ValueError(f"target_index: expected 0..{g.shape[0] - 1}, got {i}")
    valid = np.array(
        [p is not None and bool(np.isfinite(np.asarray(p, float)).all()) for p in pred_boxes_2d],
        dtype=bool,
    )
    out: list[dict[str, Any]] = [
        {"valid_answer": bool(v), "n_candidates": g.shape[0]} for v, g in zip(valid, gs)
    ]
    # candidates padded to the longest list (padding masked out of every ranking and count)
    k = max(g.shape[0] for g in gs)
    g_all = np.zeros((e, k, 4))
    cm = np.zeros((e, k), dtype=bool)
    for j, g in enumerate(gs):
        g_all[j, : g.shape[0]] = g
        cm[j, : g.shape[0]] = True
    p = np.zeros((e, 4))
    for jv in np.flatnonzero(valid).tolist():
        p[jv] = np.asarray(pred_boxes_2d[jv], dtype=np.float64).reshape(4)
    rows = np.arange(e)
    ious = candidate_scores(p, g_all, rule="iou")
    scores = {"iou": ious, "ciou": candidate_scores(p, g_all, rule="ciou")}
    ranks = {  # target_ranks of every answer, each score computed once
        rule: _ranks_of_scores(scores["ciou" if rule == "ciou" else "iou"], t, rule, valid, cm)
        for rule in RANK_RULES
    }
    iou_b = ious[rows, t]
    target = g_all[rows, t]
    dist = np.asarray(center_distance_2d(p, target))
    ratio = np.asarray(area_ratio(p, target))
    n_pos, n_25 = ((ious > 0) & cm).sum(axis=1), ((ious >= 0.25) & cm).sum(axis=1)
    iou3 = np.zeros(e)
    j3 = [j for j in range(e) if p3[j] is not None and g3[j] is not None]
    if j3:
        a3, b3 = (np.array([np.asarray(x[j], np.float64).reshape(6) for j in j3]) for x in (p3, g3))
        iou3[j3] = np.asarray(iou_3d(a3, b3))
    hits = {kk: hit_at_k(ranks["iou"], kk) for kk in (1, 3, 5)}
    for j, o in enumerate(out):
        if not valid[j]:
            o.update(_NO_ANSWER)
            continue
        c = pc[j]
        prec, rec, f1 = (0.0,) * 3 if c is None else point_f1_counts(c.n_pred, c.n_target, c.n_both)
        r = int(ranks["iou"][j])
        o.update(
            iou_bev=float(iou_b[j]),
            iou_3d=float(iou3[j]),
            point_precision=prec,
            point_recall=rec,
            point_f1=f1,
            center_dist_m=float(dist[j]),
            target_rank=r,
            target_rank_nz=int(ranks["iou_nonzero"][j]),
            target_rank_ciou=int(ranks["ciou"][j]),
            hit1=bool(hits[1][j]),
            hit3=bool(hits[3][j]),
            hit5=bool(hits[5][j]),
            hit1_iou25=bool(hits[1][j]) and float(iou_b[j]) >= 0.25,
            area_ratio=float(ratio[j]),
            n_pos_overlap=int(n_pos[j]),
            n_iou25=int(n_25[j]),
        )
    return out


def trajectory_metrics(
    traj: Trajectory, gt_boxes_2d: ArrayLike, target_index: int
) -> dict[str, Any]:
    """:func:`episode_metrics` of a played episode (its answer, lifted box and point counts).

    Parameters
    ----------
    traj
        The trajectory; its query needs ground truth.
    gt_boxes_2d : array_like, shape (K, 4)
        The candidates (world metres); ``target_index`` is the target's row.
    """
    return trajectories_metrics([traj], [gt_boxes_2d], [target_index])[0]


def trajectories_metrics(
    trajs: Sequence[Trajectory], gt_boxes_2d: Sequence[ArrayLike], target_index: Sequence[int]
) -> list[dict[str, Any]]:
    """:func:`trajectory_metrics` of several episodes in one pass (:func:`episodes_metrics`)."""
    for traj in trajs:
        if traj.query.target_box_3d is None:
            raise ValueError(
                f"trajectory_metrics: query {traj.query.query_id!r} has no ground truth to "
                "score against"
            )
    return episodes_metrics(
        [tr.outcome.pred_box_2d_m for tr in trajs],
        gt_boxes_2d,
        target_index,
        pred_boxes_3d=[tr.outcome.pred_box_3d_m for tr in trajs],
        gt_boxes_3d=[tr.query.target_box_3d for tr in trajs],
        point_counts=[tr.outcome.point_counts for tr in trajs],
    )


def metrics_schema() -> dict[str, Any]:
    """Column → polars dtype of :func:`aggregate`'s rows (derived by aggregating no episodes).

    >>> schema = metrics_schema()
    >>> list(schema)[:4], str(schema["hit1"])
    (['run_id', 'policy', 'split', 'n'], 'Float64')
    """
    import polars as pl

    # pl.Schema reads the Arrow schema directly; pl.from_arrow of a table would import pandas
    empty = pl.DataFrame(schema=pl.Schema(episode_schema()))
    return dict(aggregate(empty).schema)


def aggregate(episodes: pl.DataFrame, *, by: tuple[str, ...] = GROUP_KEYS) -> pl.DataFrame:
    """One metrics row per group (default: run × policy × split) from per-episode rows.

    Parameters
    ----------
    episodes : polars.DataFrame
        Rows as written by the runner (:mod:`urbex.eval.episodes`); needs ``by`` columns and
        ``valid_answer, target_rank, target_rank_nz, target_rank_ciou, iou_bev, iou_3d,
        point_f1, hit1_iou25, center_dist_m, area_ratio, n_pos_overlap, n_iou25, turns,
        n_invalid, latency_s, reward``; ``env_s``/``policy_s`` are used when present.

    Returns
    -------
    polars.DataFrame
        Sorted by ``by``. Columns: the keys, ``n``, ``valid_rate``, ``hit1/3/5`` (IoU rule),
        ``hit1_nz/hit3_nz/hit5_nz`` (zero-overlap excluded), ``hit1_ciou/hit3_ciou/hit5_ciou``,
        means of ``iou_bev, iou_3d, point_f1`` (no answer counts 0), ``hit1_iou25``,
        ``center_dist_m`` (mean over valid answers), ``area_ratio_median``,
        ``area_ratio_p90``, ``n_pos_overlap_mean``, ``n_iou25_median`` (valid answers),
        ``turns``, ``n_invalid``, ``latency_s`` (mean), ``latency_p50_s``, ``latency_p90_s``,
        ``env_s``, ``policy_s``, ``reward`` (means). Fractions in [0, 1].

    Examples
    --------
    >>> import polars as pl
    >>> ep = pl.DataFrame({
    ...     "run_id": ["r", "r"], "policy": ["p", "p"], "split": ["test_no", "test_no"],
    ...     "valid_answer": [True, False], "target_rank": [1, 0], "target_rank_nz": [1, 0],
    ...     "target_rank_ciou": [2, 0], "iou_bev": [0.5, 0.0], "iou_3d": [0.2, 0.0],
    ...     "point_f1": [0.4, 0.0], "hit1_iou25": [True, False], "center_dist_m": [1.0, None],
    ...     "area_ratio": [2.0, None], "n_pos_overlap": [3, 0], "n_iou25": [1, 0],
    ...     "turns": [3, 8], "n_invalid": [0, 8], "latency_s": [1.0, 3.0], "reward": [1.0, -0.9]})
    >>> row = aggregate(ep).row(0, named=True)
    >>> row["n"], row["hit1"], row["hit1_ciou"], row["iou_bev"], row["valid_rate"]
    (2, 0.5, 0.0, 0.25, 0.5)
    """
    import polars as pl

    missing = [c for c in by if c not in episodes.columns]
    if missing:
        raise ValueError(f"episodes: missing grouping columns {missing}")
    df = episodes
    for opt in ("env_s", "policy_s"):
        if opt not in df.columns:
            df = df.with_columns(pl.lit(None, dtype=pl.Float64).alias(opt))

    def hit(col: str, k: int) -> pl.Expr:
        r = pl.col(col).fill_null(0)
        return ((r >= 1) & (r <= k)).cast(pl.Float64).mean()

    valid = pl.col("valid_answer").fill_null(False)
    ratio = pl.when(valid).then(pl.col("area_ratio").fill_nan(None))
    dist = pl.when(valid).then(pl.col("center_dist_m").fill_nan(None))
    exprs = [
        pl.len().cast(pl.Int64).alias("n"),
        valid.cast(pl.Float64).mean().alias("valid_rate"),
        *(hit("target_rank", k).alias(f"hit{k}") for k in (1, 3, 5)),
        *(hit("target_rank_nz", k).alias(f"hit{k}_nz") for k in (1, 3, 5)),
        *(hit("target_rank_ciou", k).alias(f"hit{k}_ciou") for k in (1, 3, 5)),
        pl.col("iou_bev").fill_null(0.0).mean().alias("iou_bev"),
        pl.col("iou_3d").fill_null(0.0).mean().alias("iou_3d"),
        pl.col("point_f1").fill_null(0.0).mean().alias("point_f1"),
        pl.col("hit1_iou25").fill_null(False).cast(pl.Float64).mean().alias("hit1_iou25"),
        dist.mean().alias("center_dist_m"),
        ratio.median().alias("area_ratio_median"),
        ratio.quantile(0.9, interpolation="linear").alias("area_ratio_p90"),
        pl.when(valid)
        .then(pl.col("n_pos_overlap"))
        .cast(pl.Float64)
        .mean()
        .alias("n_pos_overlap_mean"),
        pl.when(valid).then(pl.col("n_iou25")).cast(pl.Float64).median().alias("n_iou25_median"),
        pl.col("turns").cast(pl.Float64).mean().alias("turns"),
        pl.col("n_invalid").cast(pl.Float64).mean().alias("n_invalid"),
        pl.col("latency_s").mean().alias("latency_s"),
        pl.col("latency_s").quantile(0.5, interpolation="linear").alias("latency_p50_s"),
        pl.col("latency_s").quantile(0.9, interpolation="linear").alias("latency_p90_s"),
        pl.col("env_s").mean().alias("env_s"),
        pl.col("policy_s").mean().alias("policy_s"),
        pl.col("reward").mean().alias("reward"),
    ]
    return df.group_by(list(by), maintain_order=False).agg(exprs).sort(list(by))
