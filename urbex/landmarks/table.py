"""Landmark tables: build from instances and OSM-style GeoJSON, merge, read and write.

A footprint is parsed once, when its table is built (or read from a file written before the
bounds columns existed): :func:`with_footprint_bounds` validates ``footprint_wkt`` and stores its
bounds in :data:`FOOTPRINT_BOUNDS`; policies and tools read them with :func:`footprint_bounds`
and never parse WKT.

Frames: every coordinate is **world metres** of the scene frame (the scene cache's world,
``xyz + offset``); GeoJSON is registered into it with pyproj (via geopandas) and an offset.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import NDArray

from urbex.atomic import PUBLIC, atomic_path
from urbex.errors import LandmarkError
from urbex.landmarks.names import landmark_kind, normalize_name

__all__ = [
    "FOOTPRINT_BOUNDS",
    "LANDMARK_SCHEMA",
    "empty_landmark_table",
    "footprint_bounds",
    "landmarks_from_geojson",
    "landmarks_from_instances",
    "merge_landmark_tables",
    "read_landmark_table",
    "registration_offset",
    "with_footprint_bounds",
    "write_landmark_table",
]

#: Footprint bounds columns, world metres (scene frame); null when a landmark has no footprint.
FOOTPRINT_BOUNDS: tuple[str, str, str, str] = (
    "fp_x_min_m",
    "fp_y_min_m",
    "fp_x_max_m",
    "fp_y_max_m",
)

#: Column → polars dtype of a landmark table.
LANDMARK_SCHEMA: dict[str, Any] = {
    "scene_id": pl.String,
    "landmark_id": pl.String,
    "name": pl.String,
    "name_norm": pl.String,
    "aliases": pl.List(pl.String),
    "kind": pl.String,
    "footprint_wkt": pl.String,
    "x": pl.Float64,
    "y": pl.Float64,
    "source": pl.String,
    "object_id": pl.String,
    **{c: pl.Float64 for c in FOOTPRINT_BOUNDS},
}


def empty_landmark_table() -> pl.DataFrame:
    """A landmark table with no rows and the :data:`LANDMARK_SCHEMA` columns."""
    return pl.DataFrame(schema=LANDMARK_SCHEMA)


def _landmark_label(row: dict[str, Any]) -> str:
    return (
        f"scene {row.get('scene_id')!r}, landmark {row.get('landmark_id')!r} ({row.get('name')!r})"
    )


def with_footprint_bounds(table: pl.DataFrame, *, path: str | Path | None = None) -> pl.DataFrame:
    """Validate ``footprint_wkt`` and (re)compute the :data:`FOOTPRINT_BOUNDS` columns.

    A null or ``""`` footprint means "no footprint" (null bounds); a point footprint has zero
    extent. This is the one place a landmark's WKT is parsed for its bounds.

    Parameters
    ----------
    table
        Landmark rows with ``footprint_wkt`` (polygon / line / point, world metres, scene frame);
        ``scene_id``, ``landmark_id`` and ``name`` name a bad row in the error when present.
    path
        The file the table was read from, named in the error.

    Returns
    -------
    polars.DataFrame
        ``table`` with ``fp_x_min_m, fp_y_min_m, fp_x_max_m, fp_y_max_m`` (float64, world metres)
        replaced or appended; without a ``footprint_wkt`` column, ``table`` unchanged.

    Raises
    ------
    LandmarkError
        A footprint is not WKT, is an empty geometry, or has a non-finite coordinate; the
        message names the scene, the landmark and (with ``path``) the file.

    Examples
    --------
    >>> t = pl.DataFrame({"footprint_wkt": ["POLYGON ((0 0, 4 0, 4 2, 0 0))", "POINT (5 6)", None]})
    >>> with_footprint_bounds(t).select(FOOTPRINT_BOUNDS).rows()
    [(0.0, 0.0, 4.0, 2.0), (5.0, 6.0, 5.0, 6.0), (None, None, None, None)]
    """
    import shapely

    if "footprint_wkt" not in table.columns:
        return table
    wkts = table["footprint_wkt"].to_list()
    has = np.array([w is not None and w != "" for w in wkts], dtype=bool)
    geoms = shapely.from_wkt(
        np.array([w if h else None for w, h in zip(wkts, has)], dtype=object), on_invalid="ignore"
    )
    bounds = np.full((len(wkts), 4), np.nan, dtype=np.float64)
    if has.any():
        bounds[has] = shapely.bounds(geoms[has])
    bad = has & (shapely.is_missing(geoms) | shapely.is_empty(geoms) | ~np.isfinite(bounds).all(1))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        g = geoms[i]
        why = (
            "is not valid WKT"
            if g is None
            else "is an empty geometry"
            if shapely.is_empty(g)
            else "has a non-finite coordinate"
        )
        text = str(wkts[i])
        text = text if len(text) <= 80 else text[:77] + "..."
        raise LandmarkError(
            f"{_landmark_label(table.row(i, named=True))}: footprint {text!r} {why} "
            f"({int(bad.sum())} bad footprint(s) in the table); expected a polygon, line or point "
            "in world metres, or null for a landmark without a footprint",
            path=path,
            field="footprint_wkt",
        )
    cols = [
        pl.Series(c, [float(v) if h else None for v, h in zip(bounds[:, k], has)], pl.Float64)
        for k, c in enumerate(FOOTPRINT_BOUNDS)
    ]
    invalid = np.zeros(len(wkts), dtype=bool)
    invalid[has] = ~shapely.is_valid(geoms[has])
    if invalid.any():  # a self-intersecting ring: every overlay (intersection, area) would raise
        fixed = shapely.make_valid(geoms[invalid])
        names = [_landmark_label(table.row(int(i), named=True)) for i in np.flatnonzero(invalid)]
        warnings.warn(
            f"{path or 'landmarks'}: {int(invalid.sum())} footprint(s) not valid (self-"
            f"intersecting or mis-oriented rings: {', '.join(names[:3])}); repaired with "
            "shapely.make_valid (same outline, split into valid parts)",
            UserWarning,
            stacklevel=2,
        )
        out = list(wkts)
        for k, g in zip(np.flatnonzero(invalid).tolist(), fixed):
            out[k] = shapely.to_wkt(g)
        cols.append(pl.Series("footprint_wkt", out, pl.String))
    return table.with_columns(cols)


def _check_stored_bounds(table: pl.DataFrame, path: str | Path | None) -> pl.DataFrame:
    """Stored bounds: all four null or all four finite with ``min <= max`` (no WKT parse)."""
    b = table.select(FOOTPRINT_BOUNDS).to_numpy().astype(np.float64)
    nul = np.isnan(b)
    ok = nul.all(1) | (np.isfinite(b).all(1) & (b[:, 0] <= b[:, 2]) & (b[:, 1] <= b[:, 3]))
    if not ok.all():
        i = int(np.flatnonzero(~ok)[0])
        raise LandmarkError(
            f"{_landmark_label(table.row(i, named=True))}: footprint bounds {b[i].tolist()} are "
            "not four finite world-metre values with min <= max (or four nulls); rebuild the "
            "landmark table (urbex landmarks)",
            path=path,
            field="fp_x_min_m",
        )
    return table


def _complete(table: pl.DataFrame, path: str | Path | None = None) -> pl.DataFrame:
    """``table`` in :data:`LANDMARK_SCHEMA` order; bounds derived when it has none, else checked."""
    if set(FOOTPRINT_BOUNDS) <= set(table.columns):
        table = _check_stored_bounds(table, path)
    else:
        table = with_footprint_bounds(table, path=path)
    return table.select(list(LANDMARK_SCHEMA))


def _frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    if not rows:
        return empty_landmark_table()
    base = {k: v for k, v in LANDMARK_SCHEMA.items() if k not in FOOTPRINT_BOUNDS}
    return _complete(pl.DataFrame(rows, schema=base))


def footprint_bounds(
    row: Mapping[str, Any], *, require_area: bool = False
) -> NDArray[np.float64] | None:
    """The stored footprint bounds of one landmark row (no WKT parsing).

    Parameters
    ----------
    row
        A landmark-table row (e.g. :attr:`urbex.landmarks.Match.row`).
    require_area
        Return None unless the footprint has a positive extent along both x and y.

    Returns
    -------
    ndarray, shape (4,), float64, or None
        ``[x_min, y_min, x_max, y_max]``, world metres (scene frame); None when the row has no
        footprint (or, with ``require_area``, a point/line footprint of zero width).

    Examples
    --------
    >>> row = {"fp_x_min_m": 0.0, "fp_y_min_m": 1.0, "fp_x_max_m": 4.0, "fp_y_max_m": 1.0}
    >>> footprint_bounds(row).tolist(), footprint_bounds(row, require_area=True)
    ([0.0, 1.0, 4.0, 1.0], None)
    >>> footprint_bounds({"x": 1.0, "y": 2.0}) is None
    True
    """
    vals = [row.get(c) for c in FOOTPRINT_BOUNDS]
    if any(v is None for v in vals):
        return None
    b = np.asarray(vals, dtype=np.float64)
    if require_area and not (b[2] > b[0] and b[3] > b[1]):
        return None
    return b


def _hull_wkt(xy: NDArray[np.floating]) -> tuple[str, float, float]:
    import shapely

    pts = np.unique(np.round(xy, 2), axis=0)  # centimetre snapping; shrinks dense clouds
    geom = shapely.convex_hull(shapely.multipoints(pts))
    c = geom.centroid
    return geom.wkt, float(c.x), float(c.y)


def landmarks_from_instances(
    instances: pl.DataFrame,
    *,
    scene_id: str,
    xy: NDArray[np.floating] | None = None,
    point_instance: NDArray[np.integer] | None = None,
) -> pl.DataFrame:
    """Landmark rows for the instances whose ``landmark_name`` is non-empty.

    Parameters
    ----------
    instances
        Instance table of one scene: ``object_id`` (str), ``class_name``, ``landmark_name``
        (``""``/null when none) and the XY box ``x_min, y_min, x_max, y_max`` (world metres).
    scene_id
        Written into every row.
    xy : ndarray, shape (N, 2), float, optional
        Point XY in world metres (scene frame). With ``point_instance`` the footprint is the
        convex hull of the instance's points; otherwise it is the instance's XY box.
    point_instance : ndarray, shape (N,), int, optional
        Instance id of each point (-1 = none), equal to ``int(object_id)``.

    Returns
    -------
    polars.DataFrame
        Landmark table (:data:`LANDMARK_SCHEMA`), ``source="box3d"``.
    """
    need = {"object_id", "landmark_name", "x_min", "y_min", "x_max", "y_max"}
    missing = need - set(instances.columns)
    if missing:
        raise LandmarkError(
            f"instance table lacks columns {sorted(missing)}; expected {sorted(need)}",
            field="instances",
        )
    named = instances.filter(pl.col("landmark_name").fill_null("").str.strip_chars() != "")
    if named.is_empty():
        return empty_landmark_table()
    hulls: dict[int, tuple[str, float, float]] = {}
    if xy is not None and point_instance is not None:
        xy = np.asarray(xy, dtype=np.float64)
        inst = np.asarray(point_instance)
        if xy.ndim != 2 or xy.shape[1] != 2 or inst.shape != (xy.shape[0],):
            raise ValueError(
                f"xy must be (N, 2) and point_instance (N,), got {xy.shape}, {inst.shape}"
            )
        ids = np.array(
            [int(o) for o in named["object_id"].to_list() if str(o).lstrip("-").isdigit()]
        )
        sel = np.flatnonzero(np.isin(inst, ids))
        order = sel[np.argsort(inst[sel], kind="stable")]
        uniq, starts = np.unique(inst[order], return_index=True)
        ends = np.append(starts[1:], order.size)
        for u, a, b in zip(uniq.tolist(), starts.tolist(), ends.tolist()):
            if b - a >= 3:
                hulls[int(u)] = _hull_wkt(xy[order[a:b]])
    rows: list[dict[str, Any]] = []
    for r in named.iter_rows(named=True):
        oid = str(r["object_id"])
        name = str(r["landmark_name"]).strip()
        key = int(oid) if oid.lstrip("-").isdigit() else None
        if key is not None and key in hulls:
            wkt, x, y = hulls[key]
        else:
            x0, y0, x1, y1 = (float(r[c]) for c in ("x_min", "y_min", "x_max", "y_max"))
            wkt = f"POLYGON (({x0} {y0}, {x1} {y0}, {x1} {y1}, {x0} {y1}, {x0} {y0}))"
            x, y = (x0 + x1) / 2, (y0 + y1) / 2
        rows.append(
            {
                "scene_id": scene_id,
                "landmark_id": f"{scene_id}:box3d:{oid}",
                "name": name,
                "name_norm": normalize_name(name),
                "aliases": [],
                "kind": landmark_kind(name, object_name=r.get("class_name")),
                "footprint_wkt": wkt,
                "x": x,
                "y": y,
                "source": "box3d",
                "object_id": oid,
            }
        )
    return _frame(rows)


def _read_vector(path: str | Path) -> Any:
    """``geopandas.read_file(path)`` or a LandmarkError (NaN warnings: :func:`_drop_nonfinite`)."""
    import geopandas as gpd

    try:
        with np.errstate(invalid="ignore"):
            return gpd.read_file(path)
    except Exception as exc:  # pyogrio raises several types; re-raise typed
        raise LandmarkError(f"cannot read landmark file: {exc}", path=path) from exc


def _drop_nonfinite(gdf: Any, path: Path | None) -> Any:
    """``gdf`` less its features with a NaN or infinite coordinate (GEOS can neither clip nor
    measure them), with a warning naming the file and those features."""
    import shapely

    xy, row = shapely.get_coordinates(np.asarray(gdf.geometry.values), return_index=True)
    bad = np.isin(np.arange(len(gdf)), row[~np.isfinite(xy).all(axis=1)])
    if bad.any():
        which = [f"feature {i} {n!r}" for i, n in zip(gdf.index[bad], gdf["name"][bad])]
        msg = f"{path or 'landmarks'}: {int(bad.sum())} feature(s) with a non-finite coordinate"
        warnings.warn(f"{msg} left out ({', '.join(which[:3])})", UserWarning, stacklevel=3)
    return gdf[~bad]


_ALIAS_KEYS = ("alt_name", "short_name", "official_name", "old_name", "loc_name", "name:en")


def landmarks_from_geojson(
    source: str | Path | Any,
    *,
    scene_id: str,
    scene_crs: str | None,
    offset: Sequence[float] | NDArray[np.floating] = (0.0, 0.0, 0.0),
    bounds: Sequence[float] | None = None,
) -> pl.DataFrame:
    """Register an OSM-style landmark file into the scene frame.

    Geometries are transformed (pyproj, via geopandas) to ``scene_crs`` and the scene offset is
    subtracted, giving world metres of the scene frame. Features without a ``name`` are skipped;
    with ``bounds`` features outside the scene are skipped and the rest are clipped to it.

    Parameters
    ----------
    source
        A path geopandas can read, or a GeoDataFrame. Needs a ``name`` column; ``kind``, OSM tag
        columns and alias columns (``alt_name``, ``short_name``, ...) are used when present.
    scene_id
        Written into every row.
    scene_crs
        CRS of ``xyz + offset`` of the scene (authority string or WKT). None: the file must
        also have no CRS and is taken to be in the scene's absolute frame already.
    offset : sequence of 3 float
        Scene offset (absolute world metres); its XY is subtracted.
    bounds : [x_min, y_min, x_max, y_max], optional
        Scene XY extent, world metres (scene frame).

    Raises
    ------
    LandmarkError
        The file cannot be read, has no ``name`` column, or cannot be registered.
    """
    import shapely

    path = None
    if isinstance(source, (str, Path)):
        path = Path(source)
        gdf = _read_vector(path)
    else:
        gdf = source
    if "name" not in gdf.columns:
        raise LandmarkError(
            f"expected a 'name' property, found columns {list(gdf.columns)}",
            path=path,
            field="name",
        )
    gdf = gdf[gdf["name"].notna() & (gdf["name"].astype(str).str.strip() != "")]
    gdf = _drop_nonfinite(gdf[gdf.geometry.notna() & ~gdf.geometry.is_empty], path)
    if gdf.empty:
        return empty_landmark_table()
    if gdf.crs is None and scene_crs is not None:
        raise LandmarkError(
            f"landmark file has no CRS; cannot register it to the scene CRS {scene_crs!r}",
            path=path,
        )
    if gdf.crs is not None:
        if scene_crs is None:
            raise LandmarkError(
                f"scene {scene_id!r} has no CRS; cannot register landmarks given in {gdf.crs}",
                path=path,
            )
        try:
            gdf = gdf.to_crs(scene_crs)
        except Exception as exc:
            raise LandmarkError(f"cannot transform to {scene_crs!r}: {exc}", path=path) from exc
    off = np.asarray(offset, dtype=np.float64)[:2]
    geoms = shapely.transform(np.asarray(gdf.geometry.values, dtype=object), lambda c: c - off)
    invalid = ~shapely.is_valid(geoms)
    if invalid.any():  # a self-intersecting ring: clipping to the scene would raise
        names = [str(n) for n in gdf["name"].to_numpy()[invalid]]
        warnings.warn(
            f"{path or 'landmarks'}: {int(invalid.sum())} footprint(s) not valid (self-"
            f"intersecting or mis-oriented rings: {', '.join(map(repr, names[:3]))}); repaired "
            "with shapely.make_valid (same outline, split into valid parts)",
            UserWarning,
            stacklevel=2,
        )
        geoms[invalid] = shapely.make_valid(geoms[invalid])
    box = None if bounds is None else shapely.box(*[float(b) for b in bounds])
    rows: list[dict[str, Any]] = []
    records = gdf.drop(columns=gdf.geometry.name).to_dict("records")
    for i, (geom, props) in enumerate(zip(geoms, records)):
        if box is not None:
            if not geom.intersects(box):
                continue
            geom = geom.intersection(box)
            if geom.is_empty:
                continue
        name = str(props["name"]).strip()
        aliases: list[str] = []
        for k in _ALIAS_KEYS:
            v = props.get(k)
            if isinstance(v, str) and v.strip():
                aliases += [a.strip() for a in v.split(";") if a.strip() and a.strip() != name]
        gt = geom.geom_type
        c = geom.interpolate(0.5, normalized=True) if "LineString" in gt else geom.centroid
        if "LineString" in gt and gt.startswith("Multi"):
            c = shapely.line_merge(geom).centroid
        fid = props.get("id", props.get("osm_id", i))
        rows.append(
            {
                "scene_id": scene_id,
                "landmark_id": f"{scene_id}:geojson:{fid}",
                "name": name,
                "name_norm": normalize_name(name),
                "aliases": list(dict.fromkeys(aliases)),
                "kind": landmark_kind(name, tags=props, geom_type=gt),
                "footprint_wkt": geom.wkt,
                "x": float(c.x),
                "y": float(c.y),
                "source": "geojson",
                "object_id": "",
            }
        )
    return _frame(rows)


def registration_offset(
    path: str | Path,
    *,
    scene_crs: str | None,
    bounds: Sequence[float],
    candidates: Sequence[Sequence[float]],
) -> tuple[float, float, float]:
    """Pick the offset (CRS coordinate of the scene's world zero) that registers a landmark file.

    Data sets disagree on whether a scene's world frame is the CRS frame (offset 0) or a local
    frame whose origin a manifest records; this tries each candidate and keeps the one under which
    the file's extent overlaps the scene's XY ``bounds`` the most.

    Parameters
    ----------
    path
        Landmark file (GeoJSON or anything geopandas reads).
    scene_crs
        CRS the candidates are expressed in (None: the file's own).
    bounds : [x_min, y_min, x_max, y_max]
        Scene XY extent, world metres.
    candidates : sequence of (3,) offsets, metres

    Raises
    ------
    LandmarkError
        No candidate makes the file overlap the scene.
    """
    gdf = _read_vector(path)
    if gdf.crs is not None and scene_crs is not None:
        gdf = gdf.to_crs(scene_crs)
    x0, y0, x1, y1 = (float(v) for v in gdf.total_bounds)
    best, best_area = None, 0.0
    for off in candidates:
        o = [float(v) for v in off] + [0.0] * (3 - len(off))
        w = min(x1 - o[0], bounds[2]) - max(x0 - o[0], bounds[0])
        h = min(y1 - o[1], bounds[3]) - max(y0 - o[1], bounds[1])
        area = max(w, 0.0) * max(h, 0.0) + (1e-9 if w >= 0 and h >= 0 else 0.0)
        if area > best_area:
            best, best_area = (o[0], o[1], o[2]), area
    if best is None:
        raise LandmarkError(
            f"landmark extent {[x0, y0, x1, y1]} overlaps the scene bounds {list(bounds)} under none "
            f"of the offsets {[list(c) for c in candidates]}; set the scene CRS/offset",
            path=path,
        )
    return best


def merge_landmark_tables(*tables: pl.DataFrame) -> pl.DataFrame:
    """Concatenate tables; a GeoJSON landmark whose normalised name already exists as a box3d
    landmark of the same scene is dropped (the instance's own geometry wins), its aliases kept.
    Landmark ids are made unique by suffixing ``#2``, ``#3``, ...
    """
    parts = [_complete(t) for t in tables if t.height]
    if not parts:
        return empty_landmark_table()
    df = pl.concat(parts, how="vertical")
    box = df.filter(pl.col("source") == "box3d")
    geo = df.filter(pl.col("source") != "box3d")
    dup = geo.join(box.select("scene_id", "name_norm").unique(), on=["scene_id", "name_norm"])
    extra = dup.group_by("scene_id", "name_norm").agg(
        pl.col("aliases").list.explode(keep_nulls=False, empty_as_null=False).alias("_extra")
    )
    box = (
        box.join(extra, on=["scene_id", "name_norm"], how="left")
        .with_columns(
            pl.concat_list("aliases", pl.col("_extra").fill_null([])).list.unique(
                maintain_order=True
            )
        )
        .drop("_extra")
    )
    geo = geo.join(
        box.select("scene_id", "name_norm").unique(), on=["scene_id", "name_norm"], how="anti"
    )
    out = pl.concat([box, geo], how="vertical")
    n = pl.col("landmark_id").cum_count().over("landmark_id")
    return out.with_columns(
        pl.when(n > 1)
        .then(pl.col("landmark_id") + "#" + n.cast(pl.String))
        .otherwise(pl.col("landmark_id"))
        .alias("landmark_id")
    )


def write_landmark_table(table: pl.DataFrame, path: str | Path) -> Path:
    """Write a landmark table as Parquet, atomically (temp file + ``os.replace``).

    A table without the :data:`FOOTPRINT_BOUNDS` columns gets them (validated) first; stored
    bounds are checked (four finite values with min <= max, or four nulls).

    Raises
    ------
    LandmarkError
        A footprint or its stored bounds are malformed (see :func:`with_footprint_bounds`).
    """

    path = Path(path)
    out = _complete(table)
    with atomic_path(path) as tmp:
        out.write_parquet(tmp)
    return path


def read_landmark_table(path: str | Path) -> pl.DataFrame:
    """Read one (file) or all (``*.parquet`` in a directory) landmark tables.

    A file written before the :data:`FOOTPRINT_BOUNDS` columns existed gets them derived from
    its footprints (validated as at build time); stored bounds are checked, not recomputed.

    Raises
    ------
    LandmarkError
        A file lacks a column of :data:`LANDMARK_SCHEMA` (other than the bounds), or holds a
        malformed footprint or bounds; the message names the file, scene and landmark.
    """
    path = Path(path)
    files = sorted(path.glob(f"{PUBLIC}.parquet")) if path.is_dir() else [path]
    frames = []
    for f in files:
        df = pl.read_parquet(f, glob=False)
        missing = set(LANDMARK_SCHEMA) - set(FOOTPRINT_BOUNDS) - set(df.columns)
        if missing:
            raise LandmarkError(f"missing landmark columns {sorted(missing)}", path=f)
        frames.append(_complete(df, f).cast(LANDMARK_SCHEMA))  # type: ignore[arg-type]
    return pl.concat(frames, how="vertical") if frames else empty_landmark_table()
