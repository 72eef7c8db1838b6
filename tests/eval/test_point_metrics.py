"""Point-level metrics (urbex.eval.point_metrics)."""

from __future__ import annotations

from urbex.eval.point_metrics import point_f1, points_in_box_3d


def test_point_f1_empty_sides_are_zero_not_nan():
    assert point_f1([], []) == (0.0, 0.0, 0.0)
    assert point_f1([True], [False]) == (0.0, 0.0, 0.0)


def test_points_in_box_3d_inclusive_bounds():
    assert points_in_box_3d([[1, 1, 1], [1, 1, 1.01]], [0, 0, 0, 1, 1, 1]).tolist() == [True, False]
