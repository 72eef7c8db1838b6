"""OSM / GeoJSON landmark files: named polygons, lines or points with a CRS.

geopandas (and its GDAL/pyogrio backend) is imported inside the functions, not at import time.

Frames
------
Geometries stay in the file's CRS (``gdf.crs``; GeoJSON defaults to EPSG:4326 lon/lat degrees).
Registering them to a scene's world-metre frame is the landmark module's job.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from urbex.atomic import atomic_path
from urbex.errors import LandmarkError

if TYPE_CHECKING:
    import geopandas

__all__ = ["read_landmarks_geojson", "write_landmarks_geojson"]


def read_landmarks_geojson(path: str | os.PathLike[str]) -> geopandas.GeoDataFrame:
    """Read a landmark file (GeoJSON or anything geopandas reads) with a ``name`` column.

    Parameters
    ----------
    path
        The file.

    Returns
    -------
    geopandas.GeoDataFrame
        One row per feature, with ``name`` (non-empty str), ``geometry`` and any other
        properties; ``crs`` as stored in the file.

    Raises
    ------
    LandmarkError
        Unreadable file, no ``name`` column, or a feature whose name is missing/empty
        (the message names the feature index), or a feature without geometry.
    """
    import geopandas as gpd

    try:
        gdf = gpd.read_file(path)
    except Exception as e:  # pyogrio raises DataSourceError / its own types
        raise LandmarkError(f"cannot read as a vector file: {e}", path=path) from e
    if "name" not in gdf.columns:
        raise LandmarkError(
            f"no 'name' property on the features (columns: {list(gdf.columns)})",
            path=path,
            field="name",
        )
    names = gdf["name"]
    bad = names.isna() | (names.astype(str).str.strip() == "")
    if bad.any():
        i = int(bad.to_numpy().nonzero()[0][0])
        raise LandmarkError(
            f"feature {i} has an empty name ({int(bad.sum())} of {len(gdf)} features lack one)",
            path=path,
            field="name",
        )
    missing_geom = gdf.geometry.isna() | gdf.geometry.is_empty
    if missing_geom.any():
        i = int(missing_geom.to_numpy().nonzero()[0][0])
        raise LandmarkError(f"feature {i} has no geometry", path=path, field="geometry")
    gdf["name"] = names.astype(str)
    return gdf


def write_landmarks_geojson(path: str | os.PathLike[str], gdf: geopandas.GeoDataFrame) -> None:
    """Write landmarks as GeoJSON (atomic: temp file + ``os.replace``), keeping ``gdf.crs``.

    Coordinates are written with 17 significant digits, so float64 values read back exactly.

    Raises
    ------
    ValueError
        ``gdf`` has no ``name`` column.
    """
    if "name" not in gdf.columns:
        raise ValueError(f"write_landmarks_geojson({path}): gdf has no 'name' column")
    with atomic_path(path) as tmp:
        tmp.unlink()  # GDAL's GeoJSON driver will not overwrite an existing file
        # 17 significant digits: float64 coordinates round-trip exactly
        gdf.to_file(tmp, driver="GeoJSON", layer=Path(path).stem, SIGNIFICANT_FIGURES=17)
