"""The one episode loop: :func:`play_episode` (and :func:`play_batch`, its lockstep form).

Every episode — in evaluation, in ``urbex ground``, in SFT data export — is played here and
recorded as one :class:`~urbex.eval.trajectory.Trajectory`. The loop shows the policy the system
prompt and the query with the global view, then alternates one policy turn
(``policy.act``/``act_batch``) and one environment step until the agent answers, the turn budget
is spent, or ``timeout_s`` passes (checked between turns; the episode then ends unanswered,
``stop_reason="timeout"``, scored by :meth:`GroundingEnv.end_without_answer`). It computes no
reward and no metric: the environment scores, :mod:`urbex.eval.metrics` measures.

:class:`EpisodePlayer` is the evaluation's side: one policy and environment per run, untimed scene
warm-up, landmark perturbation, and each trajectory's metrics and Parquet rows.

Latency ("warm online", as the paper): model + environment time per query, excluding offline
scene preparation — each scene is opened and its global view built by an untimed warm reset
before its first timed episode. In lockstep batches a step's policy time is the batch's wall
time divided by the episodes in the batch.

Frames: boxes in world metres (see :mod:`urbex.eval.metrics`).
"""

from __future__ import annotations

import hashlib
import math
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from urbex.atomic import PUBLIC
from urbex.errors import AnnotationError, PolicyTimeoutError
from urbex.eval.episodes import EpisodeRecord, StepRow, episode_record, step_rows
from urbex.eval.trajectory import Trajectory

if TYPE_CHECKING:
    from PIL import Image

    from urbex.agents.base import Policy
    from urbex.config import Params
    from urbex.env.episode import GroundingEnv
    from urbex.env.records import Query, Step

__all__ = [
    "EpisodePlayer",
    "episode_seed",
    "landmark_index",
    "play_batch",
    "play_episode",
    "tool_message",
]


def episode_seed(base: int, query_id: str) -> int:
    """The per-episode seed: a hash of ``(base, query_id)`` in ``[0, 2**31)``, order-independent.

    >>> episode_seed(0, "q1") == episode_seed(0, "q1") != episode_seed(1, "q1")
    True
    """
    h = hashlib.blake2b(f"{base}:{query_id}".encode(), digest_size=8).digest()
    return int.from_bytes(h, "little") & 0x7FFF_FFFF


# ---------------------------------------------------------------------------------------------
# the loop
# ---------------------------------------------------------------------------------------------


def _content(text: str, n_images: int) -> list[dict[str, Any]]:
    return [*({"type": "image"} for _ in range(n_images)), {"type": "text", "text": text}]


def _user(text: str, n_images: int) -> dict[str, Any]:
    return {"role": "user", "content": _content(text, n_images)}


def tool_message(name: str | None, text: str, n_images: int) -> dict[str, Any]:
    """The environment's response to a turn, as the ``tool`` message trl's tool loop appends.

    trl (``GRPOTrainer._tool_call_loop``) answers a tool call with ``{"role": "tool", "name":
    ..., "content": [images..., text]}``, which the Qwen3-VL template renders as
    ``<|im_start|>user\n<tool_response>\n<image>...text\n</tool_response><|im_end|>``. The
    evaluation loop, the SFT data and the pictures use the same message, so a policy is shown
    at evaluation exactly the tokens it was trained on. ``name`` is the tool called (``"invalid"``
    for a turn that called none).
    """
    return {"role": "tool", "name": name or "invalid", "content": _content(text, n_images)}


