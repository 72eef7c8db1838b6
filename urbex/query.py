"""A grounding query: the referring expression, the scene it is about and, when known, its
ground truth.

It sits below every package that reads or writes queries (the annotation stages that build the
splits, the environment that plays them, the runner and the trainer), so none of them needs the
environment to name one.

Frames: :class:`Query`'s target boxes are world metres (the scene cache's world frame; BEV boxes
``[x_min, y_min, x_max, y_max]``, 3D boxes ``[x_min, y_min, z_min, x_max, y_max, z_max]``).
Their names carry no ``_m`` suffix because every data set row already uses these column names.

A *free-text* query (a user's sentence, ``urbex ground``) has no ground truth: both target boxes
are None and :attr:`Query.has_target` is False.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from urbex.geometry import checked_box

__all__ = ["Query"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Query:
    """One grounding query and its ground truth (None for a free-text query).

    Attributes
    ----------
    query_id, scene_id : str
    object_id : str
        The target instance (``""`` for a free-text query).
    description : str
        The referring expression shown to the agent.
    target_box_2d : ndarray, shape (4,), float64, or None
        Target BEV box ``[x_min, y_min, x_max, y_max]``, world metres; None = no ground truth.
    target_box_3d : ndarray, shape (6,), float64, or None
        Target 3D box ``[x_min, y_min, z_min, x_max, y_max, z_max]``, world metres; None = no
        ground truth. Give both boxes or neither.
    class_name : str
        Target class (``Building``, ``Car``, ...), for diagnostics.

    Examples
    --------
    >>> Query(query_id="q", scene_id="s", description="the red car").has_target
    False
    """

    query_id: str
    scene_id: str
    object_id: str = ""
    description: str
    target_box_2d: NDArray[np.float64] | None = None
    target_box_3d: NDArray[np.float64] | None = None
    class_name: str = ""

    def __post_init__(self) -> None:
        for name in ("query_id", "scene_id", "object_id", "description"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(
                    f"Query.{name}: expected str, got {type(getattr(self, name)).__name__}"
                )
        if not self.description.strip():
            raise ValueError("Query.description: expected a non-empty referring expression")
        if (self.target_box_2d is None) != (self.target_box_3d is None):
            raise ValueError(
                "Query.target_box_2d/target_box_3d: expected both (ground truth) or neither "
                f"(free-text query), got 2d={self.target_box_2d!r}, 3d={self.target_box_3d!r}"
            )
        if self.target_box_2d is not None and self.target_box_3d is not None:
            object.__setattr__(
                self, "target_box_2d", checked_box(self.target_box_2d, 4, "Query.target_box_2d")
            )
            object.__setattr__(
                self, "target_box_3d", checked_box(self.target_box_3d, 6, "Query.target_box_3d")
            )

    @property
    def has_target(self) -> bool:
        """True when the query carries ground truth (target boxes)."""
        return self.target_box_2d is not None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Query:
        """From a dict/dataset row with the field names above (extra keys ignored).

        A missing ``target_box_2d`` is taken from the 3D box's footprint; a missing or None
        ``target_box_3d`` makes a free-text query (no ground truth).
        """
        b3 = row.get("target_box_3d")
        b2 = row.get("target_box_2d")
        if b3 is not None and b2 is None:
            a = np.asarray(b3, dtype=np.float64)
            b2 = [a[0], a[1], a[3], a[4]]
        return cls(
            query_id=str(row["query_id"]),
            scene_id=str(row["scene_id"]),
            object_id=str(row.get("object_id") or ""),
            description=str(row["description"]),
            target_box_2d=None if b2 is None else np.asarray(b2, dtype=np.float64),
            target_box_3d=None if b3 is None else np.asarray(b3, dtype=np.float64),
            class_name=str(row.get("class_name") or ""),
        )

    def to_row(self) -> dict[str, Any]:
        """JSON-friendly dict (boxes as lists)."""
        return {
            "query_id": self.query_id,
            "scene_id": self.scene_id,
            "object_id": self.object_id,
            "description": self.description,
            "target_box_2d": None if self.target_box_2d is None else self.target_box_2d.tolist(),
            "target_box_3d": None if self.target_box_3d is None else self.target_box_3d.tolist(),
            "class_name": self.class_name,
        }
