"""What a final answer is, in the scene: the snapping of a box answer onto a proposal, and the
3D reading of a BEV answer — its 3D box and points (lifted from the BEV box, or a proposal's
own) and the point counts of point F1.

Frames: every box here is world metres (BEV ``[x_min, y_min, x_max, y_max]``, 3D ``[x_min,
y_min, z_min, x_max, y_max, z_max]``). The scene's proposals are used, never its instances;
instance ids only count the target's points for the metrics.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from urbex.config import EnvParams
from urbex.env.lift import Lift, lift_answer
from urbex.env.records import PointCounts
from urbex.geometry import iou_2d
from urbex.query import Query

__all__ = ["AnswerPoints", "answer_points", "snap_to_proposal"]


def snap_to_proposal(
    pred2d: NDArray[np.float64], proposals: Any, target_class: str | None, min_iou: float
) -> dict[str, Any]:
    """``env.answer_snap: proposal``: the proposal of ``target_class`` (the class the
    description names) that overlaps the box answer ``pred2d`` best, when their BEV IoU reaches
    ``min_iou``: ``{"mark", "iou", "box_2d_m", "answer_box_2d_m"}``; else ``{"kept": why}``."""
    if target_class is None:
        return {"kept": "the description names no target class"}
    rows = np.flatnonzero(proposals.class_name == target_class)
    if rows.size == 0:
        return {"kept": f"the scene has no {target_class} proposal"}
    ious = np.asarray(iou_2d(pred2d[None], proposals.box_2d_m[rows])).reshape(-1)
    k = int(np.argmax(ious))
    if ious[k] < min_iou:
        return {
            "kept": f"no {target_class} proposal overlaps the box enough (best BEV IoU "
            f"{ious[k]:.2f} < env.snap_min_iou {min_iou:g})"
        }
    r = int(rows[k])
    return {
        "mark": int(proposals.mark_id[r]),
        "iou": round(float(ious[k]), 4),
        "box_2d_m": [float(v) for v in proposals.box_2d_m[r]],
        "answer_box_2d_m": [float(v) for v in pred2d],
    }


@dataclass(frozen=True, slots=True)
class AnswerPoints:
    """The 3D reading of an answer: its 3D box (world m; None when nothing was lifted), the
    number of its points, and the point counts of point F1 (None when not counted)."""

    box_3d_m: NDArray[np.float64] | None
    n_points: int
    counts: PointCounts | None


def answer_points(
    scene: Any,
    query: Query,
    params: EnvParams,
    pred2d: NDArray[np.float64],
    *,
    mark: int | None,
    names: Sequence[str],
    point_metrics: bool,
) -> AnswerPoints:
    """The 3D box and points of a BEV answer ``pred2d``: the proposal ``mark``'s own (named,
    or snapped to), else the lift of the box (``env.answer_lift``; ``names``: the landmark
    names the description mentions, not read as its class nouns). With ``point_metrics`` and a
    target, point F1's counts over the union of the answer's crop and the target's box."""
    tgt = query.target_box_2d
    # the points under the footprint (plus the lift's margin; none for a proposal's own
    # points); point F1 counts over the union of that crop with the target's box
    lifted_margin = params.answer_lift == "semantic" and mark is None
    m = params.answer_lift_margin_m if lifted_margin else 0.0
    crop_box = pred2d + np.array([-m, -m, m, m])
    union = None
    if point_metrics and tgt is not None:
        union = np.concatenate(
            [np.minimum(crop_box[:2], tgt[:2]), np.maximum(crop_box[2:], tgt[2:])]
        )
    idx = scene.crop_indices(_crop_box(crop_box, union))
    pts = scene.points_at(idx)
    if mark is not None:
        props = scene.proposals
        mask = np.asarray(scene.proposal_of(idx) == mark)
        pred3d = props.box_3d_m(props.row(mark))
    else:
        lifted = _lift(scene, query, params, pred2d, pts, names)
        mask, pred3d = lifted.mask, lifted.box_3d_m
    counts = None
    if union is not None:
        counts = _point_counts(scene, query, mask, pts, union)
    return AnswerPoints(box_3d_m=pred3d, n_points=int(np.count_nonzero(mask)), counts=counts)


def _lift(
    scene: Any,
    query: Query,
    params: EnvParams,
    pred2d: NDArray[np.float64],
    pts: Any,
    names: Sequence[str],
) -> Lift:
    """BEV box → 3D box + point mask (world m) over ``pts`` (``env.answer_lift``)."""
    floor = float(np.asarray(scene.bounds, dtype=np.float64).reshape(-1)[2])
    return lift_answer(
        pred2d,
        pts.world_xyz(),
        pts.semantic,
        class_scheme=pts.class_scheme,
        description=query.description,
        mode=params.answer_lift,
        margin_m=params.answer_lift_margin_m,
        floor_z_m=floor,
        names=names,
    )


def _crop_box(
    crop_box: NDArray[np.float64], union: NDArray[np.float64] | None
) -> NDArray[np.float64]:
    """The box (world m) whose points the answer is lifted from: ``crop_box`` or, when point
    F1 is counted, the part of the ``union`` crop (the crop box's union with the target's)
    that the lift can keep, without gathering the rest of the union.

    The lift keeps points inside ``crop_box`` by a world-frame test, the crop selects by a
    cache-frame one; the two may differ by a rounding on the box's edge, so the crop box is
    padded by a millimetre and cut to the union: the crop of that intersection is exactly
    the union crop's points in it (the cache-frame test of two boxes at once is the test of
    their intersection), so the lift sees what it would see in the whole union's crop, in
    the same order.
    """
    if union is None:
        return crop_box
    padded = crop_box + np.array([-1e-3, -1e-3, 1e-3, 1e-3])
    return np.concatenate([np.maximum(padded[:2], union[:2]), np.minimum(padded[2:], union[2:])])


def _point_counts(
    scene: Any,
    query: Query,
    pred_mask: NDArray[np.bool_],
    pts: Any,
    union: NDArray[np.float64],
) -> PointCounts | None:
    """Point counts for point F1 over the points under ``union`` (the predicted and target
    BEV boxes' union, world m): the answer's points (``pred_mask`` over ``pts``) against
    the target instance's (counted by the scene from its instance's points, not by cropping
    the union); None without instance ids or a numeric target id."""
    oid = query.object_id
    if not oid.lstrip("-").isdigit() or pts.instance is None:
        return None
    n_target = scene.count_instance_points(int(oid), union)
    if n_target is None:
        return None
    in_target = np.asarray(pts.instance) == int(oid)
    return PointCounts(
        n_pred=int(np.count_nonzero(pred_mask)),
        n_target=n_target,
        n_both=int(np.count_nonzero(pred_mask & in_target)),
    )
