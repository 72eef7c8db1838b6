"""The answer's lift: a world BEV box → a 3D box and a point mask (``env.answer_lift``).

Two lifts:

* ``zrange`` — every point under the footprint: the 3D box spans their z-range and the mask is
  all of them. On a flat object (a car park, a lawn) it takes whatever stands on it (cars,
  trees) and the ground under a car, so its 3D IoU mostly measures the lift.
* ``semantic`` (the default) — the points under the footprint whose semantic class is the
  target's class: the class of the description's target (:func:`urbex.language.parse`, the place
  names it mentions read as names), else the class that covers most of the footprint seen from above (among the target classes).
  The 3D box spans those points' z-range; the mask is those points. Without semantic ids, an
  unknown class in the scene's scheme, or no point of the class under the footprint, it falls
  back to ``zrange``. The class's points are gathered a margin beyond the footprint
  (``env.answer_lift_margin_m``): a box drawn to the pixel would cut the walls on its edges
  (a flat class's z-range comes from inside the footprint only, :data:`FLAT_CLASSES`).

Frames: boxes are world metres (BEV ``[x_min, y_min, x_max, y_max]``, 3D ``[x_min, y_min,
z_min, x_max, y_max, z_max]``); point coordinates world metres (z up). The 3D box keeps the BEV
box's footprint: only its z-range comes from the points.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np
from numpy.typing import ArrayLike, NDArray

from urbex.classes import TARGET_CLASSES, TARGET_SEMANTICS, semantic_ids
from urbex.language import parse

__all__ = ["FLAT_CLASSES", "LIFTS", "Lift", "LiftMode", "dominant_class", "lift_answer"]

#: ``env.answer_lift`` values.
LiftMode = Literal["zrange", "semantic"]
LIFTS: tuple[str, ...] = get_args(LiftMode)
#: Classes lying flat on the terrain: their z-range is taken inside the footprint only (just
#: outside a lawn lies terrain of the lawn's class, at another height); the other classes' also
#: from the margin (the walls standing on a building's or a car's edges).
FLAT_CLASSES: frozenset[str] = frozenset({"Ground", "Parking"})
#: Cell side (metres) of the top-view class vote of :func:`dominant_class`.
_VOTE_CELL_M = 0.5


@dataclass(frozen=True, slots=True, kw_only=True)
class Lift:
    """A lifted answer.

    Attributes
    ----------
    box_3d_m : ndarray, shape (6,), float64
        World metres; the footprint is the BEV box, the z-range that of the masked points.
    mask : ndarray, shape (N,), bool
        The answer's points among the N points given to :func:`lift_answer`.
    class_name : str or None
        The class the semantic lift kept (None: every point under the footprint was kept).
    """

    box_3d_m: NDArray[np.float64]
    mask: NDArray[np.bool_]
    class_name: str | None


def _inside(p: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.bool_]:
    return (p[:, 0] >= b[0]) & (p[:, 0] <= b[2]) & (p[:, 1] >= b[1]) & (p[:, 1] <= b[3])


def dominant_class(
    xyz_m: ArrayLike, semantic: ArrayLike, class_scheme: str, *, cell_m: float = _VOTE_CELL_M
) -> str | None:
    """The target class that covers most ``cell_m`` cells seen from above (highest point per
    cell), or None when no point belongs to a target class.

    Parameters
    ----------
    xyz_m : array_like, shape (N, 3)
        World metres (any common offset).
    semantic : array_like, shape (N,)
        Semantic ids in ``class_scheme``.

    Examples
    --------
    A car (id 9) on a car park (id 5): from above the car covers 1 cell of 4.

    >>> xyz = [[0.1, 0.1, 1.5], [0.1, 0.1, 0.0], [0.6, 0.1, 0.0], [0.1, 0.6, 0.0], [0.6, 0.6, 0.0]]
    >>> dominant_class(xyz, [9, 5, 5, 5, 5], "sensaturban")
    'Parking'
    >>> dominant_class(xyz, [1, 1, 1, 1, 1], "sensaturban") is None  # trees only
    True
    """
    p = np.asarray(xyz_m, dtype=np.float64).reshape(-1, 3)
    sem = np.asarray(semantic).reshape(-1)
    if p.shape[0] == 0:
        return None
    ij = np.floor((p[:, :2] - p[:, :2].min(axis=0)) / cell_m).astype(np.int64)
    key = ij[:, 0] * (int(ij[:, 1].max()) + 1) + ij[:, 1]
    order = np.lexsort((-p[:, 2], key))  # by cell, highest first
    first = np.ones(order.size, bool)
    first[1:] = key[order][1:] != key[order][:-1]
    top = sem[order][first]
    votes = {c: int(np.isin(top, ids).sum()) for c, ids in TARGET_SEMANTICS[class_scheme].items()}
    best = max(TARGET_CLASSES, key=lambda c: (votes.get(c, 0), -TARGET_CLASSES.index(c)))
    return best if votes.get(best, 0) > 0 else None


def lift_answer(
    box_2d_m: ArrayLike,
    xyz_m: ArrayLike,
    semantic: ArrayLike | None,
    *,
    class_scheme: str,
    description: str,
    mode: LiftMode = "semantic",
    margin_m: float = 0.0,
    floor_z_m: float = 0.0,
    names: Sequence[str] = (),
) -> Lift:
    """Lift a BEV answer box to a 3D box and a point mask.

    Parameters
    ----------
    box_2d_m : array_like, shape (4,)
        The answer, world metres ``[x_min, y_min, x_max, y_max]``.
    xyz_m : array_like, shape (N, 3)
        World metres; the points near the box (those outside its footprint are never kept).
    semantic : array_like, shape (N,), or None
        Semantic ids in ``class_scheme`` (None: ``zrange`` whatever ``mode``).
    class_scheme : str
        Key of :data:`urbex.pointcloud.CLASS_SCHEMES`.
    description : str
        The query's referring expression (names the target class).
    mode : {"semantic", "zrange"}
    margin_m : float
        ``semantic`` only: the class's points are taken within the footprint grown by this many
        metres on every side (a box drawn to the pixel cuts the walls standing on its edges).
        The 3D box keeps the unchanged footprint; a flat class (:data:`FLAT_CLASSES`) takes
        the z-range of its points inside the footprint only.
    floor_z_m : float
        z (world metres) of a flat box when no point is kept.
    names : sequence of str
        Place names the description mentions (their words are not its class nouns).

    Examples
    --------
    A car park (id 5, z 0) with a car (id 9, z 0–1.5) standing on it:

    >>> xyz = [[1, 1, 0.0], [9, 9, 0.1], [5, 5, 0.3], [5, 5, 1.5], [20, 20, 9.0]]
    >>> sem = [5, 5, 9, 9, 2]
    >>> kw = dict(class_scheme="sensaturban", description="the car park by the hall")
    >>> lift_answer([0, 0, 10, 10], xyz, sem, mode="zrange", **kw).box_3d_m.tolist()
    [0.0, 0.0, 0.0, 10.0, 10.0, 1.5]
    >>> lifted = lift_answer([0, 0, 10, 10], xyz, sem, **kw)
    >>> lifted.box_3d_m.tolist(), lifted.mask.tolist(), lifted.class_name
    ([0.0, 0.0, 0.0, 10.0, 10.0, 0.1], [True, True, False, False, False], 'Parking')
    >>> lift_answer([30, 30, 40, 40], xyz, sem, floor_z_m=-1.0, **kw).box_3d_m.tolist()
    [30.0, 30.0, -1.0, 40.0, 40.0, -1.0]
    """
    if mode not in LIFTS:
        raise ValueError(f"env.answer_lift: expected one of {list(LIFTS)}, got {mode!r}")
    b = np.asarray(box_2d_m, dtype=np.float64).reshape(-1)
    if b.shape != (4,):
        raise ValueError(f"box_2d_m: expected [x_min, y_min, x_max, y_max], got {b.tolist()}")
    if not (np.isfinite(margin_m) and margin_m >= 0):
        raise ValueError(f"margin_m: expected a finite number >= 0 metres, got {margin_m!r}")
    p = np.asarray(xyz_m, dtype=np.float64).reshape(-1, 3)
    mask = _inside(p, b)
    zmask: NDArray[np.bool_] | None = None  # the points whose z-range the box takes
    kept: str | None = None
    if mode == "semantic" and semantic is not None and mask.any():
        sem = np.asarray(semantic).reshape(-1)
        if sem.shape[0] != p.shape[0]:
            raise ValueError(
                f"semantic: expected one id per point ({p.shape[0]}), got {sem.shape[0]}"
            )
        cls = parse(description, names).target_class or dominant_class(
            p[mask], sem[mask], class_scheme
        )
        ids = semantic_ids(cls, class_scheme) if cls is not None else ()
        if ids:
            of_class = np.isin(sem, ids)
            grown = b + np.array([-margin_m, -margin_m, margin_m, margin_m])
            inside = mask & of_class
            if inside.any():
                mask, kept = _inside(p, grown) & of_class, cls
                zmask = inside if cls in FLAT_CLASSES else mask
    if zmask is None:
        zmask = mask
    if zmask.any():
        z = p[zmask, 2]
        z0, z1 = float(z.min()), float(z.max())
    else:
        z0 = z1 = float(floor_z_m)
    return Lift(
        box_3d_m=np.array([b[0], b[1], z0, b[2], b[3], z1], dtype=np.float64),
        mask=mask,
        class_name=kept,
    )
