"""Readers and writers for every data source urbex consumes.

Point clouds (PLY, STPLS3D text, LAS/LAZ) come back as :class:`urbex.pointcloud.PointCloud` in
world metres; CityRefer annotation files as frozen records; landmark GeoJSON as a
GeoDataFrame. :func:`read_scene` / :func:`list_scenes` sit on top of them all.
Writers are atomic (temporary file + ``os.replace``).
"""

from typing import TYPE_CHECKING

from urbex.lazy import lazy_exports

if TYPE_CHECKING:
    from urbex.io.cityrefer import (
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
    from urbex.io.datasets import SOURCES, RawScene, annotation_files, list_scenes, read_scene
    from urbex.io.geojson import read_landmarks_geojson, write_landmarks_geojson
    from urbex.io.las import LasReader, UnitConversion, read_las, unit_conversion, write_las
    from urbex.io.ply import PlyHeader, PlyReader, read_ply, write_ply
    from urbex.io.stpls3d import read_stpls3d_ply, read_stpls3d_txt, write_stpls3d_txt

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

__getattr__, __dir__ = lazy_exports(__name__, __file__)
