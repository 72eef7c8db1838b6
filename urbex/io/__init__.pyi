"""The exports of :mod:`urbex.io`: type checkers read them here, and ``lazy_loader`` loads each
from its submodule on first use."""

from .cityrefer import (
    Annotation,
    BoxRecord,
    FalseSegment,
    read_annotations,
    read_box3d,
    read_false_segments,
    read_segs,
    segs_to_instance,
    write_annotations,
    write_box3d,
    write_false_segments,
    write_segs,
)
from .datasets import SOURCES, RawScene, annotation_files, list_scenes, read_scene
from .geojson import read_landmarks_geojson, write_landmarks_geojson
from .las import LasReader, UnitConversion, read_las, unit_conversion, write_las
from .ply import PlyHeader, PlyReader, read_ply, write_ply
from .stpls3d import read_stpls3d_ply, read_stpls3d_txt, write_stpls3d_txt

__all__ = [
    "SOURCES",
    "Annotation",
    "BoxRecord",
    "FalseSegment",
    "LasReader",
    "PlyHeader",
    "PlyReader",
    "RawScene",
    "UnitConversion",
    "annotation_files",
    "list_scenes",
    "read_annotations",
    "read_box3d",
    "read_false_segments",
    "read_landmarks_geojson",
    "read_las",
    "read_ply",
    "read_scene",
    "read_segs",
    "read_stpls3d_ply",
    "read_stpls3d_txt",
    "segs_to_instance",
    "unit_conversion",
    "write_annotations",
    "write_box3d",
    "write_false_segments",
    "write_landmarks_geojson",
    "write_las",
    "write_ply",
    "write_segs",
    "write_stpls3d_txt",
]
