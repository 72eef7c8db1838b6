"""``ranking_proposals``: the **Without-GT** ranker — instance proposals from the scene's points.

CityAnchor's "Without-GT" protocol (paper Table 11) ranks *predicted* instances instead of the
ground-truth ones. Here the proposals come from the scene cache alone — the points' semantic
classes, positions and colours, **never** their instance ids: for each target class
(:data:`urbex.classes.TARGET_SEMANTICS`), the class's points are binned into a BEV cell grid
and the occupied cells split into 8-connected components (:func:`scipy.ndimage.label`); each
component large enough is a proposal with its points' BEV box, height and mean colour. Terrain
(``Ground``) is one connected sheet, so its cells are split first into *vegetated* ones (green
dominant mean colour — lawns, pitches) and the rest, and only the vegetated components are
proposed: a heuristic, measured by :func:`proposal_recall`. A proposal that covers a landmark
footprint of the public map (box IoU ≥ 0.5) takes its name, as an instance table would.

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
from urbex.agents.ranking import Candidates
from urbex.atomic import atomic_path
from urbex.classes import TARGET_CLASSES, TARGET_SEMANTICS
from urbex.env.world import World
from urbex.errors import PolicyError
from urbex.geometry import iou_2d
from urbex.landmarks.table import footprint_bounds

if TYPE_CHECKING:
    import polars as pl

    from urbex.config import Params
    from urbex.env.episode import GroundingEnv

__all__ = [
    "CELL_M",
    "MIN_POINTS",
    "ProposalRankerPolicy",
    "proposal_recall",
    "proposal_recall_table",
    "propose_instances",
    "scene_proposals",
]

#: BEV cell side (metres) of the connected components, per class.
CELL_M: dict[str, float] = {"Building": 0.75, "Car": 0.4, "Parking": 1.0, "Ground": 1.0}
#: Fewest points of a proposal, per class.
MIN_POINTS: dict[str, int] = {"Building": 200, "Car": 40, "Parking": 200, "Ground": 400}
#: Smallest BEV box area (m²) of a proposal, per class.
MIN_AREA_M2: dict[str, float] = {"Building": 20.0, "Car": 3.0, "Parking": 50.0, "Ground": 100.0}


def _components(
    xy: NDArray[np.float64], cell_m: float, keep_cell: Callable[[NDArray[np.int64]], Any] | None
) -> tuple[NDArray[np.int64], int]:
    """Component label (−1 = none) of each point, and the number of components."""
    from scipy import ndimage

    ij = np.floor((xy - xy.min(axis=0)) / cell_m).astype(np.int64)
    shape = tuple(int(v) + 1 for v in ij.max(axis=0))
    flat = ij[:, 0] * shape[1] + ij[:, 1]
    occ = np.zeros(shape[0] * shape[1], bool)
    occ[flat] = True
    if keep_cell is not None:
        occ &= keep_cell(np.arange(occ.size))
    lab, n = ndimage.label(occ.reshape(shape), structure=np.ones((3, 3), bool))
    return lab.reshape(-1)[flat].astype(np.int64) - 1, int(n)


def propose_instances(
    xyz_m: NDArray[np.float64],
    semantic: NDArray[Any],
    rgb: NDArray[Any] | None,
    *,
    class_scheme: str,
    classes: Sequence[str] = TARGET_CLASSES,
    landmarks: Sequence[tuple[str, NDArray[np.float64]]] = (),
) -> Candidates:
    """Instance proposals of a scene's points (no instance ids used).

    Parameters
    ----------
    xyz_m : ndarray, shape (N, 3)
        World metres.
    semantic : ndarray, shape (N,)
        Semantic ids in ``class_scheme``.
    rgb : ndarray, shape (N, 3), uint8, or None
    classes
        Target classes to propose.
    landmarks
        ``(name, footprint BEV box)`` of the public landmark map (world metres).

    Returns
    -------
    Candidates
        One per proposal; ``object_id`` ``p<k>``, ``height`` the points' z extent.

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
    xyz = np.asarray(xyz_m, dtype=np.float64).reshape(-1, 3)
    sem = np.asarray(semantic).reshape(-1)
    col = None if rgb is None else np.asarray(rgb, dtype=np.float64).reshape(-1, 3)
    names, boxes, heights, colours = [], [], [], []
    scheme = TARGET_SEMANTICS.get(class_scheme, {})
    for cls in classes:
        ids = scheme.get(cls, ())
        if not ids:
            continue
        pick = np.flatnonzero(np.isin(sem, ids))
        if pick.size == 0:
            continue
        xy = xyz[pick, :2]
        keep_cell = None
        if cls == "Ground" and col is not None:  # lawns: green-dominant cells of the terrain
            cell = CELL_M[cls]
            ij = np.floor((xy - xy.min(axis=0)) / cell).astype(np.int64)
            ncol = int(ij[:, 1].max()) + 1
            flat = ij[:, 0] * ncol + ij[:, 1]
            size = (int(ij[:, 0].max()) + 1) * ncol
            cnt = np.bincount(flat, minlength=size).astype(np.float64)
            mean = (
                np.stack(
                    [np.bincount(flat, weights=col[pick, c], minlength=size) for c in range(3)], 1
                )
                / np.maximum(cnt, 1)[:, None]
            )
            green = (mean[:, 1] > mean[:, 0] + 8) & (mean[:, 1] > mean[:, 2] + 8)
            keep_cell = green.__getitem__
        lab, n = _components(xy, CELL_M.get(cls, 1.0), keep_cell)
        for k in range(n):
            m = pick[lab == k]
            if m.size < MIN_POINTS.get(cls, 50):
                continue
            lo, hi = xyz[m].min(axis=0), xyz[m].max(axis=0)
            box = np.array([lo[0], lo[1], hi[0], hi[1]])
            if (box[2] - box[0]) * (box[3] - box[1]) < MIN_AREA_M2.get(cls, 0.0):
                continue
            names.append(cls)
            boxes.append(box)
            heights.append(float(hi[2] - lo[2]))
            colours.append(col[m].mean(axis=0) if col is not None else np.full(3, np.nan))
    k = len(names)
    lm = [""] * k
    for i in range(k):
        best = max(
            ((float(iou_2d(boxes[i], b)), n) for n, b in landmarks),
            default=(0.0, ""),
            key=lambda t: t[0],
        )
        if best[0] >= 0.5:
            lm[i] = best[1]
    return Candidates.build(
        class_name=names,
        box=np.array(boxes).reshape(-1, 4),
        rgb=np.array(colours).reshape(-1, 3) if k else None,
        height=np.array(heights),
        landmark_name=lm,
        object_id=[f"p{i}" for i in range(k)],
    )