@dataclass(slots=True)
class _Live:
    """An episode in progress."""

    env: GroundingEnv
    query: Query
    seed: int
    timeout_s: float
    t0: float
    reset_s: float
    messages: list[dict[str, Any]]
    images: list[Image.Image]
    steps: list[Step] = field(default_factory=list)
    ended: bool = False

    @classmethod
    def start(
        cls,
        env: GroundingEnv,
        policy: Policy,
        query: Query,
        seed: int,
        timeout_s: float,
        point_metrics: bool,
    ) -> _Live:
        from urbex.env.protocol import system_prompt

        deadline = time.monotonic() + timeout_s  # the instant the policy must not wait past
        policy.begin_episode(seed=seed, deadline=deadline if math.isfinite(deadline) else None)
        t0 = time.perf_counter()
        obs, _ = env.reset(
            query=query, seed=seed, options={"point_metrics": True} if point_metrics else None
        )
        system = system_prompt(env.params, include_tool_schemas=not policy.template_lists_tools)
        return cls(
            env=env,
            query=query,
            seed=seed,
            timeout_s=timeout_s,
            t0=t0,
            reset_s=time.perf_counter() - t0,
            messages=[
                {"role": "system", "content": system},
                _user(obs["text"], len(obs["images"])),
            ],
            images=list(obs["images"]),
        )

    def advance(self, text: str, policy_s: float) -> None:
        """Feed one policy turn to the environment."""
        obs, _, terminated, truncated, info = self.env.step(text)
        self.steps.append(info["step"].with_policy(policy_s=policy_s, model_text=text))
        self.messages.append({"role": "assistant", "content": text})
        if terminated or truncated:
            self.ended = True
        elif time.perf_counter() - self.t0 > self.timeout_s:
            self.time_out()
        else:
            self.images.extend(obs["images"])
            self.messages.append(tool_message(self.steps[-1].tool, obs["text"], len(obs["images"])))

    def time_out(self) -> None:
        """End the episode unanswered: its budget ran out (between turns or during a request)."""
        self.env.end_without_answer("timeout")
        self.ended = True

    def trajectory(self) -> Trajectory:
        outcome = self.env.outcome
        assert outcome is not None, "the episode has not ended"
        return Trajectory(
            query=self.query,
            seed=self.seed,
            steps=tuple(self.steps),
            outcome=outcome,
            views=tuple(self.env.views),
            messages=tuple(self.messages),
            images=tuple(self.images),
            reset_s=self.reset_s,
            latency_s=time.perf_counter() - self.t0,
        )


def play_episode(
    env: GroundingEnv,
    policy: Policy,
    query: Query,
    *,
    seed: int,
    timeout_s: float = math.inf,
    point_metrics: bool = False,
) -> Trajectory:
    """Play one episode of ``policy`` on ``query`` in ``env``.

    Parameters
    ----------
    env
        The environment (reset here).
    policy
        Any :class:`~urbex.agents.base.Policy`; ``begin_episode(seed=seed, deadline=...)`` is
        called first, with the episode's deadline on the :func:`time.monotonic` clock (None
        when ``timeout_s`` is infinite).
    query
        The query (with or without ground truth).
    seed
        Episode seed (the env's RNG and the policy's).
    timeout_s
        Wall-clock budget of the episode, seconds: checked between turns, and during a turn by
        the policy, which raises :class:`~urbex.errors.PolicyTimeoutError` rather than wait
        past the deadline. Either way the episode ends unanswered, ``stop_reason ==
        "timeout"`` (the unfinished turn is not a step).
    point_metrics
        Have the environment count the points point F1 needs (``outcome.point_counts``).

    Returns
    -------
    Trajectory

    Raises
    ------
    urbex.errors.PolicyError
        The policy failed (any error but :class:`~urbex.errors.PolicyTimeoutError`).
    """
    live = _Live.start(env, policy, query, seed, timeout_s, point_metrics)
    while not live.ended:
        tp = time.perf_counter()
        try:
            text = policy.act(live.messages, live.images)
        except PolicyTimeoutError:
            live.time_out()
            break
        live.advance(text, time.perf_counter() - tp)
    return live.trajectory()


def play_batch(
    envs: Sequence[GroundingEnv],
    policy: Policy,
    queries: Sequence[Query],
    *,
    seeds: Sequence[int],
    timeout_s: float = math.inf,
    point_metrics: bool = False,
) -> list[Trajectory]:
    """Play ``len(queries)`` episodes in lockstep (one env each) through ``policy.act_batch``.

    Each round asks the policy for one turn of every unfinished episode at once; the rest is
    :func:`play_episode`'s loop, so a batch plays each episode exactly as one at a time would
    for a deterministic policy. A step's policy time is the round's wall time divided by the
    episodes in it. A round the policy cannot finish before the deadline
    (:class:`~urbex.errors.PolicyTimeoutError`; the policy holds the deadline of the episode
    begun last, a few resets after the first) ends every episode of the round as timed out.
    """
    if not len(envs) >= len(queries) == len(seeds):
        raise ValueError(
            f"play_batch: expected as many seeds as queries and at least as many envs, got "
            f"{len(queries)} queries, {len(seeds)} seeds, {len(envs)} envs"
        )
    lives = [
        _Live.start(e, policy, q, s, timeout_s, point_metrics)
        for e, q, s in zip(envs, queries, seeds)
    ]
    while active := [lv for lv in lives if not lv.ended]:
        tp = time.perf_counter()
        try:
            texts = policy.act_batch([lv.messages for lv in active], [lv.images for lv in active])
        except PolicyTimeoutError:
            for lv in active:
                lv.time_out()
            break
        dt = (time.perf_counter() - tp) / len(active)
        for lv, text in zip(active, texts, strict=True):
            lv.advance(text, dt)
    return [lv.trajectory() for lv in lives]


