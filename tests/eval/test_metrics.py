"""Metrics against hand-computed values (three instances, one known predicted box)."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from urbex.env.records import PointCounts
from urbex.eval.metrics import (
    aggregate,
    area_ratio,
    candidate_scores,
    episode_metrics,
    hit_at_k,
    target_ranks,
)

# Three instances (world metres):  A [0,0,4,4]   B [3,0,7,4]   C [20,20,24,24]
# Prediction P = [2,0,6,4] (area 16).
#   P∩A = [2,0,4,4] = 8   → IoU 8/(16+16-8) = 1/3
#   P∩B = [3,0,6,4] = 12  → IoU 12/20 = 0.6
#   P∩C = 0               → IoU 0
GT = np.array([[0, 0, 4, 4], [3, 0, 7, 4], [20, 20, 24, 24]], dtype=float)
PRED = np.array([2, 0, 6, 4], dtype=float)


def test_candidate_scores_three_instances_hand_computed():
    s = candidate_scores(PRED, GT)
    assert s.tolist() == pytest.approx([1 / 3, 0.6, 0.0])


@pytest.mark.parametrize(
    ("target", "rule", "rank"),
    [
        (1, "iou", 1),  # B has the highest IoU
        (0, "iou", 2),  # A behind B
        (2, "iou", 3),  # C: zero overlap, ranks last (ties broken against the target)
        (2, "iou_nonzero", 0),  # ... or unranked when zero-overlap candidates are excluded
        (0, "iou_nonzero", 2),
        (1, "ciou", 1),
        (2, "ciou", 3),  # far away: most negative CIoU
    ],
)
def test_target_ranks_three_instances_each_rule(target, rule, rank):
    assert target_ranks(PRED[None], GT[None], [target], rule=rule).tolist() == [rank]


def test_target_ranks_ciou_orders_disjoint_candidates_by_distance():
    # a prediction overlapping nothing: IoU ranks the target last, CIoU by centre distance
    gt = np.array([[[10, 0, 12, 2], [0, 0, 2, 2], [50, 50, 52, 52]]], dtype=float)
    pred = np.array([[3, 0, 5, 2]])
    assert target_ranks(pred, gt, [1], rule="iou").tolist() == [3]
    assert target_ranks(pred, gt, [1], rule="ciou").tolist() == [1]


def test_target_ranks_ties_count_against_the_target():
    gt = np.array([[[0, 0, 2, 2], [0, 0, 2, 2]]], dtype=float)
    assert target_ranks([[0, 0, 2, 2]], gt, [0]).tolist() == [2]
    assert target_ranks([[0, 0, 2, 2]], gt, [1]).tolist() == [2]


def test_target_ranks_vectorised_with_padding_and_invalid():
    gt = np.stack([GT, np.array([[0, 0, 1, 1], [9, 9, 9, 9], [9, 9, 9, 9]], float)])
    mask = np.array([[True, True, True], [True, False, False]])
    ranks = target_ranks(
        np.stack([PRED, [0, 0, 1, 1]]), gt, [1, 0], candidate_mask=mask, valid=[True, True]
    )
    assert ranks.tolist() == [1, 1]
    assert target_ranks(np.stack([PRED, PRED]), gt, [1, 0], valid=[False, True]).tolist()[0] == 0


def test_target_ranks_bad_shapes_raise():
    with pytest.raises(ValueError, match=r"pred_boxes: expected shape \(E, 4\)"):
        target_ranks([1, 2, 3, 4], GT[None], [0])
    with pytest.raises(ValueError, match="target_index"):
        target_ranks(PRED[None], GT[None], [3])


def test_hit_at_k_rank_zero_is_a_miss():
    assert hit_at_k([0, 1, 5, 6], 5).tolist() == [False, True, True, False]


def test_episode_metrics_three_instances_hand_computed():
    # 3D: target B [3,0,0,7,4,2] (vol 32), prediction [2,0,0,6,4,4] (vol 64)
    #   ∩ = [3,0,0,6,4,2] = 24 → IoU 24/(32+64-24) = 1/3
    # points: 4 in the prediction, 3 of the target, 2 shared → P 0.5, R 2/3, F1 4/7
    counts = PointCounts(n_pred=4, n_target=3, n_both=2)
    m = episode_metrics(
        PRED, GT, 1, pred_box_3d=[2, 0, 0, 6, 4, 4], gt_box_3d=[3, 0, 0, 7, 4, 2],
        point_counts=counts,
    )  # fmt: skip
    assert m["valid_answer"] and m["n_candidates"] == 3
    assert m["iou_bev"] == pytest.approx(0.6)
    assert m["iou_3d"] == pytest.approx(1 / 3)
    assert (m["point_precision"], m["point_recall"], m["point_f1"]) == pytest.approx(
        (0.5, 2 / 3, 4 / 7)
    )
    assert m["center_dist_m"] == pytest.approx(1.0)  # centres (4, 2) and (5, 2)
    assert (m["target_rank"], m["target_rank_nz"], m["target_rank_ciou"]) == (1, 1, 1)
    assert m["hit1"] and m["hit3"] and m["hit5"] and m["hit1_iou25"]
    assert m["area_ratio"] == pytest.approx(1.0)
    assert m["n_pos_overlap"] == 2  # A and B
    assert m["n_iou25"] == 2  # 1/3 and 0.6


def test_episode_metrics_loose_box_is_hit_but_not_thresholded_hit():
    # a box 4x the target's area still ranks it first (IoU 0.25 > A's) but IoU < 0.25 fails
    big = [3, 0, 11, 8]  # area 64, ∩B = 16 → IoU 16/64 = 0.25 ... make it slightly bigger
    m = episode_metrics([3, 0, 11, 8.5], GT, 1)
    assert m["hit1"] and not m["hit1_iou25"] and m["iou_bev"] < 0.25
    assert m["area_ratio"] == pytest.approx(68 / 16)
    assert episode_metrics(big, GT, 1)["hit1_iou25"]  # exactly 0.25 counts


def test_episode_metrics_no_answer_is_all_misses():
    m = episode_metrics(None, GT, 0)
    assert not (m["valid_answer"] or m["hit1"] or m["hit5"])
    assert m["iou_bev"] == 0.0 and m["target_rank"] == 0 and math.isnan(m["center_dist_m"])


def test_area_ratio_degenerate_target_is_nan():
    assert math.isnan(area_ratio([0, 0, 1, 1], [0, 0, 0, 1]))


def _episodes() -> pl.DataFrame:
    ms = [
        episode_metrics(PRED, GT, 1),  # rank 1
        episode_metrics(PRED, GT, 0),  # rank 2
        episode_metrics([30, 30, 31, 31], GT, 2),  # no overlap at all: rank 3 (iou) / 0 (nz)
        episode_metrics(None, GT, 1),  # no answer
    ]
    rows = []
    for i, m in enumerate(ms):
        r = {k: v for k, v in m.items()}
        r.update(
            run_id="r",
            policy="p",
            split="test_no",
            turns=2,
            n_invalid=0,
            latency_s=float(i + 1),
            reward=0.0,
        )
        r["target_rank"] = r["target_rank"] or None
        rows.append(r)
    return pl.DataFrame(rows)


def test_aggregate_hand_computed_rates():
    row = aggregate(_episodes()).row(0, named=True)
    assert row["n"] == 4 and row["valid_rate"] == 0.75
    assert row["hit1"] == 0.25 and row["hit3"] == 0.75 and row["hit5"] == 0.75
    assert row["hit1_nz"] == 0.25 and row["hit3_nz"] == 0.5  # the zero-overlap one drops out
    assert row["iou_bev"] == pytest.approx((0.6 + 1 / 3) / 4)
    assert row["latency_s"] == 2.5 and row["latency_p90_s"] == pytest.approx(3.7)
    # area ratios over valid answers: 1.0, 1.0, 1/16
    assert row["area_ratio_median"] == 1.0


def test_aggregate_groups_by_run_and_split():
    ep = pl.concat([_episodes(), _episodes().with_columns(pl.lit("test_nd").alias("split"))])
    out = aggregate(ep)
    assert out["split"].to_list() == ["test_nd", "test_no"] and out["n"].to_list() == [4, 4]


def test_aggregate_missing_group_column_raises():
    with pytest.raises(ValueError, match="missing grouping columns"):
        aggregate(_episodes().drop("split"))


def test_target_ranks_nonfinite_prediction_is_unranked():
    # a NaN coordinate must not be replaced by 0 and ranked (here: it became the target's box)
    bad = [[np.nan, 0, 4, 4], [0, 0, np.inf, 4]]
    gt = np.stack([GT, GT])
    for rule in ("iou", "iou_nonzero", "ciou"):
        assert target_ranks(bad, gt, [0, 0], rule=rule).tolist() == [0, 0]


def test_episode_metrics_nonfinite_prediction_is_no_answer():
    m = episode_metrics([np.nan, 0, 4, 4], GT, 0)
    assert m["valid_answer"] is False and m["target_rank"] == 0
    assert not (m["hit1"] or m["hit3"] or m["hit5"] or m["hit1_iou25"])


def test_aggregate_positive_overlap_count_over_valid_answers():
    # like n_iou25_median (and the paper's Table 14), counts are over predictions made:
    # valid answers have 2, 2, 0 positive-overlap candidates; the unanswered episode has none
    row = aggregate(_episodes()).row(0, named=True)
    assert row["n_pos_overlap_mean"] == pytest.approx(4 / 3)
