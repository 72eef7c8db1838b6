"""Instance proposals of a scene's points: the candidates the agent's numbered marks show.

CityAnchor's "Without-GT" protocol ranks *predicted* instances; Set-of-Mark prompting numbers
candidate regions on the image so that a model can answer by number. Both need proposals made
from the points alone — their semantic classes, positions and colours, **never their instance
ids**. For each target class (:data:`urbex.classes.TARGET_SEMANTICS`), the class's points are
binned into a BEV cell grid (:data:`CELL_M`) and the occupied cells split into 8-connected
components (:func:`scipy.ndimage.label`); a component with enough points and area
(:data:`MIN_POINTS`, :data:`MIN_AREA_M2`) is a proposal. Terrain (``Ground``) is one connected
sheet, so its cells are first split into *vegetated* ones (green-dominant mean colour: lawns,
pitches) and the rest, and only vegetated components are proposed.

The scene cache computes them once, at build time (:func:`build_proposals`), and stores the
table (``proposals.parquet``) and each point's proposal (``points/proposal.npy``); ids are
numbered ``1..K`` in reading order of the box centres (north to south, then west to east), so
they are stable for a given cloud and readable on a map.

Frames: boxes are world metres, BEV ``[x_min, y_min, x_max, y_max]`` and z range.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numba as nb
import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from urbex.arrow import table as arrow_table
from urbex.atomic import atomic_path
from urbex.classes import TARGET_CLASSES, TARGET_SEMANTICS
from urbex.scene.raster import npy_stream

__all__ = [
    "CELL_M",
    "MIN_AREA_M2",
    "MIN_POINTS",
    "PROPOSALS_VERSION",
    "PROPOSAL_COLUMNS",
    "ProposalLabels",
    "ProposalSet",
    "build_proposals",
    "proposals_from_table",
    "propose",
    "write_proposals",
]

#: Bumped whenever the proposals' algorithm or files change; part of a scene cache's content hash.
PROPOSALS_VERSION = 1

#: BEV cell side (metres) of the connected components, per class.
CELL_M: dict[str, float] = {"Building": 0.75, "Car": 0.4, "Parking": 1.0, "Ground": 1.0}
#: Fewest points of a proposal, per class.
MIN_POINTS: dict[str, int] = {"Building": 200, "Car": 40, "Parking": 200, "Ground": 400}
#: Smallest BEV box area (m²) of a proposal, per class.
MIN_AREA_M2: dict[str, float] = {"Building": 20.0, "Car": 3.0, "Parking": 50.0, "Ground": 100.0}

#: ``proposals.parquet``'s columns and types (world metres; colour 0–255, NaN without colours).
PROPOSAL_COLUMNS: dict[str, pa.DataType] = {
    "mark_id": pa.int32(),
    "class_name": pa.string(),
    "x_min_m": pa.float64(),
    "y_min_m": pa.float64(),
    "z_min_m": pa.float64(),
    "x_max_m": pa.float64(),
    "y_max_m": pa.float64(),
    "z_max_m": pa.float64(),
    "n_points": pa.int64(),
    "red": pa.float64(),
    "green": pa.float64(),
    "blue": pa.float64(),
}


class ProposalSet:
    """A scene's proposals, columnar (one row per mark, ``mark_id`` ascending).

    Attributes
    ----------
    mark_id : ndarray, shape (K,), int32
        ``1..K``, reading order of the box centres.
    class_name : ndarray, shape (K,), str
    box_2d_m : ndarray, shape (K, 4), float64
        BEV boxes ``[x_min, y_min, x_max, y_max]``, world metres.
    z_range_m : ndarray, shape (K, 2), float64
        ``[z_min, z_max]`` of the proposal's points, world metres.
    n_points : ndarray, shape (K,), int64
    rgb : ndarray, shape (K, 3), float64
        Mean colour 0–255 (NaN where the cloud has none).
    """

    __slots__ = ("box_2d_m", "class_name", "mark_id", "n_points", "rgb", "z_range_m")

    def __init__(
        self,
        *,
        mark_id: NDArray[Any],
        class_name: NDArray[Any],
        box_2d_m: NDArray[Any],
        z_range_m: NDArray[Any],
        n_points: NDArray[Any],
        rgb: NDArray[Any],
    ) -> None:
        k = len(mark_id)
        self.mark_id = np.asarray(mark_id, dtype=np.int32).reshape(k)
        self.class_name = np.asarray(class_name, dtype=str).reshape(k)
        self.box_2d_m = np.asarray(box_2d_m, dtype=np.float64).reshape(k, 4)
        self.z_range_m = np.asarray(z_range_m, dtype=np.float64).reshape(k, 2)
        self.n_points = np.asarray(n_points, dtype=np.int64).reshape(k)
        self.rgb = np.asarray(rgb, dtype=np.float64).reshape(k, 3)
        if k and not np.all(np.diff(self.mark_id) > 0):
            raise ValueError("ProposalSet.mark_id: expected strictly increasing ids")

    def __len__(self) -> int:
        return len(self.mark_id)

    def __repr__(self) -> str:
        return f"ProposalSet({len(self)} marks)"

    def row(self, mark_id: int) -> int:
        """Row of ``mark_id``; ``KeyError`` when the scene has no such mark."""
        i = int(np.searchsorted(self.mark_id, mark_id))
        if i >= len(self) or int(self.mark_id[i]) != int(mark_id):
            raise KeyError(mark_id)
        return i

    def box_3d_m(self, row: int) -> NDArray[np.float64]:
        """3D box ``[x_min, y_min, z_min, x_max, y_max, z_max]`` (world metres) of row ``row``."""
        b, z = self.box_2d_m[row], self.z_range_m[row]
        return np.array([b[0], b[1], z[0], b[2], b[3], z[1]])

    def to_arrow(self) -> pa.Table:
        """``proposals.parquet``'s table (:data:`PROPOSAL_COLUMNS`)."""
        cols = {
            "mark_id": self.mark_id,
            "class_name": self.class_name.tolist(),
            "x_min_m": self.box_2d_m[:, 0],
            "y_min_m": self.box_2d_m[:, 1],
            "z_min_m": self.z_range_m[:, 0],
            "x_max_m": self.box_2d_m[:, 2],
            "y_max_m": self.box_2d_m[:, 3],
            "z_max_m": self.z_range_m[:, 1],
            "n_points": self.n_points,
            "red": self.rgb[:, 0],
            "green": self.rgb[:, 1],
            "blue": self.rgb[:, 2],
        }
        return arrow_table(cols, pa.schema(list(PROPOSAL_COLUMNS.items())))  # no pandas


