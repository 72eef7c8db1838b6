"""``ranking_proposals``: the **Without-GT** ranker — instance proposals from the scene's points.

CityAnchor's "Without-GT" protocol (paper Table 11) ranks *predicted* instances instead of the
ground-truth ones. Here the candidates are the scene cache's instance proposals
(:mod:`urbex.scene.proposals`: connected components of each target class's points, never their
instance ids — the same proposals the agent's numbered marks show). A proposal that covers a
landmark footprint of the public map (box IoU ≥ 0.5) takes its name, as an instance table would.

The proposals are ranked by the trained scorer of :mod:`urbex.agents.ranker` (the one fitted on
GT candidates), the answer is the best proposal's box.

Frames: boxes are BEV ``[x_min, y_min, x_max, y_max]``, world metres.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from urbex.agents.ranker import RankerModel, RankerPolicy
from urbex.agents.ranking_records import Candidates
from urbex.atomic import atomic_path
from urbex.classes import TARGET_CLASSES
from urbex.env.marks import landmark_footprints, mark_names
from urbex.env.world import World
from urbex.errors import PolicyError
from urbex.geometry import iou_2d
from urbex.scene.proposals import ProposalSet, build_proposals

if TYPE_CHECKING:
    import polars as pl

    from urbex.env.episode import GroundingEnv
    from urbex.layout import AssetLayout

__all__ = [
    "ProposalRankerPolicy",
    "proposal_candidates",
    "proposal_recall",
    "proposal_recall_table",
    "propose_instances",
    "scene_proposals",
]


def proposal_candidates(
    proposals: ProposalSet,
    *,
    classes: Sequence[str] = TARGET_CLASSES,
    landmarks: Sequence[tuple[str, NDArray[np.float64]]] = (),
) -> Candidates:
    """Proposals (of ``classes``) as ranking candidates; ``object_id`` ``p<mark_id>``, a
    proposal covering a landmark footprint (``(name, BEV box)``, box IoU ≥ 0.5) takes its name."""
    keep = np.isin(proposals.class_name, list(classes))
    boxes = proposals.box_2d_m[keep]
    names = mark_names(boxes, landmarks)
    z = proposals.z_range_m[keep]
    return Candidates.build(
        class_name=proposals.class_name[keep].tolist(),
        box=boxes,
        rgb=proposals.rgb[keep] if keep.any() else None,
        height=z[:, 1] - z[:, 0],
        landmark_name=names,
        object_id=[f"p{m}" for m in proposals.mark_id[keep].tolist()],
    )


def propose_instances(
    xyz_m: NDArray[np.float64],
    semantic: NDArray[Any],
    rgb: NDArray[Any] | None,
    *,
    class_scheme: str,
    classes: Sequence[str] = TARGET_CLASSES,
    landmarks: Sequence[tuple[str, NDArray[np.float64]]] = (),
) -> Candidates:
    """Instance proposals of points (no instance ids used), as ranking candidates
    (:func:`urbex.scene.proposals.build_proposals`, then :func:`proposal_candidates`).

    Examples
    --------
    Two cars (id 9) 3 m apart on a car park (id 5):

    >>> rng = np.random.default_rng(0)
    >>> car = lambda x: np.c_[rng.uniform(x, x + 4.5, 300), rng.uniform(0, 2, 300), np.full(300, 1.5)]
    >>> park = np.c_[rng.uniform(-5, 20, 4000), rng.uniform(-5, 10, 4000), np.zeros(4000)]
    >>> xyz = np.vstack([car(0), car(7.5), park])
    >>> sem = np.r_[np.full(600, 9), np.full(4000, 5)]
    >>> p = propose_instances(xyz, sem, None, class_scheme="sensaturban")
    >>> sorted(p.class_name.tolist())
    ['Car', 'Car', 'Parking']
    """
    props, _ = build_proposals(xyz_m, semantic, rgb, class_scheme=class_scheme, classes=classes)
    return proposal_candidates(props, classes=classes, landmarks=landmarks)


def scene_proposals(
    scene: Any, index: Any = None, classes: Sequence[str] | None = None
) -> Candidates:
    """An opened scene cache's stored proposals (``SceneCache.proposals``) as candidates,
    named after the map landmarks of ``index`` they cover."""
    return proposal_candidates(
        scene.proposals,
        classes=tuple(classes) if classes is not None else TARGET_CLASSES,
        landmarks=landmark_footprints(index, scene.scene_id),
    )


def proposal_recall(
    proposals: Candidates, targets: pl.DataFrame, *, thresholds: Sequence[float] = (0.25, 0.5)
) -> list[dict[str, Any]]:
    """Per class, the share of ``targets`` (instance rows: ``class_name``, ``x_min`` … ``y_max``)
    with a proposal of their class at BEV IoU ≥ each threshold.

    >>> import polars as pl
    >>> p = Candidates.build(class_name=["Car"], box=[[0, 0, 4, 2]])
    >>> t = pl.DataFrame({"class_name": ["Car", "Car"], "x_min": [0.0, 9], "y_min": [0.0, 0],
    ...                   "x_max": [4.0, 13], "y_max": [2.5, 2]})
    >>> proposal_recall(p, t)
    [{'class_name': 'Car', 'n_targets': 2, 'n_proposals': 1, 'recall_iou25': 0.5, 'recall_iou50': 0.5}]
    """
    out = []
    for cls in sorted(set(targets["class_name"].to_list())):
        t = targets.filter(targets["class_name"] == cls)
        tb = t.select("x_min", "y_min", "x_max", "y_max").to_numpy().astype(np.float64)
        pb = proposals.box[proposals.class_name == cls]
        best = (
            np.array([max(float(iou_2d(b, p)) for p in pb) for b in tb])
            if len(pb)
            else np.zeros(len(tb))
        )
        row: dict[str, Any] = {"class_name": cls, "n_targets": len(tb), "n_proposals": len(pb)}
        for th in thresholds:
            row[f"recall_iou{round(100 * th)}"] = float(np.mean(best >= th)) if len(tb) else None
        out.append(row)
    return out


def proposal_recall_table(
    world: World,
    lay: AssetLayout,
    candidate_classes: Sequence[str] | None,
    splits: Sequence[str] = ("test_nd", "test_no"),
) -> pl.DataFrame:
    """Proposal recall per split and class over the split's query targets (distinct
    instances of ``lay``'s split table; proposals of ``world``'s scenes, of the
    ``candidate_classes``), written to ``diagnostics/proposal_recall.parquet`` (the warehouse's
    ``diagnostics_proposal_recall``)."""
    import polars as pl

    queries = pl.read_parquet(lay.queries, glob=False)
    provider, index = world.scenes, world.landmarks
    rows = []
    for split in splits:
        q = queries.filter(pl.col("split") == split).select("scene_id", "object_id").unique()
        per: dict[str, dict[str, Any]] = {}
        for sid in sorted(set(q["scene_id"].to_list())):
            scene = provider(sid)
            ids = q.filter(pl.col("scene_id") == sid)["object_id"].cast(str).to_list()
            inst = scene.instances.filter(pl.col("object_id").cast(str).is_in(ids))
            props = scene_proposals(scene, index, candidate_classes)
            for r in proposal_recall(props, inst):
                acc = per.setdefault(r["class_name"], {"n": 0, "p": 0, "r25": 0.0, "r50": 0.0})
                acc["n"] += r["n_targets"]
                acc["p"] += r["n_proposals"]
                acc["r25"] += r["recall_iou25"] * r["n_targets"]
                acc["r50"] += r["recall_iou50"] * r["n_targets"]
        for cls, a in sorted(per.items()):
            rows.append(
                {
                    "run_id": "proposals",
                    "policy": "ranking_proposals",
                    "split": split,
                    "class_name": cls,
                    "n_targets": a["n"],
                    "n_proposals": a["p"],
                    "recall_iou25": a["r25"] / a["n"],
                    "recall_iou50": a["r50"] / a["n"],
                }
            )
    schema = {
        "run_id": pl.String, "policy": pl.String, "split": pl.String, "class_name": pl.String,
        "n_targets": pl.Int64, "n_proposals": pl.Int64, "recall_iou25": pl.Float64,
        "recall_iou50": pl.Float64,
    }  # fmt: skip
    df = pl.DataFrame(rows, schema=schema)
    path = lay.diagnostic_table("proposal_recall")
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        df.write_parquet(tmp)
    return df


class ProposalRankerPolicy(RankerPolicy):
    """The Without-GT ranker: the trained scorer over :func:`scene_proposals` (no instance
    table, no instance ids); answers the best proposal's box in the global view on turn 1."""

    def __init__(
        self,
        env: GroundingEnv,
        *,
        model: RankerModel,
        scenes: Callable[[str], Any],
        candidate_classes: Sequence[str] | None = None,
    ) -> None:
        super().__init__(
            env,
            model=model,
            instances=lambda sid: None,  # type: ignore[arg-type,return-value]
            candidate_classes=candidate_classes,
        )
        self.scenes = scenes

    def candidates(self, scene_id: str) -> Candidates:
        """The scene's proposals (cached per scene; computed outside the timed episode by the
        runner's warm-up only if it asks — otherwise on the first query of the scene)."""
        if scene_id not in self._cands:
            c = scene_proposals(self.scenes(scene_id), self.env.landmarks, self.candidate_classes)
            if len(c) == 0:
                raise PolicyError(
                    f"ranking_proposals: scene {scene_id!r} gave no proposals (it needs point "
                    "semantics of the target classes)"
                )
            self._cands[scene_id] = c
        return self._cands[scene_id]
