"""Evaluation's side of the episode loop: :class:`EpisodePlayer`.

One policy and environment per run: untimed scene warm-up, landmark perturbation, and each
trajectory's metrics and Parquet rows. Episodes are played by :func:`urbex.env.play.play_episode`
(or :func:`~urbex.env.play.play_batch`); metrics come from :mod:`urbex.eval.metrics`.

Latency ("warm online", as the paper): model + environment time per query, excluding offline
scene preparation — each scene is opened and its global view built by an untimed warm reset
before its first timed episode. In lockstep batches a step's policy time is the batch's wall
time divided by the episodes in the batch.

Frames: boxes in world metres (see :mod:`urbex.eval.metrics`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from urbex.agents.registry import PolicyMaker
from urbex.config import EvalParams, LandmarkParams
from urbex.env.episode import GroundingEnv
from urbex.env.play import episode_seed, play_batch, play_episode
from urbex.env.policy import Policy
from urbex.env.trajectory import Trajectory
from urbex.env.world import World
from urbex.errors import AnnotationError
from urbex.eval.metrics import trajectories_metrics
from urbex.eval.perturb import PerturbedLandmarks
from urbex.eval.rows import EpisodeRecord, StepRow, episode_record, step_rows
from urbex.eval.runspec import RunSpec
from urbex.query import Query

__all__ = ["EpisodePlayer", "RunWork"]


def _require_targets(q: Query) -> None:
    """Evaluation scores against ground truth: fail before playing a query without it."""
    if q.target_box_2d is None or q.target_box_3d is None:
        raise AnnotationError(
            f"query {q.query_id!r} has no ground truth (a free-text query); evaluation scores "
            "against target boxes — use `urbex ground` for free text",
            field="target_box_3d",
        )


@dataclass(slots=True)
class _Candidates:
    """Per-scene evaluation context: GT candidate boxes (world m) and object → row."""

    boxes: np.ndarray
    row: dict[str, int]

    def for_target(self, q: Query) -> tuple[np.ndarray, int]:
        """The candidates and the target's row (a target outside the ranked classes is added)."""
        t = self.row.get(q.object_id)
        if t is None:
            assert q.target_box_2d is not None
            return np.vstack([self.boxes, q.target_box_2d[None]]), len(self.boxes)
        return self.boxes, t