def proposals_from_table(table: pa.Table) -> ProposalSet:
    """A :class:`ProposalSet` from ``proposals.parquet``'s table (missing columns: ``KeyError``)."""
    col = {n: table.column(n).to_numpy(zero_copy_only=False) for n in PROPOSAL_COLUMNS}
    return ProposalSet(
        mark_id=col["mark_id"],
        class_name=np.asarray(col["class_name"], dtype=str),
        box_2d_m=np.stack([col["x_min_m"], col["y_min_m"], col["x_max_m"], col["y_max_m"]], 1),
        z_range_m=np.stack([col["z_min_m"], col["z_max_m"]], 1),
        n_points=col["n_points"],
        rgb=np.stack([col["red"], col["green"], col["blue"]], 1),
    )


@nb.njit(cache=True, nogil=True)
def _class_codes(sem, lut):  # pragma: no cover
    """Each point's ``lut[sem[i]]`` (its class's index), −1 for a label outside ``lut``."""
    out = np.empty(sem.shape[0], np.int8)
    for i in range(sem.shape[0]):
        v = sem[i]
        out[i] = lut[v] if 0 <= v < lut.shape[0] else -1
    return out


@nb.njit(cache=True, nogil=True)
def _class_extent(xyz, code, k, ox, oy):  # pragma: no cover
    """World-metre x/y minima and maxima of the points of class ``k`` (class index ``k``):
    ``float64(x) + ox``, as the rest of this module computes world positions."""
    xmin, ymin, xmax, ymax = np.inf, np.inf, -np.inf, -np.inf
    for i in range(code.shape[0]):
        if code[i] == k:
            x = np.float64(xyz[i, 0]) + ox
            y = np.float64(xyz[i, 1]) + oy
            xmin, xmax = min(xmin, x), max(xmax, x)
            ymin, ymax = min(ymin, y), max(ymax, y)
    return xmin, ymin, xmax, ymax


