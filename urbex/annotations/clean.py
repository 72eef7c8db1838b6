"""Annotation cleaning: drop defective CityRefer rows, keep every drop with its reason.

Rules, applied in this order (a row gets the first reason that applies):

=================== ==================================================================
reason              rule
=================== ==================================================================
``unknown_scene``   ``scene_id`` names no scene of the data set (a typo, ``../x``)
``empty``           description is empty or whitespace
``too_short``       fewer than ``min_words`` words
``non_informative`` the whole (normalised) description is a filler phrase, has no letters,
                    or has fewer than ``min_distinct_words`` distinct words
``false_segment``   ``(scene_id, object_id)`` is listed in ``false_segments``
``missing_instance`` ``(scene_id, object_id)`` is not in the scene's instance table
``class_not_target`` ``object_name`` (case-insensitive) is not a target class
``duplicate``       same scene and same normalised description as an earlier kept row, or
                    the same ``query_id`` (keep the first)
=================== ==================================================================

Kept rows become *queries* with a stable ``query_id = f"{scene_id}:{object_id}:{ann_id}"`` and the
landmark names their description mentions.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from urbex.config_data import AnnotationParams
from urbex.errors import AnnotationError

__all__ = [
    "DROP_REASONS",
    "QUERY_SCHEMA",
    "CleanResult",
    "annotations_frame",
    "clean_annotations",
    "normalize_description",
]

#: Every reason a row can be dropped for (the synthetic manifest uses the same words).
DROP_REASONS: tuple[str, ...] = (
    "unknown_scene",
    "empty",
    "too_short",
    "non_informative",
    "false_segment",
    "missing_instance",
    "class_not_target",
    "duplicate",
)

#: Columns of the cleaned query table.
QUERY_SCHEMA: dict[str, Any] = {
    "query_id": pl.String,
    "scene_id": pl.String,
    "object_id": pl.String,
    "class_name": pl.String,
    "ann_id": pl.Int64,
    "description": pl.String,
    "description_norm": pl.String,
    "file_split": pl.String,
    "landmark_mentions": pl.List(pl.String),
}

_ANN_SCHEMA: dict[str, Any] = {
    "scene_id": pl.String,
    "object_id": pl.String,
    "object_name": pl.String,
    "ann_id": pl.Int64,
    "description": pl.String,
    "file_split": pl.String,
}

_WS = re.compile(r"\s+")
_EDGE_PUNCT = re.compile(r"^[\W_]+|[\W_]+$")


def normalize_description(text: str) -> str:
    """Duplicate key of a description: NFKC, case-folded, single spaces, no edge punctuation.

    Examples
    --------
    >>> normalize_description("  The red car,   near Merton Hall. ")
    'the red car, near merton hall'
    >>> normalize_description("")
    ''
    """
    s = unicodedata.normalize("NFKC", str(text)).casefold()
    return _EDGE_PUNCT.sub("", _WS.sub(" ", s).strip())


def annotations_frame(annotations: Any, *, file_split: str | None = None) -> pl.DataFrame:
    """Annotations as a polars frame with columns ``scene_id, object_id (str), object_name,
    ann_id (int), description, file_split``.

    Parameters
    ----------
    annotations
        A sequence of :class:`urbex.io.cityrefer.Annotation` (or dicts), or a polars/pandas
        frame with those columns (``file_split`` optional).
    file_split
        Fills ``file_split`` when the input has none (e.g. ``"train"`` for CityRefer_train.json).
    """
    if isinstance(annotations, pl.DataFrame):
        df = annotations
    elif hasattr(annotations, "to_dict") and hasattr(annotations, "columns"):  # pandas
        df = pl.from_pandas(annotations)
    else:
        recs = [a if isinstance(a, dict) else a.to_dict() for a in annotations]
        df = pl.DataFrame(recs, schema={k: v for k, v in _ANN_SCHEMA.items() if k != "file_split"})
    missing = {"scene_id", "object_id", "description"} - set(df.columns)
    if missing:
        raise AnnotationError(
            f"annotation frame lacks columns {sorted(missing)}; has {df.columns}",
            field="annotations",
        )
    if "object_name" not in df.columns:
        df = df.with_columns(pl.lit("").alias("object_name"))
    if "ann_id" not in df.columns:
        df = df.with_columns(pl.lit(0).alias("ann_id"))
    if "file_split" not in df.columns:
        df = df.with_columns(pl.lit(file_split or "").alias("file_split"))
    return df.select(
        pl.col("scene_id").cast(pl.String),
        pl.col("object_id").cast(pl.String),
        pl.col("object_name").cast(pl.String).fill_null(""),
        pl.col("ann_id").cast(pl.Int64),
        pl.col("description").cast(pl.String).fill_null(""),
        pl.col("file_split").cast(pl.String).fill_null(""),
    )


def _keys(frame: Any, name: str) -> pl.DataFrame:
    """``(scene_id, object_id)`` pairs of an instance table or a false-segment list."""
    if frame is None:
        return pl.DataFrame(schema={"scene_id": pl.String, "object_id": pl.String})
    if isinstance(frame, pl.DataFrame):
        df = frame
    elif hasattr(frame, "columns") and hasattr(frame, "to_dict"):
        df = pl.from_pandas(frame)
    else:
        rows = [{"scene_id": r.scene_id, "object_id": str(r.object_id)} for r in frame]
        df = pl.DataFrame(rows, schema={"scene_id": pl.String, "object_id": pl.String})
    missing = {"scene_id", "object_id"} - set(df.columns)
    if missing:
        raise AnnotationError(
            f"{name} lacks columns {sorted(missing)}; has {df.columns}", field=name
        )
    return df.select(
        pl.col("scene_id").cast(pl.String), pl.col("object_id").cast(pl.String)
    ).unique()


@dataclass(frozen=True, slots=True, kw_only=True)
class CleanResult:
    """Output of :func:`clean_annotations`.

    Attributes
    ----------
    queries : polars.DataFrame
        Kept rows, :data:`QUERY_SCHEMA` columns, in input order.
    drops : polars.DataFrame
        Dropped rows: ``scene_id, object_id, object_name, ann_id, description, file_split,
        query_id, row, reason`` (``row`` = 0-based input position).
    """

    queries: pl.DataFrame
    drops: pl.DataFrame

    def __post_init__(self) -> None:
        bad = set(self.drops["reason"].unique().to_list()) - set(DROP_REASONS)
        if bad:
            raise ValueError(f"CleanResult.drops: unknown reasons {sorted(bad)}")

    def drop_counts(self) -> dict[str, int]:
        """Number of dropped rows per reason (every reason listed, zeros included)."""
        got = dict(self.drops.group_by("reason").len().iter_rows())
        return {r: int(got.get(r, 0)) for r in DROP_REASONS}


def clean_annotations(
    annotations: Any,
    *,
    instances: Any,
    false_segments: Iterable[Any] | pl.DataFrame | None = None,
    landmark_index: Any | None = None,
    annotation_params: AnnotationParams | None = None,
    target_classes: Sequence[str] | None = None,
    min_words: int | None = None,
    min_distinct_words: int | None = None,
    non_informative: Sequence[str] | None = None,
    known_scenes: Iterable[str] | None = None,
) -> CleanResult:
    """Clean CityRefer annotations (see the module docstring for the rules).

    Parameters
    ----------
    annotations
        See :func:`annotations_frame`.
    instances
        Instance table(s) (polars or pandas) with ``scene_id`` and ``object_id``; a row whose
        ``(scene_id, object_id)`` is absent is a ``missing_instance``.
    false_segments
        :class:`urbex.io.cityrefer.FalseSegment` records (or a frame with ``scene_id``,
        ``object_id``).
    landmark_index
        A :class:`urbex.landmarks.LandmarkIndex`; fills ``landmark_mentions`` (else empty lists).
    annotation_params
        The ``annotations`` params section: the defaults of the keyword arguments below.
    target_classes, min_words, min_distinct_words, non_informative
        Override ``annotation_params``.
    known_scenes
        Every scene of the data set; a row of another scene is an ``unknown_scene`` drop
        (None: not checked).
    """
    a = annotation_params

    def pick(v: Any, name: str, default: Any) -> Any:
        return v if v is not None else (getattr(a, name) if a is not None else default)

    targets = {
        t.casefold()
        for t in pick(target_classes, "target_classes", ["Building", "Car", "Ground", "Parking"])
    }
    n_words = int(pick(min_words, "min_words", 3))
    n_distinct = int(pick(min_distinct_words, "min_distinct_words", 3))
    fillers = [normalize_description(t) for t in pick(non_informative, "non_informative", [])]

    df = annotations_frame(annotations).with_row_index("row")
    inst = _keys(instances, "instances").with_columns(pl.lit(True).alias("_inst"))
    fals = _keys(false_segments, "false_segments").with_columns(pl.lit(True).alias("_false"))
    words = pl.col("description").str.extract_all(r"[^\W_]+")
    df = (
        df.with_columns(
            pl.col("description").map_elements(normalize_description, return_dtype=pl.String)
            .alias("description_norm"),
            words.list.len().alias("_n_words"),
            words.list.eval(pl.element().str.to_lowercase()).list.unique().list.len().alias("_n_distinct"),
            pl.col("description").str.contains(r"[^\W\d_]").alias("_has_alpha"),
            (pl.col("scene_id") + ":" + pl.col("object_id") + ":" + pl.col("ann_id").cast(pl.String))
            .alias("query_id"),
        )
        .join(inst, on=["scene_id", "object_id"], how="left")
        .join(fals, on=["scene_id", "object_id"], how="left")
        .sort("row")
    )  # fmt: skip
    known = None if known_scenes is None else sorted(set(known_scenes))
    unknown = pl.lit(False) if known is None else ~pl.col("scene_id").is_in(known)
    reason = (
        pl.when(unknown)
        .then(pl.lit("unknown_scene"))
        .when(pl.col("description").str.strip_chars() == "")
        .then(pl.lit("empty"))
        .when(pl.col("_n_words") < n_words)
        .then(pl.lit("too_short"))
        .when(
            pl.col("description_norm").is_in(fillers)
            | ~pl.col("_has_alpha")
            | (pl.col("_n_distinct") < n_distinct)
        )
        .then(pl.lit("non_informative"))
        .when(pl.col("_false").is_not_null())
        .then(pl.lit("false_segment"))
        .when(pl.col("_inst").is_null())
        .then(pl.lit("missing_instance"))
        .when(~pl.col("object_name").str.to_lowercase().is_in(sorted(targets)))
        .then(pl.lit("class_not_target"))
        .otherwise(pl.lit(None, dtype=pl.String))
    )
    df = df.with_columns(reason.alias("reason"))
    ok = pl.col("reason").is_null()
    valid = df.filter(ok)
    seen_desc: set[tuple[str, str]] = set()
    seen_qid: set[str] = set()
    is_dup = []
    for sid, dn, qid in valid.select("scene_id", "description_norm", "query_id").iter_rows():
        dup = (sid, dn) in seen_desc or qid in seen_qid
        is_dup.append(dup)
        if not dup:  # only kept rows shadow later ones
            seen_desc.add((sid, dn))
            seen_qid.add(qid)
    valid = valid.with_columns(
        pl.when(pl.Series(is_dup, dtype=pl.Boolean))
        .then(pl.lit("duplicate"))
        .otherwise(pl.lit(None, dtype=pl.String))
        .alias("reason")
    )
    dups = valid.filter(pl.col("reason").is_not_null())
    kept = valid.filter(pl.col("reason").is_null())
    drop_cols = ["scene_id", "object_id", "object_name", "ann_id", "description", "file_split", "query_id", "row", "reason"]  # fmt: skip
    drops = pl.concat([df.filter(~ok), dups], how="vertical").sort("row").select(drop_cols)
    drops = drops.with_columns(pl.col("row").cast(pl.Int64))
    if landmark_index is not None and kept.height:
        mentions = landmark_index.mentions_many(
            kept["description"].to_list(), kept["scene_id"].to_list()
        )
    else:
        mentions = [[] for _ in range(kept.height)]
    queries = kept.with_columns(
        pl.col("object_name").alias("class_name"),
        pl.Series("landmark_mentions", mentions, dtype=pl.List(pl.String)),
    ).select(list(QUERY_SCHEMA))
    return CleanResult(queries=queries.cast(QUERY_SCHEMA), drops=drops)  # type: ignore[arg-type]
