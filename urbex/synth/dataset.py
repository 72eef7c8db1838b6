"""Write a synthetic data set in the real layouts (CityRefer, LAS/LAZ, STPLS3D) + a manifest.

Layout under ``out_dir`` (see ``DATA_FORMATS.md``)::

    scans/<id>/<id>.ply, <id>.segs.json        SensatUrban PLY (float32 local xyz) + segments
    box3d/<id>_bbox.json                         instance boxes (local frame), landmark names
    meta_data/CityRefer_{train,val,test}.json    descriptions (valid rows + planted defects)
    false_segments/false_segments.csv            area,block_id,object_id
    landmarks/<id>.geojson                       named buildings/parks/car parks + roads, EPSG:27700
    las/<id>.laz, las/<id>.geojson               ASPRS classes, instance extra dim, CRS + offset
    stpls3d/RealWorldData/<ID>_points.txt        STPLS3D semantics, no instance column
    stpls3d/landmarks/<ID>.geojson, stpls3d/hidden/<ID>_instances.npy, <ID>_objects.json
    synth_manifest.json                          params, seed, scenes (split, CRS, offset), defects,
                                                 phrasings (paraphrase family + noise of each valid row)

Descriptions of ``test`` scenes (the held-out scenes, ``test_no``) may use the held-out
paraphrase families :data:`urbex.synth.phrasing.HELD_OUT_FAMILIES`; ``train`` and ``val`` scenes
never do (``test_nd`` is drawn from training scenes, so it never does either).

Frames
------
PLY, box3d, segs and STPLS3D text are in each scene's **local world frame** (metres). GeoJSON
and LAS coordinates are ``local + offset`` in the scene CRS; the manifest records the offset.

Everything is written into a temporary sibling directory and moved into place at the end, so
an interrupted run never leaves a half data set.
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from urbex.atomic import atomic_write, remove_stale, staging_path, umask_mode
from urbex.io.cityrefer import (
    Annotation,
    BoxRecord,
    FalseSegment,
    write_annotations,
    write_box3d,
    write_false_segments,
    write_segs,
)
from urbex.io.geojson import write_landmarks_geojson
from urbex.io.las import write_las
from urbex.io.ply import write_ply
from urbex.io.stpls3d import write_stpls3d_txt
from urbex.pointcloud import PointCloud
from urbex.synth.block import Block, generate_block
from urbex.synth.candidates import candidate_expressions
from urbex.synth.expressions import SceneFacts, satisfying
from urbex.synth.manifest import (
    Defect,
    PhrasingRecord,
    SceneEntry,
    SynthManifest,
)
from urbex.synth.phrasing import HELD_OUT_FAMILIES, HELD_OUT_FAMILY, describe, family_weights
from urbex.synth.queries import Query, scene_queries

__all__ = [
    "FORMATS",
    "GENERATOR_VERSION",
    "asprs_from_sensaturban",
    "generate_dataset",
    "scene_split",
]

#: Accepted values of ``formats``.
FORMATS = ("cityrefer", "las", "stpls3d")
#: Bumped whenever the same seed and arguments would write different files (2: paraphrase
#: families, noise and the held-out family; 3: people's phenomena — map frame, front/behind,
#: between, off, road ends, context objects, parts, shapes, counts, shades and their colours,
#: hedges, misspelled names, the ``detailed`` and held-out ``existential`` families); part of
#: the raw stage's fingerprint.
GENERATOR_VERSION = 3

#: The LAS header creation date of the LAZ copies. laspy writes today's date by default, which
#: made the data set's bytes (and DVC's hash of it) change with the calendar day; fixed to the
#: day the committed dvc.lock's data set was written, so that lock still holds.
LAS_CREATION_DATE = datetime.date(2026, 12, 1)
AREA = "synthville"
_STPLS3D_IDS = ("SYNTHUSC", "SYNTHWMSC", "SYNTHOCCC", "SYNTHRA")
# SensatUrban id → ASPRS code: ground 2, vegetation 5, building 6, bridge 17, rail 10, road 11, water 9.
_ASPRS = np.array([2, 5, 6, 1, 17, 1, 10, 11, 1, 1, 1, 1, 9], np.int32)


def asprs_from_sensaturban(semantic: NDArray) -> NDArray[np.int32]:
    """Map SensatUrban class ids (0..12) to ASPRS LAS codes (others → 1 Unclassified).

    >>> asprs_from_sensaturban(np.array([0, 1, 2, 3, 7, 9, 12])).tolist()
    [2, 5, 6, 1, 11, 1, 9]
    """
    return _ASPRS[np.asarray(semantic)]


def scene_split(n: int, seed: int) -> list[str]:
    """Split name per scene index: mostly train, >= 1 val and >= 1 test when ``n >= 3``.

    >>> scene_split(3, 0).count("train"), scene_split(3, 0).count("val"), scene_split(3, 0).count("test")
    (1, 1, 1)
    >>> scene_split(10, 0).count("train")
    6
    """
    splits = ["train"] * n
    if n < 2:
        return splits
    k = max(1, round(0.18 * n))
    order = np.random.default_rng([seed, 31337]).permutation(n)
    for i in order[:k]:
        splits[i] = "test"
    if n >= 3:
        for i in order[k : 2 * k]:
            splits[i] = "val"
    return splits


def _landmarks_gdf(block: Block) -> Any:
    import geopandas as gpd
    from shapely.geometry import LineString, Polygon

    off = block.cloud.offset[:2]
    rows = []
    for lm in block.landmarks:
        g = lm.geometry + off
        geom = LineString(g) if lm.kind == "road" else Polygon(g)
        rows.append(
            {
                "name": lm.name,
                "kind": lm.kind,
                "object_id": "" if lm.instance_id < 0 else str(lm.instance_id),
                "geometry": geom,
            }
        )
    return gpd.GeoDataFrame(rows, geometry="geometry", crs=block.cloud.crs)


def _labels(block: Block) -> tuple[NDArray[np.int32], NDArray[np.int32]]:
    """The block cloud's ``(semantic, instance)`` arrays, both (N,) int32; both must be set."""
    c = block.cloud
    if c.semantic is None or c.instance is None:
        raise ValueError(
            f"block {block.scene_id!r}: expected a cloud with semantic and instance labels, got "
            f"semantic={'set' if c.semantic is not None else None}, "
            f"instance={'set' if c.instance is not None else None}"
        )
    return c.semantic, c.instance


