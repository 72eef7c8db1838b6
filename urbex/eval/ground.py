"""One query, played and shown: the library side of ``urbex ground``.

:func:`ground` runs one episode of a policy on a built project (scene cache + landmark table) for
a free-text query — or, with ``object_id``, for a target taken from the scene's instance table,
so that ``oracle`` can play and the IoU is reported — and writes::

    <out>/steps.jsonl      one JSON line per step: turn, tool, arguments, valid, error, view_id,
                           latency_s/policy_s/env_s, reward, model_text
    <out>/answer.json      the answer: view box (0–1000), world BEV box, 3D box, iou if known
    <out>/trajectory.png   the trajectory picture (urbex.viz.trajectory)
    <out>/views/<view_id>.png   every view the agent saw (global, zoom_N, oblique_N); the folder
                                is replaced whole, so no view of an earlier query stays beside them

Frames: ``bbox_2d`` is in view units (0–1000 of the answer view); every other box is world
metres in the scene cache's frame (BEV ``[x_min, y_min, x_max, y_max]``, 3D ``[x_min, y_min,
z_min, x_max, y_max, z_max]``).

The episode is played by the one loop, :func:`urbex.env.play.play_episode`; everything written
is a projection of its :class:`~urbex.env.trajectory.Trajectory`. Latency per step = the
policy's time for that turn + the environment's (parse, tool, scoring), seconds; the scene is
opened and its global view built before the clock starts.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from urbex.agents.registry import make_policy, policy_class_sizes, policy_info
from urbex.atomic import PUBLIC, atomic_path, atomic_write, publish_dir, staging_path
from urbex.env.play import episode_seed, play_episode
from urbex.env.world import World
from urbex.errors import AnnotationError, CacheError, ConfigError, LandmarkError, PolicyError
from urbex.eval.metrics import trajectory_metrics
from urbex.language import check_description
from urbex.layout import INSTANCES_FILE, META_FILE, AssetLayout, plain_name
from urbex.query import Query
from urbex.tool_vocabulary import ToolName
from urbex.viz.trajectory import trajectory_picture

if TYPE_CHECKING:
    from collections.abc import Sequence

    from urbex.config import Params
    from urbex.env.records import Step
    from urbex.env.trajectory import Trajectory

__all__ = ["GroundResult", "ground", "landmark_hits", "step_line"]


def step_line(step: Step) -> dict[str, Any]:
    """One ``steps.jsonl`` line: ``turn, tool, arguments`` (a dict; boxes in view units),
    ``valid, error, view_id, latency_s, policy_s, env_s, reward, model_text``."""
    return {
        "turn": step.turn,
        "tool": step.tool,
        "arguments": step.arguments,
        "valid": step.valid,
        "error": step.error,
        "view_id": step.view_id,
        "latency_s": step.latency_s,
        "policy_s": step.policy_s,
        "env_s": step.env_s,
        "reward": step.reward,
        "model_text": step.model_text,
    }


@dataclass(frozen=True, slots=True, kw_only=True)
class GroundResult:
    """What :func:`ground` did.

    Attributes
    ----------
    scene_id, query, policy : str
    object_id : str or None
        The target instance when given (ground truth known).
    out_dir : Path
        Where the files were written.
    answered : bool
    answer_view_id : str or None
        The view the answer was given in.
    bbox_2d : list of float or None
        The answer box in that view, view units 0–1000.
    answer_mark : int or None
        The numbered mark the answer named or snapped to (``env.marks``, ``env.answer_snap``).
    pred_box_2d, pred_box_3d : list of float or None
        World BEV / 3D box of the answer, metres.
    target_box_2d, target_box_3d : list of float or None
        Ground truth (``object_id`` given), metres.
    iou_bev, iou_3d, center_dist_m : float or None
        Set when the ground truth is known and the agent answered.
    turns : int
    episode_return : float
    trajectory : Trajectory
        The played episode (its steps, views and conversation).
    view_ids : tuple of str
    seconds : float
        Wall time of the episode (policy + environment).
    """

    scene_id: str
    query: str
    policy: str
    object_id: str | None
    out_dir: Path
    answered: bool
    answer_view_id: str | None
    bbox_2d: list[float] | None
    answer_mark: int | None
    pred_box_2d: list[float] | None
    pred_box_3d: list[float] | None
    target_box_2d: list[float] | None
    target_box_3d: list[float] | None
    iou_bev: float | None
    iou_3d: float | None
    center_dist_m: float | None
    turns: int
    episode_return: float
    trajectory: Trajectory = field(repr=False)
    view_ids: tuple[str, ...]
    seconds: float

    @property
    def steps(self) -> tuple[Step, ...]:
        """The episode's steps."""
        return self.trajectory.steps

    @property
    def picture(self) -> Path:
        return self.out_dir / "trajectory.png"

    def answer_row(self) -> dict[str, Any]:
        """The content of ``answer.json``."""
        return {
            "scene_id": self.scene_id,
            "query": self.query,
            "policy": self.policy,
            "object_id": self.object_id,
            "answered": self.answered,
            "view_id": self.answer_view_id,
            "bbox_2d": self.bbox_2d,
            "mark": self.answer_mark,
            "pred_box_2d": self.pred_box_2d,
            "pred_box_3d": self.pred_box_3d,
            "target_box_2d": self.target_box_2d,
            "target_box_3d": self.target_box_3d,
            "iou_bev": self.iou_bev,
            "iou_3d": self.iou_3d,
            "center_dist_m": self.center_dist_m,
            "turns": self.turns,
            "return": self.episode_return,
            "seconds": self.seconds,
            "frames": {
                "bbox_2d": "view units 0-1000 of view_id (x right, y down)",
                "pred_box_2d": "world metres [x_min, y_min, x_max, y_max]",
                "pred_box_3d": "world metres [x_min, y_min, z_min, x_max, y_max, z_max]",
            },
        }


