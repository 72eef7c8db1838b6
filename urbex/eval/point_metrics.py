"""Point-level metrics of a 3D answer: which points a 3D box holds, and point precision,
recall and F1 against the target instance's points (from masks or from counts).
:mod:`urbex.eval.metrics` computes them per episode."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["point_f1", "point_f1_counts", "points_in_box_3d"]


def points_in_box_3d(xyz: ArrayLike, box: ArrayLike) -> NDArray[np.bool_]:
    """Which points lie in an axis-aligned 3D box (bounds inclusive).

    Parameters
    ----------
    xyz : array_like, shape (N, 3)
        Points, world metres (or any frame shared with ``box``).
    box : array_like, shape (6,)
        ``[x_min, y_min, z_min, x_max, y_max, z_max]``.

    Returns
    -------
    ndarray, shape (N,), bool

    >>> points_in_box_3d([[0, 0, 0], [1, 1, 1], [2, 0, 0]], [0, 0, 0, 1, 1, 1]).tolist()
    [True, True, False]
    """
    p = np.asarray(xyz, dtype=np.float64).reshape(-1, 3)
    b = np.asarray(box, dtype=np.float64)
    if b.shape != (6,):
        raise ValueError(f"box: expected shape (6,), got {b.shape}")
    return np.all((p >= b[:3]) & (p <= b[3:]), axis=1)


def point_f1(in_pred: ArrayLike, in_target: ArrayLike) -> tuple[float, float, float]:
    """Point-level precision, recall and F1 of a predicted region against the target's points.

    Parameters
    ----------
    in_pred : array_like, shape (N,), bool
        Point lies in the predicted 3D box.
    in_target : array_like, shape (N,), bool
        Point belongs to the target instance.

    Returns
    -------
    (precision, recall, f1) : floats in [0, 1]; 0.0 (never NaN) when a side is empty.

    Examples
    --------
    >>> point_f1([True, True, False, False], [True, False, True, False])
    (0.5, 0.5, 0.5)
    >>> point_f1([False, False], [True, True])
    (0.0, 0.0, 0.0)
    """
    a = np.asarray(in_pred, dtype=bool)
    b = np.asarray(in_target, dtype=bool)
    if a.shape != b.shape:
        raise ValueError(f"in_pred/in_target: shapes differ, {a.shape} vs {b.shape}")
    return point_f1_counts(
        int(np.count_nonzero(a)), int(np.count_nonzero(b)), int(np.count_nonzero(a & b))
    )


def point_f1_counts(n_pred: int, n_target: int, n_both: int) -> tuple[float, float, float]:
    """Point precision, recall and F1 from counts: points predicted, of the target, and both.

    >>> point_f1_counts(2, 2, 1)
    (0.5, 0.5, 0.5)
    >>> point_f1_counts(0, 2, 0)
    (0.0, 0.0, 0.0)
    """
    if min(n_pred, n_target, n_both) < 0 or n_both > min(n_pred, n_target):
        raise ValueError(
            f"expected 0 <= n_both <= min(n_pred, n_target), got {n_pred}, {n_target}, {n_both}"
        )
    tp, npred, ntgt = n_both, n_pred, n_target
    prec = tp / npred if npred else 0.0
    rec = tp / ntgt if ntgt else 0.0
    f1 = 2 * prec * rec / (prec + rec) if prec + rec > 0 else 0.0
    return prec, rec, f1
