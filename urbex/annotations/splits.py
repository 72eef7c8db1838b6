"""Deterministic train / val / test_nd / test_no splits of the cleaned queries.

* ``test_no`` — held-out scenes: ``annotations.test_no_scenes``, else the scenes of
  ``CityRefer_test.json`` (column ``file_split == "test"``).
* ``val`` — ``annotations.val_scenes``, else the scenes of ``CityRefer_val.json``.
* ``test_nd`` — in the remaining (training) scenes, a seeded ``nd_fraction`` of the distinct
  normalised descriptions (per class), so no ``test_nd`` description string appears in ``train``.
* ``train`` — the rest.

The draw ranks description groups by a keyed BLAKE2 hash of ``(seed, description)``, so it does not
depend on row order and changes little when rows are added or removed.
"""

from __future__ import annotations

import hashlib

import numpy as np
import polars as pl

from urbex.annotations.clean import normalize_description
from urbex.config_data import AnnotationParams
from urbex.errors import AnnotationError, CacheError, ConfigError
from urbex.layout import AssetLayout
from urbex.query import Query

__all__ = [
    "SPLITS",
    "check_leakage",
    "load_queries",
    "make_splits",
    "scene_split_map",
    "split_counts",
]

SPLITS: tuple[str, ...] = ("train", "val", "test_nd", "test_no")


def _u64(seed: int, text: str) -> int:
    h = hashlib.blake2b(text.encode("utf-8"), digest_size=8, key=str(seed).encode()[:64])
    return int.from_bytes(h.digest(), "big")


def scene_split_map(queries: pl.DataFrame) -> dict[str, str]:
    """Scene → file split (``train``/``val``/``test``) from the ``file_split`` column.

    A scene found in several files takes the most held-out one (test > val > train).
    """
    if "file_split" not in queries.columns:
        return {}
    rank = {"test": 2, "val": 1, "train": 0}
    out: dict[str, str] = {}
    for sid, fs in queries.select("scene_id", "file_split").unique().iter_rows():
        if fs in rank and (sid not in out or rank[fs] > rank[out[sid]]):
            out[sid] = fs
    return out


def make_splits(
    queries: pl.DataFrame,
    *,
    annotation_params: AnnotationParams | None = None,
    val_scenes: list[str] | None = None,
    test_no_scenes: list[str] | None = None,
    nd_fraction: float | None = None,
    seed: int | None = None,
) -> pl.DataFrame:
    """Assign each query a ``split`` (see the module docstring).

    Parameters
    ----------
    queries
        Cleaned queries with ``scene_id``, ``class_name``, ``description`` (and, for the default
        scene lists, ``file_split``); ``description_norm`` is used when present.
    annotation_params
        The ``annotations`` params section: the defaults below.
    val_scenes, test_no_scenes, nd_fraction, seed
        Override ``annotation_params``.

    Returns
    -------
    polars.DataFrame
        ``queries`` with a ``split`` column, same row order.

    Raises
    ------
    ConfigError
        A scene is configured both as ``val`` and ``test_no``.

    Examples
    --------
    >>> q = pl.DataFrame({"scene_id": ["a", "a", "b"], "class_name": ["Car"] * 3,
    ...                   "description": ["x one", "x two", "y"], "file_split": ["train", "train", "test"]})
    >>> make_splits(q, nd_fraction=0.5, seed=0)["split"].to_list()
    ['test_nd', 'train', 'test_no']
    """
    a = annotation_params
    val_s = val_scenes if val_scenes is not None else (a.val_scenes if a is not None else None)
    no_s = (
        test_no_scenes
        if test_no_scenes is not None
        else (a.test_no_scenes if a is not None else None)
    )
    frac = nd_fraction if nd_fraction is not None else (a.nd_fraction if a is not None else 0.2)
    seed = seed if seed is not None else (a.seed if a is not None else 0)
    if not 0.0 <= frac < 1.0:
        raise ConfigError(
            f"annotations.nd_fraction must be in [0, 1), got {frac}", field="nd_fraction"
        )
    files = scene_split_map(queries)
    no = set(no_s) if no_s is not None else {s for s, f in files.items() if f == "test"}
    val = set(val_s) if val_s is not None else {s for s, f in files.items() if f == "val"}
    both = sorted(no & val)
    if both:
        raise ConfigError(
            f"scenes {both} are in both val and test_no; fix annotations.val_scenes/test_no_scenes",
            field="annotations",
        )
    if "description_norm" not in queries.columns:
        queries = queries.with_columns(
            pl.col("description")
            .map_elements(normalize_description, return_dtype=pl.String)
            .alias("description_norm")
        )
        drop_norm = True
    else:
        drop_norm = False
    df = queries.with_row_index("_r").with_columns(
        pl.when(pl.col("scene_id").is_in(sorted(no)))
        .then(pl.lit("test_no"))
        .when(pl.col("scene_id").is_in(sorted(val)))
        .then(pl.lit("val"))
        .otherwise(pl.lit("train"))
        .alias("split")
    )
    train = df.filter(pl.col("split") == "train")
    # One group per normalised description; its class = class of its first row.
    groups = train.group_by("description_norm", maintain_order=True).agg(
        pl.col("class_name").first()
    )
    groups = groups.with_columns(
        pl.col("description_norm")
        .map_elements(lambda t: _u64(seed, t), return_dtype=pl.UInt64)
        .alias("_h")
    ).sort("class_name", "_h", "description_norm")
    groups = groups.with_columns(
        pl.int_range(pl.len()).over("class_name").alias("_rank"),
        pl.len().over("class_name").alias("_n"),
    )
    nd = groups.filter(pl.col("_rank") < (pl.col("_n") * frac).round(0))["description_norm"]
    df = df.with_columns(
        pl.when((pl.col("split") == "train") & pl.col("description_norm").is_in(nd.implode()))
        .then(pl.lit("test_nd"))
        .otherwise(pl.col("split"))
        .alias("split")
    ).sort("_r")
    df = df.drop("_r")
    return df.drop("description_norm") if drop_norm else df


