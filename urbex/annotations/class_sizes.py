"""Class size priors: the mean ground-truth box size per class of the **train** split.

The splits stage computes them (:func:`class_sizes_from_splits`) and writes them beside the split
table, ``<assets>/splits/class_sizes.json`` (:func:`write_class_sizes`); the evaluation runner
reads them once (:func:`read_class_sizes`), puts them in the run fingerprint and hands them to
``make_policy(..., class_sizes=...)`` (``landmark_prior`` uses them). Classes without training
targets keep CityRefer's means (:data:`CITYREFER_CLASS_SIZES`).

File layout (sizes in world metres, the instance table's ``dx, dy``)::

    {"split": "train",
     "classes": {"Car": {"dx_m": 4.6, "dy_m": 2.1, "n": 12}, ...}}
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path

import polars as pl

from urbex.atomic import atomic_write
from urbex.errors import AnnotationError
from urbex.layout import AssetLayout

__all__ = [
    "CITYREFER_CLASS_SIZES",
    "CLASS_SIZES_FILE",
    "class_sizes_from_splits",
    "class_sizes_path",
    "read_class_sizes",
    "write_class_sizes",
]

#: Mean GT box sizes ``(dx, dy)`` in metres of CityRefer (DATA_FORMATS.md): the fallback prior.
CITYREFER_CLASS_SIZES: dict[str, tuple[float, float]] = {
    "Ground": (32.8, 33.8),
    "Building": (18.7, 17.9),
    "Parking": (34.9, 35.6),
    "Car": (5.1, 5.1),
}

#: File name of the class sizes, beside ``queries.parquet`` in ``<assets>/splits``.
CLASS_SIZES_FILE = "class_sizes.json"


def class_sizes_path(assets: str | Path) -> Path:
    """``<assets>/splits/class_sizes.json`` (:attr:`urbex.layout.AssetLayout.class_sizes`)."""

    return AssetLayout(Path(assets)).class_sizes


def class_sizes_from_splits(
    queries: pl.DataFrame, instances: pl.DataFrame, *, split: str = "train"
) -> dict[str, tuple[float, float, int]]:
    """Mean ``(dx, dy)`` (world metres) and target count per class of one split's targets.

    Each target object counts once, however many queries describe it.

    Parameters
    ----------
    queries
        The split table: ``scene_id``, ``object_id``, ``split``.
    instances
        Instance tables of the scenes: ``scene_id``, ``object_id``, ``class_name``, ``dx``,
        ``dy`` (box size, world metres).
    split
        The split whose targets are averaged.

    Returns
    -------
    dict
        ``{class_name: (dx_m, dy_m, n_targets)}``, sorted by class; empty when the split has no
        target in ``instances``.

    Examples
    --------
    >>> q = pl.DataFrame({"scene_id": ["s"] * 3, "object_id": ["1", "1", "2"],
    ...                   "split": ["train", "train", "test_nd"]})
    >>> inst = pl.DataFrame({"scene_id": ["s", "s"], "object_id": ["1", "2"],
    ...                      "class_name": ["Car", "Car"], "dx": [4.0, 6.0], "dy": [2.0, 3.0]})
    >>> class_sizes_from_splits(q, inst)
    {'Car': (4.0, 2.0, 1)}
    """
    need = {"scene_id", "object_id", "class_name", "dx", "dy"}
    missing = need - set(instances.columns)
    if missing:
        raise AnnotationError(
            f"instance tables lack {sorted(missing)}; expected {sorted(need)}", field="instances"
        )
    keys = ["scene_id", "object_id"]
    targets = queries.filter(pl.col("split") == split).select(keys).unique()
    inst = instances.select(*keys, "class_name", "dx", "dy").unique(keys, keep="first")
    t = targets.join(inst, on=keys, how="inner").sort(keys)
    means = (
        t.group_by("class_name")
        .agg(pl.col("dx").mean(), pl.col("dy").mean(), pl.len().alias("n"))
        .sort("class_name")
    )
    return {
        str(r["class_name"]): (float(r["dx"]), float(r["dy"]), int(r["n"]))
        for r in means.iter_rows(named=True)
    }


def write_class_sizes(
    sizes: Mapping[str, tuple[float, float, int]], path: str | Path, *, split: str = "train"
) -> Path:
    """Write :func:`class_sizes_from_splits`' result as JSON, atomically."""

    doc = {
        "split": split,
        "classes": {
            c: {"dx_m": float(dx), "dy_m": float(dy), "n": int(n)}
            for c, (dx, dy, n) in sorted(sizes.items())
        },
    }
    path = Path(path)
    with atomic_write(path, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=1)
        fh.write("\n")
    return path


def read_class_sizes(assets: str | Path) -> dict[str, tuple[float, float]]:
    """The class size priors of a project: CityRefer's means, overridden by the train split's.

    Parameters
    ----------
    assets
        The assets root (``params.assets``); reads ``<assets>/splits/class_sizes.json``.

    Returns
    -------
    dict
        ``{class_name: (dx_m, dy_m)}``, world metres.

    Raises
    ------
    AnnotationError
        The file is missing (the splits stage has not run since class sizes were added) or
        malformed.
    """
    path = class_sizes_path(assets)
    if not path.is_file():
        raise AnnotationError(
            "class sizes not found; run the splits stage (`urbex splits`) to write them, or set "
            "policy.class_sizes in params.yaml",
            path=path,
        )
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        classes = doc["classes"]
        train = {str(c): (float(v["dx_m"]), float(v["dy_m"])) for c, v in classes.items()}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise AnnotationError(
            f"expected {{'split': ..., 'classes': {{class: {{'dx_m', 'dy_m', 'n'}}}}}}: {exc!r}; "
            "rerun the splits stage",
            path=path,
        ) from exc
    bad = {c: s for c, s in train.items() if not all(math.isfinite(v) and v >= 0 for v in s)}
    if bad:
        raise AnnotationError(
            f"class sizes must be finite, non-negative metres, got {bad}; rerun the splits stage",
            path=path,
        )
    return {**CITYREFER_CLASS_SIZES, **train}
