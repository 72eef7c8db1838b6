"""Table 2's subsets: all / landmark-free, from episodes and the benchmark's queries."""

from __future__ import annotations

import polars as pl

from urbex.report.table2 import subset_metrics


def _episodes(hits: list[int]) -> pl.DataFrame:
    n = len(hits)
    return pl.DataFrame(
        {
            "run_id": ["r"] * n, "policy": ["p"] * n, "split": ["test"] * n,
            "query_id": [f"q{i}" for i in range(n)], "valid_answer": [True] * n,
            "target_rank": hits, "target_rank_nz": hits, "target_rank_ciou": hits,
            "iou_bev": [1.0 if h == 1 else 0.0 for h in hits], "iou_3d": [0.0] * n,
            "point_f1": [0.0] * n, "hit1_iou25": [h == 1 for h in hits],
            "center_dist_m": [1.0] * n, "area_ratio": [1.0] * n, "n_pos_overlap": [1] * n,
            "n_iou25": [1] * n, "turns": [1] * n, "n_invalid": [0] * n,
            "latency_s": [0.1] * n, "reward": [0.0] * n,
        }
    )  # fmt: skip


def test_subset_metrics_all_and_landmark_free() -> None:
    ep = _episodes([1, 2, 1, 0])
    q = pl.DataFrame(
        {"query_id": ["q0", "q1", "q2", "q3"], "landmark_free": [True, True, False, None]}
    )
    m = subset_metrics(ep, q)
    assert m["subset"].to_list() == ["all", "landmark_free"]
    a, lf = m.row(0, named=True), m.row(1, named=True)
    assert (a["n"], a["hit1"], a["hit3"]) == (4, 0.5, 0.75)
    assert (lf["n"], lf["hit1"], lf["hit3"], lf["iou_bev"]) == (2, 0.5, 1.0, 0.5)


def test_subset_metrics_without_landmark_free_queries_has_no_such_row() -> None:
    m = subset_metrics(_episodes([1]), pl.DataFrame({"query_id": ["x"], "landmark_free": [True]}))
    assert m["subset"].to_list() == ["all"] and m["n"][0] == 1