# ---------------------------------------------------------------------------------------------


def _require_project(lay: AssetLayout, scene_id: str) -> tuple[Path, Path]:
    """The scene cache directory and landmark table of ``scene_id``, or a clear error."""
    cache = lay.scene(scene_id)
    if not lay.scene_meta(scene_id).is_file():
        known = sorted(p.name for p in lay.scenes.glob(PUBLIC) if (p / META_FILE).is_file())
        hint = f"; built scenes: {known}" if known else ""
        raise CacheError(
            f"scene cache of {scene_id!r} not found; run `urbex synth` and "
            f"`urbex cache --scene {scene_id}` (or `make demo`) first{hint}",
            path=cache,
        )
    table = lay.landmark_table(scene_id)
    if not table.is_file():
        raise LandmarkError(
            f"landmark table of {scene_id!r} not found; run `urbex landmarks` first", path=table
        )
    return cache, table


def _check_input(scene_id: str, text: str) -> None:
    """ConfigError on a scene id that is not one path component (``..``, ``a/../b``: the rule
    of the scene layout, :func:`urbex.layout.plain_name`) or an empty query;
    DescriptionError on a query that is not UTF-8 or too long (:func:`check_description`)."""
    try:
        plain_name(scene_id, what="--scene")
    except ValueError as exc:
        raise ConfigError(f"{exc}; name a scene of the data set") from None
    if not text.strip():
        raise ConfigError("--query: expected a non-empty description", field="query")
    check_description(text, what="--query")


