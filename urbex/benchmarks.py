"""A benchmark is a data set: its own scene caches, landmark tables and queries (which they are).

``cityrefer`` is the benchmark the pipeline trains and tests on (its data at the top of the
assets root). A *zero-shot* benchmark is played by the same policies, checkpoints and metrics,
with nothing fitted on it: ``stpls3d_refer`` (the paper's Table 2), built by the same stages
(:func:`urbex.stages.build_benchmark`) from the CityRefer-layout output of
``urbex stpls3d-refer`` (``<assets>/stpls3d_refer/``: pseudo-instances as the instance table,
the OSM/GeoJSON landmarks registered into the scene frame). Its files go under
``<assets>/benchmarks/<name>/`` (:class:`urbex.layout.AssetLayout` with ``benchmark=name``):

``scenes/<id>/``, ``landmarks/<id>.parquet``, ``splits/clean_queries.parquet``,
``splits/queries.parquet`` (every query in split :data:`ZERO_SHOT_SPLIT`, with
``landmark_free``), ``quality/``.

``landmark_free`` is decided by the landmark index's ``mentions()`` (the one the diagnostics
use, :func:`urbex.landmarks.lookup.landmark_index`): a query is landmark-free when its description
mentions no landmark name of its scene.
"""

from __future__ import annotations

from pathlib import Path
from typing import get_args

from urbex.config import Benchmark, Params
from urbex.layout import AssetLayout

__all__ = ["BENCHMARKS", "ZERO_SHOT", "ZERO_SHOT_SPLIT", "benchmark_params", "benchmark_source"]

#: Every benchmark name (``eval.benchmark``, ``urbex evaluate --benchmark``).
BENCHMARKS: tuple[str, ...] = get_args(Benchmark)
#: The zero-shot benchmarks (played, never fitted on).
ZERO_SHOT: tuple[str, ...] = tuple(b for b in BENCHMARKS if b != "cityrefer")
#: The one split of a zero-shot benchmark: all its queries.
ZERO_SHOT_SPLIT = "test"


def benchmark_source(lay: AssetLayout, name: str) -> Path:
    """The CityRefer-layout data root (under ``lay``) a zero-shot benchmark is built from."""
    if name == "stpls3d_refer":
        return lay.stpls3d_refer
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
        data={
            "source": "cityrefer",
            "root": str(benchmark_source(params.layout, name)),
            "scenes": None,
        },
        landmarks={"use_geojson": True},
    )
