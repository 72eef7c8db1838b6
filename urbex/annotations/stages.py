"""Stage functions for landmarks, cleaning, splits and STPLS3D-Refer: one call per asset.

Each stage reads the raw data set (:func:`urbex.raw.raw_dataset`) and the scene caches
(``<assets>/scenes/<id>/``), builds its table in memory, runs its great-expectations suite, and
publishes only if the suite passed (stage → check → publish). A failed suite raises
:class:`~urbex.annotations.quality.QualityCheckError` (a ``DataQualityError``) and leaves the
published files untouched; the suite's report is always written to
``<assets>/quality/<suite>.json`` (Dagster asset checks read it for their metadata).

========================= ======================================================================
function                  writes
========================= ======================================================================
build_landmark_tables     ``<assets>/landmarks/<scene_id>.parquet``
build_clean_annotations   ``<assets>/splits/clean_queries.parquet``, ``annotation_drops.parquet``
build_splits              ``<assets>/splits/queries.parquet`` (with ``split``), ``split_counts.csv``
build_stpls3d_refer       ``<assets>/stpls3d_refer/`` (CityRefer layout + ``summary.json``)
========================= ======================================================================
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from urbex.annotations.class_sizes import class_sizes_from_splits, write_class_sizes
from urbex.annotations.clean import annotations_frame, clean_annotations
from urbex.annotations.quality import (
    QualityCheckError,
    publish_checked,
    validate_landmarks,
    validate_queries,
    validate_splits,
    write_report,
)
from urbex.annotations.splits import make_splits, split_counts
from urbex.annotations.stpls3d_refer import make_refer_scene, write_refer_scene
from urbex.atomic import publish_dir, remove_stale, staging_path
from urbex.config import Params
from urbex.errors import AnnotationError, ConfigError, StaleCacheError
from urbex.io.cityrefer import box3d_hash, read_annotations, read_false_segments
from urbex.io.datasets import annotation_files, list_scenes, read_scene
from urbex.landmarks import (
    LandmarkIndex,
    empty_landmark_table,
    landmarks_from_geojson,
    landmarks_from_instances,
    merge_landmark_tables,
    read_landmark_table,
    registration_offset,
)
from urbex.layout import AssetLayout
from urbex.raw import raw_dataset
from urbex.scene.cache import SceneCache

__all__ = [
    "build_clean_annotations",
    "build_landmark_tables",
    "build_splits",
    "build_stpls3d_refer",
    "load_instances",
]


def _manifest_scene(root: Path, scene_id: str) -> dict[str, Any] | None:
    """The synthetic manifest entry (crs, offset) of a scene, if a manifest exists."""
    for cand in (root / "synth_manifest.json", root.parent / "synth_manifest.json"):
        if cand.is_file():
            for s in json.loads(cand.read_text(encoding="utf-8")).get("scenes", []):
                if s.get("scene_id") == scene_id:
                    return s
    return None


def _landmark_file(source: str, root: Path, scene_id: str) -> Path | None:
    p = (
        root / f"{scene_id}.geojson"
        if source == "las"
        else root / "landmarks" / f"{scene_id}.geojson"
    )
    return p if p.is_file() else None


def load_instances(
    layout: AssetLayout, scene_ids: list[str], *, raw_root: Path | None = None
) -> pl.DataFrame:
    """Concatenated instance tables of the scene caches (``CacheError`` if one is missing).

    With ``raw_root`` (a CityRefer-layout data set), a cache built from another version of the
    scene's ``box3d`` file than the one there now is a :class:`StaleCacheError`.
    """
    caches = [SceneCache.open(layout.scene(s)) for s in scene_ids]
    for sid, c in zip(scene_ids, caches):
        if raw_root is not None and c.meta.input_hash not in ("", box3d_hash(raw_root, sid)):
            raise StaleCacheError(
                f"the cache of scene {sid!r} was built from another version of "
                f"box3d/{sid}_bbox.json (the file changed since); rebuild it: "
                f"urbex cache --scene {sid} --force",
                path=layout.scene(sid),
            )
    frames = [c.instances for c in caches]
    if not frames:
        return pl.DataFrame(
            schema={"scene_id": pl.String, "object_id": pl.String, "class_name": pl.String}
        )
    return pl.concat(frames, how="diagonal_relaxed")


def build_landmark_tables(params: Params) -> list[Path]:
    """Build, check and publish one landmark table per scene.

    Rows come from the cache's instances that carry a landmark name (footprint = convex hull of
    their points) and, if ``landmarks.use_geojson``, the scene's GeoJSON registered into the
    cache's world frame. Suite: :func:`~urbex.annotations.quality.validate_landmarks` with the
    cache bounds.

    Returns
    -------
    list of Path
        ``<assets>/landmarks/<scene_id>.parquet`` per scene.
    """

    ds = raw_dataset(params)
    out: list[Path] = []
    for sid in ds.scene_ids:
        cache = SceneCache.open(params.layout.scene(sid))
        inst = cache.instances
        named = inst.filter(pl.col("landmark_name").fill_null("") != "")
        xy_parts, id_parts = [], []
        for r in named.iter_rows(named=True):
            crop = cache.crop_points([r["x_min"], r["y_min"], r["x_max"], r["y_max"]])
            if crop.instance is None or len(crop) == 0:
                continue
            keep = crop.instance == int(r["object_id"])
            xy_parts.append(crop.world_xyz()[keep, :2])
            id_parts.append(crop.instance[keep])
        xy = np.concatenate(xy_parts) if xy_parts else None
        pid = np.concatenate(id_parts) if id_parts else None
        tables = [landmarks_from_instances(inst, scene_id=sid, xy=xy, point_instance=pid)]
        b = cache.bounds
        bounds = [float(b[0]), float(b[1]), float(b[3]), float(b[4])]
        gj = _landmark_file(ds.source, ds.root, sid) if params.landmarks.use_geojson else None
        if gj is not None:
            entry = _manifest_scene(ds.root, sid)
            crs = cache.meta.crs or (entry or {}).get("crs")
            cands = [(0.0, 0.0, 0.0)] + ([tuple(entry["offset"])] if entry else [])
            off = registration_offset(gj, scene_crs=crs, bounds=bounds, candidates=cands)
            tables.append(
                landmarks_from_geojson(gj, scene_id=sid, scene_crs=crs, offset=off, bounds=bounds)
            )
        table = merge_landmark_tables(*tables)
        report = validate_landmarks(
            table, bounds={sid: bounds}, margin=params.landmarks.bounds_margin_m
        )
        write_report(report, params.layout.quality_report(f"landmarks_{sid}"))
        out.append(publish_checked(table, params.layout.landmark_table(sid), report))
    return out


def build_clean_annotations(params: Params) -> Path:
    """Clean the CityRefer annotations of the data set, check and publish them.

    Reads ``meta_data/CityRefer_{train,val,test}.json`` (rows of scenes of the data set that
    ``data.scenes`` leaves out are out of scope, not drops; rows naming no scene of the data set
    are ``unknown_scene`` drops), the scene caches' instance
    tables, ``false_segments/`` and the landmark tables (for ``landmark_mentions``).

    Returns
    -------
    Path
        ``<assets>/splits/clean_queries.parquet``; drops go to ``annotation_drops.parquet``.

    Raises
    ------
    AnnotationError
        The data root has no CityRefer annotation file.
    QualityCheckError
        The ``queries`` suite failed (nothing published).
    """

    ds = raw_dataset(params)
    files = annotation_files(ds.root)
    if not files:
        raise AnnotationError(
            f"no meta_data/CityRefer_{{train,val,test}}.json under the data root (source {ds.source!r})",
            path=ds.root,
        )
    frames = [
        annotations_frame(read_annotations(p), file_split=split)
        for split, p in sorted(files.items())
    ]
    # out of scope: scenes of the data set that data.scenes does not select; rows naming no
    # scene of the data set at all stay, to be dropped (and counted) as unknown_scene
    anns = pl.concat(frames, how="vertical").filter(
        pl.col("scene_id").is_in(list(ds.scene_ids))
        | ~pl.col("scene_id").is_in(list(ds.found or ds.scene_ids))
    )
    scenes = sorted(set(anns["scene_id"].to_list()) & set(ds.scene_ids))
    instances = load_instances(
        params.layout, scenes, raw_root=ds.root if ds.source == "cityrefer" else None
    )
    fs_dir = ds.root / "false_segments"
    false_segments = read_false_segments(fs_dir) if fs_dir.is_dir() else []
    lm_paths = [params.layout.landmark_table(s) for s in scenes]
    lm_paths = [p for p in lm_paths if p.is_file()]
    index = None
    if lm_paths:
        table = pl.concat([read_landmark_table(p) for p in lm_paths], how="vertical")
        index = LandmarkIndex.from_params(table, params.landmarks)
    res = clean_annotations(
        anns,
        instances=instances,
        false_segments=false_segments,
        landmark_index=index,
        annotation_params=params.annotations,
        known_scenes=ds.found or ds.scene_ids,
    )
    report = validate_queries(
        res.queries, annotation_params=params.annotations, instances=instances
    )
    write_report(report, params.layout.quality_report("queries"))
    path = publish_checked(res.queries, params.layout.clean_queries, report)
    publish_checked(res.drops, params.layout.annotation_drops, report)
    return path


def build_splits(params: Params) -> Path:
    """Split the cleaned queries, check and publish them.

    Returns
    -------
    Path
        ``<assets>/splits/queries.parquet`` (cleaned queries + ``split``); the per split × class
        counts go to ``split_counts.csv``, the train split's mean box size per class (world
        metres, the ``landmark_prior`` input) to ``class_sizes.json``
        (:mod:`urbex.annotations.class_sizes`).
    """

    src = params.layout.clean_queries
    if not src.is_file():
        raise AnnotationError(
            "cleaned queries not found; run the clean_annotations stage first", path=src
        )
    queries = pl.read_parquet(src, glob=False)
    frame = make_splits(queries, annotation_params=params.annotations)
    instances = load_instances(params.layout, sorted(set(frame["scene_id"].to_list())))
    report = validate_splits(frame, annotation_params=params.annotations, instances=instances)
    write_report(report, params.layout.quality_report("splits"))
    path = publish_checked(frame, params.layout.queries, report)
    publish_checked(split_counts(frame), params.layout.split_counts, report)
    write_class_sizes(class_sizes_from_splits(frame, instances), params.layout.class_sizes)
    return path


def _stpls3d_root(source: str, data_root: Path | None, layout: AssetLayout) -> Path:
    """Where the STPLS3D scenes are: the synthetic set's, or ``data.root`` of an STPLS3D one."""
    if source == "synthetic":
        return layout.raw_synthetic / "stpls3d"
    if source == "stpls3d" and data_root is not None:
        return data_root
    raise ConfigError(
        f"STPLS3D-Refer needs STPLS3D scenes: data.source is {source!r} "
        "(use 'synthetic' or 'stpls3d')",
        field="data.source",
    )


