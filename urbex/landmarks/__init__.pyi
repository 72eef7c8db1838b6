"""The exports of :mod:`urbex.landmarks`: type checkers read them here, and ``lazy_loader`` loads each
from its submodule on first use."""

from .lookup import LandmarkIndex, LookupResult, Match, landmark_index
from .names import LANDMARK_KINDS, landmark_kind, normalize_name
from .table import (
    FOOTPRINT_BOUNDS,
    LANDMARK_SCHEMA,
    empty_landmark_table,
    footprint_bounds,
    landmarks_from_geojson,
    landmarks_from_instances,
    merge_landmark_tables,
    read_landmark_table,
    registration_offset,
    with_footprint_bounds,
    write_landmark_table,
)

__all__ = [
    "FOOTPRINT_BOUNDS",
    "LANDMARK_KINDS",
    "LANDMARK_SCHEMA",
    "LandmarkIndex",
    "LookupResult",
    "Match",
    "empty_landmark_table",
    "footprint_bounds",
    "landmark_index",
    "landmark_kind",
    "landmarks_from_geojson",
    "landmarks_from_instances",
    "merge_landmark_tables",
    "normalize_name",
    "read_landmark_table",
    "registration_offset",
    "with_footprint_bounds",
    "write_landmark_table",
]
