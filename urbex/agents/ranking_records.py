"""The records both candidate rankers read: the scene's candidate instances and the landmarks a
description mentions.

:class:`Candidates` is the With-GT instance table (or a proposal set) in columns;
:class:`Anchor` is one mentioned landmark's footprint. The relation geometry
(:mod:`urbex.agents.relation_terms`), the hand-weighted ranker (:mod:`urbex.agents.ranking`) and
the trained one's features (:mod:`urbex.agents.ranker_features`) all take them, so they live
below all three.

Frames: boxes are BEV ``[x_min, y_min, x_max, y_max]`` in world metres (x east, y north).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray

from urbex.errors import CacheError

if TYPE_CHECKING:
    import polars as pl

__all__ = ["Anchor", "Candidates"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Candidates:
    """The candidate instances of one scene (the With-GT instance table), columnar.

    Attributes
    ----------
    object_id : ndarray, shape (K,), str
    class_name : ndarray, shape (K,), str
    box : ndarray, shape (K, 4), float64
        BEV boxes ``[x_min, y_min, x_max, y_max]``, world metres.
    height : ndarray, shape (K,), float64
        Vertical extent ``dz``, metres.
    rgb : ndarray, shape (K, 3), float64
        Mean colour 0–255 (NaN where the cloud has no colours).
    landmark_name : ndarray, shape (K,), str
        ``""`` where the instance is not a named landmark.
    """

    object_id: NDArray[np.str_]
    class_name: NDArray[np.str_]
    box: NDArray[np.float64]
    height: NDArray[np.float64]
    rgb: NDArray[np.float64]
    landmark_name: NDArray[np.str_]

    def __post_init__(self) -> None:
        k = len(self.object_id)
        for name, arr, shape in (
            ("class_name", self.class_name, (k,)),
            ("box", self.box, (k, 4)),
            ("height", self.height, (k,)),
            ("rgb", self.rgb, (k, 3)),
            ("landmark_name", self.landmark_name, (k,)),
        ):
            if np.shape(arr) != shape:
                raise ValueError(f"Candidates.{name}: expected shape {shape}, got {np.shape(arr)}")
        if k and not np.all(np.isfinite(self.box)):
            raise ValueError("Candidates.box: expected finite world-metre boxes, got NaN/inf")

    def __len__(self) -> int:
        return len(self.object_id)

    @classmethod
    def build(
        cls,
        *,
        class_name: Sequence[str],
        box: ArrayLike,
        rgb: ArrayLike | None = None,
        height: ArrayLike | None = None,
        landmark_name: Sequence[str] | None = None,
        object_id: Sequence[str] | None = None,
    ) -> Candidates:
        """Candidates from plain sequences (missing colours → NaN, heights → 1 m, names → "")."""
        b = np.asarray(box, dtype=np.float64).reshape(-1, 4)
        k = len(b)
        return cls(
            object_id=np.asarray(
                object_id if object_id is not None else [str(i) for i in range(k)], dtype=str
            ),
            class_name=np.asarray(list(class_name), dtype=str).reshape(-1),
            box=b,
            height=np.ones(k) if height is None else np.asarray(height, dtype=np.float64),
            rgb=np.full((k, 3), np.nan) if rgb is None else np.asarray(rgb, dtype=np.float64),
            landmark_name=np.asarray(
                landmark_name if landmark_name is not None else [""] * k, dtype=str
            ),
        )

    @classmethod
    def from_table(cls, table: pl.DataFrame, *, scene_id: str = "") -> Candidates:
        """Candidates from a scene cache's instance table (:mod:`urbex.scene.instances`).

        Raises
        ------
        CacheError
            A required column is missing (names it).
        """
        need = ("object_id", "class_name", "x_min", "y_min", "x_max", "y_max", "z_min", "z_max")
        missing = [c for c in need if c not in table.columns]
        if missing:
            raise CacheError(
                f"instance table of scene {scene_id!r}: expected columns {list(need)}, "
                f"missing {missing}; rebuild the scene cache with `urbex cache`",
                field=missing[0],
            )
        k = table.height
        rgb = np.full((k, 3), np.nan)
        if all(c in table.columns for c in ("mean_r", "mean_g", "mean_b")):
            rgb = table.select("mean_r", "mean_g", "mean_b").to_numpy().astype(np.float64)
        lm = (
            table["landmark_name"].fill_null("").to_list()
            if "landmark_name" in table.columns
            else [""] * k
        )
        z = table.select("z_min", "z_max").to_numpy().astype(np.float64).reshape(k, 2)
        return cls(
            object_id=np.asarray(table["object_id"].cast(str).to_list(), dtype=str).reshape(k),
            class_name=np.asarray(table["class_name"].fill_null("").to_list(), dtype=str).reshape(k),
            box=table.select("x_min", "y_min", "x_max", "y_max").to_numpy().astype(np.float64).reshape(k, 4),
            height=z[:, 1] - z[:, 0],
            rgb=rgb,
            landmark_name=np.asarray(lm, dtype=str).reshape(k),
        )  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class Anchor:
    """A landmark the description mentions.

    Attributes
    ----------
    name : str
        As in the landmark table (located in the description after :func:`normalize_name`).
    box : ndarray, shape (4,), float64
        Footprint bounds, world metres; a road's centreline gives a box that is flat across the
        road; a point landmark a zero-size box.
    kind : str
        Landmark kind (``road``, ``building``, ...); ``road`` marks a line.
    """

    name: str
    box: NDArray[np.float64]
    kind: str = ""

    def __post_init__(self) -> None:
        b = np.asarray(self.box, dtype=np.float64).reshape(-1)
        if b.shape != (4,) or not np.all(np.isfinite(b)) or b[2] < b[0] or b[3] < b[1]:
            raise ValueError(
                f"Anchor {self.name!r}: expected box [x_min, y_min, x_max, y_max] (finite, "
                f"ordered), got {self.box!r}"
            )
        object.__setattr__(self, "box", b)

    @property
    def is_line(self) -> bool:
        """A road, or a footprint under 1 m across and over 5 m long."""
        ext = self.box[2:] - self.box[:2]
        return self.kind == "road" or (float(ext.min()) < 1.0 and float(ext.max()) > 5.0)