def _make_query(scene: Any, scene_id: str, text: str, object_id: str | None) -> Query:
    import polars as pl

    qid = "ground:" + hashlib.blake2b(f"{scene_id}\n{text}".encode(), digest_size=6).hexdigest()
    if object_id is None:
        return Query(query_id=qid, scene_id=scene_id, description=text)
    inst = scene.instances
    rows = inst.filter(pl.col("object_id") == str(object_id))
    if rows.height == 0:
        known = inst["object_id"].to_list()
        raise AnnotationError(
            f"object {object_id!r} is not in scene {scene_id!r}'s instance table "
            f"({len(known)} objects, e.g. {known[:10]})",
            path=Path(scene.path) / INSTANCES_FILE,
            field="object_id",
        )
    r = rows.row(0, named=True)
    b3 = np.array([r["x_min"], r["y_min"], r["z_min"], r["x_max"], r["y_max"], r["z_max"]])
    return Query(
        query_id=qid,
        scene_id=scene_id,
        object_id=str(object_id),
        description=text,
        target_box_2d=b3[[0, 1, 3, 4]],
        target_box_3d=b3,
        class_name=str(r.get("class_name") or ""),
    )


def landmark_hits(
    index: Any, scene_id: str, steps: Sequence[Step]
) -> list[tuple[str, float, float]]:
    """``(name, x, y)`` (world metres) of the best match of every valid ``landmark_query`` step
    that found one, in turn order, without repeats (the lookup is deterministic)."""
    out: list[tuple[str, float, float]] = []
    if index is None:
        return out
    for s in steps:
        if s.tool != ToolName.LANDMARK_QUERY or not s.valid:
            continue
        name = s.arguments.get("name")
        if not isinstance(name, str):
            continue
        res = index.lookup(name, scene_id=scene_id, limit=1)
        best = res.best if res.found else None
        if best is not None and best.name not in {n for n, _, _ in out}:
            out.append((str(best.name), float(best.x), float(best.y)))
    return out


def _default_out(lay: AssetLayout, scene_id: str) -> Path:
    """A new ``ground/<scene_id>-<UTC time>[-k]`` folder name (not created)."""
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    base = lay.ground / f"{scene_id}-{stamp}"
    out, k = base, 1
    while out.exists():
        out, k = base.with_name(f"{base.name}-{k}"), k + 1
    return out


def _finite(v: Any) -> float | None:
    return None if v is None or not math.isfinite(float(v)) else float(v)


