"""One synthetic city block in memory: the point cloud, its instances, roads and landmarks.

:func:`generate_block` is the entry point used by the data-set writer, the benchmarks and the
scene-cache helper (``generate_block(seed=0, size=1000.0, density=20.0)`` gives a ≥ 20 M-point
square kilometre in well under a minute).

Frames
------
``Block.cloud.xyz`` is float32 in the block's **local world frame** (metres, x east, y north,
z up, origin at the block's south-west corner, z includes the 10–40 m ground height).
``Block.cloud.offset`` is the georeferencing offset: ``xyz + offset`` are coordinates of
``Block.cloud.crs`` (EPSG:27700 for the SensatUrban style, EPSG:32611 for STPLS3D).
Object boxes, road lines and landmark geometries are in the local frame.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from urbex.pointcloud import PointCloud
from urbex.synth.palette import CAR_COLOURS, ROOF_COLOURS, WALL_COLOURS, draw_shades, shade_word
from urbex.synth.plan import Road, plan_city
from urbex.synth.sampling import KIND_TO_SEMANTIC, sample_plan

__all__ = [
    "CITYREFER_LABELS",
    "Block",
    "Landmark",
    "ObjectTable",
    "footprint_shape",
    "generate_block",
    "instance_bounds",
]

#: CityRefer target classes → SensatUrban label id.
CITYREFER_LABELS: dict[str, int] = {"Building": 2, "Car": 9, "Parking": 5, "Ground": 0}
_CRS = {"sensaturban": "EPSG:27700", "stpls3d": "EPSG:32611"}


def _bounds_py(
    xyz: NDArray, inst: NDArray, n_inst: int
) -> tuple[NDArray, NDArray]:  # pragma: no cover - numba
    lo = np.full((n_inst, 3), np.inf)
    hi = np.full((n_inst, 3), -np.inf)
    cnt = np.zeros(n_inst, np.int64)
    for i in range(inst.shape[0]):
        k = inst[i]
        if k < 0 or k >= n_inst:
            continue
        cnt[k] += 1
        for d in range(3):
            v = xyz[i, d]
            if v < lo[k, d]:
                lo[k, d] = v
            if v > hi[k, d]:
                hi[k, d] = v
    return np.concatenate((lo, hi), axis=1), cnt


@functools.cache
def _bounds_kernel() -> Callable:
    """The numba-compiled kernel (numba imported and compiled on first use, cached on disk)."""
    import numba

    return numba.njit(cache=True, nogil=True)(_bounds_py)


def instance_bounds(
    xyz: NDArray, instance: NDArray, n_instances: int
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Axis-aligned box and point count of every instance id ``0..n_instances-1``.

    Parameters
    ----------
    xyz : ndarray, shape (N, 3), float32 or float64
        Points, any metric frame (the boxes come out in the same frame).
    instance : ndarray, shape (N,), int32
        Instance id per point; ids < 0 or >= ``n_instances`` are ignored.
    n_instances : int
        Number of ids.

    Returns
    -------
    boxes : ndarray, shape (n_instances, 6), float64
        ``[x_min, y_min, z_min, x_max, y_max, z_max]``; ``inf``/``-inf`` rows for empty ids.
    counts : ndarray, shape (n_instances,), int64

    Examples
    --------
    >>> b, c = instance_bounds(np.array([[0, 0, 0], [1, 2, 3], [5, 5, 5]], np.float32),
    ...                        np.array([0, 0, -1], np.int32), 1)
    >>> b.tolist(), c.tolist()
    ([[0.0, 0.0, 0.0, 1.0, 2.0, 3.0]], [2])
    """
    return _bounds_kernel()(
        np.ascontiguousarray(xyz), np.ascontiguousarray(instance, np.int32), int(n_instances)
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class ObjectTable:
    """The CityRefer-style instances of a block, one row per instance (columnar).

    Attributes
    ----------
    instance_id : ndarray, shape (M,), int32
        Segment id (``object_id`` is its decimal string); matches ``Block.cloud.instance``.
    object_name : tuple of str, length M
        ``"Building"``, ``"Car"``, ``"Parking"`` or ``"Ground"``.
    label_id : ndarray, shape (M,), int32
        SensatUrban class id of the object class (2, 9, 5, 0).
    box : ndarray, shape (M, 6), float64
        Axis-aligned box of the instance's points, local world metres.
    n_points : ndarray, shape (M,), int64
    colour : tuple of str, length M
        Colour word: car body colour, building roof colour, "grey" (parking), "green" (ground).
    landmark : tuple of str, length M
        Landmark name, ``""`` when the instance is not a named landmark.
    shade : tuple of str, length M
        Shade of ``colour`` (:data:`urbex.synth.palette.SHADES`: "dark blue", "maroon", ...),
        ``""`` for the plain colour.
    wall_colour, wall_shade : tuple of str, length M
        A building's wall colour and its shade; ``""`` for other classes.
    shape : tuple of str, length M
        BEV footprint shape (:func:`footprint_shape`): ``"L-shaped"``, ``"square"``,
        ``"rectangular"``, or ``""`` (a car, or not clearly either).
    """

    instance_id: NDArray[np.int32]
    object_name: tuple[str, ...]
    label_id: NDArray[np.int32]
    box: NDArray[np.float64]
    n_points: NDArray[np.int64]
    colour: tuple[str, ...]
    landmark: tuple[str, ...]
    shade: tuple[str, ...]
    wall_colour: tuple[str, ...]
    wall_shade: tuple[str, ...]
    shape: tuple[str, ...]

    def __post_init__(self) -> None:
        m = len(self.instance_id)
        for name in (
            "object_name",
            "label_id",
            "box",
            "n_points",
            "colour",
            "landmark",
            "shade",
            "wall_colour",
            "wall_shade",
            "shape",
        ):
            if len(getattr(self, name)) != m:
                raise ValueError(
                    f"ObjectTable.{name}: expected {m} rows, got {len(getattr(self, name))}"
                )
        if self.box.shape != (m, 6):
            raise ValueError(f"ObjectTable.box: expected shape ({m}, 6), got {self.box.shape}")
        if len(np.unique(self.instance_id)) != m:
            raise ValueError("ObjectTable.instance_id: ids must be unique")

    def __len__(self) -> int:
        return len(self.instance_id)

    def row(self, instance_id: int) -> int:
        """Row index of an instance id (``KeyError`` if absent)."""
        hit = np.flatnonzero(self.instance_id == instance_id)
        if not hit.size:
            raise KeyError(f"instance {instance_id} is not in the object table")
        return int(hit[0])

    def centers(self) -> NDArray[np.float64]:
        """BEV box centres, shape (M, 2), local world metres."""
        return (self.box[:, :2] + self.box[:, 3:5]) / 2.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Landmark:
    """A named place of the block.

    Attributes
    ----------
    name : str
    kind : {"building", "park", "parking", "road"}
    instance_id : int
        Instance id of the named object, -1 for roads.
    geometry : ndarray, shape (K, 2), float64
        Local world metres: a closed polygon ring (first point repeated last) for areas, the
        two centreline end points for roads.
    """

    name: str
    kind: Literal["building", "park", "parking", "road"]
    instance_id: int
    geometry: NDArray[np.float64]

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("Landmark.name: must be non-empty")
        if self.kind not in ("building", "park", "parking", "road"):
            raise ValueError(f"Landmark.kind: unexpected {self.kind!r}")
        g = np.asarray(self.geometry, np.float64)
        if g.ndim != 2 or g.shape[1] != 2 or len(g) < 2:
            raise ValueError(f"Landmark.geometry: expected shape (K>=2, 2), got {g.shape}")
        object.__setattr__(self, "geometry", g)


@dataclass(frozen=True, slots=True, kw_only=True)
class Block:
    """A generated block (see the module docstring for frames).

    Attributes
    ----------
    scene_id : str
    seed : int
    style : {"sensaturban", "stpls3d"}
    size : float
        Side, metres.
    density : float
        Points per m² of horizontal surface.
    cloud : PointCloud
        float32 local xyz, georeferencing ``offset`` and ``crs``, rgb, ``semantic`` in the
        style's scheme (``sensaturban`` or ``stpls3d``), ``instance`` (-1 = none).
    objects : ObjectTable
        Buildings, cars, parking lots and grounds (parks).
    roads : tuple of Road
    landmarks : tuple of Landmark
        Named buildings, parks, car parks and every road.
    """

    scene_id: str
    seed: int
    style: str
    size: float
    density: float
    cloud: PointCloud
    objects: ObjectTable
    roads: tuple[Road, ...]
    landmarks: tuple[Landmark, ...]

    def road(self, name: str) -> Road:
        """The road called ``name`` (``KeyError`` if absent)."""
        for r in self.roads:
            if r.name == name:
                return r
        raise KeyError(f"no road named {name!r} in {self.scene_id}")


def _ring(boxes: NDArray) -> NDArray[np.float64]:
    """Outline of the union of axis-aligned rectangles (shapely), closed ring."""
    from shapely.geometry import box as sbox
    from shapely.ops import unary_union

    poly = unary_union([sbox(*b) for b in boxes])
    if poly.geom_type != "Polygon":  # touching-only parts: take the hull
        poly = poly.convex_hull
    return np.asarray(poly.exterior.coords, np.float64)


def footprint_shape(parts: NDArray) -> str:
    """The shape word of a footprint made of axis-aligned rectangles (local world metres).

    Two rectangles (a building's main block and its wing) are ``"L-shaped"``; one is
    ``"square"`` when its sides differ by less than 12 %, ``"rectangular"`` when by more than
    30 %, and ``""`` in between (neither word is clearly true).

    Parameters
    ----------
    parts : ndarray, shape (P, 4)
        ``[x_min, y_min, x_max, y_max]`` per part.

    >>> footprint_shape(np.array([[0, 0, 10, 10.5]])), footprint_shape(np.array([[0, 0, 20, 8]]))
    ('square', 'rectangular')
    >>> footprint_shape(np.array([[0, 0, 20, 8], [0, 8, 8, 16]])), footprint_shape(np.array([[0, 0, 12, 10]]))
    ('L-shaped', '')
    """
    if len(parts) == 2:
        return "L-shaped"
    w, h = float(parts[0, 2] - parts[0, 0]), float(parts[0, 3] - parts[0, 1])
    ratio = max(w, h) / max(min(w, h), 1e-9)
    return "square" if ratio < 1.12 else "rectangular" if ratio > 1.3 else ""


def generate_block(
    seed: int,
    *,
    size: float = 160.0,
    density: float = 20.0,
    style: str = "sensaturban",
    scene_id: str | None = None,
) -> Block:
    """Generate one synthetic city block.

    Parameters
    ----------
    seed
        RNG seed; the same seed and arguments give identical arrays.
    size
        Block side, metres (>= 40).
    density
        Points per m² of horizontal surface (> 0); facades get 30% of it per m².
    style
        ``"sensaturban"`` (UK city, EPSG:27700) or ``"stpls3d"`` (US campus, sparser palette,
        flat roofs, EPSG:32611).
    scene_id
        Defaults to ``f"synthville_block_{seed}"``.

    Returns
    -------
    Block
        In local world metres with the georeferencing offset on the cloud.

    Examples
    --------
    >>> b = generate_block(1, size=60.0, density=2.0)
    >>> b.cloud.n_points > 60 * 60 * 2, set(b.objects.object_name) <= {"Building", "Car", "Parking", "Ground"}
    (True, True)
    """
    rng = np.random.default_rng(seed)
    plan = plan_city(rng, float(size), style)
    walls = WALL_COLOURS[style]
    shades = np.random.default_rng([seed, 0x5ADE])  # their own stream: the plan is unchanged
    plan = dataclasses.replace(
        plan,
        car_shade=draw_shades(shades, plan.car_colour, CAR_COLOURS),
        roof_shade=draw_shades(shades, plan.roof_colour, ROOF_COLOURS),
        wall_shade=draw_shades(shades, plan.wall_colour, walls),
    )
    pts = sample_plan(rng, plan, float(density))
    if style == "sensaturban":
        offset = np.array([rng.integers(400_000, 550_000), rng.integers(250_000, 300_000), 0.0])
    else:
        offset = np.array([rng.integers(370_000, 390_000), rng.integers(3_760_000, 3_775_000), 0.0])
    semantic = KIND_TO_SEMANTIC[style][pts.kind]
    cloud = PointCloud(
        xyz=pts.xyz,
        offset=offset.astype(np.float64),
        rgb=pts.rgb,
        semantic=semantic,
        instance=pts.instance,
        class_scheme=style,
        crs=_CRS[style],
        source=f"synthetic:{style}:seed={seed}",
    )
    boxes, counts = instance_bounds(pts.xyz, pts.instance, plan.n_instances)
    # instance id → (class, colour, landmark name, shade, walls, shape)
    n = plan.n_instances
    cls = np.empty(n, object)
    colour = np.empty(n, object)
    lm = np.full(n, "", object)
    shade = np.full(n, "", object)
    wall = np.full(n, "", object)
    wall_shade = np.full(n, "", object)
    shape = np.full(n, "", object)
    cls[plan.building_instance] = "Building"
    colour[plan.building_instance] = [ROOF_COLOURS[c] for c in plan.roof_colour]
    shade[plan.building_instance] = [
        shade_word(ROOF_COLOURS[c], s) for c, s in zip(plan.roof_colour, plan.roof_shade)
    ]
    wall[plan.building_instance] = [walls[c] for c in plan.wall_colour]
    wall_shade[plan.building_instance] = [
        shade_word(walls[c], s) for c, s in zip(plan.wall_colour, plan.wall_shade)
    ]
    shape[plan.building_instance] = [
        footprint_shape(plan.part_box[plan.part_building == b])
        for b in range(len(plan.building_instance))
    ]
    lm[plan.building_instance] = plan.building_name
    cls[plan.car_instance] = "Car"
    colour[plan.car_instance] = [CAR_COLOURS[c] for c in plan.car_colour]
    shade[plan.car_instance] = [
        shade_word(CAR_COLOURS[c], s) for c, s in zip(plan.car_colour, plan.car_shade)
    ]
    for inst, areas in (
        (plan.parking_instance, plan.parking_box),
        (plan.park_instance, plan.park_box),
    ):
        shape[inst] = [footprint_shape(a[None]) for a in areas]
    cls[plan.parking_instance] = "Parking"
    colour[plan.parking_instance] = "grey"
    lm[plan.parking_instance] = plan.parking_name
    cls[plan.park_instance] = "Ground"
    colour[plan.park_instance] = "green"
    lm[plan.park_instance] = plan.park_name
    keep = np.flatnonzero(counts > 0)
    objects = ObjectTable(
        instance_id=keep.astype(np.int32),
        object_name=tuple(cls[keep]),
        label_id=np.array([CITYREFER_LABELS[c] for c in cls[keep]], np.int32),
        box=boxes[keep].astype(np.float64),
        n_points=counts[keep],
        colour=tuple(colour[keep]),
        landmark=tuple(lm[keep]),
        shade=tuple(shade[keep]),
        wall_colour=tuple(wall[keep]),
        wall_shade=tuple(wall_shade[keep]),
        shape=tuple(shape[keep]),
    )
    landmarks: list[Landmark] = []
    present = set(keep.tolist())
    for b, (iid, name) in enumerate(zip(plan.building_instance, plan.building_name)):
        if name and int(iid) in present:
            landmarks.append(
                Landmark(
                    name=name,
                    kind="building",
                    instance_id=int(iid),
                    geometry=_ring(plan.part_box[plan.part_building == b]),
                )
            )
    area_sets: tuple[
        tuple[Literal["park", "parking"], NDArray[np.int32], tuple[str, ...], NDArray[np.float64]],
        ...,
    ] = (
        ("park", plan.park_instance, plan.park_name, plan.park_box),
        ("parking", plan.parking_instance, plan.parking_name, plan.parking_box),
    )
    for kind, inst_arr, names, box_arr in area_sets:
        for iid, name, bx in zip(inst_arr, names, box_arr):
            if name and int(iid) in present:
                landmarks.append(
                    Landmark(name=name, kind=kind, instance_id=int(iid), geometry=_ring(bx[None]))
                )
    for r in plan.roads:
        landmarks.append(Landmark(name=r.name, kind="road", instance_id=-1, geometry=r.line()))
    return Block(
        scene_id=scene_id if scene_id is not None else f"synthville_block_{seed}",
        seed=int(seed),
        style=style,
        size=float(size),
        density=float(density),
        cloud=cloud,
        objects=objects,
        roads=plan.roads,
        landmarks=tuple(landmarks),
    )
