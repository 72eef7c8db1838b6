"""The one episode loop: :func:`play_episode` (and :func:`play_batch`, its lockstep form).

Every episode — in evaluation, in ``urbex ground``, in SFT data export — is played here and
recorded as one :class:`~urbex.env.trajectory.Trajectory`. The loop shows the policy the system
prompt and the query with the global view, then alternates one policy turn
(``policy.act``/``act_batch``) and one environment step until the agent answers, the turn budget
is spent, or ``timeout_s`` passes (checked between turns; the episode then ends unanswered,
``stop_reason="timeout"``, scored by :meth:`GroundingEnv.end_without_answer`). It computes no
reward and no metric: the environment scores, :mod:`urbex.eval.metrics` measures.

Evaluation's side (warm-up, perturbation, scoring rows) is :class:`urbex.eval.player.EpisodePlayer`.

Frames: boxes in world metres (see :mod:`urbex.eval.metrics`).
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from urbex.env.prompts import system_prompt
from urbex.env.trajectory import Trajectory
from urbex.errors import PolicyTimeoutError

if TYPE_CHECKING:
    from PIL import Image

    from urbex.env.episode import GroundingEnv
    from urbex.env.policy import Policy
    from urbex.env.records import Step
    from urbex.query import Query

__all__ = [
    "episode_seed",
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
        Any :class:`~urbex.env.policy.Policy`; ``begin_episode(seed=seed, deadline=...)`` is
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