def _offset3(offset: NDArray[np.float64]) -> tuple[float, float, float]:
    """A (3,) offset array as a plain ``(x, y, z)`` tuple of floats, metres."""
    x, y, z = (float(v) for v in offset)
    return (x, y, z)


def _segs(instance: NDArray[np.int32]) -> dict[int, NDArray[np.int64]]:
    order = np.argsort(instance, kind="stable")
    ids = instance[order]
    lo = np.searchsorted(ids, 0)
    uniq, starts = np.unique(ids[lo:], return_index=True)
    bounds = [*(starts + lo).tolist(), len(ids)]
    return {int(u): order[bounds[i] : bounds[i + 1]].astype(np.int64) for i, u in enumerate(uniq)}


def _plant_defects(
    block: Block, queries: list[Query], rng: np.random.Generator, false_id: int | None
) -> tuple[list, list]:
    """Valid rows + planted defective rows for one scene → (rows, defects).

    Each row is ``(object_id, object_name, description, reason or "", phrasing or None)``;
    ann ids are assigned later.
    """
    rows = [(q.object_id, q.object_name, q.description, "", q.phrasing) for q in queries]
    seen = {q.description for q in queries}
    defects: list[tuple[str, str, str, str, None]] = []
    if queries:
        for i in rng.choice(len(queries), size=min(2, len(queries)), replace=False):
            q = queries[int(i)]
            defects.append((q.object_id, q.object_name, q.description, "duplicate", None))
        q = queries[int(rng.integers(len(queries)))]
        defects.append((q.object_id, q.object_name, "", "empty", None))
        q = queries[int(rng.integers(len(queries)))]
        defects.append((q.object_id, q.object_name, q.object_name.lower(), "too_short", None))
    missing = int(block.objects.instance_id.max(initial=-1)) + 1000 + int(rng.integers(1000))
    road = block.roads[int(rng.integers(len(block.roads)))].name
    text = f"the white van parked on {road} outside the corner shop"
    while text in seen:
        text += " again"
    defects.append((str(missing), "Car", text, "missing_instance", None))
    if false_id is not None:
        facts = SceneFacts.from_block(block)
        row = block.objects.row(false_id)
        name = block.objects.object_name[row]
        ok = [
            e
            for e in candidate_expressions(facts, row)
            if satisfying(e, facts).tolist() == [false_id]
        ]
        text = describe(ok[0], rng=rng) if ok else f"the {name.lower()} beside {road}"
        while text in seen:
            text += " too"
        defects.append((str(false_id), name, text, "false_segment", None))
    return rows, defects


