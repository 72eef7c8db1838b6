"""STPLS3D-Refer: a zero-shot grounding benchmark built from a scene with semantics only.

Steps (paper appendix B.2, automated): cluster the building and vehicle masks into
pseudo-instances (:mod:`urbex.annotations.pseudo_instances`), register the OSM-style landmark
file into the scene frame, describe each pseudo-instance by its class, colour, size rank and its
nearest landmark with a compass direction, keep only expressions that exactly one
pseudo-instance satisfies, and write everything in the CityRefer layout so the same pipeline
(caches, landmark tables, cleaning, evaluation) runs on it:

``<out>/scans/<id>/<id>.ply`` (SensatUrban classes, georeferenced doubles + ``comment crs``),
``<out>/scans/<id>/<id>.segs.json`` (pseudo-instances), ``<out>/box3d/<id>_bbox.json``,
``<out>/meta_data/CityRefer_test.json``, ``<out>/landmarks/<id>.geojson``, plus
``<out>/pseudo_instances/<id>.parquet`` and ``<out>/summary.json``.

Frames: world metres of the registered CRS (``xyz + offset`` of the written cloud); the scene's
landmark file is in that CRS, so downstream registration needs no extra offset.
"""

from __future__ import annotations

import colorsys
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import NDArray

from urbex.annotations.pseudo_instances import evaluate_clusters, pseudo_instances
from urbex.annotations.refer_relations import (
    anchor_candidates,
    colour_size_candidates,
    row_candidates,
)
from urbex.atomic import atomic_path
from urbex.io.cityrefer import Annotation, BoxRecord, write_annotations, write_box3d, write_segs
from urbex.io.ply import write_ply
from urbex.pointcloud import PointCloud

__all__ = [
    "STPLS3D_TO_SENSATURBAN",
    "ReferScene",
    "colour_name",
    "compass",
    "evaluate_clusters",
    "generate_expressions",
    "make_refer_scene",
    "refer_counts",
    "write_refer_scene",
]

#: STPLS3D semantic id → SensatUrban class id (for the CityRefer-layout PLY).
STPLS3D_TO_SENSATURBAN: dict[int, int] = {
    0: 0, 1: 2, 2: 1, 3: 1, 4: 1, 5: 9, 6: 9, 7: 8, 8: 9, 9: 11, 10: 11, 11: 8, 12: 8,
    13: 8, 14: 3, 15: 7, 16: 0, 17: 2, 18: 0, 19: 0,
}  # fmt: skip
_LABEL_ID = {"Building": 2, "Car": 9}
_DIRS = ("east", "north-east", "north", "north-west", "west", "south-west", "south", "south-east")


def colour_name(rgb: Sequence[float]) -> str:
    """Basic colour word of a mean RGB (0–255).

    Examples
    --------
    >>> colour_name([200, 30, 30]), colour_name([240, 240, 235]), colour_name([20, 20, 25])
    ('red', 'white', 'black')
    >>> colour_name([90, 60, 30])
    'brown'
    """
    r, g, b = (float(v) / 255.0 for v in rgb)
    if not np.isfinite([r, g, b]).all():
        return "unknown"
    h, s, v = colorsys.rgb_to_hsv(r, g, b)
    if v < 0.2:
        return "black"
    if s < 0.18:
        return "white" if v > 0.8 else ("grey" if v > 0.35 else "black")
    deg = h * 360.0
    if deg < 15 or deg >= 335:
        return "red" if v >= 0.5 else "brown"
    if deg < 45:
        return "orange" if v >= 0.6 else "brown"
    if deg < 70:
        return "yellow"
    if deg < 170:
        return "green"
    if deg < 260:
        return "blue"
    return "purple"


