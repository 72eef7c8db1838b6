"""Open a built scene cache lazily; crop points, cut zoom views, render oblique views.

Frames
------
* **World**: metres, z up. Every box argument here is a world box: BEV ``[x_min, y_min, x_max,
  y_max]`` or 3D ``[x_min, y_min, z_min, x_max, y_max, z_max]``.
* **View pixels**: ``View.transform`` maps continuous view pixel ``(col, row)`` (``(0, 0)`` = the
  top-left corner) to world ``(x, y)``, GDAL convention.
* **Agent coordinates**: integers 0–1000 normalised by the view's width/height,
  ``x_px = x / 1000 · W``, box ``[x1, y1, x2, y2]`` with y growing downwards (image rows).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from urbex.errors import CacheError, EmptyRegionError, StaleCacheError
from urbex.geometry import Affine
from urbex.layout import GLOBAL_VIEW_FILE, INSTANCES_FILE, PROPOSALS_FILE
from urbex.pointcloud import PointCloud
from urbex.scene import _resample as R
from urbex.scene.build import _required_files
from urbex.scene.instances import instance_extents
from urbex.scene.meta import BEV_LAYERS, CACHE_FORMAT_VERSION, CacheMeta, read_meta
from urbex.scene.oblique import render_oblique, render_parts, render_threads
from urbex.scene.proposals import ProposalSet, proposals_from_table

if TYPE_CHECKING:
    import polars as pl

    from urbex.scene.oblique import ObliqueRender

__all__ = ["SceneCache", "View"]


@dataclass(frozen=True, slots=True, kw_only=True)
class View:
    """An image the agent sees, with its pixel → world map.

    Attributes
    ----------
    image : ndarray, shape (H, W, 3), uint8
        RGB, row 0 at the top (north for BEV views).
    transform : Affine
        Continuous view pixel ``(col, row)`` → world ``(x, y)`` metres.
    world_box : ndarray, shape (4,), float64
        World ``[x_min, y_min, x_max, y_max]`` the image covers, metres.

    Examples
    --------
    >>> v = View(image=np.zeros((50, 100, 3), np.uint8),
    ...          transform=Affine.north_up(x_min=0.0, y_max=50.0, resolution=1.0),
    ...          world_box=np.array([0.0, 0.0, 100.0, 50.0]))
    >>> v.to_world_box([0, 0, 500, 1000]).tolist()  # left half, full height
    [0.0, 0.0, 50.0, 50.0]
    >>> v.from_world_box([0.0, 25.0, 100.0, 50.0]).tolist()  # northern half
    [0.0, 0.0, 1000.0, 500.0]
    """

    image: NDArray[np.uint8]
    transform: Affine
    world_box: NDArray[np.float64]

    def __post_init__(self) -> None:
        img = np.asarray(self.image)
        if img.ndim != 3 or img.shape[2] != 3 or img.dtype != np.uint8:
            raise ValueError(f"View.image: expected (H, W, 3) uint8, got {img.shape} {img.dtype}")
        if not isinstance(self.transform, Affine):
            raise TypeError(f"View.transform: expected Affine, got {type(self.transform).__name__}")
        box = np.asarray(self.world_box, dtype=np.float64)
        if box.shape != (4,):
            raise ValueError(f"View.world_box: expected shape (4,), got {box.shape}")
        object.__setattr__(self, "world_box", box)

    @property
    def width(self) -> int:
        """Image width, pixels."""
        return int(self.image.shape[1])

    @property
    def height(self) -> int:
        """Image height, pixels."""
        return int(self.image.shape[0])

    def to_world_box(self, bbox_1000: ArrayLike) -> NDArray[np.float64]:
        """Agent box ``[x1, y1, x2, y2]`` (0–1000 of this view) → world ``[x_min, y_min, x_max, y_max]``."""
        b = np.asarray(bbox_1000, dtype=np.float64)
        if b.shape != (4,):
            raise ValueError(f"bbox_1000: expected 4 numbers [x1, y1, x2, y2], got shape {b.shape}")
        px = b * np.array([self.width, self.height, self.width, self.height]) / 1000.0
        return self.transform.box_to_world(px)

    def from_world_box(self, world_box: ArrayLike) -> NDArray[np.float64]:
        """World ``[x_min, y_min, x_max, y_max]`` → agent box (0–1000 of this view, float, unclipped)."""
        px = self.transform.box_to_pixel(np.asarray(world_box, dtype=np.float64))
        return px * 1000.0 / np.array([self.width, self.height, self.width, self.height])


def _check_box(world_box: ArrayLike) -> NDArray[np.float64]:
    box = np.asarray(world_box, dtype=np.float64)
    if box.shape not in ((4,), (6,)):
        raise ValueError(
            f"world_box: expected a 2D box (4,) or a 3D box (6,), got shape {box.shape}"
        )
    if not np.all(np.isfinite(box)):
        raise ValueError(f"world_box: expected finite numbers, got {box.tolist()}")
    return box


def _inside(
    p: NDArray[np.float64], lo: NDArray[np.float64], hi: NDArray[np.float64], with_z: bool
) -> NDArray[np.bool_]:
    """Which cache-frame points ``p`` (N, 3) lie in ``[lo, hi]`` (inclusive; z only ``with_z``)."""
    mask = (p[:, 0] >= lo[0]) & (p[:, 0] <= hi[0]) & (p[:, 1] >= lo[1]) & (p[:, 1] <= hi[1])
    if with_z:
        mask &= (p[:, 2] >= lo[2]) & (p[:, 2] <= hi[2])
    return mask


class SceneCache:
    """A built scene cache, opened lazily (arrays are memory-mapped on first use).

    Use :meth:`open`. Not thread-safe while arrays are first being mapped (cheap to open one per
    worker).
    """

    def __init__(self, path: Path, meta: CacheMeta) -> None:
        self._path = Path(path)
        self._meta = meta
        self._arrays: dict[str, NDArray[Any]] = {}
        self._instances: pl.DataFrame | None = None
        self._extents: dict[int, tuple[NDArray[np.float64], NDArray[np.float64], int]] | None = None
        self._proposals: ProposalSet | None = None

    @classmethod
    def open(cls, path: str | Path, *, expected_hash: str | None = None) -> SceneCache:
        """Open the cache at ``path``.

        Raises
        ------
        CacheError
            ``path`` is missing, incomplete (a file listed in the layout is absent) or of
            another format version.
        StaleCacheError
            ``expected_hash`` is given and differs from the cache's content hash.
        """
        p = Path(path)
        if not p.is_dir():
            raise CacheError("scene cache directory not found; build it with `urbex cache`", path=p)
        meta = read_meta(p)
        if meta.format_version != CACHE_FORMAT_VERSION:
            raise StaleCacheError(
                f"cache format version {meta.format_version}, this urbex reads "
                f"{CACHE_FORMAT_VERSION}; rebuild the cache",
                path=p,
            )
        if expected_hash is not None and meta.content_hash != expected_hash:
            raise StaleCacheError(
                f"content hash {meta.content_hash[:12]}… differs from the expected "
                f"{expected_hash[:12]}… (inputs or scene params changed); rebuild the cache",
                path=p,
            )

        missing = [rel for rel in _required_files(meta) if not (p / rel).is_file()]
        if missing:
            raise CacheError(f"incomplete cache, missing {missing}; rebuild it", path=p)
        return cls(p, meta)

    # -- properties ------------------------------------------------------------------------
    @property
    def path(self) -> Path:
        return self._path

    @property
    def meta(self) -> CacheMeta:
        return self._meta

    @property
    def scene_id(self) -> str:
        return self._meta.scene_id

    @property
    def n_points(self) -> int:
        return self._meta.n_points

    @property
    def bounds(self) -> NDArray[np.float64]:
        """World 3D box ``[x_min, y_min, z_min, x_max, y_max, z_max]`` of the points, metres."""
        return np.asarray(self._meta.bounds, dtype=np.float64)

    @property
    def origin(self) -> NDArray[np.float64]:
        """World position of the cache frame's zero, shape (3,), metres."""
        return np.asarray(self._meta.origin, dtype=np.float64)

    @property
    def bev_transform(self) -> Affine:
        """Full-resolution BEV pixel → world metres."""
        return self._meta.bev_affine

    @property
    def bev_shape(self) -> tuple[int, int]:
        """``(height, width)`` of the full-resolution BEV, pixels."""
        return self._meta.bev_height, self._meta.bev_width

    @property
    def instances(self) -> pl.DataFrame:
        """The instance table (see :mod:`urbex.scene.instances`), read on first use."""
        if self._instances is None:
            import polars as pl

            self._instances = pl.read_parquet(self._path / INSTANCES_FILE, glob=False)
        return self._instances

    @property
    def has_proposals(self) -> bool:
        """The cache stores instance proposals (caches built before they existed do not)."""
        return self._meta.n_proposals is not None

    def _require_proposals(self) -> None:
        if not self.has_proposals:
            raise StaleCacheError(
                "this scene cache was built before urbex stored instance proposals (the "
                f"agent's marks); rebuild it: `urbex cache --scene {self.scene_id} --force`",
                path=self._path,
            )

    @property
    def proposals(self) -> ProposalSet:
        """The scene's instance proposals (:mod:`urbex.scene.proposals`), read on first use.

        Raises
        ------
        StaleCacheError
            The cache was built before proposals were stored (names the rebuild command).
        """
        if self._proposals is None:
            self._require_proposals()
            import pyarrow as pa

            from urbex.arrow import read_parquet

            path = self._path / PROPOSALS_FILE
            try:
                self._proposals = proposals_from_table(read_parquet(path))
            except (OSError, KeyError, ValueError, pa.ArrowException) as exc:
                raise CacheError(
                    f"cannot read proposals: {exc}; rebuild the cache", path=path
                ) from exc
        return self._proposals

    def proposal_of(self, index: ArrayLike) -> NDArray[np.int32]:
        """The proposal ``mark_id`` of the points at cache indices ``index`` (0 = none).

        Raises
        ------
        StaleCacheError
            The cache was built before proposals were stored.
        """
        self._require_proposals()
        idx = np.asarray(index, dtype=np.int64)
        if not self._meta.has_semantic:
            return np.zeros(idx.shape, np.int32)
        return np.asarray(self._array("points/proposal.npy")[idx], dtype=np.int32)

    # -- arrays ----------------------------------------------------------------------------
    def _array(self, rel: str) -> NDArray[Any]:
        arr = self._arrays.get(rel)
        if arr is None:
            path = self._path / rel
            try:
                arr = np.load(path, mmap_mode="r")
            except (OSError, ValueError) as exc:
                raise CacheError(f"cannot read array: {exc}; rebuild the cache", path=path) from exc
            self._arrays[rel] = arr
        return arr

    def bev_layer(self, name: str) -> NDArray[Any]:
        """A full-resolution BEV layer, memory-mapped (read-only).

        ``rgb`` (H, W, 3) uint8; ``z_max``/``z_min`` (H, W) float32 world metres, NaN = empty;
        ``semantic`` (H, W) int16 and ``instance`` (H, W) int32, −1 = empty/none; ``filled``
        (H, W) bool, True where hole filling supplied the value.
        """
        if name not in BEV_LAYERS:
            raise ValueError(f"bev_layer: expected one of {sorted(BEV_LAYERS)}, got {name!r}")
        return self._array(f"bev/{name}.npy")

    def _point_layer(self, name: str) -> NDArray[Any] | None:
        has = {
            "rgb": self._meta.has_rgb,
            "semantic": self._meta.has_semantic,
            "instance": self._meta.has_instance,
        }
        if not has.get(name, True):
            return None
        return self._array(f"points/{name}.npy")

    # -- crops -----------------------------------------------------------------------------
    def crop_indices(self, world_box: ArrayLike) -> NDArray[np.int64]:
        """Indices (cache order, ascending) of the points inside ``world_box``.

        Bounds are inclusive; a 2D box ignores z. Only the grid cells under the box are read.
        A box outside the scene gives an empty array (not an error). "Inside" is evaluated in
        the cache frame: ``xyz_f32 ≥ box_min − origin`` (float64), likewise for the maxima.

        Parameters
        ----------
        world_box : array_like, shape (4,) or (6,)
            World metres.

        Returns
        -------
        ndarray, shape (M,), int64
        """
        box = _check_box(world_box)
        lo, hi = self._frame_box(box)
        if np.any(lo > hi):
            return np.zeros(0, np.int64)
        m = self._meta
        gx0, gy0 = m.grid_origin
        ncx, ncy = m.grid_shape
        cs = m.cell_size
        o = self.origin
        rel_bounds = self.bounds - np.concatenate([o, o])
        if (
            lo[0] > rel_bounds[3] or hi[0] < rel_bounds[0]
            or lo[1] > rel_bounds[4] or hi[1] < rel_bounds[1]
            or lo[2] > rel_bounds[5] or hi[2] < rel_bounds[2]
        ):  # fmt: skip
            return np.zeros(0, np.int64)

        def cell(v: float, g0: float, n: int) -> int:
            return min(max(math.floor((v - g0) / cs), 0), n - 1)

        cx0, cx1 = cell(lo[0], gx0, ncx), cell(hi[0], gx0, ncx)
        cy0, cy1 = cell(lo[1], gy0, ncy), cell(hi[1], gy0, ncy)
        offsets = self._array("points/cell_offsets.npy")
        xyz = self._array("points/xyz.npy")
        pieces: list[NDArray[np.int64]] = []
        for cy in range(cy0, cy1 + 1):
            a = int(offsets[cy * ncx + cx0])
            b = int(offsets[cy * ncx + cx1 + 1])
            if b <= a:
                continue
            mask = _inside(np.asarray(xyz[a:b], dtype=np.float64), lo, hi, box.shape == (6,))
            pieces.append(np.flatnonzero(mask) + a)
        if not pieces:
            return np.zeros(0, np.int64)
        return np.concatenate(pieces).astype(np.int64, copy=False)

    def _frame_box(
        self, box: NDArray[np.float64]
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """A checked world box's corners in the cache frame (z unbounded for a 2D box)."""
        o = self.origin
        if box.shape == (4,):
            lo = np.array([box[0] - o[0], box[1] - o[1], -np.inf])
            hi = np.array([box[2] - o[0], box[3] - o[1], np.inf])
            return lo, hi
        return box[:3] - o, box[3:] - o

    def count_instance_points(self, instance_id: int, world_box: ArrayLike) -> int | None:
        """How many points of instance ``instance_id`` lie inside ``world_box`` (world metres),
        by the test of :meth:`crop_indices`: ``crop_indices(world_box)``'s points with that
        instance id, counted without cropping the box. None when the cache has no instance ids.

        Every instance's point count and cache-frame bounding box are taken in one pass over
        the points, on the first call: a box holding the bounding box holds all the points;
        otherwise only the part of the box over the bounding box is cropped.
        """
        if self._point_layer("instance") is None:
            return None
        found = self._instance_extents().get(int(instance_id))
        if found is None:  # no point has this id
            return 0
        p_lo, p_hi, n = found
        box = _check_box(world_box)
        lo, hi = self._frame_box(box)
        if (lo <= p_lo).all() and (p_hi <= hi).all():
            return n
        # the box over the instance's bounding box (in world metres, a millimetre wider than
        # the cache-frame corners it rounds): the same test, on the instance's points only
        k, o = box.shape[0] // 2, np.concatenate([self.origin, self.origin])
        around = np.concatenate([p_lo - 1e-3, p_hi + 1e-3]) + o
        around = np.concatenate([around[:2], around[3:5]]) if k == 2 else around
        part = np.concatenate([np.maximum(box[:k], around[:k]), np.minimum(box[k:], around[k:])])
        if (part[:k] > part[k:]).any():
            return 0
        inst = self._point_layer("instance")
        assert inst is not None
        idx = self.crop_indices(part)
        return int(np.count_nonzero(np.asarray(inst[idx]) == int(instance_id)))

    def _instance_extents(self) -> dict[int, tuple[NDArray[np.float64], NDArray[np.float64], int]]:
        """Instance id → (cache-frame minima, maxima of its points (float64), point count)."""
        if self._extents is None:
            inst = self._point_layer("instance")
            assert inst is not None
            ids, lo, hi, count = instance_extents(
                np.asarray(self._array("points/xyz.npy")), np.asarray(inst)
            )
            self._extents = {
                int(i): (lo[k], hi[k], int(count[k])) for k, i in enumerate(ids.tolist())
            }
        return self._extents

    def points_at(self, index: ArrayLike) -> PointCloud:
        """The points at cache indices ``index`` as a PointCloud (xyz float32, offset = origin)."""
        idx = np.asarray(index, dtype=np.int64)
        rgb, sem, inst = (self._point_layer(n) for n in ("rgb", "semantic", "instance"))
        return PointCloud(
            xyz=np.asarray(self._array("points/xyz.npy")[idx]),
            offset=self.origin,
            rgb=None if rgb is None else np.asarray(rgb[idx]),
            semantic=None if sem is None else np.asarray(sem[idx]),
            instance=None if inst is None else np.asarray(inst[idx]),
            class_scheme=self._meta.class_scheme,
            crs=self._meta.crs,
            source=f"{self._path} (crop)",
        )

    def crop_points(self, world_box: ArrayLike) -> PointCloud:
        """Exactly the points inside ``world_box`` (see :meth:`crop_indices`), as a PointCloud.

        ``xyz`` is float32 in the cache frame and ``offset`` the cache origin, so
        ``world_xyz()`` gives world metres. Outside the scene → a 0-point cloud.
        """
        return self.points_at(self.crop_indices(world_box))

    # -- views -----------------------------------------------------------------------------
    def global_view(self) -> View:
        """The whole BEV (``global_view.png``), with its pixel → world transform."""
        from PIL import Image

        with Image.open(self._path / GLOBAL_VIEW_FILE) as im:
            image = np.asarray(im.convert("RGB"))
        t = self._meta.global_view_affine
        box = t.box_to_world([0, 0, image.shape[1], image.shape[0]])
        return View(image=image, transform=t, world_box=box)

    def bev_window(self, world_box: ArrayLike, out_size: tuple[int, int]) -> View:
        """A zoom view: the full-resolution BEV under ``world_box`` resampled to ``out_size``.

        Area-weighted (box filter) over non-empty pixels when downsampling; when upsampling each
        output pixel takes the area-weighted colour of the source pixels it overlaps (close to
        nearest). Parts of the box outside the scene are black.

        Parameters
        ----------
        world_box : array_like, shape (4,)
            World ``[x_min, y_min, x_max, y_max]``, metres, positive extent.
        out_size : (int, int)
            ``(width, height)`` of the output image in pixels (PIL order).

        Returns
        -------
        View
            ``transform`` maps the output's corners exactly onto ``world_box``.
        """
        box = _check_box(world_box)
        if box.shape != (4,):
            raise ValueError(f"world_box: expected a 2D box (4,), got shape {box.shape}")
        wo, ho = (int(v) for v in out_size)
        if wo < 1 or ho < 1:
            raise ValueError(f"out_size: expected (width, height) ≥ 1, got {out_size}")
        if not (box[2] > box[0] and box[3] > box[1]):
            raise ValueError(
                f"world_box: expected x_min < x_max and y_min < y_max, got {box.tolist()}"
            )
        t = self.bev_transform
        res = self._meta.resolution
        h, w = self.bev_shape
        x_start = (box[0] - t.c) / res  # source columns
        y_start = (t.f - box[3]) / res  # source rows (north edge)
        sx = (box[2] - box[0]) / res / wo
        sy = (box[3] - box[1]) / res / ho
        c0 = max(0, math.floor(x_start))
        c1 = min(w, math.ceil(x_start + wo * sx))
        r0 = max(0, math.floor(y_start))
        r1 = min(h, math.ceil(y_start + ho * sy))
        image = np.zeros((ho, wo, 3), np.uint8)
        if c1 > c0 and r1 > r0:
            # strided views of the memory maps: only the window's pages are read, no copies
            rgb = np.asarray(self.bev_layer("rgb"))[r0:r1, c0:c1]
            z = np.asarray(self.bev_layer("z_max"))[r0:r1, c0:c1]

            n_parts = render_threads() if ho * wo >= 1 << 16 else 1
            cuts = [ho * k // n_parts for k in range(n_parts + 1)]

            def part(k: int) -> None:  # disjoint output rows per thread (the kernel drops the GIL)
                R.area_window(rgb, z, r0, c0, y_start, x_start, sy, sx, image, cuts[k], cuts[k + 1])

            render_parts(part, n_parts)
        vt = Affine((box[2] - box[0]) / wo, 0.0, box[0], 0.0, -(box[3] - box[1]) / ho, box[3])
        return View(image=image, transform=vt, world_box=box)

    def render_oblique(
        self,
        world_box: ArrayLike,
        azimuth_deg: float,
        elevation_deg: float = 45.0,
        size: tuple[int, int] = (512, 512),
        margin_m: float | None = None,
        **kwargs: Any,
    ) -> ObliqueRender:
        """Crop the points under ``world_box`` (plus ``margin_m``) and render them obliquely.

        Parameters
        ----------
        world_box : array_like, shape (4,)
            World BEV box of interest, metres.
        azimuth_deg, elevation_deg : float
            See :func:`urbex.scene.oblique.render_oblique` (azimuth = compass bearing of the
            camera seen from the box centre, clockwise from north; 180 = from the south).
        size : (int, int)
            ``(width, height)`` pixels.
        margin_m : float or None
            Context around the box, metres; default 10 % of the box's longer side (≥ 1 m).
            The camera frames the box plus this margin.
        **kwargs
            Passed to :func:`~urbex.scene.oblique.render_oblique` (``fov_deg``, ``point_size``,
            ``background``).

        Raises
        ------
        EmptyRegionError
            No point lies under the box (message readable by the agent).
        """

        box = _check_box(world_box)
        if box.shape != (4,):
            raise ValueError(f"world_box: expected a 2D box (4,), got shape {box.shape}")
        if margin_m is None:
            margin_m = max(1.0, 0.1 * float(max(box[2] - box[0], box[3] - box[1])))
        framed = box + np.array([-margin_m, -margin_m, margin_m, margin_m])
        pts = self.crop_points(framed)
        if pts.n_points == 0:
            raise EmptyRegionError(
                "no points under that box; pick a region with content "
                f"(box x {box[0]:.1f}..{box[2]:.1f}, y {box[1]:.1f}..{box[3]:.1f} m)"
            )
        return render_oblique(
            pts,
            target_box=framed,
            azimuth_deg=azimuth_deg,
            elevation_deg=elevation_deg,
            size=size,
            **kwargs,
        )