def _publish(tmp: Path, out: Path) -> None:
    """Move the finished tree ``tmp`` into ``out`` (top-level entries replaced one by one)."""
    if not out.exists():
        os.replace(tmp, out)
        return
    trash = staging_path(out, kind="old")
    trash.mkdir()
    try:
        for entry in sorted(tmp.iterdir()):
            dest = out / entry.name
            if dest.exists() or dest.is_symlink():
                os.replace(dest, trash / entry.name)
            os.replace(entry, dest)
    finally:
        shutil.rmtree(trash, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)


def _write_cityrefer_scene(tmp: Path, block: Block, las: bool) -> None:

    sid, c, o = block.scene_id, block.cloud, block.objects
    scan = tmp / "scans" / sid
    scan.mkdir(parents=True, exist_ok=True)
    write_ply(
        scan / f"{sid}.ply", PointCloud(xyz=c.xyz, rgb=c.rgb, semantic=c.semantic, source=c.source)
    )
    semantic, instance = _labels(block)
    write_segs(scan / f"{sid}.segs.json", _segs(instance))
    center = (o.box[:, :3] + o.box[:, 3:]) / 2
    size = o.box[:, 3:] - o.box[:, :3]
    boxes = [
        BoxRecord(
            object_id=str(int(i)),
            object_name=o.object_name[k],
            landmark=o.landmark[k],
            center=tuple(center[k]),
            size=tuple(size[k]),
            label_id=int(o.label_id[k]),
            instance_id=int(i),
        )
        for k, i in enumerate(o.instance_id)
    ]
    write_box3d(tmp / "box3d" / f"{sid}_bbox.json", sid, boxes)
    gdf = _landmarks_gdf(block)
    write_landmarks_geojson(tmp / "landmarks" / f"{sid}.geojson", gdf)
    if las:
        sem = asprs_from_sensaturban(semantic)
        write_las(
            tmp / "las" / f"{sid}.laz",
            PointCloud(
                xyz=c.xyz,
                offset=c.offset,
                rgb=c.rgb,
                semantic=sem,
                instance=c.instance,
                class_scheme="asprs",
                crs=c.crs,
                source=c.source,
            ),
            creation_date=LAS_CREATION_DATE,
        )
        write_landmarks_geojson(tmp / "las" / f"{sid}.geojson", gdf)