def check_leakage(frame: pl.DataFrame) -> dict[str, list[str]]:
    """Leaks between splits: test_nd descriptions present in train, and test_no/val scenes
    present in train. Empty lists mean no leakage.

    Examples
    --------
    >>> f = pl.DataFrame({"scene_id": ["a", "a"], "description": ["x", "x"],
    ...                   "split": ["train", "test_nd"]})
    >>> check_leakage(f)["nd_descriptions_in_train"]
    ['x']
    """

    norm = frame.with_columns(
        pl.col("description")
        .map_elements(normalize_description, return_dtype=pl.String)
        .alias("_d")
    )
    tr = norm.filter(pl.col("split") == "train")
    nd = norm.filter(pl.col("split") == "test_nd")
    tr_scenes = set(tr["scene_id"].to_list())
    return {
        "nd_descriptions_in_train": sorted(set(nd["_d"].to_list()) & set(tr["_d"].to_list())),
        "test_no_scenes_in_train": sorted(
            set(frame.filter(pl.col("split") == "test_no")["scene_id"].to_list()) & tr_scenes
        ),
        "val_scenes_in_train": sorted(
            set(frame.filter(pl.col("split") == "val")["scene_id"].to_list()) & tr_scenes
        ),
    }


def split_counts(frame: pl.DataFrame) -> pl.DataFrame:
    """Queries per split × class: one row per split (all four, in order), one column per class,
    plus ``total``.

    Examples
    --------
    >>> f = pl.DataFrame({"split": ["train", "train", "val"], "class_name": ["Car", "Building", "Car"]})
    >>> split_counts(f).row(0)
    ('train', 1, 1, 2)
    """
    classes = sorted(set(frame["class_name"].to_list()))
    base = pl.DataFrame({"split": list(SPLITS)})
    counts = frame.group_by("split", "class_name").len()
    out = base
    for c in classes:
        col = counts.filter(pl.col("class_name") == c).select("split", pl.col("len").alias(c))
        out = out.join(col, on="split", how="left")
    out = out.with_columns([pl.col(c).fill_null(0).cast(pl.Int64) for c in classes])
    return out.with_columns(
        pl.sum_horizontal([pl.col(c) for c in classes]).cast(pl.Int64).alias("total")
        if classes
        else pl.lit(0, dtype=pl.Int64).alias("total")
    )


# ---------------------------------------------------------------------------------------------
# loading a split's queries (evaluation, SFT, GRPO)
# ---------------------------------------------------------------------------------------------


def _instances(lay: AssetLayout, scene_id: str) -> pl.DataFrame:
    p = lay.instances(scene_id)
    if not p.is_file():
        raise CacheError(
            f"scene cache of {scene_id!r} not found; build it with `urbex cache`", path=p
        )
    return pl.read_parquet(p, glob=False)


def load_queries(
    lay: AssetLayout, split: str, *, limit: int | None = None, sample_seed: int = 0
) -> list[Query]:
    """The split's queries with their target boxes (world metres), sorted by ``query_id``.

    Parameters
    ----------
    split
        ``train``, ``val``, ``test_nd``, ``test_no`` (any value of the ``split`` column).
    limit
        Keep a seeded random sample of this many queries (``sample_seed``), still sorted. The
        samples are nested: a larger ``limit`` keeps every query of a smaller one.

    Raises
    ------
    AnnotationError
        No split table, an unknown split, or a query whose object is not in its scene.
    CacheError
        A query's scene cache is missing.
    """
    qpath = lay.queries
    if not qpath.is_file():
        raise AnnotationError("split table not found; build it with `urbex splits`", path=qpath)
    q = pl.read_parquet(qpath, glob=False)
    known = sorted(q["split"].unique().to_list())
    q = q.filter(pl.col("split") == split).sort("query_id")
    if q.height == 0:
        raise AnnotationError(
            f"no queries in split {split!r}; splits present: {known}", path=qpath, field="split"
        )
    if limit is not None and limit < q.height:
        rng = np.random.default_rng(sample_seed)
        keep = np.sort(rng.permutation(q.height)[:limit])  # nested across limits
        q = q[keep.tolist()]
    out: list[Query] = []
    for sid in q["scene_id"].unique().sort().to_list():
        inst = _instances(lay, sid).select(
            "object_id", "class_name", "x_min", "y_min", "z_min", "x_max", "y_max", "z_max"
        )
        rows = q.filter(pl.col("scene_id") == sid).join(
            inst.rename({"class_name": "_inst_class"}), on="object_id", how="left"
        )
        bad = rows.filter(pl.col("x_min").is_null())
        if bad.height:
            raise AnnotationError(
                f"queries {bad['query_id'].to_list()[:5]} name objects missing from scene {sid!r}'s "
                "instance table; rebuild the splits against the current caches",
                path=qpath,
                field="object_id",
            )
        for r in rows.iter_rows(named=True):
            b3 = [r["x_min"], r["y_min"], r["z_min"], r["x_max"], r["y_max"], r["z_max"]]
            out.append(
                Query(
                    query_id=str(r["query_id"]),
                    scene_id=sid,
                    object_id=str(r["object_id"]),
                    description=str(r["description"]),
                    target_box_2d=np.array([b3[0], b3[1], b3[3], b3[4]]),
                    target_box_3d=np.array(b3),
                    class_name=str(r.get("class_name") or r["_inst_class"] or ""),
                )
            )
    return sorted(out, key=lambda x: x.query_id)
