"""Oblique (perspective) renders of points: z-buffer splatting in numba.

Conventions
-----------
* **World**: metres, z up, x east, y north.
* **Azimuth**: compass bearing, in degrees clockwise from north, of the *camera position* as
  seen from the target box centre. 0 = camera north of the box looking south, 90 = camera east
  looking west, 180 = camera south looking north, 270 = camera west looking east.
* **Elevation**: degrees above the horizon of the camera as seen from the box centre
  (0 = level, 90 = straight down; no roll: image "up" is always towards +z / away from the camera).
* **Camera frame** (OpenCV): x right, y down, z forward (depth). ``[x, y, z]_cam = R · world + t``;
  pixel ``u = fx·x/z + cx``, ``v = fy·y/z + cy`` (continuous, ``(0, 0)`` = top-left corner).
"""

from __future__ import annotations

import functools
import math
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

import numba as nb
import numpy as np
from numpy.typing import ArrayLike, NDArray

from urbex.errors import EmptyRegionError
from urbex.pointcloud import PointCloud

__all__ = [
    "Camera",
    "ObliqueRender",
    "look_at_camera",
    "render_oblique",
    "render_parts",
    "render_threads",
]

_T = TypeVar("_T")

_MAX_POINT_SIZE = 9
_MIN_EXTENT = 1.0  # metres


