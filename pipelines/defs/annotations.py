"""Landmark tables, cleaned annotations, splits and STPLS3D-Refer, each behind a blocking check.

An asset whose files the warehouse reads refreshes it once, after its stage.
"""

from collections.abc import Callable
from typing import TypeVar

import dagster as dg
import polars as pl

from pipelines.defs.assets import raw_dataset, scene_caches
from pipelines.defs.quality import quality_spec, run_checked
from pipelines.defs.resources import UrbexParams
from pipelines.defs.versions import data_version
from urbex.annotations.stpls3d_refer import refer_counts
from urbex.config import Params
from urbex.stages import (
    refresh,
    stage_clean_annotations,
    stage_landmarks,
    stage_splits,
    stage_stpls3d_refer,
)

T = TypeVar("T")


def _then_refresh(stage: Callable[[Params], T], params: Params) -> Callable[[], T]:
    """``stage(params)``, then the asset run's one warehouse refresh."""

    def run() -> T:
        out = stage(params)
        refresh(params)
        return out

    return run


@dg.asset(
    deps=[scene_caches], group_name="annotations", check_specs=[quality_spec("landmark_tables")]
)
def landmark_tables(urbex_params: UrbexParams):
    """One landmark table per scene (box3d landmark instances + registered GeoJSON)."""
    params = urbex_params.load()
    yield from run_checked(
        _then_refresh(stage_landmarks, params),
        metadata=lambda paths: {
            "n_scenes": len(paths),
            "n_landmarks": sum(pl.read_parquet(p).height for p in paths),
        },
        version=lambda paths: data_version(params, params.layout.landmarks),  # DVC's out
    )


@dg.asset(
    deps=[landmark_tables],
    group_name="annotations",
    check_specs=[quality_spec("clean_annotations")],
)
def clean_annotations(urbex_params: UrbexParams):
    """CityRefer annotations without duplicates, low-quality rows, false segments or missing ids."""
    params = urbex_params.load()
    yield from run_checked(
        _then_refresh(stage_clean_annotations, params),
        metadata=lambda path: {
            "n_queries": pl.read_parquet(path).height,
            "n_dropped": pl.read_parquet(params.layout.annotation_drops).height,
            "path": dg.MetadataValue.path(str(path)),
        },
        version=lambda path: data_version(params, path),  # a file of DVC's splits out
    )


@dg.asset(deps=[clean_annotations], group_name="annotations", check_specs=[quality_spec("splits")])
def splits(urbex_params: UrbexParams):
    """train / val / test_nd / test_no, leak-free and deterministic."""
    params = urbex_params.load()
    yield from run_checked(
        _then_refresh(stage_splits, params),
        metadata=lambda path: {
            "counts": dg.MetadataValue.json(
                dict(pl.read_parquet(path).group_by("split").len().sort("split").iter_rows())
            ),
            "path": dg.MetadataValue.path(str(path)),
        },
        version=lambda path: data_version(params, params.layout.splits),  # DVC's splits out
    )


@dg.asset(deps=[raw_dataset], group_name="annotations", check_specs=[quality_spec("stpls3d_refer")])
def stpls3d_refer(urbex_params: UrbexParams):
    """The zero-shot STPLS3D-Refer benchmark, written in the CityRefer layout."""
    params = urbex_params.load()
    yield from run_checked(
        lambda: stage_stpls3d_refer(params),
        metadata=lambda path: {
            "path": dg.MetadataValue.path(str(path)),
            **refer_counts(path),
        },
        version=lambda path: data_version(params, params.layout.stpls3d_refer),  # DVC's out
    )