def build_stpls3d_refer(params: Params) -> Path:
    """Build STPLS3D-Refer from the STPLS3D scenes of the data set; check and publish it.

    Scenes: ``stpls3d_refer.scenes`` or all under ``<root>/RealWorldData``. CRS/offset:
    ``stpls3d_refer.crs``/``offset`` if set, else the synthetic manifest, else the landmark
    file's CRS with offset 0. Hidden truth ``<root>/hidden/<ID>_instances.npy`` (synthetic)
    adds cluster precision/recall to ``summary.json``. Everything is written to a staging
    directory, the generated queries are checked (suite ``stpls3d_refer``), and the directory
    replaces ``<assets>/stpls3d_refer`` only if the suite passed.

    Returns
    -------
    Path
        ``<assets>/stpls3d_refer``.
    """

    p = params.stpls3d_refer
    root = _stpls3d_root(params.data.source, params.data_root, params.layout)
    found = list_scenes("stpls3d", root)
    scenes = list(p.scenes) if p.scenes is not None else found
    missing = sorted(set(scenes) - set(found))
    if missing:
        raise ConfigError(
            f"stpls3d_refer.scenes lists {missing}; {root} holds {found}",
            field="stpls3d_refer.scenes",
        )
    final = params.layout.stpls3d_refer
    remove_stale(final.parent, name=final.name)  # what killed builds left
    stage = staging_path(final)
    summaries = []
    try:
        for sid in scenes:
            raw = read_scene("stpls3d", root, sid)
            cloud = raw.cloud
            w = cloud.world_xyz()
            bounds = [
                float(w[:, 0].min()),
                float(w[:, 1].min()),
                float(w[:, 0].max()),
                float(w[:, 1].max()),
            ]
            entry = _manifest_scene(root, sid) or {}
            crs = p.crs or entry.get("crs") or cloud.crs
            cands = (
                [tuple(p.offset)]
                if p.offset is not None
                else [(0.0, 0.0, 0.0)] + ([tuple(entry["offset"])] if "offset" in entry else [])
            )
            off: tuple[float, ...] = tuple(cands[0])
            lm = empty_landmark_table()
            if raw.landmark_file is not None:
                if crs is None:
                    import geopandas as gpd

                    crs = str(gpd.read_file(raw.landmark_file).crs or "") or None
                off = registration_offset(
                    raw.landmark_file, scene_crs=crs, bounds=bounds, candidates=cands
                )
                lm = landmarks_from_geojson(
                    raw.landmark_file, scene_id=sid, scene_crs=crs, offset=off, bounds=bounds
                )
            truth_path = root / "hidden" / f"{sid}_instances.npy"
            truth = np.load(truth_path) if truth_path.is_file() else None
            scene = make_refer_scene(
                cloud,
                scene_id=sid,
                landmarks=lm,
                params=p,
                register_offset=off,
                crs=crs,
                true_instance=truth,
            )
            write_refer_scene(scene, stage, landmark_file=raw.landmark_file)
            summaries.append(scene.summary)
        exprs = [
            pl.read_parquet(f, glob=False)
            for f in sorted((stage / "expressions").glob("*.parquet"))
        ]
        q = (
            pl.concat(exprs, how="vertical")
            if exprs
            else pl.DataFrame(
                schema={
                    "scene_id": pl.String,
                    "object_id": pl.String,
                    "object_name": pl.String,
                    "ann_id": pl.Int64,
                    "description": pl.String,
                }
            )
        )
        q = q.with_columns(
            (
                pl.col("scene_id")
                + ":"
                + pl.col("object_id")
                + ":"
                + pl.col("ann_id").cast(pl.String)
            ).alias("query_id"),
            pl.col("object_name").alias("class_name"),
        )
        inst = [
            pl.read_parquet(f, glob=False).with_columns(pl.lit(f.stem).alias("scene_id"))
            for f in sorted((stage / "pseudo_instances").glob("*.parquet"))
        ]
        report = validate_queries(q, annotation_params=params.annotations, instances=pl.concat(inst) if inst else None, target_classes=["Building", "Car"])  # fmt: skip
        report_path = params.layout.quality_report("stpls3d_refer")
        write_report(report, report_path)
        if not report.success:
            raise QualityCheckError(report, path=final)
        (stage / "summary.json").write_text(
            json.dumps({"scenes": summaries}, indent=1, default=float), encoding="utf-8"
        )
        publish_dir(stage, final)
    finally:
        if stage.exists():
            shutil.rmtree(stage)
    return final
