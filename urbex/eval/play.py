"""Playing episodes: one policy in one environment, timed and scored into records.

:class:`EpisodePlayer` owns a :class:`~urbex.env.episode.GroundingEnv` and a policy, builds the
conversation exactly like :func:`urbex.agents.base.rollout`, and turns each finished episode
into an :class:`~urbex.eval.episodes.EpisodeRecord` and its :class:`~urbex.eval.episodes.StepRow`
rows with :func:`urbex.eval.metrics.episode_metrics`.

Latency ("warm online", as the paper): model + environment time per query, excluding offline
scene preparation — each scene is opened and its global view built by an untimed warm reset
before its first timed episode. ``env_s`` = reset + steps, ``policy_s`` = model calls,
``latency_s`` = wall time of the episode. In lockstep batches a step's policy time is the
batch's wall time divided by the episodes in the batch. Episodes stop at the turn budget or after
``params.eval.episode_timeout_s`` (checked between turns; then unanswered, ``timed_out``).

Frames: boxes in world metres (see :mod:`urbex.eval.metrics`).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from urbex.errors import AnnotationError
from urbex.eval.episodes import EpisodeRecord, StepRow, tool_counts

if TYPE_CHECKING:
    from urbex.agents.base import Policy
    from urbex.config import Params
    from urbex.env.episode import GroundingEnv, Query

__all__ = ["EpisodePlayer", "episode_seed", "landmark_index"]


def episode_seed(base: int, query_id: str) -> int:
    """The per-episode seed: a hash of ``(base, query_id)`` in ``[0, 2**31)``, order-independent.

    >>> episode_seed(0, "q1") == episode_seed(0, "q1") != episode_seed(1, "q1")
    True
    """
    h = hashlib.blake2b(f"{base}:{query_id}".encode(), digest_size=8).digest()
    return int.from_bytes(h, "little") & 0x7FFF_FFFF


# ---------------------------------------------------------------------------------------------


def _user(text: str, n_images: int) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [*({"type": "image"} for _ in range(n_images)), {"type": "text", "text": text}],
    }


def _targets(q: Query) -> tuple[np.ndarray, np.ndarray]:
    """The query's target boxes (BEV, 3D; world m); evaluation needs ground truth."""
    if q.target_box_2d is None or q.target_box_3d is None:
        raise AnnotationError(
            f"query {q.query_id!r} has no ground truth (a free-text query); evaluation scores "
            "against target boxes — use `urbex ground` for free text",
            field="target_box_3d",
        )
    return q.target_box_2d, q.target_box_3d


@dataclass(slots=True)
class _Scene:
    """Per-scene evaluation context: GT candidate boxes (world m) and object → row."""

    boxes: np.ndarray
    row: dict[str, int]


def _scene_context(env: GroundingEnv, scene_id: str, classes: Sequence[str] | None) -> _Scene:
    import polars as pl

    inst = env.scene_provider(scene_id).instances
    if classes is not None:
        inst = inst.filter(pl.col("class_name").is_in(list(classes)))
    boxes = inst.select("x_min", "y_min", "x_max", "y_max").to_numpy().astype(np.float64)
    return _Scene(
        boxes=boxes.reshape(-1, 4), row={o: i for i, o in enumerate(inst["object_id"].to_list())}
    )


@dataclass(slots=True)
class _Live:
    """An episode in progress."""

    query: Query
    seed: int
    env: GroundingEnv
    messages: list[dict[str, Any]]
    images: list[Any]
    t0: float
    env_s: float = 0.0
    policy_s: float = 0.0
    steps: list[StepRow] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)
    ended: bool = False
    timed_out: bool = False