def _landmark_boxes(index: Any, scene_id: str) -> list[tuple[str, NDArray[np.float64]]]:
    """``(name, footprint box)`` of the scene's map landmarks with a footprint."""

    if index is None:
        return []
    table = index.table
    if "scene_id" in table.columns:
        import polars as pl

        table = table.filter(pl.col("scene_id") == scene_id)
    out = []
    for row in table.iter_rows(named=True):
        b = footprint_bounds(row)
        if b is not None and b[2] > b[0] and b[3] > b[1]:
            out.append((str(row["name"]), np.asarray(b, dtype=np.float64)))
    return out


def scene_proposals(
    scene: Any, index: Any = None, classes: Sequence[str] | None = None
) -> Candidates:
    """:func:`propose_instances` over every point of an opened scene cache."""
    pts = scene.points_at(np.arange(scene.n_points))
    if pts.semantic is None:
        return Candidates.build(class_name=[], box=np.zeros((0, 4)))
    return propose_instances(
        pts.world_xyz(),
        pts.semantic,
        pts.rgb,
        class_scheme=pts.class_scheme,
        classes=tuple(classes) if classes is not None else TARGET_CLASSES,
        landmarks=_landmark_boxes(index, scene.scene_id),
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
    params: Params, splits: Sequence[str] = ("test_nd", "test_no")
) -> pl.DataFrame:
    """Proposal recall per split and class over the split's query targets (distinct
    instances), written to ``diagnostics/proposal_recall.parquet`` (the warehouse's
    ``diagnostics_proposal_recall``)."""
    import polars as pl

    queries = pl.read_parquet(params.layout.queries, glob=False)
    world = World.from_params(params)
    provider, index = world.scenes, world.landmarks
    rows = []
    for split in splits:
        q = queries.filter(pl.col("split") == split).select("scene_id", "object_id").unique()
        per: dict[str, dict[str, Any]] = {}
        for sid in sorted(set(q["scene_id"].to_list())):
            scene = provider(sid)
            ids = q.filter(pl.col("scene_id") == sid)["object_id"].cast(str).to_list()
            inst = scene.instances.filter(pl.col("object_id").cast(str).is_in(ids))
            props = scene_proposals(scene, index, params.eval.candidate_classes)
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
    path = params.layout.diagnostic_table("proposal_recall")
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