def _write_stpls3d_scene(tmp: Path, block: Block) -> None:

    sid, c, o = block.scene_id, block.cloud, block.objects
    root = tmp / "stpls3d"
    write_stpls3d_txt(
        root / "RealWorldData" / f"{sid}_points.txt",
        PointCloud(
            xyz=c.xyz, rgb=c.rgb, semantic=c.semantic, class_scheme="stpls3d", source=c.source
        ),
    )
    write_landmarks_geojson(root / "landmarks" / f"{sid}.geojson", _landmarks_gdf(block))
    keep = np.array([n in ("Building", "Car") for n in o.object_name], bool)
    hidden = np.full(int(o.instance_id.max(initial=-1)) + 2, -1, np.int32)
    hidden[o.instance_id[keep]] = o.instance_id[keep]
    _, instance = _labels(block)
    inst = hidden[np.where(instance >= 0, instance, len(hidden) - 1)]
    (root / "hidden").mkdir(parents=True, exist_ok=True)
    with atomic_write(root / "hidden" / f"{sid}_instances.npy", "wb") as fh:
        np.save(fh, inst)
    objs = [
        {
            "instance_id": int(o.instance_id[k]),
            "class": "Building" if o.object_name[k] == "Building" else "Vehicle",
            "semantic": 1 if o.object_name[k] == "Building" else 5,
            "box": [float(v) for v in o.box[k]],
            "landmark": o.landmark[k],
            "colour": o.colour[k],
        }
        for k in np.flatnonzero(keep)
    ]
    doc = {
        "scene_id": sid,
        "frame": "local",
        "crs": c.crs,
        "offset": c.offset.tolist(),
        "objects": objs,
    }
    with atomic_write(root / "hidden" / f"{sid}_objects.json", "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=1)


def _scene_seed(seed: int, kind: int, i: int) -> int:
    return int(np.random.default_rng([seed, kind, i]).integers(2**31 - 1))


def generate_dataset(
    out_dir: str | os.PathLike[str],
    *,
    scenes: int = 3,
    seed: int = 0,
    density: float = 20.0,
    size: float = 160.0,
    formats: tuple[str, ...] | list[str] = ("cityrefer",),
    las_copy: bool = True,
    stpls3d_scenes: int = 0,
    progress: bool = True,
) -> SynthManifest:
    """Generate and write a synthetic data set (see the module docstring for the layout).

    Parameters
    ----------
    out_dir
        Destination directory (created; existing top-level entries of the same name replaced).
    scenes
        Number of CityRefer-layout scenes ``synthville_block_<i>``, i = 0..scenes-1 (>= 1).
    seed
        Master seed: same seed and arguments → byte-identical JSON and identical arrays.
    density
        Points per m² of horizontal surface (STPLS3D scenes use half of it).
    size
        Block side, metres (>= 40).
    formats
        Subset of ``("cityrefer", "las", "stpls3d")``; ``cityrefer`` is always written,
        ``"las"`` forces the LAZ copy, ``"stpls3d"`` forces at least one STPLS3D scene.
    las_copy
        Also write ``las/<id>.laz`` + ``las/<id>.geojson``.
    stpls3d_scenes
        Number of STPLS3D-style scenes (``SYNTHUSC``, ``SYNTHWMSC``, ...).
    progress
        Show a tqdm bar over scenes.

    Returns
    -------
    SynthManifest
        Also written to ``<out_dir>/synth_manifest.json``.
    """
    from tqdm.auto import tqdm

    bad = [f for f in formats if f not in FORMATS]
    if bad:
        raise ValueError(f"formats: unknown {bad}; expected a subset of {FORMATS}")
    if scenes < 1:
        raise ValueError(f"scenes: expected >= 1, got {scenes}")
    if stpls3d_scenes < 0:
        raise ValueError(f"stpls3d_scenes: expected >= 0, got {stpls3d_scenes}")
    las = las_copy or "las" in formats
    n_st = max(stpls3d_scenes, 1 if "stpls3d" in formats else 0)
    out = Path(out_dir).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(out.parent, name=out.name)  # what killed generations left
    tmp = staging_path(out)
    tmp.mkdir()
    os.chmod(tmp, umask_mode(directory=True))
    params = {
        "scenes": scenes,
        "seed": seed,
        "density": density,
        "size": size,
        "formats": sorted(set(formats) | {"cityrefer"}),
        "las_copy": las,
        "stpls3d_scenes": n_st,
        "generator_version": GENERATOR_VERSION,
        "held_out_family": HELD_OUT_FAMILY,
        "held_out_families": list(HELD_OUT_FAMILIES),
    }
    splits = scene_split(scenes, seed)
    entries: list[SceneEntry] = []
    ann_by_split: dict[str, list[Annotation]] = {"train": [], "val": [], "test": []}
    defects: list[Defect] = []
    phrasings: list[PhrasingRecord] = []
    false_rows: list[FalseSegment] = []
    try:
        bar = tqdm(total=scenes + n_st, desc="synth", unit="scene", disable=not progress)
        for i in range(scenes):
            sid = f"{AREA}_block_{i}"
            bar.set_postfix_str(sid)
            bseed = _scene_seed(seed, 0, i)
            block = generate_block(bseed, size=size, density=density, scene_id=sid)
            rng = np.random.default_rng([seed, 1, i])
            # One instance (not a named landmark) is planted as a false segment.
            pool = [
                int(x)
                for x, lm, n in zip(
                    block.objects.instance_id, block.objects.landmark, block.objects.object_name
                )
                if not lm and n in ("Car", "Building")
            ]
            false_id = pool[int(rng.integers(len(pool)))] if pool else None
            queries = scene_queries(
                block,
                seed=bseed,
                exclude=frozenset({false_id} if false_id is not None else ()),
                families=family_weights(held_out_scene=splits[i] == "test"),
            )
            rows, bad_rows = _plant_defects(block, queries, rng, false_id)
            next_ann: dict[str, int] = {}
            anns: list[Annotation] = []
            for obj, name, text, reason, how in rows + bad_rows:
                k = next_ann.get(obj, 0)
                next_ann[obj] = k + 1
                anns.append(
                    Annotation(
                        scene_id=sid, object_id=obj, object_name=name, ann_id=k, description=text
                    )
                )
                if reason:
                    defects.append(Defect(scene_id=sid, ann_id=k, object_id=obj, reason=reason))
                else:
                    phrasings.append(
                        PhrasingRecord(
                            scene_id=sid,
                            ann_id=k,
                            object_id=obj,
                            family=how.family,
                            noise=how.noise,
                            phenomena=how.phenomena,
                        )
                    )
            anns.sort(key=lambda a: (int(a.object_id), a.ann_id))
            ann_by_split[splits[i]] += anns
            if false_id is not None:
                false_rows.append(FalseSegment(area=AREA, block_id=i, object_id=str(false_id)))
            _write_cityrefer_scene(tmp, block, las)
            entries.append(
                SceneEntry(
                    scene_id=sid,
                    layout="cityrefer",
                    split=splits[i],
                    style=block.style,
                    seed=bseed,
                    crs=str(block.cloud.crs),
                    offset=_offset3(block.cloud.offset),
                    n_points=block.cloud.n_points,
                    n_instances=len(block.objects),
                    n_queries=len(queries),
                )
            )
            bar.update(1)
        for j in range(n_st):
            sid = _STPLS3D_IDS[j] if j < len(_STPLS3D_IDS) else f"SYNTH{j}"
            bar.set_postfix_str(sid)
            bseed = _scene_seed(seed, 1, j)
            block = generate_block(
                bseed, size=size, density=density / 2, style="stpls3d", scene_id=sid
            )
            _write_stpls3d_scene(tmp, block)
            entries.append(
                SceneEntry(
                    scene_id=sid,
                    layout="stpls3d",
                    split="",
                    style=block.style,
                    seed=bseed,
                    crs=str(block.cloud.crs),
                    offset=_offset3(block.cloud.offset),
                    n_points=block.cloud.n_points,
                    n_instances=len(block.objects),
                    n_queries=0,
                )
            )
            bar.update(1)
        bar.close()
        for split, anns in ann_by_split.items():
            write_annotations(tmp / "meta_data" / f"CityRefer_{split}.json", anns)
        write_false_segments(tmp / "false_segments" / "false_segments.csv", false_rows)
        manifest = SynthManifest(
            root=out,
            params=params,
            seed=seed,
            scenes=tuple(entries),
            defects=tuple(defects),
            phrasings=tuple(
                sorted(phrasings, key=lambda r: (r.scene_id, int(r.object_id), r.ann_id))
            ),
        )
        (tmp / "synth_manifest.json").write_text(
            json.dumps(manifest.to_dict(), indent=1), encoding="utf-8"
        )
        _publish(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return manifest