def compass(dx: float, dy: float) -> str:
    """8-way compass word of a direction (x east, y north).

    >>> compass(1, 0), compass(0, 1), compass(-1, -1)
    ('east', 'north', 'south-west')
    """
    ang = np.degrees(np.arctan2(dy, dx)) % 360.0
    return _DIRS[int(((ang + 22.5) % 360.0) // 45.0)]


def _relation_matrix(
    inst: pl.DataFrame, landmarks: pl.DataFrame, max_dist: float
) -> tuple[NDArray[np.object_], NDArray[np.float64]]:
    """Relation word (``""`` = none) and gap (m, inf = none) of every instance (M) to every
    landmark (L), shapes (M, L): ``in``/``on`` when touching, else the compass direction from
    the landmark's nearest point to the instance's box centre; none beyond ``max_dist`` or when
    the landmark *is* the instance (its footprint mostly covered by the instance's box)."""
    import shapely

    m, n = inst.height, landmarks.height
    rel = np.full((m, n), "", dtype=object)
    dist = np.full((m, n), np.inf)
    if m == 0 or n == 0:
        return rel, dist
    geoms = shapely.from_wkt(landmarks["footprint_wkt"].to_list())
    kinds = landmarks["kind"].to_list()
    boxes = shapely.box(*(inst[c].to_numpy() for c in ("x_min", "y_min", "x_max", "y_max")))
    cent = shapely.centroid(boxes)
    for j, g in enumerate(geoms):
        d = shapely.distance(boxes, g)
        own = shapely.area(shapely.intersection(boxes, g)) > 0.5 * max(shapely.area(g), 1e-9)
        ok = ~own & (d <= max_dist)
        dist[ok, j] = d[ok]
        rel[ok & (d == 0.0), j] = "on" if kinds[j] == "road" else "in"
        far = np.flatnonzero(ok & (d > 0.0))
        for k, line in zip(far.tolist(), shapely.shortest_line(g, cent[far])):
            p = shapely.get_coordinates(line)
            rel[k, j] = compass(p[1, 0] - p[0, 0], p[1, 1] - p[0, 1])
    return rel, dist


def _own_landmark(inst: pl.DataFrame, landmarks: pl.DataFrame) -> list[str]:
    """Name of the building landmark a building pseudo-instance covers ("" if none)."""
    import shapely

    out = [""] * inst.height
    lm = landmarks.filter(pl.col("kind") == "building") if not landmarks.is_empty() else landmarks
    if lm.is_empty():
        return out
    geoms = shapely.from_wkt(lm["footprint_wkt"].to_list())
    areas = np.maximum(shapely.area(geoms), 1e-9)
    for i, r in enumerate(inst.iter_rows(named=True)):
        if r["object_name"] != "Building":
            continue
        box = shapely.box(r["x_min"], r["y_min"], r["x_max"], r["y_max"])
        cover = shapely.area(shapely.intersection(box, geoms)) / areas
        j = int(np.argmax(cover))
        if cover[j] > 0.5:
            out[i] = str(lm["name"][j])
    return out


#: A superlative ("the largest car") needs the winner to beat the runner-up by this ratio, so it
#: is visible in the data (as :class:`urbex.synth.expressions.Extreme`).
SUPERLATIVE_MARGIN = 1.25


def _beats(vals: NDArray[np.float64], i: int, scope: NDArray[np.bool_], *, larger: bool) -> bool:
    """Whether ``vals[i]`` is the extreme of ``vals[scope]`` by :data:`SUPERLATIVE_MARGIN`."""
    others = vals[scope & (np.arange(vals.size) != i)]
    if not others.size or not np.isfinite(vals[i]):
        return False
    if larger:
        return bool(vals[i] >= SUPERLATIVE_MARGIN * others.max())
    return bool(vals[i] * SUPERLATIVE_MARGIN <= others.min())


#: Short phrases of a unique object by the template that singled it out (anchors of
#: "the car closest to ..."); landmark-free templates only.
ANCHOR_PHRASES: dict[str, str] = {
    "colour": "the {colour} {noun}",
    "largest_scene": "the largest {noun}",
    "tallest_scene": "the tallest {noun}",
}


def _interleave(kept: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """Candidates alternating landmark-bound / landmark-free (each in its given order), so a
    target's first two expressions are one of each when it has both; no duplicate text."""
    seen: set[str] = set()
    uniq: list[tuple[str, str, str]] = []
    for k in kept:
        if k[1] not in seen:
            seen.add(k[1])
            uniq.append(k)
    a = [k for k in uniq if k[2]]
    b = [k for k in uniq if not k[2]]
    out: list[tuple[str, str, str]] = []
    for x, y in zip(a, b):
        out += [x, y]
    n = min(len(a), len(b))
    return out + a[n:] + b[n:]


def _base_candidates(
    i: int,
    cls: NDArray[np.object_],
    col: NDArray[np.object_],
    area: NDArray[np.float64],
    height: NDArray[np.float64],
    relm: NDArray[np.object_],
    near: NDArray[np.int64],
    lmk: NDArray[np.object_],
    rl: NDArray[np.object_],
    noun: dict[str, str],
) -> list[tuple[str, str, NDArray[np.bool_]]]:
    """The simple families of target ``i``: nearest landmark + relation (+ colour, + size
    within it), the only one of its colour, scene-wide superlatives; each with its mask."""
    m = cls.size
    same = cls == cls[i]
    nn = noun.get(str(cls[i]), str(cls[i]).lower())
    cands: list[tuple[str, str, NDArray[np.bool_]]] = []
    if lmk[i]:
        # every same-class instance in that relation to that landmark, nearest or not
        scope = same & (relm[:, near[i]] == rl[i])
        where = f"{rl[i]} {lmk[i]}" if rl[i] in ("in", "on") else f"{rl[i]} of {lmk[i]}"
        cands.append(("landmark", f"the {nn} {where}", scope))
        if col[i] != "unknown":
            cands.append(("colour_landmark", f"the {col[i]} {nn} {where}", scope & (col == col[i])))
        if scope.sum() >= 2:
            big = _beats(area, i, scope, larger=True)
            small = _beats(area, i, scope, larger=False)
            if big or small:
                word = "largest" if big else "smallest"
                one = np.zeros(m, bool)
                one[i] = True
                cands.append(
                    ("size_landmark", f"the {word} of the {int(scope.sum())} {nn}s {where}", one)
                )
    if col[i] not in ("unknown",):
        cands.append(("colour", f"the only {col[i]} {nn} in the scene", same & (col == col[i])))
    sups = (
        (("largest", area), ("tallest", height)) if cls[i] == "Building" else (("largest", area),)
    )
    for word, vals in sups:
        if same.sum() >= 2 and _beats(vals, i, same, larger=True):
            one = np.zeros(m, bool)
            one[i] = True
            cands.append((f"{word}_scene", f"the {word} {nn} in the scene", one))
    return cands


def generate_expressions(
    instances: pl.DataFrame,
    landmarks: pl.DataFrame,
    *,
    scene_id: str,
    max_per_target: int = 2,
    max_landmark_distance: float = 120.0,
) -> tuple[pl.DataFrame, dict[str, int]]:
    """Referring expressions that select exactly one pseudo-instance.

    Candidate expressions per target, from simple to rich: nearest landmark + relation;
    colour + landmark relation; size superlative within the landmark relation; colour alone
    ("the only red car"); scene-wide superlative; and the families of
    :mod:`urbex.annotations.refer_relations`: the ordinal position within a uniquely named row
    of parked cars, the (colour) object closest to a unique object or to a landmark / road,
    colour + size superlatives. An expression is kept only if exactly one pseudo-instance (the
    target) satisfies it; targets without one are counted as ambiguous. Landmark-free
    expressions (``landmark == ""``: colour, superlatives, rows, closest to a unique object)
    are a family of their own: a target's kept expressions alternate landmark-bound and
    landmark-free.

    Parameters
    ----------
    instances
        Pseudo-instance table (:func:`pseudo_instances`), world metres.
    landmarks
        Registered landmark table (:mod:`urbex.landmarks`), same frame.
    scene_id
        Written into every row.
    max_per_target
        Expressions kept per target.
    max_landmark_distance
        Metres; farther landmarks are not used.

    Returns
    -------
    expressions : polars.DataFrame
        ``scene_id, object_id, object_name, ann_id, description, template, landmark,
        n_distractors`` (same-class pseudo-instances within 30 m of the target).
    counts : dict
        ``targets``, ``described``, ``ambiguous`` (targets with no unique expression),
        ``expressions``, ``landmark_free`` (expressions naming no landmark).
    """
    relm, dist = _relation_matrix(instances, landmarks, max_landmark_distance)
    m = instances.height
    lmk = np.full(m, "", dtype=object)  # nearest landmark used (name) and its relation
    rl = np.full(m, "", dtype=object)
    near = np.zeros(m, dtype=np.int64)
    if landmarks.height:
        near = np.argmin(dist, axis=1)
        has = np.isfinite(dist[np.arange(m), near])
        lmk[has] = np.array(landmarks["name"].to_list(), dtype=object)[near[has]]
        rl[has] = relm[np.arange(m), near][has]
    inst = instances.with_columns(
        pl.Series("colour", [colour_name([np.nan if v is None else v for v in c]) for c in instances.select("mean_r", "mean_g", "mean_b").rows()], dtype=pl.String),
        (pl.col("dx") * pl.col("dy")).alias("area"),
    )  # fmt: skip
    rows = inst.to_dicts()
    cls = np.array([r["object_name"] for r in rows], dtype=object)
    col = np.array([r["colour"] for r in rows], dtype=object)
    area = np.array([r["area"] for r in rows], dtype=np.float64)
    height = np.array([r["dz"] for r in rows], dtype=np.float64)
    cxy = np.array([[r["cx"], r["cy"]] for r in rows], dtype=np.float64).reshape(-1, 2)
    noun = {"Building": "building", "Car": "car"}
    per: list[list[tuple[str, str, NDArray[np.bool_], str]]] = [[] for _ in rows]
    for i in range(len(rows)):
        for tmpl, desc, mask in _base_candidates(
            i, cls, col, area, height, relm, near, lmk, rl, noun
        ):
            per[i].append((tmpl, desc, mask, str(lmk[i]) if "landmark" in tmpl else ""))
    # unique, landmark-free objects are anchors of "the car closest to <anchor>"
    anchors: list[tuple[int, str]] = []
    for i, cands in enumerate(per):
        for tmpl, _desc, mask, _ in cands:
            if int(mask.sum()) == 1 and bool(mask[i]) and tmpl in ANCHOR_PHRASES:
                anchors.append(
                    (
                        i,
                        ANCHOR_PHRASES[tmpl].format(
                            colour=col[i], noun=noun.get(str(cls[i]), "object")
                        ),
                    )
                )
                break
    dxy = np.array([[r["dx"], r["dy"]] for r in rows], dtype=np.float64).reshape(-1, 2)
    extra = [
        *row_candidates(cls, cxy, dxy),
        *anchor_candidates(inst, cls, col, anchors, landmarks),
        *colour_size_candidates(cls, col, area, SUPERLATIVE_MARGIN),
    ]
    for c in extra:
        per[c.target].append((c.template, c.description, c.mask, c.landmark))
    out: list[dict[str, Any]] = []
    ambiguous = 0
    for i, r in enumerate(rows):
        same = cls == cls[i]
        n_near = int(np.sum(same & (np.hypot(*(cxy - cxy[i]).T) <= 30.0))) - 1
        kept = _interleave(
            [(t, d, lm) for t, d, m, lm in per[i] if int(m.sum()) == 1 and bool(m[i])]
        )
        if not kept:
            ambiguous += 1
            continue
        for k, (tmpl, desc, lm) in enumerate(kept[:max_per_target]):
            out.append(
                {
                    "scene_id": scene_id, "object_id": str(r["object_id"]), "object_name": str(cls[i]),
                    "ann_id": k, "description": desc, "template": tmpl,
                    "landmark": lm, "n_distractors": n_near,
                }
            )  # fmt: skip
    schema = {"scene_id": pl.String, "object_id": pl.String, "object_name": pl.String, "ann_id": pl.Int64,
              "description": pl.String, "template": pl.String, "landmark": pl.String, "n_distractors": pl.Int64}  # fmt: skip
    df = pl.DataFrame(out, schema=schema)
    counts = {
        "targets": len(rows),
        "described": int(df["object_id"].n_unique()) if df.height else 0,
        "ambiguous": ambiguous,
        "expressions": df.height,
        "landmark_free": int((df["landmark"] == "").sum()) if df.height else 0,
    }
    return df, counts


@dataclass(frozen=True, slots=True, kw_only=True)
class ReferScene:
    """One STPLS3D-Refer scene before writing.

    Attributes
    ----------
    scene_id : str
    cloud : PointCloud
        Georeferenced (``xyz + offset`` in ``crs``), SensatUrban classes, no instance layer.
    instance : ndarray, shape (N,), int32
        Pseudo-instance id per point (-1 none).
    instances : polars.DataFrame
        Pseudo-instance table (world metres of ``cloud``'s frame) with ``landmark``.
    expressions : polars.DataFrame
        See :func:`generate_expressions`.
    summary : dict
        Counts and, when truth was given, cluster precision/recall.
    """

    scene_id: str
    cloud: PointCloud
    instance: NDArray[np.int32]
    instances: pl.DataFrame
    expressions: pl.DataFrame
    summary: dict[str, Any]


def make_refer_scene(
    cloud: PointCloud,
    *,
    scene_id: str,
    landmarks: pl.DataFrame,
    params: Any,
    register_offset: Sequence[float] = (0.0, 0.0, 0.0),
    crs: str | None = None,
    true_instance: NDArray[np.integer] | None = None,
) -> ReferScene:
    """Cluster, describe and (optionally) evaluate one STPLS3D scene.

    Parameters
    ----------
    cloud
        STPLS3D cloud (``class_scheme='stpls3d'``), world = ``xyz + offset``.
    scene_id
        Output scene id.
    landmarks
        Landmark table already registered into the frame of ``world + register_offset``'s
        *inverse*, i.e. into ``cloud``'s world frame (see :func:`urbex.landmarks.landmarks_from_geojson`).
    params
        :class:`urbex.config.Stpls3dReferParams`.
    register_offset : sequence of 3 float
        Added to the cloud's offset in the output so its world frame is the CRS frame.
    crs
        CRS written into the output cloud.
    true_instance : ndarray, shape (N,), optional
        Hidden true instance ids; adds ``cluster_eval`` (all / building / car) to the summary.
    """
    if cloud.semantic is None:
        raise ValueError(f"scene {scene_id!r}: the cloud has no semantic layer to cluster")
    world = cloud.world_xyz()
    instance, table = pseudo_instances(world, cloud.semantic, cloud.rgb, params=params)
    table = table.with_columns(
        pl.Series("landmark", _own_landmark(table, landmarks), dtype=pl.String),
    )
    expr, counts = generate_expressions(
        table,
        landmarks,
        scene_id=scene_id,
        max_per_target=params.max_expressions_per_target,
        max_landmark_distance=params.landmark_max_distance_m,
    )
    summary: dict[str, Any] = {
        "scene_id": scene_id,
        "n_points": len(cloud),
        "n_buildings": int((table["object_name"] == "Building").sum()),
        "n_vehicles": int((table["object_name"] == "Car").sum()),
        "n_landmarks": landmarks.height,
        **counts,
    }
    if true_instance is not None:
        summary["cluster_eval"] = cluster_report(
            instance, np.asarray(true_instance), cloud.semantic, table, params
        )
    sem = np.asarray(cloud.semantic)
    lut = np.zeros(max(int(sem.max()) + 1, 20) if sem.size else 20, dtype=np.int32)
    for k, v in STPLS3D_TO_SENSATURBAN.items():
        lut[k] = v
    off = np.asarray(cloud.offset, np.float64) + np.asarray(register_offset, np.float64)
    shift = np.asarray(register_offset, np.float64)
    out_cloud = PointCloud(
        xyz=cloud.xyz, offset=off, rgb=cloud.rgb, semantic=lut[np.clip(sem, 0, None)],
        class_scheme="sensaturban", crs=crs, source=cloud.source,
    )  # fmt: skip
    table = table.with_columns(
        [pl.col(c) + float(shift[k % 3]) for k, c in enumerate(("x_min", "y_min", "z_min", "x_max", "y_max", "z_max"))]
        + [pl.col(c) + float(shift[k]) for k, c in enumerate(("cx", "cy", "cz"))]
    )  # fmt: skip
    return ReferScene(scene_id=scene_id, cloud=out_cloud, instance=instance, instances=table, expressions=expr, summary=summary)  # fmt: skip


def cluster_report(
    pred: NDArray[np.integer], true: NDArray[np.integer], semantic: NDArray[np.integer],
    table: pl.DataFrame, params: Any,
) -> dict[str, Any]:  # fmt: skip
    """Cluster precision/recall overall and per class against true instances of the target
    classes (a true instance's class = majority semantic of its points)."""
    true = np.asarray(true, dtype=np.int64)
    sem = np.asarray(semantic, dtype=np.int64)
    ok = true >= 0
    ids, inv = np.unique(true[ok], return_inverse=True)
    nsem = int(sem.max()) + 1 if sem.size else 1
    hist = np.zeros((ids.size, nsem), dtype=np.int64)
    np.add.at(hist, (inv, sem[ok]), 1)
    major = hist.argmax(axis=1) if ids.size else np.zeros(0, np.int64)
    groups = {"building": params.building_classes, "car": params.vehicle_classes}
    out: dict[str, Any] = {}
    all_true = ids[np.isin(major, [*params.building_classes, *params.vehicle_classes])]
    out["all"] = evaluate_clusters(pred, true, true_ids=all_true.tolist())
    for name, classes in groups.items():
        obj = "Building" if name == "building" else "Car"
        keep = table.filter(pl.col("object_name") == obj)["object_id"].cast(pl.Int64).to_numpy()
        p = np.where(np.isin(pred, keep), pred, -1)
        out[name] = evaluate_clusters(p, true, true_ids=ids[np.isin(major, classes)].tolist())
    return out


def write_refer_scene(
    scene: ReferScene, out_root: str | Path, *, landmark_file: str | Path | None = None
) -> None:
    """Write one scene in the CityRefer layout (see the module docstring); atomic per file.

    ``meta_data/CityRefer_test.json`` is *rewritten* from ``<out>/expressions/*.parquet`` so it
    holds every written scene's expressions.
    """

    out = Path(out_root)
    sid = scene.scene_id
    write_ply(out / "scans" / sid / f"{sid}.ply", scene.cloud)
    inst = scene.instance
    order = np.argsort(inst, kind="stable")
    sorted_ids = inst[order]
    uniq, start = np.unique(sorted_ids, return_index=True)
    ends = np.append(start[1:], order.size)
    segs = {int(u): order[a:b] for u, a, b in zip(uniq, start, ends) if u >= 0}
    write_segs(out / "scans" / sid / f"{sid}.segs.json", segs)
    boxes = [
        BoxRecord(
            object_id=r["object_id"], object_name=r["object_name"], landmark=r["landmark"],
            center=(r["cx"], r["cy"], r["cz"]), size=(r["dx"], r["dy"], r["dz"]),
            label_id=_LABEL_ID[r["object_name"]], instance_id=int(r["object_id"]),
        )
        for r in scene.instances.iter_rows(named=True)
    ]  # fmt: skip
    write_box3d(out / "box3d" / f"{sid}_bbox.json", sid, boxes)
    for sub, df in (("pseudo_instances", scene.instances), ("expressions", scene.expressions)):
        with atomic_path(out / sub / f"{sid}.parquet") as tmp:
            df.write_parquet(tmp)
    if landmark_file is not None:
        with atomic_path(out / "landmarks" / f"{sid}.geojson") as tmp:
            shutil.copyfile(landmark_file, tmp)
    frames = [
        pl.read_parquet(f, glob=False) for f in sorted((out / "expressions").glob("*.parquet"))
    ]
    anns = [
        Annotation(scene_id=r["scene_id"], object_id=r["object_id"], object_name=r["object_name"],
                   ann_id=int(r["ann_id"]), description=r["description"])
        for df in frames for r in df.iter_rows(named=True)
    ]  # fmt: skip
    write_annotations(out / "meta_data" / "CityRefer_test.json", anns)


def refer_counts(out_root: str | Path) -> dict[str, Any]:
    """Totals over the scenes of a built ``summary.json``: ``targets``, ``expressions``,
    ``landmark_free``, ``ambiguous`` and ``ambiguity_drop_rate`` (ambiguous / targets)."""
    import json

    scenes = json.loads((Path(out_root) / "summary.json").read_text(encoding="utf-8"))["scenes"]
    out: dict[str, Any] = {k: int(sum(s.get(k, 0) for s in scenes)) for k in ("targets", "expressions", "landmark_free", "ambiguous")}  # fmt: skip
    out["ambiguity_drop_rate"] = (
        round(out["ambiguous"] / out["targets"], 4) if out["targets"] else 0.0
    )
    return out
