"""Pseudo-instances from semantic masks (for clouds without instance ids, e.g. STPLS3D).

The points of a semantic class set are rasterised into a 2D occupancy grid (XY, world metres),
the grid is closed (``scipy.ndimage.binary_closing``) and labelled into 8-connected components
(``scipy.ndimage.label``); every point takes its cell's component. Components are then filtered
by point count and footprint size. :func:`evaluate_clusters` scores the result against true
instance ids (point IoU ≥ 0.5 matching, as in instance-segmentation AP).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import NDArray

__all__ = ["cluster_mask", "evaluate_clusters", "pseudo_instances", "split_merged"]


def cluster_mask(
    xy: NDArray[np.floating],
    mask: NDArray[np.bool_],
    *,
    cell: float,
    closing: int = 1,
    min_points: int = 1,
) -> NDArray[np.int32]:
    """Connected components of the masked points on an XY occupancy grid.

    Parameters
    ----------
    xy : ndarray, shape (N, 2), float
        Point XY, world metres (any frame; only differences matter).
    mask : ndarray, shape (N,), bool
        Points to cluster.
    cell : float
        Grid cell side, metres. Points closer than about ``cell`` (after closing: about
        ``cell · (1 + 2·closing)``) end in one component.
    closing : int
        Binary-closing iterations (fills one-cell gaps left by sparse sampling).
    min_points : int
        Components with fewer points get -1.

    Returns
    -------
    ndarray, shape (N,), int32
        Component id per point, 0..K-1 in order of first cell, -1 for unmasked/small.

    Examples
    --------
    >>> xy = np.array([[0, 0], [0.5, 0], [10, 10], [10.4, 10.2], [50, 50]], float)
    >>> cluster_mask(xy, np.ones(5, bool), cell=1.0, closing=0, min_points=2).tolist()
    [0, 0, 1, 1, -1]
    """
    from scipy import ndimage

    xy = np.asarray(xy, dtype=np.float64)
    mask = np.asarray(mask, dtype=bool)
    out = np.full(xy.shape[0], -1, dtype=np.int32)
    idx = np.flatnonzero(mask)
    if idx.size == 0:
        return out
    p = xy[idx]
    pad = closing + 1
    lo = p.min(axis=0)
    ij = np.floor((p - lo) / cell).astype(np.int64) + pad
    shape = tuple(int(v) for v in ij.max(axis=0) + pad + 1)
    grid = np.zeros(shape, dtype=bool)
    grid[ij[:, 0], ij[:, 1]] = True
    if closing > 0:
        grid = (
            ndimage.binary_closing(grid, structure=np.ones((3, 3), bool), iterations=closing) | grid
        )
    labels, _ = ndimage.label(grid, structure=np.ones((3, 3), bool))
    lab = labels[ij[:, 0], ij[:, 1]].astype(np.int64)  # 1..K
    uniq, inv, counts = np.unique(lab, return_inverse=True, return_counts=True)
    keep = counts >= min_points
    new_id = np.full(uniq.size, -1, dtype=np.int32)
    new_id[keep] = np.arange(int(keep.sum()), dtype=np.int32)
    out[idx] = new_id[inv]
    return out


def split_merged(
    xy: NDArray[np.floating],
    labels: NDArray[np.int32],
    *,
    footprint_m2: float,
) -> NDArray[np.int32]:
    """Split components that hold several objects of a known footprint (e.g. a row of parked cars).

    A component whose XY convex-hull area is ``A`` is split into ``k = round(A / footprint_m2)``
    parts by k-means on its points, seeded evenly along the component's principal axis
    (deterministic; k ≥ 2 only). Loops over components, not points.

    Parameters
    ----------
    xy : ndarray, shape (N, 2), float
        World metres.
    labels : ndarray, shape (N,), int32
        Component ids (-1 none), e.g. from :func:`cluster_mask`.
    footprint_m2 : float
        Area one object takes including the gap to its neighbour, m².

    Returns
    -------
    ndarray, shape (N,), int32
        New ids 0..K'-1 (-1 kept).
    """
    from scipy.cluster.vq import kmeans2
    from scipy.spatial import ConvexHull, QhullError

    xy = np.asarray(xy, dtype=np.float64)
    out = np.asarray(labels, dtype=np.int64).copy()
    if out.size == 0 or out.max() < 0:
        return out.astype(np.int32)
    nxt = int(out.max()) + 1
    order = np.argsort(out, kind="stable")
    uniq, start = np.unique(out[order], return_index=True)
    ends = np.append(start[1:], order.size)
    for u, a, b in zip(uniq.tolist(), start.tolist(), ends.tolist()):
        if u < 0 or b - a < 8:
            continue
        idx = order[a:b]
        pts = xy[idx] - xy[idx].mean(axis=0)
        try:
            area = float(ConvexHull(pts).volume)
        except QhullError:
            continue
        k = round(area / footprint_m2)
        if k < 2 or k * 4 > idx.size:
            continue
        # k-means seeded evenly along the principal axis (rows of parked cars): deterministic.
        axis = np.linalg.svd(pts, full_matrices=False)[2][0]
        q = np.quantile(pts @ axis, (np.arange(k) + 0.5) / k)
        _, sub = kmeans2(pts, np.outer(q, axis), minit="matrix")
        if len(np.unique(sub)) != k:
            continue
        for s_ in range(1, k):
            out[idx[sub == s_]] = nxt
            nxt += 1
    _, inv = np.unique(out, return_inverse=True)
    res = inv.astype(np.int32) - (1 if (out < 0).any() else 0)
    return np.where(out < 0, -1, res).astype(np.int32)


def _extents(
    xyz: NDArray[np.floating], labels: NDArray[np.int32], k: int
) -> tuple[NDArray, NDArray, NDArray]:
    """Per-label min (k,3), max (k,3), count (k,) over points with label ≥ 0."""
    sel = labels >= 0
    lab = labels[sel]
    pts = xyz[sel]
    lo = np.full((k, 3), np.inf)
    hi = np.full((k, 3), -np.inf)
    for d in range(3):
        np.minimum.at(lo[:, d], lab, pts[:, d])
        np.maximum.at(hi[:, d], lab, pts[:, d])
    return lo, hi, np.bincount(lab, minlength=k)


def pseudo_instances(
    xyz: NDArray[np.floating],
    semantic: NDArray[np.integer],
    rgb: NDArray[np.uint8] | None,
    *,
    params: Any,
) -> tuple[NDArray[np.int32], pl.DataFrame]:
    """Cluster building and vehicle masks into filtered pseudo-instances.

    Parameters
    ----------
    xyz : ndarray, shape (N, 3), float
        World metres (scene frame).
    semantic : ndarray, shape (N,), int
        STPLS3D semantic ids.
    rgb : ndarray, shape (N, 3), uint8, or None
    params
        :class:`urbex.config.Stpls3dReferParams` (building/vehicle classes, cells, closings,
        minimum points, building min area, vehicle length range).

    Returns
    -------
    instance : ndarray, shape (N,), int32
        Pseudo-instance id per point (buildings first, then vehicles), -1 = none.
    table : polars.DataFrame
        One row per pseudo-instance: ``object_id`` (str), ``object_name`` (``Building``/``Car``),
        ``n_points``, ``x_min … z_max``, ``cx, cy, cz, dx, dy, dz`` (world metres),
        ``mean_r, mean_g, mean_b``.
    """
    xyz = np.asarray(xyz, dtype=np.float64)
    sem = np.asarray(semantic)
    instance = np.full(xyz.shape[0], -1, dtype=np.int32)
    rows: list[dict[str, Any]] = []
    specs = (
        ("Building", params.building_classes, params.building_cell_m, params.building_closing, params.building_min_points),
        ("Car", params.vehicle_classes, params.vehicle_cell_m, params.vehicle_closing, params.vehicle_min_points),
    )  # fmt: skip
    next_id = 0
    for name, classes, cell, closing, min_pts in specs:
        labels = cluster_mask(
            xyz[:, :2], np.isin(sem, classes), cell=cell, closing=closing, min_points=1
        )
        if name == "Car" and params.vehicle_footprint_m2 > 0:
            labels = split_merged(xyz[:, :2], labels, footprint_m2=params.vehicle_footprint_m2)
        counts = np.bincount(
            labels[labels >= 0], minlength=int(labels.max()) + 1 if labels.size else 0
        )
        small = np.zeros(labels.shape, bool)
        small[labels >= 0] = counts[labels[labels >= 0]] < min_pts
        labels = np.where(small, -1, labels)
        k = int(labels.max()) + 1 if labels.size and labels.max() >= 0 else 0
        if k == 0:
            continue
        lo, hi, n = _extents(xyz, labels, k)
        size = hi - lo
        if name == "Building":
            ok = size[:, 0] * size[:, 1] >= params.building_min_area_m2
        else:
            long_side = size[:, :2].max(axis=1)
            a, b = params.vehicle_length_m
            ok = (long_side >= a) & (long_side <= b)
        ids = np.full(k, -1, dtype=np.int32)
        ids[ok] = np.arange(next_id, next_id + int(ok.sum()), dtype=np.int32)
        sel = labels >= 0
        mapped = np.full(labels.shape, -1, dtype=np.int32)
        mapped[sel] = ids[labels[sel]]
        instance = np.where(mapped >= 0, mapped, instance)
        if rgb is not None:
            s = np.zeros((k, 3))
            for d in range(3):
                s[:, d] = np.bincount(
                    labels[sel], weights=rgb[sel, d].astype(np.float64), minlength=k
                )
            mean = s / np.maximum(n, 1)[:, None]
        else:
            mean = np.full((k, 3), np.nan)
        for j in np.flatnonzero(ok).tolist():
            c = (lo[j] + hi[j]) / 2
            rows.append(
                {
                    "object_id": str(int(ids[j])), "object_name": name, "n_points": int(n[j]),
                    "x_min": lo[j, 0], "y_min": lo[j, 1], "z_min": lo[j, 2],
                    "x_max": hi[j, 0], "y_max": hi[j, 1], "z_max": hi[j, 2],
                    "cx": c[0], "cy": c[1], "cz": c[2],
                    "dx": size[j, 0], "dy": size[j, 1], "dz": size[j, 2],
                    "mean_r": mean[j, 0], "mean_g": mean[j, 1], "mean_b": mean[j, 2],
                }
            )  # fmt: skip
        next_id += int(ok.sum())
    schema = {"object_id": pl.String, "object_name": pl.String, "n_points": pl.Int64}
    schema |= {c: pl.Float64 for c in ("x_min", "y_min", "z_min", "x_max", "y_max", "z_max", "cx", "cy", "cz", "dx", "dy", "dz", "mean_r", "mean_g", "mean_b")}  # fmt: skip
    return instance, pl.DataFrame(rows, schema=schema)


def evaluate_clusters(
    pred_instance: NDArray[np.integer],
    true_instance: NDArray[np.integer],
    *,
    iou_threshold: float = 0.5,
    true_ids: Sequence[int] | None = None,
) -> dict[str, float | int]:
    """Match predicted clusters to true instances by point IoU.

    Parameters
    ----------
    pred_instance, true_instance : ndarray, shape (N,), int
        Per-point ids, -1 = none.
    iou_threshold : float
        A pair matches when IoU ≥ this (≥ 0.5 makes matches one-to-one); greedy by IoU.
    true_ids : sequence of int, optional
        Only these true instances count (e.g. the buildings and vehicles); points of other
        true instances are treated as background.

    Returns
    -------
    dict
        ``precision`` (matched / predicted), ``recall`` (matched / true), ``f1``, ``matched``,
        ``n_pred``, ``n_true``, ``mean_iou`` (over matched pairs; 0.0 when none).

    Examples
    --------
    Cluster 0 is instance 5 (IoU 1); cluster 1 covers instance 6 and half of 7 (IoU 0.5 with
    6, 1/3 with 7), so it matches 6; instance 7 stays unmatched.

    >>> evaluate_clusters(np.array([0, 0, 1, 1, -1]), np.array([5, 5, 6, 7, 7]))
    {'precision': 1.0, 'recall': 0.6667, 'f1': 0.8, 'matched': 2, 'n_pred': 2, 'n_true': 3, 'mean_iou': 0.75}
    """
    p = np.asarray(pred_instance, dtype=np.int64)
    t = np.asarray(true_instance, dtype=np.int64)
    if p.shape != t.shape:
        raise ValueError(f"pred_instance and true_instance differ in shape: {p.shape} vs {t.shape}")
    if true_ids is not None:
        t = np.where(np.isin(t, np.asarray(list(true_ids), dtype=np.int64)), t, -1)
    pu, pc = np.unique(p[p >= 0], return_counts=True)
    tu, tc = np.unique(t[t >= 0], return_counts=True)
    both = (p >= 0) & (t >= 0)
    pi = np.searchsorted(pu, p[both])
    ti = np.searchsorted(tu, t[both])
    pairs, inter = np.unique(pi * max(tu.size, 1) + ti, return_counts=True)
    a, b = pairs // max(tu.size, 1), pairs % max(tu.size, 1)
    iou = inter / (pc[a] + tc[b] - inter)
    used_p, used_t, ious = set(), set(), []
    for k in np.argsort(-iou, kind="stable"):
        if iou[k] < iou_threshold:
            break
        if int(a[k]) in used_p or int(b[k]) in used_t:
            continue
        used_p.add(int(a[k]))
        used_t.add(int(b[k]))
        ious.append(float(iou[k]))
    m = len(ious)
    prec = m / pu.size if pu.size else 0.0
    rec = m / tu.size if tu.size else 0.0
    f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
    return {
        "precision": round(prec, 4), "recall": round(rec, 4), "f1": round(f1, 4), "matched": m,
        "n_pred": int(pu.size), "n_true": int(tu.size),
        "mean_iou": round(float(np.mean(ious)), 4) if ious else 0.0,
    }  # fmt: skip