@nb.njit(cache=True, nogil=True)
def _cell_of(xyz, i, ox, oy, xmin, ymin, cell, ny):  # pragma: no cover
    """Point ``i``'s flat BEV cell (row = x cell, column = y cell) of its class's grid."""
    ci = np.int64(np.floor(((np.float64(xyz[i, 0]) + ox) - xmin) / cell))
    cj = np.int64(np.floor(((np.float64(xyz[i, 1]) + oy) - ymin) / cell))
    return ci * ny + cj


@nb.njit(cache=True, nogil=True)
def _occupancy(xyz, code, k, ox, oy, xmin, ymin, cell, ny, rgb, has_rgb, occ, cnt, sums):  # pragma: no cover  # fmt: skip
    """Mark the cells holding a point of class ``k``; with ``has_rgb`` also count each cell's
    points and sum their colours (integers: exact)."""
    for i in range(code.shape[0]):
        if code[i] == k:
            f = _cell_of(xyz, i, ox, oy, xmin, ymin, cell, ny)
            occ[f] = True
            if has_rgb:
                cnt[f] += 1
                for c in range(3):
                    sums[f, c] += rgb[i, c]


@nb.njit(cache=True, nogil=True)
def _keep_green(occ, cnt, sums):  # pragma: no cover
    """Keep the occupied cells whose mean colour is green-dominant (green over red and blue
    by more than 8), cell by cell: no per-cell float arrays."""
    for f in range(occ.shape[0]):
        if occ[f]:
            c = np.float64(max(cnt[f], 1))
            g = sums[f, 1] / c
            occ[f] = g > sums[f, 0] / c + 8 and g > sums[f, 2] / c + 8


@nb.njit(cache=True, nogil=True)
def _class_counts(code, n_classes):  # pragma: no cover
    """Points per class index (−1: none), without a temporary per class."""
    out = np.zeros(n_classes, np.int64)
    for i in range(code.shape[0]):
        k = code[i]
        if k >= 0:
            out[k] += 1
    return out


@nb.njit(cache=True, nogil=True)
def _component_stats(xyz, code, k, ox, oy, xmin, ymin, cell, ny, grid, rgb, has_rgb, count, lo, hi, csum):  # pragma: no cover  # fmt: skip
    """Per component of class ``k`` (``grid`` label − 1) its point count, coordinate extremes
    (in ``xyz``'s own type and frame) and colour sums."""
    for i in range(code.shape[0]):
        if code[i] != k:
            continue
        c = np.int64(grid[_cell_of(xyz, i, ox, oy, xmin, ymin, cell, ny)]) - 1
        if c < 0:
            continue
        count[c] += 1
        for a in range(3):
            v = xyz[i, a]
            if v < lo[c, a]:
                lo[c, a] = v
            if v > hi[c, a]:
                hi[c, a] = v
        if has_rgb:
            for a in range(3):
                csum[c, a] += rgb[i, a]


@nb.njit(cache=True, nogil=True)
def _remap(grid, id_of):  # pragma: no cover
    """``grid[f] = id_of[grid[f]]`` in place (no second grid in memory)."""
    for f in range(grid.shape[0]):
        grid[f] = id_of[grid[f]]


@nb.njit(cache=True, nogil=True)
def _label_points(xyz, code, start, k, ox, oy, xmin, ymin, cell, ny, mark_of, out):  # pragma: no cover  # fmt: skip
    """``out[j]``: the mark id of point ``start + j`` if it is of class ``k`` (``mark_of``: the
    mark id of each cell of the class's grid); other points' entries are left as they are."""
    for j in range(out.shape[0]):
        i = start + j
        if code[i] == k:
            out[j] = mark_of[_cell_of(xyz, i, ox, oy, xmin, ymin, cell, ny)]


