"""Typed params of the data stages: ``paths``, ``data``, ``synth``, ``scene``, ``landmarks``,
``annotations`` and ``stpls3d_refer`` in ``params.yaml`` (:mod:`urbex.config` assembles them into
:class:`~urbex.config.Params`), and the bounds they share with the code that reads their data
(:data:`MAX_SYNTH_POINTS`, :data:`MAX_DESCRIPTION_CHARS`). Field types are the strict ones of
:mod:`urbex.config_env`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from urbex.config_env import Bool, Float, Int, Seed, StrictModel

__all__ = [
    "MAX_DESCRIPTION_CHARS",
    "MAX_SYNTH_POINTS",
    "AnnotationParams",
    "DataParams",
    "LandmarkParams",
    "PathsParams",
    "SceneParams",
    "Stpls3dReferParams",
    "SynthParams",
]


class PathsParams(StrictModel):
    assets: Path = Path("assets")


class DataParams(StrictModel):
    source: Literal["synthetic", "cityrefer", "stpls3d", "las"] = "synthetic"
    root: Path | None = None
    scenes: list[str] | None = Field(
        None, description="scene ids to process (null = every scene found under the root)"
    )


#: The most points a synthetic block may hold (``synth.density`` × ``synth.size``²): a
#: 1,000 m block at 100 points per m², a few GB in memory while it is generated.
MAX_SYNTH_POINTS = 100_000_000


class SynthParams(StrictModel):
    scenes: Int = Field(5, ge=1)
    seed: Seed = 0
    density: Float = Field(20.0, gt=0, description="points per m² of horizontal surface")
    size: Float = Field(160.0, ge=40, description="block side, metres")
    las_copy: Bool = True
    stpls3d_scenes: Int = Field(1, ge=0)

    @model_validator(mode="after")
    def _points(self) -> SynthParams:
        n = self.density * self.size**2
        if n > MAX_SYNTH_POINTS:
            raise ValueError(
                f"density {self.density:g} × size {self.size:g}² is {n:.3g} points per block; at "
                f"most {MAX_SYNTH_POINTS:,} are generated (memory): lower density or size"
            )
        return self


class SceneParams(StrictModel):
    resolution: Float = Field(0.1, gt=0, description="BEV metres per pixel")
    cell_size: Float = Field(8.0, gt=0, description="spatial-index cell side, metres")
    global_view_size: Int = Field(1024, ge=64)
    hole_fill_iterations: Int = Field(3, ge=0)
    cog_export: Bool = False
    max_bev_megapixels: Float = Field(
        600.0, gt=0, description="refuse BEV rasters larger than this (a units/extent guard)"
    )


class LandmarkParams(StrictModel):
    """Landmark tables and name lookup (``urbex.landmarks``). Scores are 0–1; distances metres."""

    threshold: Float = Field(0.85, gt=0, le=1, description="min fuzzy score for found=True")
    ambiguity_margin: Float = Field(
        0.03, ge=0, le=1, description="a different name scoring within this of the best → not found"
    )
    mention_threshold: Float = Field(0.9, gt=0, le=1, description="min score of an n-gram mention")
    limit: Int = Field(5, ge=1, description="ranked candidates returned by a lookup")
    use_geojson: Bool = Field(True, description="also register <root>/landmarks/<scene>.geojson")
    bounds_margin_m: Float = Field(5.0, ge=0, description="tolerance of the inside-bounds check")


#: The longest description urbex reads, characters (surrounding white space not counted):
#: :func:`urbex.language.parse` refuses a longer one (its reading grows faster than its length),
#: so ``urbex parse``, ``urbex ground`` and ``annotations.max_chars`` (the splits' bound, which
#: may not exceed it) hold to the same limit.
MAX_DESCRIPTION_CHARS = 2000

_NON_INFORMATIVE = "n/a|na|none|null|unknown|same as above|see above|no description|todo|test|nothing|xxx|-"  # fmt: skip


class AnnotationParams(StrictModel):
    """Annotation cleaning and the train/val/test_nd/test_no splits (``urbex.annotations``)."""

    target_classes: list[str] = Field(
        ["Building", "Car", "Ground", "Parking"], description="object_name values kept"
    )
    min_words: Int = Field(3, ge=1, description="fewer words → dropped as too_short")
    min_distinct_words: Int = Field(3, ge=1, description="fewer distinct words → non_informative")
    min_chars: Int = Field(10, ge=1, description="quality bound on description length")
    max_chars: Int = Field(
        2000,
        ge=1,
        le=MAX_DESCRIPTION_CHARS,
        description="quality bound on description length (at most MAX_DESCRIPTION_CHARS)",
    )
    non_informative: list[str] = Field(
        _NON_INFORMATIVE.split("|"), description="whole descriptions (normalised) with no content"
    )
    seed: Seed = 0
    nd_fraction: Float = Field(
        0.2, ge=0, lt=1, description="share of training-scene descriptions → test_nd"
    )
    val_scenes: list[str] | None = Field(None, description="null: scenes of CityRefer_val.json")
    test_no_scenes: list[str] | None = Field(
        None, description="null: scenes of CityRefer_test.json"
    )


class Stpls3dReferParams(StrictModel):
    """STPLS3D-Refer construction (``urbex.annotations.stpls3d_refer``). Lengths in metres."""

    scenes: list[str] | None = Field(None, description="STPLS3D scene ids (null = all found)")
    building_classes: list[Int] = Field(
        [1], description="STPLS3D semantic ids clustered as buildings"
    )
    vehicle_classes: list[Int] = Field(
        [5, 6], description="STPLS3D semantic ids clustered as vehicles"
    )
    building_cell_m: Float = Field(0.75, gt=0, description="occupancy-grid cell for buildings")
    vehicle_cell_m: Float = Field(0.5, gt=0, description="occupancy-grid cell for vehicles")
    building_closing: Int = Field(1, ge=0, description="binary closing passes before labelling")
    vehicle_closing: Int = Field(0, ge=0, description="binary closing passes before labelling")
    building_min_points: Int = Field(100, ge=1)
    vehicle_min_points: Int = Field(15, ge=1)
    building_min_area_m2: Float = Field(20.0, ge=0, description="min XY box area of a building")
    vehicle_length_m: tuple[Float, Float] = Field((2.0, 14.0), description="[min, max] long side")
    vehicle_footprint_m2: Float = Field(
        11.0,
        ge=0,
        description="area per parked vehicle incl. gap; merged rows are split by k-means (0 = off)",
    )
    max_expressions_per_target: Int = Field(2, ge=1)
    landmark_max_distance_m: Float = Field(120.0, gt=0, description="farthest landmark referred to")
    crs: str | None = Field(None, description="scene CRS override (null: from the data set)")
    offset: tuple[Float, Float, Float] | None = Field(None, description="scene offset override")