def _candidates(env: GroundingEnv, scene_id: str, classes: Sequence[str] | None) -> _Candidates:
    inst = env.scene_provider(scene_id).instances
    if classes is not None:
        inst = inst.filter(pl.col("class_name").is_in(list(classes)))
    boxes = inst.select("x_min", "y_min", "x_max", "y_max").to_numpy().astype(np.float64)
    return _Candidates(
        boxes=boxes.reshape(-1, 4), row={o: i for i, o in enumerate(inst["object_id"].to_list())}
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class RunWork:
    """The run whose episodes are played: what a player is built from, and where the shards go.

    The runner (:func:`urbex.eval.runner.evaluate`) builds it once per run from the run's spec
    and the sections the spec's settings were applied to; worker processes receive it with each
    task and build their own player from it (:meth:`player`).

    Attributes
    ----------
    spec
        The run (policy, split, checkpoint, sample, perturbation, tools, ...).
    run_id
        The run's directory name (recorded in every row).
    maker
        How a player builds the policy (its ``settings``: the ``policy``, ``env``, ``vlm``,
        ``openai`` sections, the layout and the candidate classes, with the spec's tools and
        marks applied; its checkpoint and class sizes). The player's world is opened from the
        same layout and ``env`` section.
    eval
        The ``eval`` section with the spec's sample, perturbation and repeat seed applied
        (episode seeds, time-out, point metrics, candidate classes, chunking).
    landmarks
        The ``landmarks`` section (how the landmark tables are indexed).
    directory
        The run directory (:meth:`urbex.layout.AssetLayout.run`).
    """

    spec: RunSpec
    run_id: str
    maker: PolicyMaker
    eval: EvalParams
    landmarks: LandmarkParams
    directory: Path

    @property
    def policy(self) -> str:
        """The policy's name (:attr:`RunSpec.policy`)."""
        return self.spec.policy

    @property
    def split(self) -> str:
        """The split played (:attr:`RunSpec.split`)."""
        return self.spec.split

    @property
    def key(self) -> str:
        """Which run a player serves: a worker process rebuilds its player when it changes."""
        return f"{self.run_id}:{self.policy}"

    def player(self, *, policy_obj: Policy | None = None) -> EpisodePlayer:
        """A player of this run (``policy_obj``: a ready policy instead of building it)."""
        return EpisodePlayer(self, policy=policy_obj)


class EpisodePlayer:
    """Plays and scores episodes of one policy in one process (its env, policy, scene contexts).

    Parameters
    ----------
    run
        What is evaluated and with which settings (:class:`RunWork`).
    policy, env
        Ready instances to use instead of building them from ``run``.
    """

    def __init__(
        self, run: RunWork, *, policy: Policy | None = None, env: GroundingEnv | None = None
    ) -> None:

        self.eval = run.eval
        self.policy_name = run.policy
        self.split = run.split
        self.run_id = run.run_id
        s = run.maker.settings
        self.env = env or World.open(s.layout, s.env, run.landmarks).env()
        # eval.landmark_perturbation (paper D.3): static for noise/wrong, per query for missing
        self._landmarks = PerturbedLandmarks.from_eval(self.env.landmarks, run.eval)
        if self._landmarks.mode != "none":
            self.env.use_landmarks(self._landmarks.index)
        self.policy = policy or run.maker(self.env)
        if not isinstance(self.policy, Policy):
            raise TypeError(
                f"policy: expected a urbex.env.policy.Policy (subclass PolicyBase for the "
                f"defaults of begin_episode, template_lists_tools, max_batch, act_batch), got "
                f"{type(self.policy).__name__}"
            )
        self._scenes: dict[str, _Candidates] = {}
        self._lock = threading.Lock()  # scene contexts and landmark state, for play_in threads
        #: Seconds spent on untimed scene warm-ups so far (the scheduler's rate excludes them).
        self.warmup_s = 0.0

    def _warmup(self, envs: Sequence[GroundingEnv], query: Query) -> None:
        """Untimed: open the scene and build its global view (offline preparation), in
        :attr:`env` and its siblings (shared views) and in any other env of ``envs``."""
        t0 = time.perf_counter()
        if query.scene_id not in self._scenes:
            self._scenes[query.scene_id] = _candidates(
                self.env, query.scene_id, self.eval.candidate_classes
            )
            self.env.reset(query=query, seed=0)
        for e in envs:
            if e.global_views is not self.env.global_views:
                e.reset(query=query, seed=0)
        self.warmup_s += time.perf_counter() - t0

    def _prepare(self, env: GroundingEnv, query: Query) -> int:
        """Checks and per-query landmark state before a timed episode; returns its seed."""
        _require_targets(query)
        if self._landmarks.mode == "missing":
            env.use_landmarks(self._landmarks.for_query(query.description, query.scene_id))
        return episode_seed(self.eval.seed, query.query_id)

    def rows(self, trajs: Sequence[Trajectory]) -> tuple[list[EpisodeRecord], list[StepRow]]:
        """The episodes' and steps' rows of played episodes, scored in one vectorised pass
        (:func:`urbex.eval.metrics.trajectories_metrics`) against their scenes' candidates."""
        cands = [self._scenes[tr.query.scene_id].for_target(tr.query) for tr in trajs]
        metrics = trajectories_metrics(trajs, [c[0] for c in cands], [c[1] for c in cands])
        recs = [
            episode_record(tr, m, run_id=self.run_id, policy=self.policy_name, split=self.split)
            for tr, m in zip(trajs, metrics)
        ]
        return recs, [s for tr in trajs for s in step_rows(tr, run_id=self.run_id)]

    def play(self, query: Query) -> tuple[EpisodeRecord, list[StepRow]]:
        """One episode, played to its end and scored."""
        return self.play_in(self.env, query)

    def warm(self, query: Query) -> None:
        """Prepare ``query``'s scene untimed, ahead of its episodes (a worker process about to
        be handed that scene's chunks)."""
        with self._lock:
            self._warmup([self.env], query)

    def trajectory(self, query: Query) -> Trajectory:
        """One episode in :attr:`env`, played to its end, not scored yet (:meth:`rows`)."""
        with self._lock:
            self._warmup([self.env], query)
            seed = self._prepare(self.env, query)
        return self._play_episode(self.env, query, seed)

    def _play_episode(self, env: GroundingEnv, query: Query, seed: int) -> Trajectory:
        return play_episode(
            env,
            self.policy,
            query,
            seed=seed,
            timeout_s=self.eval.episode_timeout_s,
            point_metrics=self.eval.point_metrics,
        )

    def play_in(self, env: GroundingEnv, query: Query) -> tuple[EpisodeRecord, list[StepRow]]:
        """One episode in ``env`` (this player's, or a worker thread's own), played and scored.

        Thread-safe for distinct ``env`` other than :attr:`env` when the policy is
        (``policy.max_concurrency > 1``; :mod:`urbex.eval.inflight`): the shared scene
        contexts and landmark state are prepared under a lock. A
        :meth:`~urbex.env.episode.GroundingEnv.sibling` of :attr:`env` shares its global views
        (each scene's built once); any other ``env`` gets an untimed reset first.
        """
        with self._lock:
            self._warmup([self.env], query)
            seed = self._prepare(env, query)
        if env.global_views is not self.env.global_views:  # untimed, outside the lock
            env.reset(query=query, seed=0)
        recs, steps = self.rows([self._play_episode(env, query, seed)])
        return recs[0], steps

    def play_batch(self, queries: Sequence[Query], size: int) -> Iterator[Trajectory]:
        """Lockstep batches of ``size`` episodes through ``policy.act_batch`` (one env each);
        the trajectories are scored by :meth:`rows`."""
        envs = [self.env] + [self.env.sibling() for _ in range(size - 1)]
        for i in range(0, len(queries), size):
            group = queries[i : i + size]
            for q in group:
                self._warmup(envs, q)
            seeds = [self._prepare(e, q) for q, e in zip(group, envs)]
            trajs = play_batch(
                envs[: len(group)],
                self.policy,
                group,
                seeds=seeds,
                timeout_s=self.eval.episode_timeout_s,
                point_metrics=self.eval.point_metrics,
            )
            yield from trajs