class EpisodePlayer:
    """Plays episodes of one policy in one process (its env, policy and scene contexts).

    Parameters
    ----------
    params, policy_name, split, run_id, checkpoint
        What is evaluated (recorded in every row).
    policy, env
        Ready instances to use instead of building them from ``params``.
    class_sizes
        ``{class: (dx_m, dy_m)}`` for a policy that takes them (``make_policy(...)``).
    """

    def __init__(
        self,
        params: Params,
        policy_name: str,
        split: str,
        run_id: str,
        checkpoint: Path | None,
        *,
        policy: Policy | None = None,
        env: GroundingEnv | None = None,
        class_sizes: Mapping[str, tuple[float, float]] | None = None,
    ) -> None:
        from urbex.agents.registry import make_policy
        from urbex.env.episode import CachedSceneProvider, GroundingEnv
        from urbex.env.protocol import system_prompt

        self.params = params
        self.policy_name = policy_name
        self.split = split
        self.run_id = run_id
        from urbex.eval.perturb import PerturbedLandmarks

        self.env = env or GroundingEnv(
            params, CachedSceneProvider(params.assets / "scenes"), landmark_index(params)
        )
        # eval.landmark_perturbation (paper D.3): static for noise/wrong, per query for missing
        self._landmarks = PerturbedLandmarks.from_params(self.env.landmarks, params)
        if self._landmarks.mode != "none":
            self.env.landmarks = self._landmarks.index
        self.policy = policy or make_policy(
            policy_name, params, env=self.env, checkpoint=checkpoint, class_sizes=class_sizes
        )
        schemas = not bool(getattr(self.policy, "template_lists_tools", False))
        self.system = system_prompt(self.env.params, include_tool_schemas=schemas)
        self._scenes: dict[str, _Scene] = {}
        self._warm: set[str] = set()

    def _warmup(self, query: Query) -> None:
        """Untimed: open the scene and build its global view (offline preparation)."""
        if query.scene_id in self._warm:
            return
        self.env.reset(query=query, seed=0)
        self._scenes[query.scene_id] = _scene_context(
            self.env, query.scene_id, self.params.eval.candidate_classes
        )
        self._warm.add(query.scene_id)

    def _start(self, query: Query, env: GroundingEnv) -> _Live:
        _targets(query)  # fail before playing a query that cannot be scored
        if self._landmarks.mode == "missing":
            env.landmarks = self._landmarks.for_query(query.description, query.scene_id)
        seed = episode_seed(self.params.eval.seed, query.query_id)
        hook = getattr(self.policy, "begin_episode", None)
        if hook is not None:
            hook(seed=seed)
        t0 = time.perf_counter()
        obs, _ = env.reset(query=query, seed=seed)
        live = _Live(
            query=query,
            seed=seed,
            env=env,
            messages=[
                {"role": "system", "content": self.system},
                _user(obs["text"], len(obs["images"])),
            ],
            images=list(obs["images"]),
            t0=t0,
        )
        live.env_s += time.perf_counter() - t0
        return live

    def _advance(self, live: _Live, text: str, policy_dt: float) -> None:
        te = time.perf_counter()
        obs, _, terminated, truncated, info = live.env.step(text)
        env_dt = time.perf_counter() - te
        live.env_s += env_dt
        live.policy_s += policy_dt
        rec = info["step"]
        region: list[float | None] = [None] * 4
        if rec.valid and rec.tool in ("zoom_in", "oblique_render") and rec.view_id:
            region = [float(v) for v in live.env.views[rec.view_id].world_box]
        live.steps.append(
            StepRow(
                run_id=self.run_id,
                query_id=live.query.query_id,
                scene_id=live.query.scene_id,
                turn=rec.turn,
                tool=rec.tool,
                arguments=rec.arguments,
                valid=rec.valid,
                error=rec.error,
                view_id=rec.view_id,
                reward=rec.reward,
                latency_s=policy_dt + env_dt,
                env_s=env_dt,
                policy_s=policy_dt,
                model_text=text,
                view_x_min=region[0],
                view_y_min=region[1],
                view_x_max=region[2],
                view_y_max=region[3],
            )
        )
        live.messages.append({"role": "assistant", "content": text})
        if terminated or truncated:
            live.ended, live.info = True, info
            return
        if time.perf_counter() - live.t0 > self.params.eval.episode_timeout_s:
            live.ended, live.timed_out = True, True
            return
        live.images.extend(obs["images"])
        live.messages.append(
            _user(f"<tool_response>\n{obs['text']}\n</tool_response>", len(obs["images"]))
        )

    def play(self, query: Query) -> tuple[EpisodeRecord, list[StepRow]]:
        """One episode, played to its end."""
        self._warmup(query)
        live = self._start(query, self.env)
        while not live.ended:
            tp = time.perf_counter()
            text = self.policy.act(live.messages, live.images)
            self._advance(live, text, time.perf_counter() - tp)
        return self._record(live), live.steps

    def play_batch(
        self, queries: Sequence[Query], size: int
    ) -> Iterator[tuple[EpisodeRecord, list[StepRow]]]:
        """Lockstep batches of ``size`` episodes through ``policy.act_batch`` (one env each)."""
        from urbex.agents.base import BatchPolicy
        from urbex.env.episode import GroundingEnv

        policy = self.policy
        if not isinstance(policy, BatchPolicy):
            raise TypeError(
                f"play_batch: the policy must have act_batch (a BatchPolicy), "
                f"got {type(policy).__name__}"
            )
        envs = [self.env] + [
            GroundingEnv(self.params, self.env.scene_provider, self.env.landmarks)
            for _ in range(size - 1)
        ]
        for i in range(0, len(queries), size):
            group = queries[i : i + size]
            for q in group:
                self._warmup(q)
                for e in envs[1:]:  # warm the extra envs' global-view caches too (untimed)
                    e.reset(query=q, seed=0)
            lives = [self._start(q, e) for q, e in zip(group, envs)]
            while True:
                active = [lv for lv in lives if not lv.ended]
                if not active:
                    break
                tp = time.perf_counter()
                texts = policy.act_batch(
                    [lv.messages for lv in active], [lv.images for lv in active]
                )
                dt = (time.perf_counter() - tp) / len(active)
                for lv, text in zip(active, texts):
                    self._advance(lv, text, dt)
            for lv in lives:
                yield self._record(lv), lv.steps

    def _record(self, live: _Live) -> EpisodeRecord:
        from urbex.env import rewards as R
        from urbex.eval.metrics import episode_metrics

        q = live.query
        tgt2, tgt3 = _targets(q)
        env = live.env
        latency = time.perf_counter() - live.t0
        info = live.info
        answered = bool(info.get("answered", False)) and not live.timed_out
        pred2d = np.asarray(info["pred_box_2d"], dtype=np.float64) if answered else None
        pred3d = np.asarray(info["pred_box_3d"], dtype=np.float64) if answered else None
        ctx = self._scenes[q.scene_id]
        boxes, t = ctx.boxes, ctx.row.get(q.object_id)
        if t is None:  # target outside the ranked classes: rank it anyway
            boxes, t = np.vstack([boxes, tgt2[None]]), len(boxes)
        in_pred = in_target = None
        if (
            pred2d is not None
            and self.params.eval.point_metrics
            and q.object_id.lstrip("-").isdigit()
        ):
            union = np.concatenate(
                [
                    np.minimum(pred2d[:2], tgt2[:2]),
                    np.maximum(pred2d[2:], tgt2[2:]),
                ]
            )
            pts = env.scene.crop_points(union)
            if pts.instance is not None:
                xy = (
                    pts.xyz[:, :2].astype(np.float64) + np.asarray(pts.offset, dtype=np.float64)[:2]
                )
                in_pred = (
                    (xy[:, 0] >= pred2d[0])
                    & (xy[:, 0] <= pred2d[2])
                    & (xy[:, 1] >= pred2d[1])
                    & (xy[:, 1] <= pred2d[3])
                )
                in_target = np.asarray(pts.instance) == int(q.object_id)
        m = episode_metrics(
            pred2d,
            boxes,
            t,
            pred_box_3d=pred3d,
            gt_box_3d=tgt3,
            in_pred=in_pred,
            in_target=in_target,
        )
        if live.timed_out:
            turns = env.turn
            reward = env.shaping_total + float(
                R.terminal_reward(0.0, float("inf"), turns, **R.weights(env.params))
            )
            stop = "timeout"
        else:
            turns = int(info["turns"])
            reward = float(info["return"])
            stop = "answer" if answered else "budget"
        counts = tool_counts(s.tool for s in live.steps if s.valid)
        pb3 = pred3d if pred3d is not None else [None] * 6
        answer_view = None
        if answered:
            answer_view = json.loads(live.steps[-1].arguments).get("view_id")
        return EpisodeRecord(
            run_id=self.run_id,
            policy=self.policy_name,
            split=self.split,
            query_id=q.query_id,
            scene_id=q.scene_id,
            object_id=q.object_id,
            class_name=q.class_name,
            seed=live.seed,
            valid_answer=answered,
            answer_view_id=answer_view,
            pred_x_min=_f(pb3[0]),
            pred_y_min=_f(pb3[1]),
            pred_z_min=_f(pb3[2]),
            pred_x_max=_f(pb3[3]),
            pred_y_max=_f(pb3[4]),
            pred_z_max=_f(pb3[5]),
            iou_bev=m["iou_bev"],
            iou_3d=m["iou_3d"],
            point_precision=m["point_precision"],
            point_recall=m["point_recall"],
            point_f1=m["point_f1"],
            center_dist_m=m["center_dist_m"],
            target_rank=m["target_rank"],
            target_rank_nz=m["target_rank_nz"],
            target_rank_ciou=m["target_rank_ciou"],
            hit1=m["hit1"],
            hit3=m["hit3"],
            hit5=m["hit5"],
            hit1_iou25=m["hit1_iou25"],
            area_ratio=m["area_ratio"],
            n_candidates=m["n_candidates"],
            n_pos_overlap=m["n_pos_overlap"],
            n_iou25=m["n_iou25"],
            turns=turns,
            **counts,
            n_invalid=sum(1 for s in live.steps if not s.valid),
            latency_s=latency,
            env_s=live.env_s,
            policy_s=live.policy_s,
            reward=reward,
            terminated=answered,
            truncated=stop == "budget",
            timed_out=live.timed_out,
            stop_reason=stop,
        )


def _f(v: Any) -> float | None:
    return None if v is None else float(v)


def landmark_index(params: Params) -> Any:
    """The landmark index of ``<assets>/landmarks/*.parquet`` (None when there is none)."""
    from urbex.landmarks import LandmarkIndex, read_landmark_table

    d = params.assets / "landmarks"
    if not d.exists() or not any(d.glob("*.parquet")):
        return None
    return LandmarkIndex.from_params(read_landmark_table(d), params)