def _components(
    xyz: NDArray[Any],
    code: NDArray[np.int8],
    k: int,
    origin: NDArray[np.float64],
    cell_m: float,
    rgb: NDArray[Any] | None,
    green_only: bool,
) -> tuple[
    int, NDArray[np.int64], NDArray[Any], NDArray[Any], NDArray[np.int64], NDArray[np.int32],
    tuple[float, float, float, int],
]:  # fmt: skip
    """The 8-connected components of class ``k``'s occupied BEV cells (``cell_m`` metres;
    with ``green_only``, only the cells whose mean colour is green-dominant: lawns, pitches):
    their number; per component its point count, extremes (``xyz``'s type) and colour sums;
    the flat grid of each cell's component + 1 (0: none) and its ``(xmin, ymin, cell, ny)``
    (world metres)."""
    from scipy import ndimage

    ox, oy = float(origin[0]), float(origin[1])
    xmin, ymin, xmax, ymax = _class_extent(xyz, code, k, ox, oy)
    nx = int(np.floor((xmax - xmin) / cell_m)) + 1  # the cell of the largest x, as floor is
    ny = int(np.floor((ymax - ymin) / cell_m)) + 1  # monotonic
    has_rgb = rgb is not None and green_only
    rgb_arr = np.asarray(rgb) if rgb is not None else np.zeros((1, 3), np.uint8)
    occ = np.zeros(nx * ny, np.bool_)
    cnt = np.zeros(nx * ny if has_rgb else 1, np.int64)
    sums = np.zeros((nx * ny if has_rgb else 1, 3), np.int64)
    _occupancy(xyz, code, k, ox, oy, xmin, ymin, cell_m, ny, rgb_arr, has_rgb, occ, cnt, sums)
    if has_rgb:
        _keep_green(occ, cnt, sums)
    del cnt, sums
    grid, ncomp = ndimage.label(occ.reshape(nx, ny), structure=np.ones((3, 3), bool))
    del occ
    grid = grid.reshape(-1).astype(np.int32, copy=False)
    ncomp = int(ncomp)
    count = np.zeros(ncomp, np.int64)
    lo = np.full((ncomp, 3), np.inf, dtype=xyz.dtype)
    hi = np.full((ncomp, 3), -np.inf, dtype=xyz.dtype)
    csum = np.zeros((ncomp, 3), np.int64)
    _component_stats(
        xyz, code, k, ox, oy, xmin, ymin, cell_m, ny, grid, rgb_arr, rgb is not None,
        count, lo, hi, csum,
    )  # fmt: skip
    return ncomp, count, lo, hi, csum, grid, (xmin, ymin, cell_m, ny)


class ProposalLabels:
    """Each point's proposal (its ``mark_id``; 0: none), computed chunk by chunk on request.

    Holds the class of every point (a byte each) and, per class, a grid of cell → mark id;
    never a label per point: :meth:`save_npy` streams the labels of a whole cloud to disk in
    chunks, so that a scene cache's build never holds them all.
    """

    __slots__ = ("_code", "_geom", "_mark_of", "_origin", "_xyz")

    def __init__(
        self,
        xyz: NDArray[Any],
        code: NDArray[np.int8],
        origin: NDArray[np.float64],
        geom: NDArray[np.float64],
        mark_of: Sequence[NDArray[np.int32]],
    ) -> None:
        self._xyz, self._code, self._origin, self._geom = xyz, code, origin, geom
        self._mark_of = list(mark_of)  # one flat grid per class index

    def __len__(self) -> int:
        return int(self._code.shape[0])

    def chunk(self, start: int, stop: int) -> NDArray[np.int32]:
        """Mark ids of points ``start:stop`` (clipped to the cloud)."""
        start, stop = max(0, start), min(len(self), stop)
        out = np.zeros(max(0, stop - start), np.int32)
        ox, oy = float(self._origin[0]), float(self._origin[1])
        for k, (xmin, ymin, cell, ny) in enumerate(self._geom.tolist()):
            if out.size and cell > 0:  # cell 0: the class has no proposals
                _label_points(
                    self._xyz, self._code, start, k, ox, oy, xmin, ymin, cell, int(ny),
                    self._mark_of[k], out,
                )  # fmt: skip
        return out

    def array(self) -> NDArray[np.int32]:
        """Every point's mark id, shape ``(N,)``."""
        return self.chunk(0, len(self))

    def save_npy(self, path: str | Path, chunk: int = 1 << 20) -> Path:
        """Write :meth:`array` as a ``.npy`` file, ``chunk`` points at a time (atomically)."""
        with atomic_path(path) as tmp, npy_stream(tmp, np.dtype(np.int32), (len(self),)) as f:
            for a in range(0, len(self), chunk):
                f.write(self.chunk(a, a + chunk).data)
        return Path(path)


