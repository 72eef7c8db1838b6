"""A small city for environment tests: scene cache, landmark index, queries (session fixtures).

Used by ``tests/env`` and ``tests/agents`` (imported by their conftest files). The city is made
here (seeded) so the env tests do not depend on the synthetic generator's evolving layout:
ground, box buildings with walls and roofs (named landmarks), and cars, with instance ids.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from urbex.config import EnvParams, SceneParams
from urbex.env.episode import GroundingEnv, Query
from urbex.io.cityrefer import BoxRecord
from urbex.landmarks import LandmarkIndex, landmarks_from_instances
from urbex.pointcloud import PointCloud

SCENE_ID = "toy_block_0"
BUILDING_NAMES = ("Merton Hall", "St Mary's Church", "Kings College Library", "Perry Barr Stadium")


def _surface(rng: np.random.Generator, x0, y0, x1, y1, z, density) -> np.ndarray:
    n = max(int((x1 - x0) * (y1 - y0) * density), 1)
    xy = rng.uniform([x0, y0], [x1, y1], size=(n, 2))
    return np.column_stack([xy, np.full(n, z) + rng.normal(0, 0.02, n)])


def _walls(rng: np.random.Generator, x0, y0, x1, y1, z0, z1, density) -> np.ndarray:
    per = 2 * ((x1 - x0) + (y1 - y0))
    n = max(int(per * (z1 - z0) * density), 4)
    s = rng.uniform(0, per, n)
    z = rng.uniform(z0, z1, n)
    w, h = x1 - x0, y1 - y0
    x = np.where(
        s < w, x0 + s, np.where(s < w + h, x1, np.where(s < 2 * w + h, x1 - (s - w - h), x0))
    )
    y = np.where(
        s < w,
        y0,
        np.where(s < w + h, y0 + (s - w), np.where(s < 2 * w + h, y1, y1 - (s - 2 * w - h))),
    )
    return np.column_stack([x, y, z])


def make_city(
    size: float = 100.0, density: float = 10.0, seed: int = 0
) -> tuple[PointCloud, list[BoxRecord]]:
    """Ground + 4 named buildings + cars on a 4×4 grid of lots. World frame starts at (1000, 2000, 10)."""
    rng = np.random.default_rng(seed)
    cell = size / 4
    parts, sem, inst, rgb, boxes = [], [], [], [], []
    occupied = []
    next_id = 1
    cells = [(i, j) for i in range(4) for j in range(4)]
    order = rng.permutation(len(cells))
    b_cells = [cells[k] for k in order[:4]]
    c_cells = [cells[k] for k in order[4:]]
    for name, (i, j) in zip(BUILDING_NAMES, b_cells):
        w, d = rng.uniform(0.45, 0.8, 2) * cell
        cx = (i + 0.5) * cell + rng.uniform(-0.05, 0.05) * cell
        cy = (j + 0.5) * cell + rng.uniform(-0.05, 0.05) * cell
        h = rng.uniform(8, 20)
        x0, y0, x1, y1 = cx - w / 2, cy - d / 2, cx + w / 2, cy + d / 2
        p = np.vstack(
            [
                _surface(rng, x0, y0, x1, y1, h, density),
                _walls(rng, x0, y0, x1, y1, 0.0, h, density / 2),
            ]
        )
        col = rng.integers(90, 230, 3)
        parts.append(p)
        sem.append(np.full(len(p), 2))
        inst.append(np.full(len(p), next_id))
        rgb.append(np.clip(col + rng.normal(0, 8, (len(p), 3)), 0, 255))
        occupied.append((x0, y0, x1, y1))
        boxes.append((next_id, "Building", name))
        next_id += 1
    for i, j in c_cells[:8]:
        ax = int(rng.integers(0, 2))
        L, W, H = 4.5, 1.9, 1.5
        w, d = (L, W) if ax == 0 else (W, L)
        cx = (i + 0.5) * cell + rng.uniform(-0.3, 0.3) * cell
        cy = (j + 0.5) * cell + rng.uniform(-0.3, 0.3) * cell
        x0, y0, x1, y1 = cx - w / 2, cy - d / 2, cx + w / 2, cy + d / 2
        p = np.vstack(
            [
                _surface(rng, x0, y0, x1, y1, H, density * 3),
                _walls(rng, x0, y0, x1, y1, 0.2, H, density * 2),
            ]
        )
        col = rng.integers(20, 255, 3)
        parts.append(p)
        sem.append(np.full(len(p), 9))
        inst.append(np.full(len(p), next_id))
        rgb.append(np.clip(col + rng.normal(0, 5, (len(p), 3)), 0, 255))
        occupied.append((x0, y0, x1, y1))
        boxes.append((next_id, "Car", ""))
        next_id += 1
    g = _surface(rng, 0, 0, size, size, 0.0, density)
    keep = np.ones(len(g), bool)
    for x0, y0, x1, y1 in occupied:
        keep &= ~((g[:, 0] >= x0) & (g[:, 0] <= x1) & (g[:, 1] >= y0) & (g[:, 1] <= y1))
    g = g[keep]
    parts.append(g)
    sem.append(np.zeros(len(g)))
    inst.append(np.full(len(g), -1))
    rgb.append(np.clip(np.array([110, 120, 100]) + rng.normal(0, 10, (len(g), 3)), 0, 255))
    xyz = np.vstack(parts)
    offset = np.array([1000.0, 2000.0, 10.0])
    cloud = PointCloud(
        xyz=xyz.astype(np.float32),
        offset=offset,
        rgb=np.vstack(rgb).astype(np.uint8),
        semantic=np.concatenate(sem).astype(np.int32),
        instance=np.concatenate(inst).astype(np.int32),
        class_scheme="sensaturban",
        source="toy",
    )
    inst_all = cloud.instance
    recs = []
    for oid, cname, lm in boxes:
        p = xyz[inst_all == oid] + offset
        lo, hi = p.min(0), p.max(0)
        recs.append(
            BoxRecord(
                object_id=str(oid),
                object_name=cname,
                landmark=lm,
                center=tuple((lo + hi) / 2),
                size=tuple(hi - lo),
                label_id=2 if cname == "Building" else 9,
                instance_id=oid,
            )
        )
    return cloud, recs


def build_city_cache(root: Path, *, size: float = 100.0, density: float = 10.0, seed: int = 0):
    """Build the cache under ``root/SCENE_ID``; returns (SceneCache, LandmarkIndex)."""
    from urbex.scene import SceneCache, build_scene_cache

    cloud, recs = make_city(size, density, seed)
    out = root / SCENE_ID
    build_scene_cache(
        cloud, out, SceneParams(resolution=0.1, global_view_size=512), scene_id=SCENE_ID, boxes=recs
    )
    cache = SceneCache.open(out)
    lm = landmarks_from_instances(cache.instances, scene_id=SCENE_ID)
    return cache, LandmarkIndex(lm)


def queries_from_cache(cache, index: LandmarkIndex) -> list[Query]:
    """One query per instance; cars are described relative to the nearest named building."""
    inst: pl.DataFrame = cache.instances
    named = inst.filter(pl.col("landmark_name") != "")
    out = []
    for r in inst.iter_rows(named=True):
        b3 = [r["x_min"], r["y_min"], r["z_min"], r["x_max"], r["y_max"], r["z_max"]]
        if r["landmark_name"]:
            desc = f"the building called {r['landmark_name']}"
        else:
            d = (named["cx"] - r["cx"]) ** 2 + (named["cy"] - r["cy"]) ** 2
            near = named["landmark_name"][int(d.arg_min())]
            desc = f"the car parked near {near}"
        out.append(
            Query(
                query_id=f"q{r['object_id']}",
                scene_id=SCENE_ID,
                object_id=r["object_id"],
                description=desc,
                target_box_2d=np.array([b3[0], b3[1], b3[3], b3[4]]),
                target_box_3d=np.array(b3),
                class_name=r["class_name"],
            )
        )
    return out


@pytest.fixture(scope="session")
def city(tmp_path_factory):
    """(SceneCache, LandmarkIndex, [Query]) of the toy block (100 m, 10 pts/m², 0.1 m BEV)."""
    cache, index = build_city_cache(tmp_path_factory.mktemp("scenes"))
    return cache, index, queries_from_cache(cache, index)


@pytest.fixture()
def env(city) -> GroundingEnv:
    cache, index, _ = city
    params = EnvParams(global_view_size=(256, 256), zoom_size=(128, 128), oblique_size=(96, 96))
    return GroundingEnv(params, lambda sid: cache, index)


def build_synth_cache(
    root: Path,
    *,
    seed: int = 3,
    size: float = 100.0,
    density: float = 10.0,
    held_out_scene: bool = False,
):
    """A block of the project's synthetic generator as a scene cache + landmark index + queries.

    Targets are the cache's instance boxes (world metres, points' extent); descriptions come from
    :func:`urbex.synth.scene_queries`, worded in the training paraphrase families (plus the
    held-out family when ``held_out_scene``, as the generator words its test scenes).
    """
    from urbex.scene import SceneCache, build_scene_cache
    from urbex.synth import generate_block, scene_queries
    from urbex.synth.phrasing import family_weights

    block = generate_block(seed, size=size, density=density)
    off = np.asarray(block.cloud.offset, dtype=np.float64)
    o = block.objects
    recs = [
        BoxRecord(
            object_id=str(int(iid)),
            object_name=name,
            landmark=lm,
            center=tuple((o.box[k, :3] + o.box[k, 3:]) / 2 + off),
            size=tuple(o.box[k, 3:] - o.box[k, :3]),
            label_id=int(o.label_id[k]),
            instance_id=int(iid),
        )
        for k, (iid, name, lm) in enumerate(zip(o.instance_id, o.object_name, o.landmark))
    ]
    out = root / block.scene_id
    build_scene_cache(
        block.cloud,
        out,
        SceneParams(resolution=0.1, global_view_size=512),
        scene_id=block.scene_id,
        boxes=recs,
    )
    cache = SceneCache.open(out)
    index = LandmarkIndex(landmarks_from_instances(cache.instances, scene_id=block.scene_id))
    inst = {r["object_id"]: r for r in cache.instances.iter_rows(named=True)}
    queries = []
    for i, sq in enumerate(
        scene_queries(
            block,
            seed=seed,
            max_targets_per_class=6,
            max_per_target=2,
            families=family_weights(held_out_scene=held_out_scene),
        )
    ):
        r = inst[sq.object_id]
        b3 = np.array([r["x_min"], r["y_min"], r["z_min"], r["x_max"], r["y_max"], r["z_max"]])
        queries.append(
            Query(
                query_id=f"{block.scene_id}:{i}",
                scene_id=block.scene_id,
                object_id=sq.object_id,
                description=sq.description,
                target_box_2d=b3[[0, 1, 3, 4]],
                target_box_3d=b3,
                class_name=sq.object_name,
            )
        )
    return cache, index, queries


@pytest.fixture(scope="session")
def synth_city(tmp_path_factory):
    """(SceneCache, LandmarkIndex, [Query]) of a synthetic block (100 m, 10 pts/m², 0.1 m BEV)."""
    return build_synth_cache(tmp_path_factory.mktemp("synth_scenes"))


def build_eval_project(root: Path, *, train_seeds: tuple[int, ...] = ()) -> Path:
    """``root/assets`` with {scenes, landmarks, splits} of two (or more) synthetic blocks.

    Scene of seed 3 → ``test_no`` (worded with the held-out paraphrase family too, as the
    generator's test scenes); seed 4 → alternately ``train`` / ``test_nd``; each block of
    ``train_seeds`` → ``train`` (more to learn from, for the trained ranker). Returns the
    assets path (what ``Params(paths={"assets": ...})`` takes).
    """
    from urbex.landmarks import write_landmark_table

    assets = root / "assets"
    rows = []
    for k, seed in enumerate((3, 4, *train_seeds)):
        cache, index, queries = build_synth_cache(
            assets / "scenes", seed=seed, held_out_scene=k == 0
        )
        write_landmark_table(index.table, assets / "landmarks" / f"{cache.scene_id}.parquet")
        for i, q in enumerate(queries):
            split = "test_no" if k == 0 else ("test_nd" if i % 2 and k == 1 else "train")
            rows.append(
                {
                    "query_id": q.query_id,
                    "scene_id": q.scene_id,
                    "object_id": q.object_id,
                    "class_name": q.class_name,
                    "description": q.description,
                    "split": split,
                }
            )
    (assets / "splits").mkdir(parents=True)
    splits = pl.DataFrame(rows)
    splits.write_parquet(assets / "splits" / "queries.parquet")
    write_split_class_sizes(assets, splits)
    return assets


def build_toy_project(root: Path) -> Path:
    """``root/assets`` with {scenes, landmarks, splits} of the toy block alone (one scene, cheap):
    its queries alternately ``test_no`` / ``test_nd``. For model-policy plumbing (tiny models),
    not for accuracy. Returns the assets path."""
    from urbex.landmarks import write_landmark_table

    assets = root / "assets"
    cache, index = build_city_cache(assets / "scenes")
    write_landmark_table(index.table, assets / "landmarks" / f"{cache.scene_id}.parquet")
    rows = [
        {
            "query_id": q.query_id,
            "scene_id": q.scene_id,
            "object_id": q.object_id,
            "class_name": q.class_name,
            "description": q.description,
            "split": "test_nd" if i % 2 else "test_no",
        }
        for i, q in enumerate(queries_from_cache(cache, index))
    ]
    (assets / "splits").mkdir(parents=True)
    pl.DataFrame(rows).write_parquet(assets / "splits" / "queries.parquet")
    return assets


def play_scored(env: GroundingEnv, policy, query: Query, *, seed: int = 0, **kw):
    """Play one episode with the one loop; return ``(trajectory, metrics against the target)``."""
    from urbex.env.play import play_episode
    from urbex.eval.metrics import trajectory_metrics

    traj = play_episode(env, policy, query, seed=seed, **kw)
    return traj, trajectory_metrics(traj, query.target_box_2d[None], 0)


def write_split_class_sizes(assets: Path, splits: pl.DataFrame) -> Path:
    """``<assets>/splits/class_sizes.json`` from a hand-built split table (as the splits stage)."""
    from urbex.annotations.class_sizes import (
        class_sizes_from_splits,
        class_sizes_path,
        write_class_sizes,
    )
    from urbex.annotations.stages import load_instances
    from urbex.config import Params

    sids = sorted(set(splits["scene_id"].to_list()))
    inst = load_instances(Params(paths={"assets": assets}), sids)
    return write_class_sizes(class_sizes_from_splits(splits, inst), class_sizes_path(assets))


# ---------------------------------------------------------------------------------------------
# the untidy independent city: written by this module, not by urbex.synth
# ---------------------------------------------------------------------------------------------

#: Named colours of the untidy city's buildings and cars (sRGB); descriptions use the names.
UNTIDY_COLOURS = {
    "red": (185, 40, 38),
    "blue": (40, 72, 180),
    "white": (232, 232, 230),
    "black": (30, 30, 34),
    "yellow": (225, 200, 50),
    "grey": (125, 125, 128),
}
UNTIDY_NAMES = (
    "Merton Hall", "St Mary's Church", "Kings College Library", "Perry Barr Stadium",
    "Selly Oak Lodge", "Digbeth Works", "Hagley Court", "Edgbaston Mill",
)  # fmt: skip


def _tree(rng: np.random.Generator, cx, cy, density) -> np.ndarray:
    r, top = rng.uniform(1.5, 2.5), rng.uniform(5.0, 8.0)
    n = int(4 * np.pi * r * r * density)
    v = rng.normal(size=(n, 3))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    crown = np.array([cx, cy, top - r]) + v * r * np.array([1, 1, 0.8])
    trunk = np.column_stack(
        [np.full(20, cx), np.full(20, cy), rng.uniform(0, top - 2 * r, 20)]
    ) + rng.normal(0, 0.1, (20, 3)) * np.array([1, 1, 0])
    return np.vstack([crown, trunk])


def make_untidy_city(
    size: float = 100.0, density: float = 10.0, seed: int = 0
) -> tuple[PointCloud, list[BoxRecord], list[dict]]:
    """A city as untidy as a real scan, for the lift and the rankers (not urbex.synth's layout).

    A 4×4 grid of lots: 4 named buildings (the ground is not removed under a 0.4 m strip along
    their walls inside the footprint, as at a real wall base), 2 car parks with 3–5 cars parked
    *inside* them, 2 grass fields (class Ground) with trees standing on them, and 4–6 cars on
    the street. The ground under buildings, car parks and fields is only partly replaced;
    the ground under cars is occluded (no points). World frame starts at (1000, 2000, 10).

    Returns
    -------
    cloud, boxes, facts
        ``facts``: one dict per instance (``object_id``, ``class_name``, ``colour``,
        ``landmark``, ``lot``: the car park's id for a car inside one, else None).
    """
    rng = np.random.default_rng(seed)
    cell = size / 4
    parts, sem, inst, rgb = [], [], [], []
    boxes: list[tuple[int, str, str]] = []
    facts: list[dict] = []
    holes: list[tuple[float, float, float, float]] = []  # general ground removed inside
    order = rng.permutation(16)
    cells = [(int(k) // 4, int(k) % 4) for k in order]
    names = [UNTIDY_NAMES[k] for k in rng.permutation(len(UNTIDY_NAMES))[:4]]
    next_id = 1

    def add(p, s, iid, col, noise=8.0):
        parts.append(p)
        sem.append(np.full(len(p), s))
        inst.append(np.full(len(p), iid))
        rgb.append(np.clip(np.asarray(col) + rng.normal(0, noise, (len(p), 3)), 0, 255))

    def colour():
        name = list(UNTIDY_COLOURS)[int(rng.integers(len(UNTIDY_COLOURS)))]
        return name, np.array(UNTIDY_COLOURS[name])

    def car(x0, y0, ax, lot):
        nonlocal next_id
        L, W, H = rng.uniform(4.2, 4.9), rng.uniform(1.8, 2.0), rng.uniform(1.4, 1.7)
        w, d = (L, W) if ax == 0 else (W, L)
        x1, y1 = x0 + w, y0 + d
        cname, col = colour()
        p = np.vstack(
            [
                _surface(rng, x0, y0, x1, y1, H, density * 3),
                _walls(rng, x0, y0, x1, y1, 0.25, H, density * 2),
            ]
        )
        add(p, 9, next_id, col, 5.0)
        holes.append((x0, y0, x1, y1))
        boxes.append((next_id, "Car", ""))
        facts.append(
            {"object_id": str(next_id), "class_name": "Car", "colour": cname, "landmark": "",
             "lot": lot}
        )  # fmt: skip
        next_id += 1

    for name, (i, j) in zip(names, cells[:4]):
        w, d = rng.uniform(0.45, 0.8, 2) * cell
        cx, cy = (i + 0.5) * cell, (j + 0.5) * cell
        h = rng.uniform(6, 22)
        x0, y0, x1, y1 = cx - w / 2, cy - d / 2, cx + w / 2, cy + d / 2
        cname, col = colour()
        p = np.vstack(
            [
                _surface(rng, x0, y0, x1, y1, h, density),
                _walls(rng, x0, y0, x1, y1, 0.0, h, density / 2),
            ]
        )
        add(p, 2, next_id, col)
        holes.append((x0 + 0.4, y0 + 0.4, x1 - 0.4, y1 - 0.4))  # a ground strip at the wall base
        boxes.append((next_id, "Building", name))
        facts.append(
            {"object_id": str(next_id), "class_name": "Building", "colour": cname,
             "landmark": name, "lot": None}
        )  # fmt: skip
        next_id += 1
    for i, j in cells[4:6]:  # car parks with cars inside
        w, d = rng.uniform(0.7, 0.9, 2) * cell
        x0, y0 = (i + 0.5) * cell - w / 2, (j + 0.5) * cell - d / 2
        x1, y1 = x0 + w, y0 + d
        lot_id = next_id
        next_id += 1
        boxes.append((lot_id, "Parking", ""))
        facts.append(
            {"object_id": str(lot_id), "class_name": "Parking", "colour": "grey", "landmark": "",
             "lot": None}
        )  # fmt: skip
        n_cars = int(rng.integers(3, 6))
        slots = rng.permutation(int(w // 2.6))[:n_cars]
        start = len(holes)
        for s in slots:
            car(x0 + 0.3 + 2.6 * s, y0 + rng.uniform(0.3, 1.5), 1, str(lot_id))
        p = _surface(rng, x0, y0, x1, y1, 0.05, density)
        keep = np.ones(len(p), bool)
        for hx0, hy0, hx1, hy1 in holes[start:]:
            keep &= ~((p[:, 0] >= hx0) & (p[:, 0] <= hx1) & (p[:, 1] >= hy0) & (p[:, 1] <= hy1))
        add(p[keep], 5, lot_id, (100, 100, 104))
        holes.append((x0, y0, x1, y1))
    for i, j in cells[6:8]:  # grass fields with trees on them
        w, d = rng.uniform(0.6, 0.85, 2) * cell
        x0, y0 = (i + 0.5) * cell - w / 2, (j + 0.5) * cell - d / 2
        x1, y1 = x0 + w, y0 + d
        p = _surface(rng, x0, y0, x1, y1, 0.03, density)
        add(p, 0, next_id, (80, 125, 60), 10.0)
        for _ in range(2):
            t = _tree(rng, rng.uniform(x0 + 3, x1 - 3), rng.uniform(y0 + 3, y1 - 3), density)
            add(t, 1, -1, (50, 85, 40), 10.0)
        holes.append((x0, y0, x1, y1))
        boxes.append((next_id, "Ground", ""))
        facts.append(
            {"object_id": str(next_id), "class_name": "Ground", "colour": "green", "landmark": "",
             "lot": None}
        )  # fmt: skip
        next_id += 1
    for i, j in cells[8 : 8 + int(rng.integers(4, 7))]:  # cars on the street
        cx = (i + 0.5) * cell + rng.uniform(-0.3, 0.3) * cell
        cy = (j + 0.5) * cell + rng.uniform(-0.3, 0.3) * cell
        car(cx - 2.2, cy - 1.0, int(rng.integers(0, 2)), None)
    g = _surface(rng, 0, 0, size, size, 0.0, density)
    keep = np.ones(len(g), bool)
    for x0, y0, x1, y1 in holes:
        keep &= ~((g[:, 0] >= x0) & (g[:, 0] <= x1) & (g[:, 1] >= y0) & (g[:, 1] <= y1))
    add(g[keep], 0, -1, (115, 112, 100), 10.0)
    xyz = np.vstack(parts)
    offset = np.array([1000.0, 2000.0, 10.0])
    cloud = PointCloud(
        xyz=xyz.astype(np.float32),
        offset=offset,
        rgb=np.vstack(rgb).astype(np.uint8),
        semantic=np.concatenate(sem).astype(np.int32),
        instance=np.concatenate(inst).astype(np.int32),
        class_scheme="sensaturban",
        source="untidy",
    )
    label = {"Building": 2, "Car": 9, "Parking": 5, "Ground": 0}
    recs = []
    for oid, cname, lm in boxes:
        p = xyz[cloud.instance == oid] + offset
        lo, hi = p.min(0), p.max(0)
        recs.append(
            BoxRecord(
                object_id=str(oid),
                object_name=cname,
                landmark=lm,
                center=tuple((lo + hi) / 2),
                size=tuple(hi - lo),
                label_id=label[cname],
                instance_id=oid,
            )
        )
    return cloud, recs, facts


def _compass(dx: float, dy: float) -> str:
    if abs(dx) > 2 * abs(dy):
        return "east" if dx > 0 else "west"
    if abs(dy) > 2 * abs(dx):
        return "north" if dy > 0 else "south"
    return ("north" if dy > 0 else "south") + ("east" if dx > 0 else "west")


def untidy_descriptions(inst: pl.DataFrame, facts: list[dict], seed: int) -> list[dict]:
    """Two descriptions per instance, phrased unlike urbex.synth (plainer, human-like)."""
    rng = np.random.default_rng(seed)
    by_id = {f["object_id"]: f for f in facts}
    rows = {r["object_id"]: r for r in inst.iter_rows(named=True)}
    named = [r for r in rows.values() if r["landmark_name"]]
    out = []
    for oid, f in by_id.items():
        r = rows[oid]
        near = min(named, key=lambda n: (n["cx"] - r["cx"]) ** 2 + (n["cy"] - r["cy"]) ** 2)
        where = _compass(r["cx"] - near["cx"], r["cy"] - near["cy"])
        lm = near["landmark_name"]
        c = f["colour"]
        if f["class_name"] == "Building":
            texts = [
                f"{f['landmark']}, the {c} building",
                f"the building known as {f['landmark']}",
            ]
        elif f["class_name"] == "Car" and f["lot"] is not None:
            texts = [
                f"a {c} car standing in the car park {where} of {lm}",
                f"{c} vehicle in the parking lot near {lm}",
            ]
        elif f["class_name"] == "Car":
            texts = [
                f"a {c} car on the street {where} of {lm}",
                f"the {c} vehicle parked by itself close to {lm}",
            ]
        elif f["class_name"] == "Parking":
            texts = [f"the car park {where} of {lm}", f"parking lot with cars, near {lm}"]
        else:
            texts = [f"the grass field with trees {where} of {lm}", f"green field next to {lm}"]
        for k in rng.permutation(2):
            out.append({"object_id": oid, "class_name": f["class_name"], "description": texts[k]})
    return out


def build_untidy_project(root: Path, *, seeds: tuple[int, ...] = (0, 1, 2, 3, 4, 5)) -> Path:
    """``root/assets`` with {scenes, landmarks, splits} of untidy cities (one scene per seed).

    Splits: the last seed's scene → ``test_no``, the one before → ``val``; the others' first
    description of each instance → ``train``, the second → ``test_nd``. Returns the assets path.
    """
    from urbex.landmarks import write_landmark_table
    from urbex.scene import SceneCache, build_scene_cache

    assets = root / "assets"
    rows = []
    for k, seed in enumerate(seeds):
        sid = f"untidy_block_{seed}"
        cloud, recs, facts = make_untidy_city(seed=seed)
        build_scene_cache(
            cloud,
            assets / "scenes" / sid,
            SceneParams(resolution=0.1, global_view_size=512),
            scene_id=sid,
            boxes=recs,
        )
        cache = SceneCache.open(assets / "scenes" / sid)
        lm = landmarks_from_instances(cache.instances, scene_id=sid)
        write_landmark_table(lm, assets / "landmarks" / f"{sid}.parquet")
        seen: set[str] = set()
        for i, d in enumerate(untidy_descriptions(cache.instances, facts, seed)):
            if k == len(seeds) - 1:
                split = "test_no"
            elif k == len(seeds) - 2:
                split = "val"
            else:
                split = "test_nd" if d["object_id"] in seen else "train"
            seen.add(d["object_id"])
            rows.append({"query_id": f"{sid}:{i}", "scene_id": sid, **d, "split": split})
    (assets / "splits").mkdir(parents=True)
    splits = pl.DataFrame(rows).select(
        "query_id", "scene_id", "object_id", "class_name", "description", "split"
    )
    splits.write_parquet(assets / "splits" / "queries.parquet")
    write_split_class_sizes(assets, splits)
    return assets