# ---------------------------------------------------------------------------------------------
# evaluation: one policy over many queries, scored into rows
# ---------------------------------------------------------------------------------------------


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
    import polars as pl

    inst = env.scene_provider(scene_id).instances
    if classes is not None:
        inst = inst.filter(pl.col("class_name").is_in(list(classes)))
    boxes = inst.select("x_min", "y_min", "x_max", "y_max").to_numpy().astype(np.float64)
    return _Candidates(
        boxes=boxes.reshape(-1, 4), row={o: i for i, o in enumerate(inst["object_id"].to_list())}
    )


class EpisodePlayer:
    """Plays and scores episodes of one policy in one process (its env, policy, scene contexts).

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
        from urbex.agents.base import Policy
        from urbex.agents.registry import make_policy
        from urbex.env.episode import CachedSceneProvider, GroundingEnv
        from urbex.eval.perturb import PerturbedLandmarks

        self.params = params
        self.policy_name = policy_name
        self.split = split
        self.run_id = run_id
        self.env = env or GroundingEnv(
            params, CachedSceneProvider(params.layout.scenes), landmark_index(params)
        )
        # eval.landmark_perturbation (paper D.3): static for noise/wrong, per query for missing
        self._landmarks = PerturbedLandmarks.from_params(self.env.landmarks, params)
        if self._landmarks.mode != "none":
            self.env.landmarks = self._landmarks.index
        self.policy = policy or make_policy(
            policy_name, params, env=self.env, checkpoint=checkpoint, class_sizes=class_sizes
        )
        if not isinstance(self.policy, Policy):
            raise TypeError(
                f"policy: expected a urbex.agents.base.Policy (subclass PolicyBase for the "
                f"defaults of begin_episode, template_lists_tools, max_batch, act_batch), got "
                f"{type(self.policy).__name__}"
            )
        self._scenes: dict[str, _Candidates] = {}
        self._lock = threading.Lock()  # scene contexts and landmark state, for play_in threads

    def _warmup(self, envs: Sequence[GroundingEnv], query: Query) -> None:
        """Untimed: open the scene and build its global view (offline preparation), in
        :attr:`env` and its siblings (shared views) and in any other env of ``envs``."""
        if query.scene_id not in self._scenes:
            self._scenes[query.scene_id] = _candidates(
                self.env, query.scene_id, self.params.eval.candidate_classes
            )
            self.env.reset(query=query, seed=0)
        for e in envs:
            if e.global_views is not self.env.global_views:
                e.reset(query=query, seed=0)

    def _prepare(self, env: GroundingEnv, query: Query) -> int:
        """Checks and per-query landmark state before a timed episode; returns its seed."""
        _require_targets(query)
        if self._landmarks.mode == "missing":
            env.landmarks = self._landmarks.for_query(query.description, query.scene_id)
        return episode_seed(self.params.eval.seed, query.query_id)

    def _rows(self, traj: Trajectory) -> tuple[EpisodeRecord, list[StepRow]]:
        from urbex.eval.metrics import trajectory_metrics

        boxes, t = self._scenes[traj.query.scene_id].for_target(traj.query)
        metrics = trajectory_metrics(traj, boxes, t)
        rec = episode_record(
            traj, metrics, run_id=self.run_id, policy=self.policy_name, split=self.split
        )
        return rec, step_rows(traj, run_id=self.run_id)

    def play(self, query: Query) -> tuple[EpisodeRecord, list[StepRow]]:
        """One episode, played to its end and scored."""
        return self.play_in(self.env, query)

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
        traj = play_episode(
            env,
            self.policy,
            query,
            seed=seed,
            timeout_s=self.params.eval.episode_timeout_s,
            point_metrics=self.params.eval.point_metrics,
        )
        return self._rows(traj)

    def play_batch(
        self, queries: Sequence[Query], size: int
    ) -> Iterator[tuple[EpisodeRecord, list[StepRow]]]:
        """Lockstep batches of ``size`` episodes through ``policy.act_batch`` (one env each)."""
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
                timeout_s=self.params.eval.episode_timeout_s,
                point_metrics=self.params.eval.point_metrics,
            )
            for traj in trajs:
                yield self._rows(traj)


def landmark_index(params: Params) -> Any:
    """The landmark index of ``<assets>/landmarks/*.parquet`` (None when there is none)."""
    from urbex.landmarks import LandmarkIndex, read_landmark_table

    d = params.layout.landmarks
    if not d.exists() or not any(d.glob(f"{PUBLIC}.parquet")):
        return None
    return LandmarkIndex.from_params(read_landmark_table(d), params)