def propose(
    xyz: NDArray[Any],
    semantic: NDArray[Any] | None,
    rgb: NDArray[Any] | None,
    *,
    class_scheme: str,
    origin_m: Sequence[float] = (0.0, 0.0, 0.0),
    classes: Sequence[str] = TARGET_CLASSES,
) -> tuple[ProposalSet, ProposalLabels]:
    """Proposals of a scene's points, and a reader of each point's proposal.

    :func:`build_proposals`, with the points' labels left to compute in chunks
    (:class:`ProposalLabels`); the arguments are the same.
    """
    n = len(xyz)
    origin = np.asarray(origin_m, dtype=np.float64).reshape(3)
    pts = np.ascontiguousarray(xyz)
    empty = ProposalSet(
        mark_id=np.zeros(0), class_name=np.zeros(0, str), box_2d_m=np.zeros((0, 4)),
        z_range_m=np.zeros((0, 2)), n_points=np.zeros(0), rgb=np.zeros((0, 3)),
    )  # fmt: skip
    no_labels = ProposalLabels(  # every point's class −1 (an empty table): labels 0
        pts, np.full(n, -1, np.int8), origin, np.zeros((1, 4)), [np.zeros(1, np.int32)],
    )  # fmt: skip
    if semantic is None or n == 0:
        return empty, no_labels
    sem = np.asarray(semantic).reshape(-1)
    scheme = TARGET_SEMANTICS.get(class_scheme, {})
    names: list[str] = []
    lo_all: list[NDArray[np.float64]] = []
    hi_all: list[NDArray[np.float64]] = []
    cnt_all: list[NDArray[np.int64]] = []
    col_all: list[NDArray[np.float64]] = []
    # per class: its code, its number of components, the kept ones, the first index of its
    # proposals in ``names``, its grid of cell → component + 1
    parts: list[tuple[int, int, NDArray[np.int64], int, NDArray[np.int32]]] = []
    geom = np.zeros((max(len(classes), 1), 4), np.float64)  # (xmin, ymin, cell, ny); cell 0: none
    # one pass over the labels: each point's class (its index in ``classes``; -1 none)
    codes = [(k, ids) for k, c in enumerate(classes) if (ids := scheme.get(c, ()))]
    lut = np.full(max([max(ids) for _, ids in codes], default=0) + 1, -1, np.int8)
    for k, ids in codes:
        lut[list(ids)] = k
    code = _class_codes(sem, lut)
    present = _class_counts(code, max(len(classes), 1))
    for k_cls, cls in enumerate(classes):
        if not present[k_cls]:
            continue
        k, counts, lo_c, hi_c, csum, grid, g = _components(
            pts, code, k_cls, origin, CELL_M.get(cls, 1.0), rgb, cls == "Ground"
        )
        if k == 0:
            continue
        nonempty = counts > 0
        # extremes in the cache frame's type: x -> float64(x) + origin is monotonic, so they
        # map to the world extremes exactly
        lo = lo_c[nonempty].astype(np.float64) + origin
        hi = hi_c[nonempty].astype(np.float64) + origin
        cnt = counts[nonempty]
        if rgb is not None:  # integer sums: exact in any order
            mean = csum[nonempty].astype(np.float64) / cnt[:, None]
        else:
            mean = np.full((len(cnt), 3), np.nan)
        area = (hi[:, 0] - lo[:, 0]) * (hi[:, 1] - lo[:, 1])
        ok = (cnt >= MIN_POINTS.get(cls, 50)) & (area >= MIN_AREA_M2.get(cls, 0.0))
        comp_ids = np.flatnonzero(nonempty)[ok]
        parts.append((k_cls, k, comp_ids, len(names), grid))
        geom[k_cls] = g
        names += [cls] * int(ok.sum())
        lo_all.append(lo[ok])
        hi_all.append(hi[ok])
        cnt_all.append(cnt[ok])
        col_all.append(mean[ok])
    if not names:
        return empty, no_labels
    lo, hi = np.concatenate(lo_all), np.concatenate(hi_all)
    centre = (lo[:, :2] + hi[:, :2]) / 2
    reading = np.lexsort((centre[:, 0], -centre[:, 1]))  # north to south, then west to east
    rank = np.empty(len(names), np.int32)
    rank[reading] = np.arange(1, len(names) + 1, dtype=np.int32)
    grids = [np.zeros(1, np.int32)] * len(geom)  # classes without proposals: never read
    for k_cls, k, comp_ids, first, grid in parts:  # each cell's mark id (0: in no proposal)
        id_of = np.zeros(k + 1, np.int32)
        id_of[comp_ids + 1] = rank[first : first + comp_ids.size]
        _remap(grid, id_of)  # grid held component + 1 (0: none)
        grids[k_cls] = grid
    labels = ProposalLabels(pts, code, origin, geom, grids)
    return (
        ProposalSet(
            mark_id=np.arange(1, len(names) + 1),
            class_name=np.asarray(names)[reading],
            box_2d_m=np.c_[lo[:, :2], hi[:, :2]][reading],
            z_range_m=np.c_[lo[:, 2], hi[:, 2]][reading],
            n_points=np.concatenate(cnt_all)[reading],
            rgb=np.concatenate(col_all)[reading],
        ),
        labels,
    )


