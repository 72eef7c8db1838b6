"""The graph's stages as plain functions: one call per asset.

Dagster assets (``pipelines/``) and DVC stages (``dvc.yaml`` → the ``urbex`` CLI) are two thin
front doors onto these functions; both write the same files under ``params.assets``
(:class:`urbex.layout.AssetLayout`).

The stage functions never refresh the warehouse: a front door (one ``urbex`` command, one Dagster
asset run) calls :func:`refresh` once, after all its stage calls. Each function imports the
subsystem it calls when it runs: a command pays for its own stage, not for every stage.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from urbex.atomic import atomic_path
from urbex.benchmarks import ZERO_SHOT, ZERO_SHOT_SPLIT, benchmark_params, benchmark_source
from urbex.config import Params
from urbex.errors import AnnotationError, ConfigError

if TYPE_CHECKING:
    from urbex.agents.ranker import RankerModel
    from urbex.raw import RawDataset

__all__ = [
    "BenchmarkBuild",
    "SceneBuild",
    "benchmark_scene_ids",
    "build_benchmark",
    "build_benchmark_landmarks",
    "build_benchmark_queries",
    "build_benchmark_scene",
    "build_scene",
    "refresh",
    "stage_clean_annotations",
    "stage_landmarks",
    "stage_raw",
    "stage_splits",
    "stage_stpls3d_refer",
]


def stage_raw(params: Params, *, force: bool = False, progress: bool = True) -> RawDataset:
    """Materialize the raw data set (generate synthetic or register a root)."""
    from urbex.raw import materialize_raw

    return materialize_raw(params, force=force, progress=progress)


@dataclass(frozen=True, slots=True, kw_only=True)
class SceneBuild:
    """What one scene-cache build did (for asset metadata and CLI output)."""

    scene_id: str
    cache_dir: Path
    n_points: int
    build_seconds: float
    reused: bool
    meta: dict[str, Any] = field(repr=False)


def build_scene(
    params: Params, scene_id: str, *, force: bool = False, progress: bool = False
) -> SceneBuild:
    """Build (or reuse, when fresh) the cache of one scene and write its warehouse row.

    Reads the raw scene through :func:`urbex.io.datasets.read_scene`, writes
    ``<assets>/scenes/<scene_id>/`` with :func:`urbex.scene.build.build_scene_cache`, then the
    ``scenes`` row (``scene.parquet``). The warehouse views are not refreshed here: call
    :func:`refresh` once after the last scene.

    Raises
    ------
    ConfigError
        ``scene_id`` is not one of the data set's selected scenes (``data.scenes``).
    """
    import json

    from urbex.io.cityrefer import box3d_hash
    from urbex.io.datasets import read_scene
    from urbex.raw import raw_dataset
    from urbex.scene.build import build_scene_cache
    from urbex.scene.meta import write_scene_row

    ds = raw_dataset(params)
    if scene_id not in ds.scene_ids:
        raise ConfigError(
            f"scene {scene_id!r} is not in the data set (data.source={params.data.source!r}, "
            f"data.scenes / synth.scenes select {list(ds.scene_ids)}); fix data.scenes or "
            "the scene id",
            field="data.scenes",
        )
    t0 = time.perf_counter()
    raw = read_scene(ds.source, ds.root, scene_id)
    out = params.layout.scene(scene_id)
    meta_path = params.layout.scene_meta(scene_id)
    before = meta_path.stat().st_mtime_ns if meta_path.exists() else None
    build_scene_cache(
        raw.cloud,
        out,
        params.scene,
        scene_id=scene_id,
        boxes=raw.boxes,
        input_hash=box3d_hash(ds.root, scene_id),
        force=force,
        progress=progress,
    )
    write_scene_row(out)
    meta = json.loads(meta_path.read_text())
    after = meta_path.stat().st_mtime_ns
    return SceneBuild(
        scene_id=scene_id,
        cache_dir=out,
        n_points=int(meta["n_points"]),
        build_seconds=time.perf_counter() - t0,
        reused=before is not None and before == after,
        meta=meta,
    )


def refresh(params: Params) -> dict[str, int]:
    """Recreate the warehouse views over ``<assets>``; returns row counts per table.

    The one refresh of a front-door command or asset run (the stages themselves never refresh).
    """
    from urbex.report.warehouse import refresh_warehouse

    return refresh_warehouse(params.assets)


def stage_landmarks(params: Params) -> list[Path]:
    """Landmark tables of every scene (checked, then published); see :func:`refresh`."""
    from urbex.annotations.stages import build_landmark_tables

    return build_landmark_tables(params)


def stage_clean_annotations(params: Params) -> Path:
    """Cleaned annotations + drops (checked, then published); see :func:`refresh`."""
    from urbex.annotations.stages import build_clean_annotations

    return build_clean_annotations(params)


def stage_splits(params: Params) -> Path:
    """train/val/test_nd/test_no (checked, then published); see :func:`refresh`."""
    from urbex.annotations.stages import build_splits

    return build_splits(params)


def stage_ranker(params: Params) -> tuple[RankerModel, Path]:
    """The trained With-GT ranker (policy ``ranking``): fitted on train, selected on val, over
    the candidate classes ``eval.candidate_classes``; returns the model and where it went."""
    from urbex.agents.ranker import fit_project_ranker
    from urbex.env.world import World

    classes = params.eval.candidate_classes
    return fit_project_ranker(World.from_params(params), params.layout, candidate_classes=classes)


def stage_stpls3d_refer(params: Params) -> Path:
    """STPLS3D-Refer in the CityRefer layout under ``<assets>/stpls3d_refer``."""
    from urbex.annotations.stages import build_stpls3d_refer

    return build_stpls3d_refer(params)


# ---------------------------------------------------------------------------------------------
# zero-shot benchmarks (urbex.benchmarks): the same stages over their own sources
# ---------------------------------------------------------------------------------------------


def benchmark_scene_ids(params: Params, name: str) -> list[str]:
    """The benchmark's scene ids (``[]`` while a zero-shot one's source is not built yet)."""
    from urbex.raw import raw_dataset

    bp = benchmark_params(params, name)
    if name != "cityrefer" and not (bp.data_root is not None and bp.data_root.is_dir()):
        return []
    try:
        return list(raw_dataset(bp).scene_ids)
    except ConfigError:
        if name == "cityrefer":
            raise
        return []


def build_benchmark_scene(params: Params, name: str, scene_id: str, *, force: bool = False):  # type: ignore[no-untyped-def]
    """The scene cache of one benchmark scene (:func:`urbex.stages.build_scene`)."""
    return build_scene(benchmark_params(params, name), scene_id, force=force)


def build_benchmark_landmarks(params: Params, name: str) -> list[Path]:
    """The benchmark's landmark tables (:func:`~urbex.annotations.stages.build_landmark_tables`)."""
    from urbex.annotations.stages import build_landmark_tables

    return build_landmark_tables(benchmark_params(params, name))