@dataclass(frozen=True, slots=True, kw_only=True)
class Camera:
    """A pinhole camera (OpenCV convention).

    Attributes
    ----------
    K : ndarray, shape (3, 3), float64
        Intrinsics ``[[fx, 0, cx], [0, fy, cy], [0, 0, 1]]``, pixels.
    R : ndarray, shape (3, 3), float64
        World → camera rotation (rows: camera x/right, y/down, z/forward in world axes).
    t : ndarray, shape (3,), float64
        World → camera translation, metres: ``cam = R · world + t``.
    eye : ndarray, shape (3,), float64
        Camera position, world metres (``eye = −Rᵀ t``).
    width, height : int
        Image size, pixels.
    """

    K: NDArray[np.float64]
    R: NDArray[np.float64]
    t: NDArray[np.float64]
    eye: NDArray[np.float64]
    width: int
    height: int

    def __post_init__(self) -> None:
        for name, shape in (("K", (3, 3)), ("R", (3, 3)), ("t", (3,)), ("eye", (3,))):
            arr = np.asarray(getattr(self, name), dtype=np.float64)
            if arr.shape != shape:
                raise ValueError(f"Camera.{name}: expected shape {shape}, got {arr.shape}")
            object.__setattr__(self, name, arr)
        if self.width < 1 or self.height < 1:
            raise ValueError(f"Camera: expected width, height ≥ 1, got {self.width}×{self.height}")

    def project(
        self, world_xyz: ArrayLike
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """World points → ``(u, v, depth)``.

        Parameters
        ----------
        world_xyz : array_like, shape (N, 3) or (3,)
            World metres.

        Returns
        -------
        u, v : ndarray, shape (N,), float64
            Continuous pixel coordinates (column, row); meaningless where ``depth ≤ 0``.
        depth : ndarray, shape (N,), float64
            Distance along the optical axis, metres (≤ 0 = behind the camera).
        """
        p = np.atleast_2d(np.asarray(world_xyz, dtype=np.float64))
        cam = p @ self.R.T + self.t
        z = cam[:, 2]
        with np.errstate(divide="ignore", invalid="ignore"):
            u = self.K[0, 0] * cam[:, 0] / z + self.K[0, 2]
            v = self.K[1, 1] * cam[:, 1] / z + self.K[1, 2]
        return u, v, z


@dataclass(frozen=True, slots=True, kw_only=True)
class ObliqueRender:
    """An oblique render and the camera that made it.

    Attributes
    ----------
    image : ndarray, shape (H, W, 3), uint8
    camera : Camera
    """

    image: NDArray[np.uint8]
    camera: Camera


def look_at_camera(
    center: ArrayLike,
    *,
    azimuth_deg: float,
    elevation_deg: float,
    distance: float,
    size: tuple[int, int],
    fov_deg: float,
) -> Camera:
    """A camera at ``distance`` metres from ``center`` (world), looking at it.

    ``fov_deg`` is the vertical field of view; ``fx = fy`` (square pixels), principal point at the
    image centre. See the module docstring for the azimuth/elevation convention.

    Examples
    --------
    >>> cam = look_at_camera([0, 0, 0], azimuth_deg=180, elevation_deg=0, distance=10,
    ...                      size=(100, 100), fov_deg=90)
    >>> np.round(cam.eye, 6).tolist()  # south of the centre
    [0.0, -10.0, 0.0]
    >>> u, v, d = cam.project([[1.0, 0.0, 0.0]])  # east is to the right when looking north
    >>> float(u[0]) > 50, float(d[0])
    (True, 10.0)
    """
    w, h = (int(s) for s in size)
    c = np.asarray(center, dtype=np.float64)
    az, el = math.radians(azimuth_deg), math.radians(elevation_deg)
    direction = np.array([math.sin(az) * math.cos(el), math.cos(az) * math.cos(el), math.sin(el)])
    eye = c + distance * direction
    forward = -direction
    right = np.array([-math.cos(az), math.sin(az), 0.0])  # horizontal, no roll
    down = np.cross(forward, right)
    R = np.stack([right, down, forward])
    t = -R @ eye
    f = (h / 2) / math.tan(math.radians(fov_deg) / 2)
    K = np.array([[f, 0.0, w / 2], [0.0, f, h / 2], [0.0, 0.0, 1.0]])
    return Camera(K=K, R=R, t=t, eye=eye, width=w, height=h)


_CHUNK = 1024  # points projected at a time (the projection loop vectorises)


@nb.njit(cache=True, nogil=True, error_model="numpy")
def _project(
    xyz, a, b, rgb, has_rgb, zlo, zspan, M, fx, fy, cx, cy, near, z_one, fixed, w, h,
    code, zf, packed, bx, by, bz,
):  # pragma: no cover  # fmt: skip
    """Project points ``a:b`` (branch-free, so that it vectorises): ``code[j]`` is the flat
    pixel of a one-pixel splat of point ``a + j``, −1 for none (behind the camera or off the
    image), −2 for a point the caller splats itself (possibly wider than a pixel); ``zf[j]``
    its depth as float32, ``packed[j]`` its colour ``r | g << 8 | b << 16`` (grey by height
    without colours). The arithmetic is the per-point one of :func:`_splat`; IEEE division
    (``error_model="numpy"``: a point at depth 0 is −1, not an exception). ``bx, by, bz``
    are scratch of at least ``b − a`` values (xyz's dtype).
    """
    m00, m01, m02, m03 = M[0, 0], M[0, 1], M[0, 2], M[0, 3]
    m10, m11, m12, m13 = M[1, 0], M[1, 1], M[1, 2], M[1, 3]
    m20, m21, m22, m23 = M[2, 0], M[2, 1], M[2, 2], M[2, 3]
    wf = np.float64(w)
    hf = np.float64(h)
    w32 = np.int32(w)
    auto = np.int32(fixed <= 0)
    fixed1 = np.int32(fixed == 1)
    n = np.uint64(b - a)
    a64 = np.uint64(a)  # unsigned indices: no wraparound tests (which block vectorising)
    for j in range(n):  # de-interleave first: the arithmetic below then vectorises well
        bx[j] = xyz[a64 + j, 0]
        by[j] = xyz[a64 + j, 1]
        bz[j] = xyz[a64 + j, 2]
    if has_rgb:
        for j in range(n):
            i = a64 + j
            packed[j] = (
                np.uint32(rgb[i, 0]) | (np.uint32(rgb[i, 1]) << 8) | (np.uint32(rgb[i, 2]) << 16)
            )
    else:
        for j in range(n):
            g = np.uint32(np.uint8(
                40.0 + 215.0 * min(max((np.float64(bz[j]) - zlo) / zspan, 0.0), 1.0)
            ))  # fmt: skip
            packed[j] = g | (g << 8) | (g << 16)
    for j in range(n):
        x = np.float64(bx[j])
        y = np.float64(by[j])
        z = np.float64(bz[j])
        Z = m20 * x + m21 * y + m22 * z + m23
        X = m00 * x + m01 * y + m02 * z + m03
        Y = m10 * x + m11 * y + m12 * z + m13
        u = fx * X / Z + cx
        v = fy * Y / Z + cy
        front = np.int32(Z > near)
        one = (auto & np.int32(Z > z_one)) | fixed1
        inside = np.int32(u >= 0.0) & np.int32(u < wf) & np.int32(v >= 0.0) & np.int32(v < hf)
        us = u if inside else 0.0  # NaN fails every test above
        vs = v if inside else 0.0
        k = np.int32(vs) * w32 + np.int32(us)  # int32: the image has < 2³¹ pixels
        ok = front & one & inside
        slow = front & (np.int32(1) - one)
        code[j] = ok * (k + np.int32(1) + slow) - np.int32(1) - slow
        zf[j] = np.float32(Z)


@nb.njit(cache=True, nogil=True)
def _splat(
    xyz, rgb, has_rgb, zlo, zhi, M, fx, fy, cx, cy, near, fixed, spacing, max_size, depth, col
):  # pragma: no cover
    """Z-buffer splat of points as screen-aligned squares (nearest wins; first on ties).

    ``M`` (3, 4) maps cache-frame xyz to the camera frame. The square side is ``fixed`` pixels
    if > 0, else ``fx·spacing/depth`` rounded, clamped to ``[1, max_size]``; points beyond
    ``z_one`` are one pixel without the size division. ``depth`` (H, W, 2) float32 and
    ``col`` (H, W, 2) uint32 are two views of one buffer: a pixel's depth is
    ``depth[r, c, 0]``, its colour ``col[r, c, 1]`` packed ``r | g << 8 | b << 16`` (grey
    by height without colours), side by side so that a point touches one cache line.

    Points go in chunks: :func:`_project` places the one-pixel splats (the common case for a
    dense cloud seen whole) of a whole chunk at once, then the chunk is splatted in point
    order, one-pixel splats branch-free and the others square by square, so the image is the
    one of splatting point after point. (No helper takes arrays in the per-point loop: each
    such call costs reference counts.)
    """
    h, w = depth.shape[0], depth.shape[1]
    zspan = zhi - zlo
    if zspan <= 0.0:
        zspan = 1.0
    z_one = 1.001 * (fx * spacing) / 1.5  # beyond it fx·spacing/Z < 1.5: a 1-pixel splat
    dflat = depth.reshape(-1)  # depth of pixel k at 2k, its colour at 2k + 1
    cflat = col.reshape(-1)
    code = np.empty(_CHUNK, np.int32)
    zbuf = np.empty(_CHUNK, np.float32)
    pbuf = np.empty(_CHUNK, np.uint32)
    bx = np.empty(_CHUNK, xyz.dtype)
    by = np.empty(_CHUNK, xyz.dtype)
    bz = np.empty(_CHUNK, xyz.dtype)
    n = xyz.shape[0]
    for a in range(0, n, _CHUNK):
        b = min(n, a + _CHUNK)
        _project(xyz, a, b, rgb, has_rgb, zlo, zspan, M, fx, fy, cx, cy, near, z_one, fixed,
                 w, h, code, zbuf, pbuf, bx, by, bz)  # fmt: skip
        for j in range(b - a):
            k = code[j]
            if k == -1:
                continue
            zf = zbuf[j]
            packed = pbuf[j]
            if k >= 0:  # one pixel
                kd = np.uint64(2 * k)
                old = dflat[kd]
                nearer = zf < old
                dflat[kd] = zf if nearer else old
                cflat[kd + np.uint64(1)] = packed if nearer else cflat[kd + np.uint64(1)]
                continue
            # in front of the camera, possibly wider than a pixel: the square, from scratch
            i = np.uint64(a + j)
            x = np.float64(xyz[i, 0])
            y = np.float64(xyz[i, 1])
            z = np.float64(xyz[i, 2])
            Z = M[2, 0] * x + M[2, 1] * y + M[2, 2] * z + M[2, 3]
            X = M[0, 0] * x + M[0, 1] * y + M[0, 2] * z + M[0, 3]
            Y = M[1, 0] * x + M[1, 1] * y + M[1, 2] * z + M[1, 3]
            u = fx * X / Z + cx
            v = fy * Y / Z + cy
            if fixed > 0:
                s = fixed
            else:
                s = int(fx * spacing / Z + 0.5)
                s = min(max(s, 1), max_size)
            if s == 1:  # floor(u) in [0, w) iff u in [0, w); NaN fails both
                if not (u >= 0.0 and u < w and v >= 0.0 and v < h):
                    continue
                s_r0 = int(v)
                s_c0 = int(u)
                if zf < depth[s_r0, s_c0, 0]:
                    depth[s_r0, s_c0, 0] = zf
                    col[s_r0, s_c0, 1] = packed
                continue
            c0 = int(np.floor(u)) - (s - 1) // 2
            r0 = int(np.floor(v)) - (s - 1) // 2
            if c0 >= w or r0 >= h or c0 + s <= 0 or r0 + s <= 0:
                continue
            for r in range(max(r0, 0), min(r0 + s, h)):
                for c in range(max(c0, 0), min(c0 + s, w)):
                    if zf < depth[r, c, 0]:
                        depth[r, c, 0] = zf
                        col[r, c, 1] = packed


@nb.njit(cache=True, nogil=True)
def _clear(depth, col, packed):  # pragma: no cover - compiled
    """Every pixel infinitely far, in the packed background colour."""
    h, w = depth.shape[0], depth.shape[1]
    for r in range(h):
        for c in range(w):
            depth[r, c, 0] = np.inf
            col[r, c, 1] = packed


@nb.njit(cache=True, nogil=True)
def _unpack(col, img):  # pragma: no cover - compiled
    """Packed colours ``col[r, c, 1]`` (``r | g << 8 | b << 16``) → (H, W, 3) uint8."""
    h, w = img.shape[0], img.shape[1]
    for r in range(h):
        for c in range(w):
            p = col[r, c, 1]
            img[r, c, 0] = np.uint8(p & 255)
            img[r, c, 1] = np.uint8((p >> 8) & 255)
            img[r, c, 2] = np.uint8((p >> 16) & 255)


@nb.njit(cache=True, nogil=True)
def _z_range(xyz):  # pragma: no cover - compiled
    """Min and max of ``xyz[:, 2]`` (float64 of the stored values) in one pass."""
    lo = np.inf
    hi = -np.inf
    for i in range(xyz.shape[0]):
        z = np.float64(xyz[i, 2])
        if z < lo:
            lo = z
        if z > hi:
            hi = z
    return lo, hi


def _fit_distance(
    corners: NDArray[np.float64],
    center: NDArray[np.float64],
    az: float,
    el: float,
    size: tuple[int, int],
    fov: float,
) -> float:
    """Smallest camera distance at which every corner projects inside the image (bisection).

    Each step decides whether the corners fit at the trial distance. They fit iff the
    distance exceeds ``d*`` = max over corners of ``max(1e-6, 2·fx·|x|/w, 2·fy·|y|/h) − z``
    (``(x, y, z)``: the corner relative to the centre in camera axes): moving back along
    the view direction adds to every depth and leaves x, y alone. Steps farther than
    ``1e-10 · hi`` from ``d*`` take that answer; the few nearer ones test the corners as
    :func:`look_at_camera` + :meth:`Camera.project` would (the same floats), so the result
    is the one of testing every step (rounding errors are ~1e-16 relative).
    """
    radius = float(np.max(np.linalg.norm(corners - center, axis=1)))
    radius = max(radius, 1e-3)
    w, h = size
    half_v = math.radians(fov) / 2
    half_h = math.atan(math.tan(half_v) * w / h)
    hi = radius / math.sin(min(half_v, half_h)) * 1.01
    lo = 0.0
    cam = look_at_camera(center, azimuth_deg=az, elevation_deg=el, distance=1.0, size=size,
                         fov_deg=fov)  # fmt: skip
    R, K = cam.R, cam.K
    direction = -R[2]  # forward = -direction, exactly
    c = np.asarray(center, dtype=np.float64)
    p = np.atleast_2d(np.asarray(corners, dtype=np.float64))
    rel = (p - c) @ R.T
    need = np.maximum(
        1e-6,
        np.maximum(2.0 * K[0, 0] * np.abs(rel[:, 0]) / w, 2.0 * K[1, 1] * np.abs(rel[:, 1]) / h),
    )
    d_star = float(np.max(need - rel[:, 2]))
    tol = 1e-10 * hi
    for _ in range(40):
        mid = (lo + hi) / 2
        if abs(mid - d_star) > tol:
            ok = mid > d_star
        else:
            t = -R @ (c + mid * direction)
            pc = p @ R.T + t
            d = pc[:, 2]
            with np.errstate(divide="ignore", invalid="ignore"):
                u = K[0, 0] * pc[:, 0] / d + K[0, 2]
                v = K[1, 1] * pc[:, 1] / d + K[1, 2]
            ok = bool(np.all(d > 1e-6) and np.all((u >= 0) & (u <= w) & (v >= 0) & (v <= h)))
        if ok:
            hi = mid
        else:
            lo = mid
    return hi


def render_oblique(
    points: PointCloud,
    *,
    target_box: ArrayLike,
    azimuth_deg: float,
    elevation_deg: float = 45.0,
    size: tuple[int, int] = (512, 512),
    fov_deg: float = 50.0,
    point_size: int | None = None,
    background: tuple[int, int, int] = (0, 0, 0),
) -> ObliqueRender:
    """Perspective render of ``points`` looking at ``target_box``.

    The camera looks at the centre of the target's 3D box (the 2D ``target_box`` × the z-range
    of ``points``) from ``azimuth_deg``/``elevation_deg`` and stands at the smallest distance at
    which the whole 3D box fits in the frame. Points are splatted as squares into a z-buffer
    (nearest wins); the square side follows the point density: the mean point spacing in the
    target footprint projected to the screen at each point's depth (1–9 px), unless
    ``point_size`` fixes it. Points without colours are shaded by height.

    Parameters
    ----------
    points : PointCloud
        World = ``xyz + offset``, metres.
    target_box : array_like, shape (4,)
        World BEV box ``[x_min, y_min, x_max, y_max]`` to frame, metres.
    azimuth_deg : float
        Compass bearing of the camera as seen from the box centre, degrees clockwise from
        north: 0 = camera north of the box looking south, 180 = from the south looking north.
    elevation_deg : float
        Camera elevation above the horizon, degrees, in [0, 90].
    size : (int, int)
        ``(width, height)`` pixels.
    fov_deg : float
        Vertical field of view, degrees, in (0, 180).
    point_size : int or None
        Fixed splat side in pixels; None adapts it to density.
    background : (int, int, int)
        RGB of pixels no point covers.

    Returns
    -------
    ObliqueRender
        ``image`` (H, W, 3) uint8 and the ``camera`` (project world points with it).

    Raises
    ------
    EmptyRegionError
        ``points`` is empty.
    """
    box = np.asarray(target_box, dtype=np.float64)
    if box.shape != (4,) or not np.all(np.isfinite(box)) or box[2] < box[0] or box[3] < box[1]:
        raise ValueError(
            f"target_box: expected finite [x_min, y_min, x_max, y_max], got {box.tolist()}"
        )
    if not 0.0 <= elevation_deg <= 90.0:
        raise ValueError(f"elevation_deg: expected 0..90 degrees, got {elevation_deg}")
    if not 0.0 < fov_deg < 180.0:
        raise ValueError(f"fov_deg: expected 0 < fov < 180 degrees, got {fov_deg}")
    w, h = (int(s) for s in size)
    if w < 1 or h < 1 or w * h >= 2**31:
        raise ValueError(f"size: expected (width, height) ≥ 1 and < 2³¹ pixels, got {size}")
    if point_size is not None and point_size < 1:
        raise ValueError(f"point_size: expected ≥ 1 pixel or None, got {point_size}")
    n = points.n_points
    if n == 0:
        raise EmptyRegionError("no points under that box; pick a region with content")
    xyz = np.ascontiguousarray(points.xyz)
    off = points.offset
    # the points go in contiguous parts, each on a thread (the kernels release the GIL)
    workers = render_threads() if n >= _PARALLEL_MIN_POINTS else 1
    bounds = np.linspace(0, n, workers + 1).astype(np.int64)
    ranges = render_parts(lambda k: _z_range(xyz[bounds[k] : bounds[k + 1]]), workers)
    zlo_rel, zhi_rel = (float(v) for v in ranges[0])
    for lo_k, hi_k in ranges[1:]:  # a later part wins only strictly: as one pass would
        zlo_rel = float(lo_k) if lo_k < zlo_rel else zlo_rel
        zhi_rel = float(hi_k) if hi_k > zhi_rel else zhi_rel
    z0, z1 = zlo_rel + off[2], zhi_rel + off[2]
    # frame at least _MIN_EXTENT metres per axis (a single point or a zero-size box stays visible)
    box = box.copy()
    for a in (0, 1):
        if box[a + 2] - box[a] < _MIN_EXTENT:
            mid = (box[a] + box[a + 2]) / 2
            box[a], box[a + 2] = mid - _MIN_EXTENT / 2, mid + _MIN_EXTENT / 2
    if z1 - z0 < _MIN_EXTENT:
        zm = (z0 + z1) / 2
        z0, z1 = zm - _MIN_EXTENT / 2, zm + _MIN_EXTENT / 2
    corners = np.array(
        [[x, y, z] for x in (box[0], box[2]) for y in (box[1], box[3]) for z in (z0, z1)]
    )
    center = np.array([(box[0] + box[2]) / 2, (box[1] + box[3]) / 2, (z0 + z1) / 2])
    dist = _fit_distance(corners, center, azimuth_deg, elevation_deg, (w, h), fov_deg)
    cam = look_at_camera(
        center,
        azimuth_deg=azimuth_deg,
        elevation_deg=elevation_deg,
        distance=dist,
        size=(w, h),
        fov_deg=fov_deg,
    )
    # camera from the cloud's own frame: cam = R·(xyz + off) + t = R·xyz + (R·off + t)
    M = np.concatenate([cam.R, (cam.R @ off + cam.t)[:, None]], axis=1)
    area = max((box[2] - box[0]) * (box[3] - box[1]), 1e-6)
    spacing = 1.5 * math.sqrt(area / n)
    has_rgb = points.rgb is not None
    rgb = np.ascontiguousarray(points.rgb) if has_rgb else np.zeros((1, 3), np.uint8)
    bg = np.asarray(background, dtype=np.uint8)
    # split the points into contiguous chunks, each splatted into its own z-buffer on a thread
    # (the kernel releases the GIL), then merged in chunk order keeping the first on equal
    # depth: the same image as one sequential pass ("nearest wins, first on ties").

    bg_packed = int(bg[0]) | int(bg[1]) << 8 | int(bg[2]) << 16

    def run(k: int) -> tuple[NDArray[np.float32], NDArray[np.uint32]]:
        a, b = int(bounds[k]), int(bounds[k + 1])
        col = np.empty((h, w, 2), np.uint32)  # per pixel: depth (float32 bits), colour
        depth = col.view(np.float32)
        _clear(depth, col, bg_packed)
        _splat(
            xyz[a:b], rgb[a:b] if has_rgb else rgb, has_rgb, zlo_rel, zhi_rel, M,
            cam.K[0, 0], cam.K[1, 1], cam.K[0, 2], cam.K[1, 2], 1e-3,
            int(point_size or 0), spacing, _MAX_POINT_SIZE, depth, col,
        )  # fmt: skip
        return depth, col

    if workers == 1:
        _, col = run(0)
    else:
        parts = render_parts(run, workers)
        depth, col = parts[0]
        for d_k, c_k in parts[1:]:
            _merge_nearest(depth, col, d_k, c_k)
    img = np.empty((h, w, 3), np.uint8)
    _unpack(col, img)
    return ObliqueRender(image=img, camera=cam)


_PARALLEL_MIN_POINTS = 200_000


def render_threads() -> int:
    """Parts a large render is split into: the cores, at most 4."""
    return max(1, min(4, os.cpu_count() or 1))


@functools.cache
def _pool() -> ThreadPoolExecutor:
    """A process-wide pool for render chunks (created on first use, never at import)."""
    return ThreadPoolExecutor(max_workers=render_threads(), thread_name_prefix="urbex-oblique")


_POOL_FREE = threading.Lock()  # held by the one render whose parts run on the pool


def render_parts(fn: Callable[[int], _T], n: int) -> list[_T]:
    """``[fn(0), ..., fn(n - 1)]``: on the render pool when no other render is using it, else
    one after another in the calling thread.

    The parts' kernels release the GIL, so a lone render (one episode, one ``urbex ground``)
    gets every core; when several threads render at once (episodes in flight), the cores are
    already busy and queueing their parts on one pool only adds hand-offs (measured here,
    2 cores, 16 threads zooming 512 px: 48 ms mean per view through the pool, 13 ms inline).
    The result does not depend on where the parts ran.
    """
    if n > 1 and _POOL_FREE.acquire(blocking=False):
        try:
            return list(_pool().map(fn, range(n)))
        finally:
            _POOL_FREE.release()
    return [fn(k) for k in range(n)]


@nb.njit(cache=True, nogil=True)
def _merge_nearest(depth, col, depth2, col2):  # pragma: no cover - compiled
    """Pixels where ``depth2`` is strictly nearer take ``col2`` (ties keep the first buffer).

    Buffers as in :func:`_splat`: depth at ``[r, c, 0]``, packed colour at ``[r, c, 1]``.
    """
    h, w = depth.shape[0], depth.shape[1]
    for r in range(h):
        for c in range(w):
            if depth2[r, c, 0] < depth[r, c, 0]:
                depth[r, c, 0] = depth2[r, c, 0]
                col[r, c, 1] = col2[r, c, 1]
