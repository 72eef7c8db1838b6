"""The plan of a synthetic city block: terrain, named roads, parcels and every object on them.

A :class:`CityPlan` is pure geometry (no points): road centrelines, building footprints made of
axis-aligned rectangular *parts* (one part = a rectangle, two parts = an L-shape), parks, car
parks, cars, trees and street furniture. :mod:`urbex.synth.sampling` turns it into points.

Frame
-----
Everything is in the block's **local world frame**: metres, x east, y north, origin at the
block's south-west corner (the block spans ``[0, size]²``), z up. Terrain heights include the
block's ground-height offset (10–40 m, like SensatUrban), so z is a plausible elevation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypedDict

import numpy as np
from numpy.typing import NDArray

from urbex.synth.names import NamePool
from urbex.synth.palette import CAR_COLOUR_P, CAR_COLOURS, ROOF_COLOUR_P, ROOF_COLOURS

__all__ = [
    "CAR_COLOURS",
    "ROOF_COLOURS",
    "STYLES",
    "CityPlan",
    "Road",
    "Terrain",
    "plan_city",
]

#: Styles the generator knows; ``stpls3d`` is sparser, wider-spaced, with flat big roofs.
STYLES = ("sensaturban", "stpls3d")


class _StyleKnobs(TypedDict):
    """Per-style layout knobs: ``(lo, hi)`` ranges in metres, ``*_p`` probabilities."""

    road_spacing: tuple[float, float]
    road_width: tuple[float, float]
    footpath: float
    lot_max: float
    setback: tuple[float, float]
    height: tuple[float, float]
    tall_p: float
    gable_p: float
    l_shape_p: float
    park_p: float
    parking_p: float
    curb_park_p: float
    street_tree_p: float


_STYLE_KNOBS: dict[str, _StyleKnobs] = {
    "sensaturban": {
        "road_spacing": (62.0, 95.0),
        "road_width": (6.5, 9.0),
        "footpath": 2.5,
        "lot_max": 34.0,
        "setback": (1.5, 4.0),
        "height": (4.5, 12.0),
        "tall_p": 0.05,
        "gable_p": 0.6,
        "l_shape_p": 0.35,
        "park_p": 0.14,
        "parking_p": 0.14,
        "curb_park_p": 0.3,
        "street_tree_p": 0.35,
    },
    "stpls3d": {
        "road_spacing": (90.0, 130.0),
        "road_width": (10.0, 15.0),
        "footpath": 3.0,
        "lot_max": 55.0,
        "setback": (3.0, 7.0),
        "height": (8.0, 28.0),
        "tall_p": 0.15,
        "gable_p": 0.0,
        "l_shape_p": 0.5,
        "park_p": 0.12,
        "parking_p": 0.22,
        "curb_park_p": 0.2,
        "street_tree_p": 0.5,
    },
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Road:
    """A straight, named road crossing the block.

    Attributes
    ----------
    name : str
        Unique road name in the scene, e.g. ``"Mill Lane"``.
    axis : {"x", "y"}
        Direction the road runs: ``"x"`` = east–west, ``"y"`` = north–south.
    coord : float
        Centreline position across the road (y for an ``"x"`` road, x for a ``"y"`` road),
        local world metres.
    start, end : float
        Extent along the road (local world metres, ``start < end``).
    width : float
        Carriageway width, metres. A footpath of ``footpath`` metres runs on each side.
    footpath : float
        Footpath width per side, metres.
    """

    name: str
    axis: Literal["x", "y"]
    coord: float
    start: float
    end: float
    width: float
    footpath: float

    def __post_init__(self) -> None:
        if self.axis not in ("x", "y"):
            raise ValueError(f"Road.axis: expected 'x' or 'y', got {self.axis!r}")
        if not self.end > self.start:
            raise ValueError(
                f"Road {self.name!r}: expected start < end, got {self.start}, {self.end}"
            )
        if self.width <= 0 or self.footpath < 0:
            raise ValueError(f"Road {self.name!r}: width must be > 0 and footpath >= 0")

    def strip(self, extra: float = 0.0) -> NDArray[np.float64]:
        """Carriageway BEV box ``[x_min, y_min, x_max, y_max]`` (local world m), grown by ``extra``."""
        h = self.width / 2 + extra
        if self.axis == "x":
            return np.array([self.start, self.coord - h, self.end, self.coord + h])
        return np.array([self.coord - h, self.start, self.coord + h, self.end])

    def line(self) -> NDArray[np.float64]:
        """Centreline end points, shape (2, 2), local world metres ``[[x0, y0], [x1, y1]]``."""
        if self.axis == "x":
            return np.array([[self.start, self.coord], [self.end, self.coord]])
        return np.array([[self.coord, self.start], [self.coord, self.end]])


@dataclass(frozen=True, slots=True, kw_only=True)
class Terrain:
    """Smooth terrain: bilinear interpolation of a coarse height grid.

    Attributes
    ----------
    grid : ndarray, shape (ny, nx), float64
        Heights (metres, including the base ground height) at nodes ``(j·spacing, i·spacing)``.
    spacing : float
        Node spacing, metres.
    """

    grid: NDArray[np.float64]
    spacing: float

    def height(self, x: NDArray, y: NDArray) -> NDArray:
        """Ground height at local world ``(x, y)``; any shape, returns float64 metres."""
        gx = np.clip(
            np.asarray(x, np.float32) / np.float32(self.spacing), 0, self.grid.shape[1] - 1.001
        )
        gy = np.clip(
            np.asarray(y, np.float32) / np.float32(self.spacing), 0, self.grid.shape[0] - 1.001
        )
        ix = gx.astype(np.int32)
        iy = gy.astype(np.int32)
        fx = gx - ix
        fy = gy - iy
        g = self.grid.astype(np.float32)
        h0 = g[iy, ix] * (1 - fx) + g[iy, ix + 1] * fx
        h1 = g[iy + 1, ix] * (1 - fx) + g[iy + 1, ix + 1] * fx
        return h0 * (1 - fy) + h1 * fy


@dataclass(frozen=True, slots=True, kw_only=True)
class CityPlan:
    """Every object of a block as geometry (local world metres; see the module docstring).

    Instance ids are unique over buildings, parks (Ground), parking lots and cars, starting at 0.
    Per-object arrays have one row per object of that kind.
    """

    size: float
    style: str
    terrain: Terrain
    roads: tuple[Road, ...]
    # buildings: parts (P rows) grouped into buildings (B rows)
    part_box: NDArray[np.float64]  # (P, 4) BEV box
    part_height: NDArray[np.float64]  # (P,) eave height above the building base
    part_ridge: NDArray[np.float64]  # (P,) extra ridge height (0 = flat roof)
    part_ridge_axis: NDArray[np.int8]  # (P,) 0: ridge runs along x, 1: along y
    part_building: NDArray[np.int32]  # (P,) building row
    building_base: NDArray[np.float64]  # (B,) base z (m)
    building_instance: NDArray[np.int32]  # (B,)
    roof_colour: NDArray[np.int8]  # (B,) index into ROOF_COLOURS
    wall_colour: NDArray[np.int8]  # (B,) index into the style's WALL_COLOURS / facade palette
    roof_shade: NDArray[np.int8]  # (B,) index into palette.SHADES[colour] (0: plain)
    wall_shade: NDArray[np.int8]  # (B,)
    building_name: tuple[str, ...]  # (B,) "" if not a landmark
    # parks (Ground instances) and parking lots
    park_box: NDArray[np.float64]  # (K, 4)
    park_instance: NDArray[np.int32]
    park_name: tuple[str, ...]
    pond: NDArray[np.float64]  # (Q, 4): cx, cy, rx, ry
    parking_box: NDArray[np.float64]  # (M, 4)
    parking_instance: NDArray[np.int32]
    parking_name: tuple[str, ...]
    parking_stall_axis: NDArray[np.int8]  # (M,) 0: stall lines run along y (cars along y)
    # cars
    car_center: NDArray[np.float64]  # (C, 2)
    car_axis: NDArray[np.int8]  # (C,) 0: car length along x, 1: along y
    car_dims: NDArray[np.float64]  # (C, 3) length, width, height
    car_colour: NDArray[np.int8]  # (C,) index into CAR_COLOURS
    car_shade: NDArray[np.int8]  # (C,) index into palette.SHADES[colour] (0: plain)
    car_instance: NDArray[np.int32]
    # vegetation and furniture (no instances)
    tree: NDArray[np.float64]  # (T, 4): cx, cy, crown radius, crown centre height above ground
    lamp: NDArray[np.float64]  # (L, 2)
    bench: NDArray[np.float64]  # (E, 3): cx, cy, axis
    free_wall: NDArray[np.float64]  # (W, 6): x0, y0, x1, y1, height, thickness
    n_instances: int = field(default=0)


def _make_terrain(rng: np.random.Generator, size: float) -> Terrain:
    spacing = 40.0
    n = int(np.ceil(size / spacing)) + 2
    base = rng.uniform(10.0, 40.0)
    raw = rng.normal(0.0, 1.2, (n, n))
    # Smooth with a 3×3 box filter twice: gentle relief of a few metres.
    for _ in range(2):
        pad = np.pad(raw, 1, mode="edge")
        raw = (
            sum(
                (pad[dy : dy + n, dx : dx + n] for dy in range(3) for dx in range(3)),
                np.zeros((n, n)),
            )
            / 9.0
        )
    slope = rng.normal(0.0, 0.004, 2)
    jj, ii = np.meshgrid(np.arange(n) * spacing, np.arange(n) * spacing)
    grid = base + 2.5 * raw + slope[0] * jj + slope[1] * ii
    return Terrain(grid=grid, spacing=spacing)


def _road_positions(
    rng: np.random.Generator, size: float, spacing: tuple[float, float]
) -> list[float]:
    pos: list[float] = []
    p = rng.uniform(0.25, 0.75) * spacing[0]
    while p < size - 12.0:
        pos.append(p)
        p += rng.uniform(*spacing)
    if not pos:
        pos.append(size / 2)
    return pos


def _split_lots(
    rng: np.random.Generator, box: tuple[float, ...], lot_max: float
) -> list[tuple[float, ...]]:
    out: list[tuple[float, ...]] = []
    stack = [box]
    while stack:
        x0, y0, x1, y1 = stack.pop()
        w, h = x1 - x0, y1 - y0
        if max(w, h) <= lot_max:
            out.append((x0, y0, x1, y1))
            continue
        f = rng.uniform(0.35, 0.65)
        if w >= h:
            xm = x0 + f * w
            stack += [(x0, y0, xm, y1), (xm, y0, x1, y1)]
        else:
            ym = y0 + f * h
            stack += [(x0, y0, x1, ym), (x0, ym, x1, y1)]
    return out


class _Builder:
    """Mutable accumulator used only inside :func:`plan_city`."""

    def __init__(self) -> None:
        self.next_id = 0
        self.parts: list[tuple[float, float, float, float, float, float, int, int]] = []
        self.buildings: list[tuple[float, int, int, int]] = []
        self.parks: list[tuple[tuple[float, ...], int]] = []
        self.ponds: list[tuple[float, float, float, float]] = []
        self.parkings: list[tuple[tuple[float, ...], int, int]] = []
        self.cars: list[tuple[float, float, int, float, float, float, int, int]] = []
        self.trees: list[tuple[float, float, float, float]] = []
        self.lamps: list[tuple[float, float]] = []
        self.benches: list[tuple[float, float, int]] = []
        self.walls: list[tuple[float, float, float, float, float, float]] = []

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id - 1


def _add_car(b: _Builder, rng: np.random.Generator, cx: float, cy: float, axis: int) -> None:
    length, width, height = rng.uniform(4.2, 4.9), rng.uniform(1.7, 1.9), rng.uniform(1.4, 1.6)
    colour = int(rng.choice(len(CAR_COLOURS), p=CAR_COLOUR_P))
    b.cars.append((cx, cy, axis, length, width, height, colour, b.new_id()))


def _add_building(
    b: _Builder,
    rng: np.random.Generator,
    lot: tuple[float, ...],
    k: _StyleKnobs,
    terrain: Terrain,
    style: str,
) -> None:
    x0, y0, x1, y1 = lot
    s = rng.uniform(*k["setback"])
    x0, y0, x1, y1 = x0 + s, y0 + s, x1 - s, y1 - s
    if x1 - x0 < 6.0 or y1 - y0 < 6.0:
        return
    h = rng.uniform(*k["height"])
    if rng.random() < k["tall_p"]:
        h = rng.uniform(25.0, 45.0)
    gable = rng.random() < k["gable_p"] and h < 25.0
    bidx = len(b.buildings)
    corners_x = np.array([x0, x1, x0, x1, (x0 + x1) / 2])
    corners_y = np.array([y0, y0, y1, y1, (y0 + y1) / 2])
    base = float(terrain.height(corners_x, corners_y).min()) - 0.3
    rects = [(x0, y0, x1, y1, h)]
    if rng.random() < k["l_shape_p"] and min(x1 - x0, y1 - y0) > 12.0:
        fx, fy = rng.uniform(0.4, 0.65), rng.uniform(0.4, 0.65)
        xm, ym = x0 + fx * (x1 - x0), y0 + fy * (y1 - y0)
        h2 = h * rng.uniform(0.55, 1.0)
        if rng.random() < 0.5:  # keep the south strip + a north-west or north-east wing
            wing = (x0, ym, xm, y1) if rng.random() < 0.5 else (xm, ym, x1, y1)
            rects = [(x0, y0, x1, ym, h), (*wing, h2)]
        else:
            wing = (x0, y0, xm, ym) if rng.random() < 0.5 else (x0, ym, xm, y1)
            rects = [(xm, y0, x1, y1, h), (*wing, h2)]
    for rx0, ry0, rx1, ry1, rh in rects:
        axis = 0 if (rx1 - rx0) >= (ry1 - ry0) else 1
        short = min(rx1 - rx0, ry1 - ry0)
        ridge = rng.uniform(0.25, 0.45) * short if gable else 0.0
        b.parts.append((rx0, ry0, rx1, ry1, rh, ridge, axis, bidx))
    roof = int(rng.choice(len(ROOF_COLOURS), p=ROOF_COLOUR_P[style]))
    b.buildings.append((base, b.new_id(), roof, int(rng.integers(4))))
    if rng.random() < 0.25:  # a garden wall along the lot's southern or western edge
        if rng.random() < 0.5:
            b.walls.append(
                (lot[0] + 0.5, lot[1] + 0.4, lot[2] - 0.5, lot[1] + 0.4, rng.uniform(1.2, 2.0), 0.3)
            )
        else:
            b.walls.append(
                (lot[0] + 0.4, lot[1] + 0.5, lot[0] + 0.4, lot[3] - 0.5, rng.uniform(1.2, 2.0), 0.3)
            )


def _add_park(b: _Builder, rng: np.random.Generator, box: tuple[float, ...]) -> None:
    x0, y0, x1, y1 = box
    b.parks.append((box, b.new_id()))
    w, h = x1 - x0, y1 - y0
    pond = None
    if rng.random() < 0.35 and min(w, h) > 30:
        pond = (
            x0 + w * rng.uniform(0.35, 0.65),
            y0 + h * rng.uniform(0.35, 0.65),
            w * rng.uniform(0.1, 0.2),
            h * rng.uniform(0.1, 0.2),
        )
        b.ponds.append(pond)
    n_trees = int(w * h / rng.uniform(120.0, 260.0))
    tx = rng.uniform(x0 + 2, x1 - 2, n_trees)
    ty = rng.uniform(y0 + 2, y1 - 2, n_trees)
    keep = np.ones(n_trees, bool)
    if pond is not None:
        keep = ((tx - pond[0]) / (pond[2] + 4)) ** 2 + ((ty - pond[1]) / (pond[3] + 4)) ** 2 > 1
    for x, y in zip(tx[keep], ty[keep]):
        b.trees.append((x, y, rng.uniform(2.0, 4.5), rng.uniform(5.0, 9.0)))
    for _ in range(int(rng.integers(0, 4))):
        b.benches.append(
            (rng.uniform(x0 + 2, x1 - 2), rng.uniform(y0 + 2, y1 - 2), int(rng.integers(2)))
        )


def _add_parking(
    b: _Builder, rng: np.random.Generator, box: tuple[float, ...], fill: float
) -> None:
    x0, y0, x1, y1 = box
    axis = 0 if (x1 - x0) >= (y1 - y0) else 1  # stall rows run along the long side
    b.parkings.append((box, b.new_id(), axis))
    lo_a, hi_a = (x0, x1) if axis == 0 else (y0, y1)  # along the rows
    lo_c, hi_c = (y0, y1) if axis == 0 else (x0, x1)  # across the rows
    c = lo_c + 0.5
    while c + 5.0 <= hi_c:
        for row_lo in (c, c + 11.0):
            if row_lo + 5.0 > hi_c:
                break
            a = lo_a + 1.0
            while a + 2.5 <= hi_a - 1.0:
                if rng.random() < fill:
                    ca, cc = a + 1.25, row_lo + 2.5
                    cx, cy = (ca, cc) if axis == 0 else (cc, ca)
                    _add_car(b, rng, cx, cy, 1 - axis)
                a += 2.5
        c += 16.0


def plan_city(rng: np.random.Generator, size: float, style: str = "sensaturban") -> CityPlan:
    """Lay out one block: terrain, named road grid, parcels, buildings, parks, car parks, cars.

    Parameters
    ----------
    rng
        The caller's generator; the plan is a pure function of its state.
    size
        Block side, metres (>= 40). The block spans ``[0, size]²`` in the local world frame.
    style
        ``"sensaturban"`` or ``"stpls3d"``.

    Returns
    -------
    CityPlan
        Geometry in local world metres.
    """
    if style not in STYLES:
        raise ValueError(f"style: expected one of {STYLES}, got {style!r}")
    if not size >= 40.0:
        raise ValueError(f"size: expected >= 40 metres, got {size}")
    k = _STYLE_KNOBS[style]
    names = NamePool(rng, style)
    terrain = _make_terrain(rng, size)
    xs = _road_positions(rng, size, k["road_spacing"])  # y-running roads at these x
    ys = _road_positions(rng, size, k["road_spacing"])  # x-running roads at these y
    roads: list[Road] = []
    road_sets: tuple[tuple[Literal["x", "y"], list[float]], ...] = (("x", ys), ("y", xs))
    for axis, coords in road_sets:
        for c in coords:
            roads.append(
                Road(
                    name=names.road(),
                    axis=axis,
                    coord=float(c),
                    start=0.0,
                    end=float(size),
                    width=float(rng.uniform(*k["road_width"])),
                    footpath=float(k["footpath"]),
                )
            )
    b = _Builder()

    def edges(coords: list[float], axis: str) -> list[tuple[float, float]]:
        rs = [r for r in roads if r.axis == axis]
        cuts = [(0.0, 0.0)] + [
            (r.coord - r.width / 2 - r.footpath, r.coord + r.width / 2 + r.footpath) for r in rs
        ]
        cuts.append((size, size))
        return [(cuts[i][1], cuts[i + 1][0]) for i in range(len(cuts) - 1)]

    x_bands = edges(xs, "y")
    y_bands = edges(ys, "x")
    for bx0, bx1 in x_bands:
        for by0, by1 in y_bands:
            x0, y0, x1, y1 = bx0 + 0.5, by0 + 0.5, bx1 - 0.5, by1 - 0.5
            w, h = x1 - x0, y1 - y0
            if min(w, h) < 10.0:
                continue
            u = rng.random()
            if u < k["park_p"] and w * h >= 600:
                _add_park(b, rng, (x0, y0, x1, y1))
                continue
            if u < k["park_p"] + k["parking_p"] and w * h >= 400:
                _add_parking(b, rng, (x0, y0, x1, y1), fill=rng.uniform(0.3, 0.8))
                continue
            for lot in _split_lots(rng, (x0, y0, x1, y1), float(k["lot_max"])):
                lw, lh = lot[2] - lot[0], lot[3] - lot[1]
                v = rng.random()
                if v < 0.8:
                    _add_building(b, rng, lot, k, terrain, style)
                elif v < 0.9 and lw * lh >= 300 and min(lw, lh) >= 14:
                    _add_park(b, rng, (lot[0] + 1, lot[1] + 1, lot[2] - 1, lot[3] - 1))
                elif lw * lh >= 250 and min(lw, lh) >= 12:
                    _add_parking(b, rng, (lot[0] + 1, lot[1] + 1, lot[2] - 1, lot[3] - 1), fill=0.5)
                else:
                    for _ in range(int(rng.integers(1, 4))):
                        b.trees.append(
                            (
                                rng.uniform(lot[0] + 2, lot[2] - 2)
                                if lw > 4
                                else (lot[0] + lot[2]) / 2,
                                rng.uniform(lot[1] + 2, lot[3] - 2)
                                if lh > 4
                                else (lot[1] + lot[3]) / 2,
                                rng.uniform(1.8, 3.5),
                                rng.uniform(4.0, 7.0),
                            )
                        )
    # Curb-side parked cars, passing cars, street trees and lamps along every road.
    for r in roads:
        clear = [
            (q.coord - q.width / 2 - 7.0, q.coord + q.width / 2 + 7.0)
            for q in roads
            if q.axis != r.axis
        ]
        slots = np.arange(r.start + 4.0, r.end - 4.0, 6.5)
        free = np.array([not any(lo < s < hi for lo, hi in clear) for s in slots], bool)
        ax = 0 if r.axis == "x" else 1
        for side in (-1.0, 1.0):
            park = free & (rng.random(len(slots)) < k["curb_park_p"])
            move = free & ~park & (rng.random(len(slots)) < 0.04)
            for s, p, m in zip(slots, park, move):
                if p or m:
                    across = r.coord + side * (r.width / 2 - 1.2 if p else r.width / 4)
                    along = s + rng.uniform(-0.5, 0.5)
                    cx, cy = (along, across) if ax == 0 else (across, along)
                    _add_car(b, rng, cx, cy, ax)
            tree_at = free & (rng.random(len(slots)) < k["street_tree_p"] / 2)
            edge = r.coord + side * (r.width / 2 + r.footpath - 0.3)
            for s in slots[tree_at]:
                tx, ty = (s, edge) if ax == 0 else (edge, s)
                b.trees.append((tx, ty, rng.uniform(1.8, 3.2), rng.uniform(5.0, 8.0)))
        lamp_edge = r.coord + (r.width / 2 + 0.4)
        for s in np.arange(r.start + 10.0, r.end - 5.0, 26.0):
            if not any(lo < s < hi for lo, hi in clear):
                b.lamps.append((s, lamp_edge) if ax == 0 else (lamp_edge, s))
    # Name landmarks: ~20% of buildings (largest first get a higher chance), ~half the parks.
    n_b = len(b.buildings)
    part_arr = np.array(b.parts, np.float64).reshape(-1, 8)
    areas = np.zeros(n_b)
    if n_b:
        np.add.at(
            areas,
            part_arr[:, 7].astype(int),
            (part_arr[:, 2] - part_arr[:, 0]) * (part_arr[:, 3] - part_arr[:, 1]),
        )
    n_named = round(0.2 * n_b) if n_b else 0
    if n_b and n_named == 0:
        n_named = 1
    weights = areas / areas.sum() if n_b else areas
    named_rows = (
        set(rng.choice(n_b, size=n_named, replace=False, p=weights).tolist()) if n_named else set()
    )
    building_name = tuple(names.building() if i in named_rows else "" for i in range(n_b))
    park_name = tuple(
        names.park() if (rng.random() < 0.5 or i == 0) else "" for i in range(len(b.parks))
    )
    parking_name = tuple(names.parking() if rng.random() < 0.3 else "" for _ in b.parkings)

    def arr(rows: list, width: int, dtype: type = np.float64) -> NDArray:
        return np.array(rows, dtype=dtype).reshape(-1, width)

    return CityPlan(
        size=float(size),
        style=style,
        terrain=terrain,
        roads=tuple(roads),
        part_box=part_arr[:, :4].copy(),
        part_height=part_arr[:, 4].copy(),
        part_ridge=part_arr[:, 5].copy(),
        part_ridge_axis=part_arr[:, 6].astype(np.int8),
        part_building=part_arr[:, 7].astype(np.int32),
        building_base=arr([x[0] for x in b.buildings], 1)[:, 0],
        building_instance=arr([x[1] for x in b.buildings], 1, np.int32)[:, 0],
        roof_colour=arr([x[2] for x in b.buildings], 1, np.int8)[:, 0],
        wall_colour=arr([x[3] for x in b.buildings], 1, np.int8)[:, 0],
        roof_shade=np.zeros(n_b, np.int8),  # plain; block.generate_block draws the shades
        wall_shade=np.zeros(n_b, np.int8),
        building_name=building_name,
        park_box=arr([p[0] for p in b.parks], 4),
        park_instance=arr([p[1] for p in b.parks], 1, np.int32)[:, 0],
        park_name=park_name,
        pond=arr(b.ponds, 4),
        parking_box=arr([p[0] for p in b.parkings], 4),
        parking_instance=arr([p[1] for p in b.parkings], 1, np.int32)[:, 0],
        parking_name=parking_name,
        parking_stall_axis=arr([p[2] for p in b.parkings], 1, np.int8)[:, 0],
        car_center=arr([c[:2] for c in b.cars], 2),
        car_axis=arr([c[2] for c in b.cars], 1, np.int8)[:, 0],
        car_dims=arr([c[3:6] for c in b.cars], 3),
        car_colour=arr([c[6] for c in b.cars], 1, np.int8)[:, 0],
        car_shade=np.zeros(len(b.cars), np.int8),
        car_instance=arr([c[7] for c in b.cars], 1, np.int32)[:, 0],
        tree=arr(b.trees, 4),
        lamp=arr(b.lamps, 2),
        bench=arr(b.benches, 3),
        free_wall=arr(b.walls, 6),
        n_instances=b.next_id,
    )