def build_proposals(
    xyz: NDArray[Any],
    semantic: NDArray[Any] | None,
    rgb: NDArray[Any] | None,
    *,
    class_scheme: str,
    origin_m: Sequence[float] = (0.0, 0.0, 0.0),
    classes: Sequence[str] = TARGET_CLASSES,
) -> tuple[ProposalSet, NDArray[np.int32]]:
    """Proposals of a scene's points, and each point's proposal.

    Parameters
    ----------
    xyz : ndarray, shape (N, 3)
        Point coordinates; world metres are ``xyz + origin_m``.
    semantic : ndarray, shape (N,), or None
        Semantic ids in ``class_scheme`` (None: no proposals).
    rgb : ndarray, shape (N, 3), uint8, or None
    class_scheme : str
    origin_m : 3 floats
        World position of ``xyz``'s zero (a scene cache's ``origin``).
    classes
        Target classes to propose.

    Returns
    -------
    proposals : ProposalSet
        ``mark_id`` ``1..K`` in reading order (north to south, then west to east).
    labels : ndarray, shape (N,), int32
        Each point's ``mark_id``; 0 = in no proposal.

    Examples
    --------
    Two cars (id 9) 3 m apart on a car park (id 5):

    >>> rng = np.random.default_rng(0)
    >>> car = lambda x: np.c_[rng.uniform(x, x + 4.5, 300), rng.uniform(0, 2, 300), np.full(300, 1.5)]
    >>> park = np.c_[rng.uniform(-5, 20, 4000), rng.uniform(-5, 10, 4000), np.zeros(4000)]
    >>> xyz = np.vstack([car(0), car(7.5), park])
    >>> sem = np.r_[np.full(600, 9), np.full(4000, 5)]
    >>> p, labels = build_proposals(xyz, sem, None, class_scheme="sensaturban")
    >>> p.mark_id.tolist(), p.class_name.tolist()
    ([1, 2, 3], ['Parking', 'Car', 'Car'])
    >>> np.bincount(labels).tolist()
    [0, 4000, 300, 300]
    """
    found, labels = propose(
        xyz, semantic, rgb, class_scheme=class_scheme, origin_m=origin_m, classes=classes
    )
    return found, labels.array()


def write_proposals(proposals: ProposalSet, path: str | Path) -> Path:
    """Write ``proposals.parquet`` atomically, byte-stable for equal proposals."""
    import pyarrow.parquet as pq

    out = Path(path)
    with atomic_path(out) as tmp:
        pq.write_table(proposals.to_arrow(), tmp, compression="zstd", write_statistics=False)
    return out
