"""STPLS3D-Refer's relation templates: rows of cars, ordinals within a row, colour + size.

(``anchor_candidates`` is exercised through ``generate_expressions`` in test_stpls3d_refer.py.)
"""

from __future__ import annotations

import numpy as np

from urbex.annotations.refer_relations import (
    ROW_MAX_GAP_M,
    car_rows,
    colour_size_candidates,
    row_candidates,
)

CAR_EW = [4.5, 1.8]  # a car lying east-west: rows of them run south -> north


def _cars(centres, size=CAR_EW, cls="Car"):
    n = len(centres)
    return (
        np.array([cls] * n, dtype=object),
        np.array(centres, dtype=np.float64),
        np.array([size] * n, dtype=np.float64),
    )


def test_car_rows_split_at_large_gaps_and_sideways_offsets():
    cls, cxy, dxy = _cars(
        [[0, 0], [0, 2.5], [0.5, 5], [0, 5 + ROW_MAX_GAP_M + 0.1],  # the 4th is past the gap
         [9, 0], [9, 2.5], [9, 5], [10.5, 7.5]]  # the last is 1.5 m sideways: another line
    )  # fmt: skip
    rows = [(r.tolist(), axis) for r, axis in car_rows(cls, cxy, dxy)]
    assert rows == [([0, 1, 2], 1), ([4, 5, 6], 1)]


def test_car_rows_need_three_oriented_cars():
    cls, cxy, dxy = _cars([[0, 0], [0, 2.5]])
    assert car_rows(cls, cxy, dxy) == []
    cls, cxy, dxy = _cars([[0, 0], [0, 2.5], [0, 5]], size=[2.0, 2.2])  # squarish: no orientation
    assert car_rows(cls, cxy, dxy) == []
    cls, cxy, dxy = _cars([[0, 0], [0, 2.5], [0, 5]], cls="Building")
    assert car_rows(cls, cxy, dxy) == []


def test_car_rows_of_north_south_cars_run_west_to_east():
    cls, cxy, dxy = _cars([[5, 0], [0, 0], [2.5, 0.3]], size=[1.8, 4.5])
    assert [(r.tolist(), a) for r, a in car_rows(cls, cxy, dxy)] == [([1, 2, 0], 0)]


def test_row_candidates_ordinals_from_the_nearer_end():
    cls, cxy, dxy = _cars([[0, 2.5 * k] for k in range(5)])
    got = {(c.target, c.description) for c in row_candidates(cls, cxy, dxy)}
    assert got == {
        (0, "the car at the south end of the row of 5 cars"),
        (1, "the second car from the south end of the row of 5 cars"),
        (2, "the third car from the south end of the row of 5 cars"),
        (3, "the second car from the north end of the row of 5 cars"),
        (4, "the car at the north end of the row of 5 cars"),
    }
    for c in row_candidates(cls, cxy, dxy):
        assert c.template == "row_ordinal" and c.landmark == ""
        assert c.mask.tolist() == [i == c.target for i in range(5)]


def test_row_candidates_two_rows_named_by_size_and_east_west_extreme():
    cls, cxy, dxy = _cars([[0, 0], [0, 2.5], [0, 5], [0, 7.5], [50, 0], [50, 2.5], [50, 5]])
    descs = {c.description for c in row_candidates(cls, cxy, dxy)}
    assert "the car at the north end of the row of 4 cars" in descs
    assert "the second car from the south end of the westernmost row of cars" in descs
    assert "the car at the south end of the easternmost row of cars" in descs
    assert not any("northernmost" in d or "southernmost" in d for d in descs)  # 2.5 m < margin


def test_row_candidates_rows_of_one_size_without_extreme_have_no_names():
    cls, cxy, dxy = _cars([[0, 0], [0, 2.5], [0, 5], [3, 0], [3, 2.5], [3, 5]])
    assert len(car_rows(cls, cxy, dxy)) == 2
    assert row_candidates(cls, cxy, dxy) == []


def test_colour_size_candidates_need_the_margin_within_class_and_colour():
    cls = np.array(["Car", "Car", "Car", "Car", "Car", "Building", "Building"], dtype=object)
    col = np.array(["red", "red", "red", "blue", "unknown", "red", "red"], dtype=object)
    area = np.array([8.0, 10.0, 13.0, 20.0, 1.0, 300.0, 310.0])
    got = [(c.target, c.description) for c in colour_size_candidates(cls, col, area, 1.2)]
    assert got == [
        (2, "the largest red car in the scene"),
        (0, "the smallest red car in the scene"),
    ]  # one blue car, the unknown colour and two near-equal buildings give nothing
    assert colour_size_candidates(cls, col, area, 1.5) == []