def ground(
    params: Params,
    *,
    scene_id: str,
    query: str,
    policy: str,
    object_id: str | None = None,
    checkpoint: str | Path | None = None,
    out_dir: str | Path | None = None,
) -> GroundResult:
    """Play one query in one scene with ``policy`` and write its steps, answer and picture.

    Parameters
    ----------
    params
        Project parameters (``paths.assets``, ``env``, ``policy``, ``landmarks``, ``eval.seed``).
    scene_id
        A scene with a built cache (``<assets>/scenes/<scene_id>``) and landmark table
        (``<assets>/landmarks/<scene_id>.parquet``).
    query
        The description shown to the agent (free text).
    policy
        A policy name (:data:`urbex.agents.registry.POLICY_NAMES`).
    object_id
        Target instance of the scene's instance table: its box becomes the ground truth (the
        oracle can play; IoU is reported). None: a free-text query without ground truth.
    checkpoint
        Local model directory for the ``vlm`` backend.
    out_dir
        Output directory (default ``<assets>/ground/<scene_id>-<UTC timestamp>``).

    Raises
    ------
    CacheError
        No scene cache (the message says to run ``urbex cache``).
    LandmarkError
        No landmark table (``urbex landmarks``).
    AnnotationError
        ``object_id`` is not in the scene's instance table.
    ConfigError
        Unknown policy name, a scene id that is not one path component, or an empty query.
    DescriptionError
        A query that is not UTF-8 or longer than :data:`urbex.config_data.MAX_DESCRIPTION_CHARS`.
    PolicyError
        ``oracle`` without ``object_id`` (it needs ground truth), or a model backend failure.
    """
    _check_input(scene_id, query)
    try:
        info = policy_info(policy)
    except ValueError as exc:
        raise ConfigError(str(exc), field="policy") from exc
    if info.needs_ground_truth and object_id is None:
        raise PolicyError(
            f"the {policy} policy needs ground truth: name the target with object_id "
            "(--object-id ID, an object of the scene's instance table) or pick another policy, "
            "e.g. landmark_prior"
        )
    _require_project(params.layout, scene_id)
    world = World.from_params(params, max_open_scenes=1)
    scene = world.scenes(scene_id)
    q = _make_query(scene, scene_id, query, None if object_id is None else str(object_id))
    env = world.env()
    # the train split's class sizes when the splits stage ran; ground needs no splits otherwise
    sizes = (
        policy_class_sizes(policy, params.policy, params.layout)
        if params.layout.class_sizes.is_file()
        else None
    )
    pol = make_policy(policy, params, env=env, checkpoint=checkpoint, class_sizes=sizes)
    env.reset(query=q, seed=0)  # untimed warm-up: open the scene, build the global view
    traj = play_episode(
        env,
        pol,
        q,
        seed=episode_seed(params.eval.seed, q.query_id),
        timeout_s=params.eval.episode_timeout_s,
    )
    o = traj.outcome
    m: dict[str, Any] = {}
    if q.target_box_2d is not None and o.answered:
        m = trajectory_metrics(traj, q.target_box_2d[None], 0)
    result = GroundResult(
        scene_id=scene_id,
        query=query,
        policy=policy,
        object_id=q.object_id or None,
        out_dir=Path(out_dir) if out_dir is not None else _default_out(params.layout, scene_id),
        answered=o.answered,
        answer_view_id=o.answer_view_id,
        answer_mark=o.answer_mark,
        bbox_2d=None if o.answer_box_view is None else list(o.answer_box_view),
        pred_box_2d=None if o.pred_box_2d_m is None else o.pred_box_2d_m.tolist(),
        pred_box_3d=None if o.pred_box_3d_m is None else o.pred_box_3d_m.tolist(),
        target_box_2d=None if q.target_box_2d is None else q.target_box_2d.tolist(),
        target_box_3d=None if q.target_box_3d is None else q.target_box_3d.tolist(),
        iou_bev=_finite(m.get("iou_bev")),
        iou_3d=_finite(m.get("iou_3d")),
        center_dist_m=_finite(m.get("center_dist_m")),
        turns=o.turns,
        episode_return=o.reward,
        trajectory=traj,
        view_ids=tuple(v.view_id for v in traj.views),
        seconds=traj.latency_s,
    )
    picture = trajectory_picture(
        env.scene,
        traj.steps,
        traj.views,
        query_text=query,
        pred_box_2d=result.pred_box_2d,
        target_box_2d=result.target_box_2d,
        landmarks=landmark_hits(world.landmarks, scene_id, traj.steps),
        answer_mark=o.answer_mark if env.marks is None else env.marks.label(o.answer_mark),
        subtitle=f"policy {policy}"
        + (f"  |  object {q.object_id} ({q.class_name})" if q.has_target else ""),
    )
    _write(result, picture)
    return result


def _write(result: GroundResult, picture: Any) -> None:
    """Every output file, each written atomically (temp file + rename); ``views/`` is built in
    a staging folder and replaces the one there whole, so an earlier trajectory written to the
    same folder leaves no view (``zoom_3.png``) that this one did not make."""
    out = result.out_dir
    out.mkdir(parents=True, exist_ok=True)
    views = staging_path(out / "views")
    views.mkdir()
    try:
        for v in result.trajectory.views:
            v.image.save(views / f"{v.view_id}.png", format="PNG")
        publish_dir(views, out / "views")
    except BaseException:
        shutil.rmtree(views, ignore_errors=True)
        raise
    with atomic_write(out / "steps.jsonl", "w", encoding="utf-8") as fh:
        for s in result.steps:
            fh.write(json.dumps(step_line(s)) + "\n")
    with atomic_write(out / "answer.json", "w", encoding="utf-8") as fh:
        json.dump(result.answer_row(), fh, indent=2)
        fh.write("\n")
    with atomic_path(out / "trajectory.png") as tmp:
        picture.save(tmp, format="PNG", optimize=True)