def build_benchmark_queries(params: Params, name: str) -> Path:
    """Clean a zero-shot benchmark's annotations, put them all in split ``test`` and mark the
    landmark-free ones; publish ``<benchmark>/splits/queries.parquet``.

    Raises
    ------
    ValueError
        ``name`` is not a zero-shot benchmark (``cityrefer`` is split by ``urbex splits``).
    AnnotationError
        Cleaning left no query.
    """
    from urbex.annotations.stages import build_clean_annotations
    from urbex.landmarks.lookup import landmark_index

    if name not in ZERO_SHOT:
        raise ValueError(f"benchmark: expected a zero-shot one of {list(ZERO_SHOT)}, got {name!r}")
    bp = benchmark_params(params, name)
    clean = pl.read_parquet(build_clean_annotations(bp), glob=False)
    if clean.height == 0:
        raise AnnotationError(
            f"benchmark {name!r}: cleaning left no query", path=bp.layout.clean_queries
        )
    index = landmark_index(bp.layout, bp.landmarks)
    names = (
        index.mentions_many(clean["description"].to_list(), clean["scene_id"].to_list())
        if index is not None
        else [[] for _ in range(clean.height)]
    )
    frame = clean.with_columns(
        pl.lit(ZERO_SHOT_SPLIT).alias("split"),
        pl.Series("landmark_free", [len(n) == 0 for n in names], dtype=pl.Boolean),
    )
    out = bp.layout.queries
    with atomic_path(out) as tmp:
        frame.write_parquet(tmp)
    with atomic_path(bp.layout.split_counts) as tmp:
        frame.group_by("split", "class_name", "landmark_free").len("n").sort(
            "split", "class_name", "landmark_free"
        ).write_csv(tmp)
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchmarkBuild:
    """What :func:`build_benchmark` built.

    Attributes
    ----------
    name : str
    scene_ids : list of str
    n_queries, n_landmark_free : int
        Queries of split ``test``; those mentioning no landmark.
    queries : Path
        ``<assets>/benchmarks/<name>/splits/queries.parquet``.
    """

    name: str
    scene_ids: list[str]
    n_queries: int
    n_landmark_free: int
    queries: Path


def build_benchmark(params: Params, name: str, *, force: bool = False) -> BenchmarkBuild:
    """Every stage of a zero-shot benchmark: scene caches, landmark tables, queries.

    Raises
    ------
    ConfigError
        Its source is not built (run ``urbex stpls3d-refer`` first).
    """
    if name not in ZERO_SHOT:
        raise ValueError(f"benchmark: expected a zero-shot one of {list(ZERO_SHOT)}, got {name!r}")
    scenes = benchmark_scene_ids(params, name)
    if not scenes:
        raise ConfigError(
            f"benchmark {name!r}: its source {benchmark_source(params.layout, name)} holds no scene; build it "
            "with `urbex stpls3d-refer`",
            field="eval.benchmark",
        )
    for sid in scenes:
        build_benchmark_scene(params, name, sid, force=force)
    build_benchmark_landmarks(params, name)
    path = build_benchmark_queries(params, name)
    q = pl.read_parquet(path, glob=False)
    return BenchmarkBuild(
        name=name,
        scene_ids=scenes,
        n_queries=q.height,
        n_landmark_free=int(q["landmark_free"].sum()),
        queries=path,
    )
