"""A benchmark is a data set: its own scene caches, landmark tables and queries.

``cityrefer`` is the benchmark the pipeline trains and tests on (its data at the top of the
assets root). A *zero-shot* benchmark is played by the same policies, checkpoints and metrics,
with nothing fitted on it: ``stpls3d_refer`` (the paper's Table 2), built by the same stages
(:func:`urbex.stages.build_scene`, :func:`urbex.annotations.stages.build_landmark_tables`,
:func:`urbex.annotations.stages.build_clean_annotations`) from the CityRefer-layout output of
``urbex stpls3d-refer`` (``<assets>/stpls3d_refer/``: pseudo-instances as the instance table,
the OSM/GeoJSON landmarks registered into the scene frame). Its files go under
``<assets>/benchmarks/<name>/`` (:class:`urbex.layout.AssetLayout` with ``benchmark=name``):

``scenes/<id>/``, ``landmarks/<id>.parquet``, ``splits/clean_queries.parquet``,
``splits/queries.parquet`` (every query in split :data:`ZERO_SHOT_SPLIT`, with
``landmark_free``), ``quality/``.

``landmark_free`` is decided by the landmark index's ``mentions()`` (the one the diagnostics
use, :func:`urbex.eval.play.landmark_index`): a query is landmark-free when its description
mentions no landmark name of its scene.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import get_args

import polars as pl

from urbex.config import Benchmark, Params
from urbex.errors import AnnotationError, ConfigError

__all__ = [
    "BENCHMARKS",
    "ZERO_SHOT",
    "ZERO_SHOT_SPLIT",
    "BenchmarkBuild",
    "benchmark_params",
    "benchmark_scene_ids",
    "build_benchmark",
    "build_benchmark_landmarks",
    "build_benchmark_queries",
    "build_benchmark_scene",
]

#: Every benchmark name (``eval.benchmark``, ``urbex evaluate --benchmark``).
BENCHMARKS: tuple[str, ...] = get_args(Benchmark)
#: The zero-shot benchmarks (played, never fitted on).
ZERO_SHOT: tuple[str, ...] = tuple(b for b in BENCHMARKS if b != "cityrefer")
#: The one split of a zero-shot benchmark: all its queries.
ZERO_SHOT_SPLIT = "test"


def _source(params: Params, name: str) -> Path:
    """The CityRefer-layout data root a zero-shot benchmark is built from."""
    if name == "stpls3d_refer":
        return params.layout.stpls3d_refer
    raise ValueError(f"benchmark: expected one of {list(ZERO_SHOT)}, got {name!r}")


def benchmark_params(params: Params, name: str) -> Params:
    """``params`` for benchmark ``name``: its layout (``eval.benchmark``) and, for a zero-shot
    one, its CityRefer-layout source as the raw data set (every scene; GeoJSON landmarks on).

    >>> p = benchmark_params(Params(), "stpls3d_refer")
    >>> p.eval.benchmark, p.data.source, p.data_root.name, p.layout.scenes.parts[-3:]
    ('stpls3d_refer', 'cityrefer', 'stpls3d_refer', ('benchmarks', 'stpls3d_refer', 'scenes'))
    >>> benchmark_params(Params(), "cityrefer").data.source  # the data set as configured
    'synthetic'
    """
    if name not in BENCHMARKS:
        raise ValueError(f"benchmark: expected one of {list(BENCHMARKS)}, got {name!r}")
    if name == "cityrefer":
        return params.with_updates(eval={"benchmark": name})
    return params.with_updates(
        eval={"benchmark": name},
        data={"source": "cityrefer", "root": str(_source(params, name)), "scenes": None},
        landmarks={"use_geojson": True},
    )


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
    from urbex.stages import build_scene

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
    from urbex.atomic import atomic_path
    from urbex.eval.play import landmark_index

    if name not in ZERO_SHOT:
        raise ValueError(f"benchmark: expected a zero-shot one of {list(ZERO_SHOT)}, got {name!r}")
    bp = benchmark_params(params, name)
    clean = pl.read_parquet(build_clean_annotations(bp))
    if clean.height == 0:
        raise AnnotationError(
            f"benchmark {name!r}: cleaning left no query", path=bp.layout.clean_queries
        )
    index = landmark_index(bp)
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
            f"benchmark {name!r}: its source {_source(params, name)} holds no scene; build it "
            "with `urbex stpls3d-refer`",
            field="eval.benchmark",
        )
    for sid in scenes:
        build_benchmark_scene(params, name, sid, force=force)
    build_benchmark_landmarks(params, name)
    path = build_benchmark_queries(params, name)
    q = pl.read_parquet(path)
    return BenchmarkBuild(
        name=name,
        scene_ids=scenes,
        n_queries=q.height,
        n_landmark_free=int(q["landmark_free"].sum()),
        queries=path,
    )
