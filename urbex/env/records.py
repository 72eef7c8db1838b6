"""The records of an episode: the query (with its ground truth, when known) and one logged step.

Frames: every box is world metres — BEV ``[x_min, y_min, x_max, y_max]``, 3D ``[x_min, y_min,
z_min, x_max, y_max, z_max]`` — in the scene cache's world frame.

A *free-text* query (a user's sentence, ``urbex ground``) has no ground truth: both target boxes
are None and :attr:`Query.has_target` is False.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["Query", "StepRecord"]


def _box(v: Any, n: int, name: str) -> NDArray[np.float64]:
    a = np.asarray(v, dtype=np.float64).reshape(-1)
    if a.shape != (n,) or not np.all(np.isfinite(a)):
        raise ValueError(f"Query.{name}: expected {n} finite numbers (world metres), got {v!r}")
    h = n // 2
    if not np.all(a[h:] >= a[:h]):
        raise ValueError(f"Query.{name}: expected mins <= maxes, got {a.tolist()}")
    return a


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
            object.__setattr__(self, "target_box_2d", _box(self.target_box_2d, 4, "target_box_2d"))
            object.__setattr__(self, "target_box_3d", _box(self.target_box_3d, 6, "target_box_3d"))

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


@dataclass(frozen=True, slots=True, kw_only=True)
class StepRecord:
    """One assistant turn — a row of the ``steps`` warehouse table (run fields added later).

    Attributes
    ----------
    turn : int
        1-based assistant turn.
    tool : str
        ``landmark_query``, ``zoom_in``, ``oblique_render``, ``answer`` or ``invalid`` (no
        recognisable tool).
    arguments : str
        The (validated, else raw) arguments as JSON.
    valid : bool
    error : str or None
        The error text shown to the agent when invalid or when the tool failed.
    latency_s : float
        Environment time for this turn (parse + tool + scoring), seconds.
    reward, reward_shaping, reward_terminal : float
        ``reward = reward_shaping + reward_terminal`` for this turn.
    view_id : str or None
        The view this turn created.
    """

    turn: int
    tool: str
    arguments: str
    valid: bool
    error: str | None
    latency_s: float
    reward: float
    reward_shaping: float
    reward_terminal: float
    view_id: str | None = None

    def to_row(self) -> dict[str, Any]:
        return asdict(self)
