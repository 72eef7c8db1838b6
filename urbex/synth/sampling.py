"""Point sampling of a :class:`~urbex.synth.plan.CityPlan`: surfaces → coloured points.

Every surface is sampled in one vectorised pass per surface family (ground, roofs, facades,
tree crowns, car bodies, furniture, free-standing walls): counts per primitive from the
density and the primitive's area, ``np.repeat`` of the primitive parameters, uniform draws.
Ground materials (road, footpath, grass, car park, water, ...) come from a 0.25 m material
raster painted from the plan, looked up per point.

Frame
-----
All coordinates are the block's **local world frame** (metres, x east, y north, z up; see
:mod:`urbex.synth.plan`). Output xyz is float32.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from urbex.synth.palette import CAR_COLOURS, PALETTES, ROOF_COLOURS, WALL_COLOURS, shaded_rgb
from urbex.synth.plan import CityPlan

__all__ = ["KIND_NAMES", "KIND_TO_SEMANTIC", "SampledPoints", "sample_plan"]

# Point kinds (material codes). Ground kinds index the material raster.
BARE, GRASS, ROAD, MARK, FOOT, PARK, PMARK, WATER, SOLID = range(9)
ROOF, FACADE, WINDOW, TREE, CAR, GLASS, FURN, FWALL = range(9, 17)
#: Kind code → name.
KIND_NAMES: tuple[str, ...] = (
    "bare ground",
    "grass",
    "road",
    "road marking",
    "footpath",
    "parking",
    "parking marking",
    "water",
    "solid",
    "roof",
    "facade",
    "window",
    "tree",
    "car",
    "car glass",
    "furniture",
    "free-standing wall",
)
#: Kind code → semantic id, per class scheme (``sensaturban`` / ``stpls3d``).
KIND_TO_SEMANTIC: dict[str, NDArray[np.int32]] = {
    "sensaturban": np.array([0, 0, 7, 7, 10, 5, 5, 12, 0, 2, 2, 2, 1, 9, 9, 8, 3], np.int32),
    "stpls3d": np.array([0, 19, 15, 15, 0, 15, 15, 13, 0, 1, 1, 1, 4, 5, 5, 11, 14], np.int32),
}

_RES = 0.25  # material raster resolution, metres per cell
_WALL_SHARE = 0.3  # facade points per m² of vertical surface, as a share of ``density``
_GROUND_DZ = np.array([0, 0, -0.12, -0.115, 0, -0.05, -0.045, -0.45, 0], np.float32)


@dataclass(frozen=True, slots=True, kw_only=True)
class SampledPoints:
    """Points of one block.

    Attributes
    ----------
    xyz : ndarray, shape (N, 3), float32
        Local world metres, z up.
    rgb : ndarray, shape (N, 3), uint8
    kind : ndarray, shape (N,), uint8
        Material code; map with :data:`KIND_TO_SEMANTIC`.
    instance : ndarray, shape (N,), int32
        Instance id from the plan, -1 for none.
    """

    xyz: NDArray[np.float32]
    rgb: NDArray[np.uint8]
    kind: NDArray[np.uint8]
    instance: NDArray[np.int32]


def _cells(lo: float, hi: float, n: int) -> slice:
    return slice(int(np.clip(round(lo / _RES), 0, n)), int(np.clip(round(hi / _RES), 0, n)))


def _paint_raster(plan: CityPlan) -> tuple[NDArray[np.uint8], NDArray[np.int32]]:
    n = int(np.ceil(plan.size / _RES))
    mat = np.full((n, n), BARE, np.uint8)  # [row = y, col = x]
    inst = np.full((n, n), -1, np.int32)

    def paint(box: NDArray, value: int, instance: int | None = None) -> None:
        sl = (_cells(box[1], box[3], n), _cells(box[0], box[2], n))
        mat[sl] = value
        if instance is not None:
            inst[sl] = instance

    for box, iid in zip(plan.park_box, plan.park_instance):
        paint(box, GRASS, int(iid))
    for cx, cy, rx, ry in plan.pond:
        sy, sx = _cells(cy - ry, cy + ry, n), _cells(cx - rx, cx + rx, n)
        yy = (np.arange(sy.start, sy.stop) + 0.5) * _RES
        xx = (np.arange(sx.start, sx.stop) + 0.5) * _RES
        inside = ((xx[None, :] - cx) / rx) ** 2 + ((yy[:, None] - cy) / ry) ** 2 <= 1.0
        mat[sy, sx][inside] = WATER
        inst[sy, sx][inside] = -1
    for box, iid, axis in zip(plan.parking_box, plan.parking_instance, plan.parking_stall_axis):
        paint(box, PARK, int(iid))
        x0, y0, x1, y1 = box
        lo_a, hi_a, lo_c, hi_c = (x0, x1, y0, y1) if axis == 0 else (y0, y1, x0, x1)
        c = lo_c + 0.5
        while c + 5.0 <= hi_c:
            for row_lo in (c, c + 11.0):
                if row_lo + 5.0 > hi_c:
                    break
                for a in np.arange(lo_a + 1.0, hi_a - 1.0 + 1e-6, 2.5):
                    line = (a - 0.08, row_lo, a + 0.08, row_lo + 5.0)
                    paint(
                        np.array(line if axis == 0 else (line[1], line[0], line[3], line[2])), PMARK
                    )
            c += 16.0
    for r in plan.roads:
        paint(r.strip(extra=r.footpath), FOOT, -1)
    for r in plan.roads:
        paint(r.strip(), ROAD, -1)
    for r in plan.roads:  # dashed centre line, 3 m on / 3 m off
        for s in np.arange(r.start, r.end, 6.0):
            seg = (s, r.coord - 0.08, s + 3.0, r.coord + 0.08)
            paint(np.array(seg if r.axis == "x" else (seg[1], seg[0], seg[3], seg[2])), MARK)
    for r in plan.roads:  # junctions are plain road
        for q in plan.roads:
            if q.axis != r.axis and r.axis == "x":
                paint(
                    np.array(
                        [
                            q.coord - q.width / 2,
                            r.coord - r.width / 2,
                            q.coord + q.width / 2,
                            r.coord + r.width / 2,
                        ]
                    ),
                    ROAD,
                )
    for box in plan.part_box:
        paint(box, SOLID)
    for (cx, cy), axis, (length, width, _h) in zip(plan.car_center, plan.car_axis, plan.car_dims):
        hx, hy = (length / 2, width / 2) if axis == 0 else (width / 2, length / 2)
        paint(np.array([cx - hx, cy - hy, cx + hx, cy + hy]), SOLID)
    for x0, y0, x1, y1, _h, t in plan.free_wall:
        paint(
            np.array(
                [min(x0, x1) - t / 2, min(y0, y1) - t / 2, max(x0, x1) + t / 2, max(y0, y1) + t / 2]
            ),
            SOLID,
        )
    return mat, inst


def _colour(rng: np.random.Generator, base: NDArray[np.int16], noise: int = 9) -> NDArray[np.uint8]:
    """``base`` (N, 3) int16 + uniform per-channel noise in ``[-noise, noise]`` → uint8."""
    out = base + rng.integers(-noise, noise + 1, base.shape, dtype=np.int16)
    return np.clip(out, 0, 255).astype(np.uint8)


def _counts(rng: np.random.Generator, expected: NDArray) -> NDArray[np.int64]:
    """Stochastic rounding of expected counts (keeps small surfaces fairly represented)."""
    e = np.asarray(expected, np.float64)
    return (np.floor(e) + (rng.random(e.shape) < (e - np.floor(e)))).astype(np.int64)


def _ground(rng: np.random.Generator, plan: CityPlan, density: float, pal: dict) -> tuple:
    mat, inst = _paint_raster(plan)
    n_cells = mat.shape[0]
    n = round(density * plan.size * plan.size)
    x = rng.random(n, dtype=np.float32) * np.float32(plan.size)
    y = rng.random(n, dtype=np.float32) * np.float32(plan.size)
    col = np.minimum((x * np.float32(1.0 / _RES)).astype(np.int32), n_cells - 1)
    row = np.minimum((y * np.float32(1.0 / _RES)).astype(np.int32), n_cells - 1)
    m = mat[row, col]
    keep = m != SOLID
    x, y, m, row, col = x[keep], y[keep], m[keep], row[keep], col[keep]
    ins = inst[row, col]
    z = plan.terrain.height(x, y) + _GROUND_DZ[m] + rng.normal(0, 0.02, x.shape).astype(np.float32)
    base = pal["ground"][m]
    n_inst = max(plan.n_instances, 1)
    tint = np.vstack(
        [rng.integers(-10, 11, (n_inst, 3), dtype=np.int16), np.zeros((1, 3), np.int16)]
    )
    base = base + tint[np.where(ins >= 0, ins, n_inst)]
    return np.stack([x, y, z], axis=1), _colour(rng, base, 10), m, ins


def _rect_samples(rng: np.random.Generator, boxes: NDArray, counts: NDArray) -> tuple[NDArray, ...]:
    idx = np.repeat(np.arange(len(boxes)), counts)
    u = rng.random(idx.size, dtype=np.float32)
    v = rng.random(idx.size, dtype=np.float32)
    b = boxes.astype(np.float32)
    x = b[idx, 0] + u * (b[idx, 2] - b[idx, 0])
    y = b[idx, 1] + v * (b[idx, 3] - b[idx, 1])
    return idx, x, y, u, v


def _buildings(rng: np.random.Generator, plan: CityPlan, density: float, pal: dict) -> list[tuple]:
    pb, ph, pr = plan.part_box, plan.part_height, plan.part_ridge
    bi = plan.part_building
    if len(pb) == 0:
        return []
    base = plan.building_base[bi]
    top = base + ph + pr
    # Partner part of the same building (L-shapes have two parts), -1 if none.
    partner = np.full(len(pb), -1)
    for b in np.unique(bi):
        rows = np.flatnonzero(bi == b)
        if len(rows) == 2:
            partner[rows[0]], partner[rows[1]] = rows[1], rows[0]

    def hidden(p: NDArray, x: NDArray, y: NDArray, z: NDArray) -> NDArray[np.bool_]:
        q = partner[p]
        has = q >= 0
        qq = np.where(has, q, 0)
        e = 0.05
        inside = (
            (x >= pb[qq, 0] - e)
            & (x <= pb[qq, 2] + e)
            & (y >= pb[qq, 1] - e)
            & (y <= pb[qq, 3] + e)
        )
        return has & inside & (z < top[qq] - 0.02)

    out = []
    # Roofs (flat or gabled), one colour per building, gable sides shaded differently.
    area = (pb[:, 2] - pb[:, 0]) * (pb[:, 3] - pb[:, 1])
    p, x, y, u, v = _rect_samples(rng, pb, _counts(rng, density * area))
    t = np.where(plan.part_ridge_axis[p] == 0, v, u)
    gable = np.float32(1.0) - np.abs(np.float32(2.0) * t - np.float32(1.0))
    z = (base[p] + ph[p]).astype(np.float32) + pr[p].astype(np.float32) * gable
    z += rng.normal(0, 0.03, z.shape).astype(np.float32)
    keep = ~hidden(p, x, y, z)
    p, x, y, z, t = p[keep], x[keep], y[keep], z[keep], t[keep]
    roofs = shaded_rgb(pal["roof"], plan.roof_colour, plan.roof_shade, ROOF_COLOURS)
    roof_rgb = roofs[bi[p]]
    shade = np.where((pr[p] > 0) & (t < 0.5), 0.82, 1.0)
    rgb = _colour(rng, (roof_rgb * shade[:, None]).astype(np.int16), 8)
    inst = plan.building_instance[bi[p]]
    out.append((np.stack([x, y, z], 1), rgb, np.full(x.size, ROOF, np.uint8), inst))
    # Facades: 4 edges per part, z from the base to the eave, window grid.
    # Edges per part: south, north (west → east), east, west (south → north).
    e0 = np.repeat(np.arange(len(pb)), 4)
    X0, Y0, X1, Y1 = pb[:, 0], pb[:, 1], pb[:, 2], pb[:, 3]
    x0 = np.stack([X0, X0, X1, X0], 1).ravel()
    y0 = np.stack([Y0, Y1, Y0, Y0], 1).ravel()
    x1 = np.stack([X1, X1, X1, X0], 1).ravel()
    y1 = np.stack([Y0, Y1, Y1, Y1], 1).ravel()
    length = np.hypot(x1 - x0, y1 - y0)
    cnt = _counts(rng, density * _WALL_SHARE * length * ph[e0])
    ei = np.repeat(np.arange(len(e0)), cnt)
    s = rng.random(ei.size, dtype=np.float32)
    h = rng.random(ei.size, dtype=np.float32) * ph[e0][ei].astype(np.float32)
    p = e0[ei]
    x = (x0[ei] + s * (x1[ei] - x0[ei])).astype(np.float32)
    y = (y0[ei] + s * (y1[ei] - y0[ei])).astype(np.float32)
    z = base[p].astype(np.float32) + h
    keep = ~hidden(p, x, y, z)
    p, x, y, z, h, s, ei = p[keep], x[keep], y[keep], z[keep], h[keep], s[keep], ei[keep]
    along = s * length[ei].astype(np.float32)
    window = (
        (np.mod(h, 3.2) > 1.0)
        & (np.mod(h, 3.2) < 2.2)
        & (np.mod(along, 3.5) > 0.8)
        & (np.mod(along, 3.5) < 2.4)
    )
    walls = shaded_rgb(pal["facade"], plan.wall_colour, plan.wall_shade, WALL_COLOURS[plan.style])
    base_rgb = np.where(window[:, None], pal["window"], walls[bi[p]])
    kind = np.where(window, WINDOW, FACADE).astype(np.uint8)
    out.append(
        (
            np.stack([x, y, z], 1),
            _colour(rng, base_rgb.astype(np.int16), 8),
            kind,
            plan.building_instance[bi[p]],
        )
    )
    return out


def _trees(rng: np.random.Generator, plan: CityPlan, density: float, pal: dict) -> list[tuple]:
    tr = plan.tree
    if len(tr) == 0:
        return []
    cnt = _counts(rng, density * np.pi * tr[:, 2] ** 2 * 1.4)
    i = np.repeat(np.arange(len(tr)), cnt)
    rho = np.sqrt(rng.random(i.size, dtype=np.float32))
    th = rng.random(i.size, dtype=np.float32) * np.float32(2 * np.pi)
    r = tr[i, 2].astype(np.float32)
    x = tr[i, 0].astype(np.float32) + r * rho * np.cos(th)
    y = tr[i, 1].astype(np.float32) + r * rho * np.sin(th)
    ground = plan.terrain.height(tr[:, 0], tr[:, 1])
    shell = np.sqrt(np.maximum(1 - rho**2, 0)) * rng.uniform(0.55, 1.0, i.size).astype(np.float32)
    z = ground[i] + tr[i, 3].astype(np.float32) + 0.8 * r * shell
    tint = rng.integers(-14, 15, (len(tr), 3), dtype=np.int16)
    light = (shell * 26).astype(np.int16)[:, None]
    rgb = _colour(rng, pal["tree"] + tint[i] + light, 10)
    return [
        (
            np.stack([x, y, z], 1),
            rgb,
            np.full(i.size, TREE, np.uint8),
            np.full(i.size, -1, np.int32),
        )
    ]


def _cars(rng: np.random.Generator, plan: CityPlan, density: float, pal: dict) -> list[tuple]:
    cc, ax, dims = plan.car_center, plan.car_axis, plan.car_dims
    if len(cc) == 0:
        return []
    ground = plan.terrain.height(cc[:, 0], cc[:, 1]) - 0.1
    L, W, H = (dims[:, k].astype(np.float32) for k in range(3))
    n_top = _counts(rng, density * L * W * 1.2)
    n_side = _counts(rng, density * _WALL_SHARE * 2 * (L + W) * 0.6 * H)
    paint = shaded_rgb(pal["car"], plan.car_colour, plan.car_shade, CAR_COLOURS)
    out = []
    # roof + hood + trunk: a (along, across) grid, cabin in the middle.
    i = np.repeat(np.arange(len(cc)), n_top)
    a = (rng.random(i.size, dtype=np.float32) - 0.5) * L[i]
    c = (rng.random(i.size, dtype=np.float32) - 0.5) * W[i]
    cab_lo, cab_hi = -0.28 * L[i], 0.18 * L[i]
    cabin = (a > cab_lo) & (a < cab_hi)
    z = ground[i] + np.where(cabin, H[i], 0.62 * H[i])
    glass = cabin & ((a - cab_lo < 0.45) | (cab_hi - a < 0.35))
    body = paint[i]
    rgb = _colour(rng, np.where(glass[:, None], pal["glass"], body).astype(np.int16), 8)
    x = cc[i, 0].astype(np.float32) + np.where(ax[i] == 0, a, c)
    y = cc[i, 1].astype(np.float32) + np.where(ax[i] == 0, c, a)
    kind = np.where(glass, GLASS, CAR).astype(np.uint8)
    out.append((np.stack([x, y, z], 1), rgb, kind, plan.car_instance[i]))
    # body sides: perimeter position p in [0, 2(L+W)), height in [0.25, 0.62 H].
    i = np.repeat(np.arange(len(cc)), n_side)
    per = rng.random(i.size, dtype=np.float32) * 2 * (L[i] + W[i])
    Li, Wi = L[i], W[i]
    a = np.where(
        per < Li,
        per - Li / 2,
        np.where(
            per < Li + Wi, Li / 2, np.where(per < 2 * Li + Wi, per - Li - Wi - Li / 2, -Li / 2)
        ),
    )
    c = np.where(
        per < Li,
        -Wi / 2,
        np.where(
            per < Li + Wi,
            per - Li - Wi / 2,
            np.where(per < 2 * Li + Wi, Wi / 2, per - 2 * Li - Wi - Wi / 2),
        ),
    )
    z = ground[i] + H[i] * (0.2 + 0.42 * rng.random(i.size, dtype=np.float32))
    rgb = _colour(rng, (paint[i] * 0.85).astype(np.int16), 8)  # as trunc after noise
    x = cc[i, 0].astype(np.float32) + np.where(ax[i] == 0, a, c)
    y = cc[i, 1].astype(np.float32) + np.where(ax[i] == 0, c, a)
    out.append((np.stack([x, y, z], 1), rgb, np.full(i.size, CAR, np.uint8), plan.car_instance[i]))
    return out


def _furniture(rng: np.random.Generator, plan: CityPlan, density: float, pal: dict) -> list[tuple]:
    out = []
    if len(plan.lamp):
        n = max(round(density * 2.5), 4)
        i = np.repeat(np.arange(len(plan.lamp)), n)
        h = rng.random(i.size, dtype=np.float32) * 7.0
        g = plan.terrain.height(plan.lamp[:, 0], plan.lamp[:, 1])
        jit = rng.normal(0, 0.06, (i.size, 2)).astype(np.float32)
        xyz = np.stack([plan.lamp[i, 0] + jit[:, 0], plan.lamp[i, 1] + jit[:, 1], g[i] + h], 1)
        out.append(
            (
                xyz.astype(np.float32),
                _colour(rng, np.broadcast_to(pal["furn"], (i.size, 3)).copy()),
                np.full(i.size, FURN, np.uint8),
                np.full(i.size, -1, np.int32),
            )
        )
    if len(plan.bench):
        be = plan.bench
        hx = np.where(be[:, 2] == 0, 0.9, 0.3)
        hy = np.where(be[:, 2] == 0, 0.3, 0.9)
        boxes = np.stack([be[:, 0] - hx, be[:, 1] - hy, be[:, 0] + hx, be[:, 1] + hy], 1)
        i, x, y, _u, _v = _rect_samples(
            rng, boxes, _counts(rng, np.full(len(be), density * 1.08 * 1.5))
        )
        z = plan.terrain.height(be[:, 0], be[:, 1])[i] + 0.45
        out.append(
            (
                np.stack([x, y, z], 1).astype(np.float32),
                _colour(
                    rng, np.broadcast_to(np.array([120, 90, 60], np.int16), (i.size, 3)).copy()
                ),
                np.full(i.size, FURN, np.uint8),
                np.full(i.size, -1, np.int32),
            )
        )
    fw = plan.free_wall
    if len(fw):
        length = np.hypot(fw[:, 2] - fw[:, 0], fw[:, 3] - fw[:, 1])
        cnt = _counts(rng, density * length * (fw[:, 5] + 2 * _WALL_SHARE * fw[:, 4]))
        i = np.repeat(np.arange(len(fw)), cnt)
        s = rng.random(i.size)
        ts = rng.random(i.size)
        g = plan.terrain.height(fw[:, 0], fw[:, 1])
        top_share = fw[i, 5] / (fw[i, 5] + 2 * _WALL_SHARE * fw[i, 4])
        on_top = ts < top_share
        across = np.where(
            on_top,
            rng.uniform(-0.5, 0.5, i.size) * fw[i, 5],
            np.where(rng.random(i.size) < 0.5, -0.5, 0.5) * fw[i, 5],
        )
        z = g[i] - 0.2 + np.where(on_top, fw[i, 4] + 0.2, rng.random(i.size) * (fw[i, 4] + 0.2))
        horiz = fw[i, 1] == fw[i, 3]
        x = fw[i, 0] + s * (fw[i, 2] - fw[i, 0]) + np.where(horiz, 0.0, across)
        y = fw[i, 1] + s * (fw[i, 3] - fw[i, 1]) + np.where(horiz, across, 0.0)
        out.append(
            (
                np.stack([x, y, z], 1).astype(np.float32),
                _colour(rng, np.broadcast_to(pal["fwall"], (i.size, 3)).copy()),
                np.full(i.size, FWALL, np.uint8),
                np.full(i.size, -1, np.int32),
            )
        )
    return out


def sample_plan(rng: np.random.Generator, plan: CityPlan, density: float) -> SampledPoints:
    """Sample every surface of ``plan`` at ``density`` points per m² of horizontal surface.

    Vertical surfaces (facades, car sides, walls) get ``0.3 · density`` points per m².

    Parameters
    ----------
    rng
        The caller's generator.
    plan
        The block's geometry (local world frame).
    density
        Points per square metre of horizontal surface (> 0).

    Returns
    -------
    SampledPoints
        Points in the local world frame, float32 xyz.
    """
    if not density > 0:
        raise ValueError(f"density: expected > 0 points/m², got {density}")
    pal = PALETTES[plan.style]
    parts = [_ground(rng, plan, density, pal)]
    for fn in (_buildings, _trees, _cars, _furniture):
        parts += fn(rng, plan, density, pal)
    return SampledPoints(
        xyz=np.concatenate([p[0].astype(np.float32, copy=False) for p in parts]),
        rgb=np.concatenate([p[1] for p in parts]),
        kind=np.concatenate([p[2].astype(np.uint8, copy=False) for p in parts]),
        instance=np.concatenate([p[3].astype(np.int32, copy=False) for p in parts]),
    )
