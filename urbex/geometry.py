"""Boxes, overlaps, gaps and the pixel↔world affine transform.

Conventions
-----------
* A **BEV box** is an array ``(..., 4)`` = ``[x_min, y_min, x_max, y_max]`` in world metres
  (or any one consistent planar frame: BEV pixels, view 0–1000 units).
* A **3D box** is an array ``(..., 6)`` = ``[x_min, y_min, z_min, x_max, y_max, z_max]`` in
  world metres, axis-aligned, z up.
* Degenerate boxes (zero or negative extent on an axis) have zero area/volume; any overlap
  ratio involving them is **0.0, never NaN**.
* :class:`Affine` follows GDAL/rasterio: for continuous pixel coordinates ``(col, row)``
  (``(0, 0)`` is the *top-left corner* of the top-left pixel),
  ``x = a·col + b·row + c`` and ``y = d·col + e·row + f``. A north-up BEV raster with
  resolution ``r`` m/px has ``Affine(r, 0, x_min, 0, -r, y_max)`` and the centre of pixel
  ``(col, row)`` is ``X = x_min + (col + 0.5)·r``, ``Y = y_max − (row + 0.5)·r``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "Affine",
    "area_2d",
    "box2d_from_center_size",
    "box3d_from_center_size",
    "box3d_to_center_size",
    "center_distance_2d",
    "checked_box",
    "ciou_2d",
    "clip_box_2d",
    "gap_2d",
    "intersection_2d",
    "iou_2d",
    "iou_3d",
    "overlap_bounds_2d",
    "volume_3d",
]


def _boxes(a: ArrayLike, width: int, name: str) -> NDArray[np.float64]:
    arr = np.asarray(a, dtype=np.float64)
    if arr.shape[-1:] != (width,):
        raise ValueError(f"{name}: expected shape (..., {width}), got {arr.shape}")
    return arr


def checked_box(v: ArrayLike, n: int, name: str) -> NDArray[np.float64]:
    """One box of ``n`` finite numbers, mins first (``n // 2`` of each), as float64.

    ``name`` is the field the box came from; the error message names it.

    >>> checked_box([0, 0, 2, 1], 4, "box").tolist()
    [0.0, 0.0, 2.0, 1.0]
    >>> checked_box([2, 0, 0, 1], 4, "Query.target_box_2d")
    Traceback (most recent call last):
    ...
    ValueError: Query.target_box_2d: expected mins <= maxes, got [2.0, 0.0, 0.0, 1.0]
    """
    a = np.asarray(v, dtype=np.float64).reshape(-1)
    if a.shape != (n,) or not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: expected {n} finite numbers (world metres), got {v!r}")
    h = n // 2
    if not np.all(a[h:] >= a[:h]):
        raise ValueError(f"{name}: expected mins <= maxes, got {a.tolist()}")
    return a


def area_2d(boxes: ArrayLike) -> NDArray[np.float64] | float:
    """Area of BEV boxes; negative extents count as zero.

    Parameters
    ----------
    boxes : array_like, shape (..., 4)
        ``[x_min, y_min, x_max, y_max]``, any planar frame.

    Examples
    --------
    >>> area_2d([0, 0, 2, 3])
    6.0
    >>> area_2d([[0, 0, 1, 1], [1, 1, 0, 0]]).tolist()
    [1.0, 0.0]
    """
    b = _boxes(boxes, 4, "boxes")
    out = np.clip(b[..., 2] - b[..., 0], 0, None) * np.clip(b[..., 3] - b[..., 1], 0, None)
    return float(out) if out.ndim == 0 else out


def volume_3d(boxes: ArrayLike) -> NDArray[np.float64] | float:
    """Volume of 3D boxes ``(..., 6)``; negative extents count as zero.

    >>> volume_3d([0, 0, 0, 1, 2, 3])
    6.0
    """
    b = _boxes(boxes, 6, "boxes")
    ext = np.clip(b[..., 3:] - b[..., :3], 0, None)
    out = ext.prod(axis=-1)
    return float(out) if out.ndim == 0 else out


def overlap_bounds_2d(a: ArrayLike, b: ArrayLike) -> NDArray[np.float64]:
    """The overlap rectangle of BEV boxes, broadcast over leading dimensions.

    ``[max(x_min), max(y_min), min(x_max), min(y_max)]`` of the two boxes: their intersection
    when they overlap. Along an axis where they are disjoint the result is *inverted*
    (its min exceeds its max) and spans the gap between them, so its centre is still the
    midpoint between the two boxes on that axis.

    Parameters
    ----------
    a, b : array_like, shape (..., 4)
        ``[x_min, y_min, x_max, y_max]`` in one planar frame (world metres for scene boxes),
        each with min ≤ max (not checked).

    Returns
    -------
    ndarray, shape (..., 4), float64
        Same frame and units as the boxes.

    Examples
    --------
    >>> overlap_bounds_2d([0, 0, 2, 2], [1, 1, 3, 3]).tolist()
    [1.0, 1.0, 2.0, 2.0]
    >>> overlap_bounds_2d([0, 0, 1, 1], [3, 0, 4, 1]).tolist()  # disjoint in x: x-span inverted
    [3.0, 0.0, 1.0, 1.0]
    >>> overlap_bounds_2d([0, 0, 4, 4], [1, 1, 2, 2]).tolist()  # contained: the inner box
    [1.0, 1.0, 2.0, 2.0]
    >>> overlap_bounds_2d(np.zeros((0, 4)), [0, 0, 1, 1]).shape  # no boxes
    (0, 4)
    """
    a_ = _boxes(a, 4, "a")
    b_ = _boxes(b, 4, "b")
    return np.concatenate(
        np.broadcast_arrays(
            np.maximum(a_[..., :2], b_[..., :2]), np.minimum(a_[..., 2:], b_[..., 2:])
        ),
        axis=-1,
    )


def intersection_2d(a: ArrayLike, b: ArrayLike) -> NDArray[np.float64] | float:
    """Intersection area of BEV boxes, broadcast over leading dimensions.

    The area of :func:`overlap_bounds_2d` (0 for disjoint, touching or degenerate boxes).

    >>> intersection_2d([0, 0, 2, 2], [1, 1, 3, 3])
    1.0
    >>> intersection_2d([0, 0, 1, 1], [2, 2, 3, 3])
    0.0
    >>> intersection_2d([0, 0, 1, 1], [1, 0, 2, 1])  # touching
    0.0
    """
    o = overlap_bounds_2d(a, b)
    w = o[..., 2] - o[..., 0]
    h = o[..., 3] - o[..., 1]
    out = np.clip(w, 0, None) * np.clip(h, 0, None)
    return float(out) if out.ndim == 0 else out


def gap_2d(a: ArrayLike, b: ArrayLike) -> NDArray[np.float64] | float:
    """Gap between axis-aligned BEV boxes: the shortest distance from one to the other.

    ``hypot(dx, dy)`` with ``dx``, ``dy`` the separations along x and y (0 on an axis where
    the boxes' spans meet), so **0 when the boxes touch, overlap or one contains the other**.
    A point is a box of zero extent (``[x, y, x, y]``): its gap to a box is the point's
    distance to the box.

    Parameters
    ----------
    a, b : array_like, shape (..., 4)
        ``[x_min, y_min, x_max, y_max]``, world metres (any one planar frame works), each with
        min ≤ max (not checked); broadcast over leading dimensions.

    Returns
    -------
    float or ndarray, shape (...)
        Metres (the boxes' units), ≥ 0; symmetric in ``a`` and ``b``.

    Examples
    --------
    >>> gap_2d([0, 0, 1, 1], [4, 5, 6, 6])  # dx 3, dy 4
    5.0
    >>> gap_2d([0, 0, 1, 1], [1, 0, 2, 1])  # touching
    0.0
    >>> gap_2d([0, 0, 10, 10], [2, 2, 3, 3])  # contained
    0.0
    >>> gap_2d([[0, 0, 1, 1], [0, 0, 3, 1]], [5, 0, 6, 1]).tolist()  # one box against many
    [4.0, 2.0]
    >>> gap_2d(np.zeros((0, 4)), [0, 0, 1, 1]).shape  # no boxes
    (0,)
    """
    a_ = _boxes(a, 4, "a")
    b_ = _boxes(b, 4, "b")
    dx = np.maximum(0.0, np.maximum(b_[..., 0] - a_[..., 2], a_[..., 0] - b_[..., 2]))
    dy = np.maximum(0.0, np.maximum(b_[..., 1] - a_[..., 3], a_[..., 1] - b_[..., 3]))
    out = np.hypot(dx, dy)
    return float(out) if out.ndim == 0 else out


def _safe_ratio(num: ArrayLike, den: ArrayLike) -> NDArray[np.float64]:
    n = np.asarray(num, dtype=np.float64)
    d = np.asarray(den, dtype=np.float64)
    out = np.zeros(np.broadcast(n, d).shape, dtype=np.float64)
    np.divide(n, d, out=out, where=d > 0)
    return out


def iou_2d(a: ArrayLike, b: ArrayLike) -> NDArray[np.float64] | float:
    """Intersection over union of BEV boxes, broadcast over leading dimensions.

    Parameters
    ----------
    a, b : array_like, shape (..., 4)
        ``[x_min, y_min, x_max, y_max]`` in the same planar frame.

    Returns
    -------
    float or ndarray
        In [0, 1]; 0.0 when either box is degenerate (never NaN).

    Examples
    --------
    >>> iou_2d([0, 0, 2, 2], [1, 1, 3, 3])  # 1 / 7
    0.142857...
    >>> iou_2d([0, 0, 1, 1], [0, 0, 1, 1])
    1.0
    >>> iou_2d([0, 0, 0, 5], [0, 0, 0, 5])  # zero-area boxes
    0.0
    >>> iou_2d([[0, 0, 1, 1]], [[0, 0, 1, 1], [5, 5, 6, 6]]).tolist()
    [1.0, 0.0]
    """
    inter = intersection_2d(a, b)
    union = np.asarray(area_2d(a)) + np.asarray(area_2d(b)) - inter
    out = _safe_ratio(inter, union)
    return float(out) if out.ndim == 0 else out


def iou_3d(a: ArrayLike, b: ArrayLike) -> NDArray[np.float64] | float:
    """Intersection over union of axis-aligned 3D boxes ``(..., 6)``, world metres.

    >>> iou_3d([0, 0, 0, 2, 2, 2], [1, 1, 1, 3, 3, 3])  # 1 / 15
    0.0666...
    >>> iou_3d([0, 0, 0, 1, 1, 0], [0, 0, 0, 1, 1, 0])  # flat boxes
    0.0
    """
    a_ = _boxes(a, 6, "a")
    b_ = _boxes(b, 6, "b")
    ext = np.clip(
        np.minimum(a_[..., 3:], b_[..., 3:]) - np.maximum(a_[..., :3], b_[..., :3]), 0, None
    )
    inter = ext.prod(axis=-1)
    union = np.asarray(volume_3d(a_)) + np.asarray(volume_3d(b_)) - inter
    out = _safe_ratio(inter, union)
    return float(out) if out.ndim == 0 else out


def center_distance_2d(a: ArrayLike, b: ArrayLike) -> NDArray[np.float64] | float:
    """Euclidean distance between BEV box centres (same units as the boxes).

    >>> center_distance_2d([0, 0, 2, 2], [3, 4, 5, 6])  # centres (1, 1) and (4, 5)
    5.0
    """
    a_ = _boxes(a, 4, "a")
    b_ = _boxes(b, 4, "b")
    ca = (a_[..., :2] + a_[..., 2:]) / 2
    cb = (b_[..., :2] + b_[..., 2:]) / 2
    out = np.sqrt(((ca - cb) ** 2).sum(axis=-1))
    return float(out) if out.ndim == 0 else out


def ciou_2d(a: ArrayLike, b: ArrayLike) -> NDArray[np.float64] | float:
    """Complete IoU (Zheng et al. 2020) of BEV boxes, in [-1.5, 1].

    ``CIoU = IoU − ρ²/c² − α·v`` with ρ the centre distance, c the diagonal of the smallest
    enclosing box, ``v = 4/π²·(atan(w_b/h_b) − atan(w_a/h_a))²`` and ``α = v / (1 − IoU + v)``.
    Degenerate boxes (zero width or height) contribute ``v = 0``; two identical points give 0.
    ``ρ²/c² ≤ 1`` and ``α·v ≤ 1/2``, so the value lies in [-1.5, 1].

    >>> ciou_2d([0, 0, 1, 1], [0, 0, 1, 1])
    1.0
    >>> round(ciou_2d([0, 0, 1, 1], [2, 0, 3, 1]), 4)  # disjoint: IoU 0, ρ²/c² = 4/10
    -0.4
    >>> ciou_2d([0, 0, 0, 0], [0, 0, 0, 0])
    0.0
    """
    a_ = _boxes(a, 4, "a")
    b_ = _boxes(b, 4, "b")
    iou = np.asarray(iou_2d(a_, b_))
    rho2 = np.asarray(center_distance_2d(a_, b_)) ** 2
    ex = np.maximum(a_[..., 2], b_[..., 2]) - np.minimum(a_[..., 0], b_[..., 0])
    ey = np.maximum(a_[..., 3], b_[..., 3]) - np.minimum(a_[..., 1], b_[..., 1])
    c2 = ex**2 + ey**2
    wa, ha = a_[..., 2] - a_[..., 0], a_[..., 3] - a_[..., 1]
    wb, hb = b_[..., 2] - b_[..., 0], b_[..., 3] - b_[..., 1]
    ok = (wa > 0) & (ha > 0) & (wb > 0) & (hb > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.where(
            ok,
            4 / np.pi**2 * (np.arctan(_safe_ratio(wb, hb)) - np.arctan(_safe_ratio(wa, ha))) ** 2,
            0.0,
        )
    alpha = _safe_ratio(v, 1 - iou + v)
    out = iou - _safe_ratio(rho2, c2) - alpha * v
    return float(out) if out.ndim == 0 else out


def clip_box_2d(boxes: ArrayLike, bounds: ArrayLike) -> NDArray[np.float64]:
    """Clip BEV boxes ``(..., 4)`` to ``bounds`` = ``[x_min, y_min, x_max, y_max]``.

    >>> clip_box_2d([-1, 2, 5, 9], [0, 0, 4, 4]).tolist()
    [0.0, 2.0, 4.0, 4.0]
    """
    b = _boxes(boxes, 4, "boxes").copy()
    lim = _boxes(bounds, 4, "bounds")
    b[..., 0::2] = np.clip(b[..., 0::2], lim[..., 0:1], lim[..., 2:3])
    b[..., 1::2] = np.clip(b[..., 1::2], lim[..., 1:2], lim[..., 3:4])
    return b


def box2d_from_center_size(center: ArrayLike, size: ArrayLike) -> NDArray[np.float64]:
    """``[cx, cy]`` + ``[dx, dy]`` → ``[x_min, y_min, x_max, y_max]``.

    >>> box2d_from_center_size([1, 1], [2, 4]).tolist()
    [0.0, -1.0, 2.0, 3.0]
    """
    c = np.asarray(center, dtype=np.float64)
    s = np.asarray(size, dtype=np.float64)
    return np.concatenate([c - s / 2, c + s / 2], axis=-1)


def box3d_from_center_size(center: ArrayLike, size: ArrayLike) -> NDArray[np.float64]:
    """``[cx, cy, cz]`` + ``[dx, dy, dz]`` → ``[x_min, y_min, z_min, x_max, y_max, z_max]``.

    >>> box3d_from_center_size([0, 0, 1], [2, 2, 2]).tolist()
    [-1.0, -1.0, 0.0, 1.0, 1.0, 2.0]
    """
    return box2d_from_center_size(center, size)


def box3d_to_center_size(boxes: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(..., 6)`` min/max boxes → (centre ``(..., 3)``, size ``(..., 3)``)."""
    b = _boxes(boxes, 6, "boxes")
    return (b[..., :3] + b[..., 3:]) / 2, b[..., 3:] - b[..., :3]


@dataclass(frozen=True, slots=True)
class Affine:
    """A 2D affine map from continuous pixel coordinates ``(col, row)`` to a planar frame.

    ``x = a·col + b·row + c``, ``y = d·col + e·row + f`` (rasterio/GDAL order). Pixel
    ``(0, 0)`` is the top-left *corner*; the centre of pixel ``(i, j)`` is ``(i + 0.5, j + 0.5)``.

    Examples
    --------
    >>> t = Affine.north_up(x_min=100.0, y_max=50.0, resolution=0.5)
    >>> t.pixel_to_world(0.5, 0.5)  # centre of the top-left pixel
    (100.25, 49.75)
    >>> t.world_to_pixel(100.25, 49.75)
    (0.5, 0.5)
    >>> (t.inverse() * t).to_tuple()
    (1.0, 0.0, 0.0, 0.0, 1.0, 0.0)
    """

    a: float
    b: float
    c: float
    d: float
    e: float
    f: float

    @classmethod
    def north_up(cls, *, x_min: float, y_max: float, resolution: float) -> Affine:
        """The transform of a north-up raster: world metres per pixel ``resolution``."""
        if not resolution > 0:
            raise ValueError(f"resolution: expected > 0 metres/pixel, got {resolution}")
        return cls(float(resolution), 0.0, float(x_min), 0.0, -float(resolution), float(y_max))

    @classmethod
    def from_tuple(cls, values: tuple[float, ...] | list[float]) -> Affine:
        """From ``(a, b, c, d, e, f)``."""
        if len(values) != 6:
            raise ValueError(f"Affine.from_tuple: expected 6 values, got {len(values)}")
        return cls(*(float(v) for v in values))

    def to_tuple(self) -> tuple[float, float, float, float, float, float]:
        """``(a, b, c, d, e, f)``, JSON-friendly."""
        return (self.a, self.b, self.c, self.d, self.e, self.f)

    def to_gdal(self) -> tuple[float, float, float, float, float, float]:
        """GDAL geotransform order ``(c, a, b, f, d, e)``."""
        return (self.c, self.a, self.b, self.f, self.d, self.e)

    @property
    def determinant(self) -> float:
        return self.a * self.e - self.b * self.d

    def inverse(self) -> Affine:
        """The inverse map (world → pixel). Raises ``ValueError`` when singular."""
        det = self.determinant
        if det == 0:
            raise ValueError("Affine.inverse: transform is singular (determinant 0)")
        ia, ib = self.e / det, -self.b / det
        id_, ie = -self.d / det, self.a / det
        return Affine(ia, ib, -(ia * self.c + ib * self.f), id_, ie, -(id_ * self.c + ie * self.f))

    def __mul__(self, other: Affine) -> Affine:
        """Composition: ``(self * other)(p) == self(other(p))``."""
        if not isinstance(other, Affine):
            return NotImplemented
        return Affine(
            self.a * other.a + self.b * other.d,
            self.a * other.b + self.b * other.e,
            self.a * other.c + self.b * other.f + self.c,
            self.d * other.a + self.e * other.d,
            self.d * other.b + self.e * other.e,
            self.d * other.c + self.e * other.f + self.f,
        )

    def apply(self, u: ArrayLike, v: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Map arrays ``(u, v)`` (vectorised) through the transform."""
        u_ = np.asarray(u, dtype=np.float64)
        v_ = np.asarray(v, dtype=np.float64)
        return self.a * u_ + self.b * v_ + self.c, self.d * u_ + self.e * v_ + self.f

    def pixel_to_world(self, col: ArrayLike, row: ArrayLike):  # type: ignore[no-untyped-def]
        """Continuous pixel ``(col, row)`` → world ``(x, y)``; scalars in, floats out."""
        x, y = self.apply(col, row)
        if x.ndim == 0:
            return float(x), float(y)
        return x, y

    def world_to_pixel(self, x: ArrayLike, y: ArrayLike):  # type: ignore[no-untyped-def]
        """World ``(x, y)`` → continuous pixel ``(col, row)``; scalars in, floats out."""
        col, row = self.inverse().apply(x, y)
        if col.ndim == 0:
            return float(col), float(row)
        return col, row

    def box_to_world(self, box_px: ArrayLike) -> NDArray[np.float64]:
        """A pixel-frame box ``(..., 4)`` ``[c0, r0, c1, r1]`` → world ``[x_min, y_min, x_max, y_max]``.

        Works for any axis-aligned (no rotation/shear) transform, including north-up rasters
        where rows grow southwards.

        >>> Affine.north_up(x_min=0, y_max=10, resolution=1).box_to_world([1, 2, 3, 5]).tolist()
        [1.0, 5.0, 3.0, 8.0]
        """
        b = _boxes(box_px, 4, "box_px")
        x0, y0 = self.apply(b[..., 0], b[..., 1])
        x1, y1 = self.apply(b[..., 2], b[..., 3])
        return np.stack(
            [np.minimum(x0, x1), np.minimum(y0, y1), np.maximum(x0, x1), np.maximum(y0, y1)], -1
        )

    def box_to_pixel(self, box_world: ArrayLike) -> NDArray[np.float64]:
        """A world box ``(..., 4)`` → pixel-frame box ``[c0, r0, c1, r1]`` with ``c0 ≤ c1``, ``r0 ≤ r1``.

        >>> Affine.north_up(x_min=0, y_max=10, resolution=1).box_to_pixel([1, 5, 3, 8]).tolist()
        [1.0, 2.0, 3.0, 5.0]
        """
        return self.inverse().box_to_world(box_world)
