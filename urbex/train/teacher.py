"""SFT's data: teacher trajectories and the student's own mistakes with the teacher's recoveries.

:func:`teacher_trajectories` plays the teacher (:class:`urbex.agents.oracle.TeacherPolicy`) over
a split in the real environment (:class:`urbex.env.world.World`), some episodes in a renamed
world (:func:`urbex.train.rename.renamed_world`); :func:`recovery_trajectories` lets a student
propose every turn through :class:`urbex.agents.oracle.RecoveryTeacher` (DAgger-style);
:func:`recovery_round` is SFT's round of it with a snapshot of the model being trained.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from urbex.agents.oracle import RecoveryTeacher, TeacherPolicy
from urbex.agents.vlm import VLMPolicy
from urbex.annotations.splits import load_queries
from urbex.env.play import episode_seed, play_episode
from urbex.env.world import World
from urbex.errors import AnnotationError
from urbex.train.rename import renamed_world

if TYPE_CHECKING:
    from urbex.config import SFTParams, VLMParams
    from urbex.env.trajectory import Trajectory
    from urbex.layout import AssetLayout

__all__ = [
    "RecoveryStats",
    "recovery_round",
    "recovery_trajectories",
    "solvable_queries",
    "teacher_trajectories",
]


def _teacher_in_env(
    world: World, sft: SFTParams, vlm: VLMParams, *, p_mistake: float
) -> tuple[Any, Any, Any]:
    """The landmark index, a real environment over the world's scene caches, and the teacher
    in it (anchored at ``sft.anchor_rate``; its system prompt lists the tool schemas exactly
    when the ``vlm`` policy's does)."""
    index, env = world.landmarks, world.env()
    teacher = TeacherPolicy(env, p_mistake=p_mistake, p_anchor=sft.anchor_rate)
    teacher.template_lists_tools = vlm.template_tools
    return index, env, teacher


def teacher_trajectories(
    world: World,
    layout: AssetLayout,
    sft: SFTParams,
    vlm: VLMParams,
    *,
    split: str | None = None,
    per_query: int | None = None,
    seed: int | None = None,
    limit: int | None = None,
    progress: bool = False,
) -> list[Trajectory]:
    """Teacher trajectories over a split (``sft.split``), ``per_query`` seeded paths per query.

    The episodes are played in ``world`` (its scenes, landmarks and ``env`` params) on the
    queries of ``layout``'s split table; ``sft`` sets the split, the sampling and the teacher's
    habits, ``vlm`` whether the system prompt lists the tool schemas. Only trajectories that end in a valid answer are returned — with marks on (``env.marks``),
    only those that answer by mark: where the target's mark was not among the marks the
    conversation showed, the teacher's fallback box comes from the ground truth, which the
    student cannot read. The teacher's system prompt lists
    the tool schemas exactly when the ``vlm`` policy's does (``vlm.template_tools`` False), so the
    conversation is the one the student will see. A share ``sft.rename_rate`` of the episodes
    is played with the scene's landmarks renamed (:func:`urbex.train.rename.renamed_world`: the
    description and the landmark index both carry the new names; the environment is the real one),
    and a share ``sft.mark_shuffle_rate`` with the numbered marks under shuffled ids
    (:meth:`~urbex.env.episode.GroundingEnv.shuffle_mark_ids`).

    Raises
    ------
    AnnotationError
        The split has no queries, or no trajectory ended in a valid answer.
    """
    import numpy as np
    from tqdm.auto import tqdm

    s = sft
    split = split or s.split
    per_query = per_query or s.per_query
    seed = s.seed if seed is None else seed
    queries = load_queries(layout, split, limit=limit or s.limit, sample_seed=seed)
    index, env, teacher = _teacher_in_env(world, s, vlm, p_mistake=s.mistake_rate)
    out: list[Trajectory] = []
    for q in tqdm(queries, desc=f"teacher/{split}", unit="query", disable=not progress):
        for k in range(per_query):
            ep_seed = episode_seed(seed * 1000 + k, q.query_id)
            query, landmarks = q, index
            rng = np.random.default_rng([ep_seed, 1])
            if index is not None and rng.random() < s.rename_rate:
                renamed = renamed_world(q, index, rng)  # None: a mention it cannot rewrite
                if renamed is not None:
                    query, landmarks = renamed
            env.use_landmarks(landmarks)
            env.shuffle_mark_ids(ep_seed if rng.random() < s.mark_shuffle_rate else None)
            traj = play_episode(env, teacher, query, seed=ep_seed)
            if traj.outcome.answered and (
                not world.env_params.marks.enabled or traj.outcome.answer_mark is not None
            ):
                out.append(traj)
    if not out:
        raise AnnotationError(
            f"no teacher trajectory of split {split!r} ended in a valid answer "
            f"({len(queries)} queries × {per_query}); check the split (sft.split) and the scene "
            "caches",
            field="sft.split",
        )
    return out


def solvable_queries(
    world: World, sft: SFTParams, vlm: VLMParams, queries: list[Any], *, seed: int
) -> list[Any]:
    """The queries the anchored teacher answers by a mark the conversation showed, with a hit
    (BEV IoU ≥ 0.5): those on which a GRPO group can succeed (``train.query_filter:
    solvable``; selection by difficulty, as DeepEyes filters its training queries). Played in
    ``world`` with episode seeds from ``seed`` (``train.seed``); without numbered marks (the
    world's ``env.marks``) every query is kept.

    Raises
    ------
    AnnotationError
        None of the queries is solvable.
    """
    if not world.env_params.marks.enabled:
        return list(queries)
    _, env, teacher = _teacher_in_env(world, sft, vlm, p_mistake=0.0)
    teacher.p_anchor = 1.0
    kept = []
    for q in queries:
        traj = play_episode(env, teacher, q, seed=episode_seed(seed, q.query_id))
        o = traj.outcome
        if o.answer_mark is not None and o.iou_bev >= 0.5:
            kept.append(q)
    if not kept:
        raise AnnotationError(
            f"train.query_filter solvable kept none of {len(queries)} queries: the anchored "
            "teacher answered none by a shown mark; check env.marks (context_m, max_listed)",
            field="train.query_filter",
        )
    return kept


@dataclass(frozen=True, slots=True, kw_only=True)
class RecoveryStats:
    """What a round of recovery episodes (:func:`recovery_trajectories`) found.

    Attributes
    ----------
    episodes : int
        Student episodes played.
    with_errors : int
        Episodes in which the student made at least one invalid proposal (those are kept).
    kept : int
        Kept episodes that ended in a valid answer (training examples).
    proposals, errors : int
        Student proposals made and rejected by the protocol.
    seconds : float
    """

    episodes: int
    with_errors: int
    kept: int
    proposals: int
    errors: int
    seconds: float

    @property
    def error_rate(self) -> float:
        """Share of the student's proposals the protocol rejected."""
        return self.errors / self.proposals if self.proposals else 0.0


def recovery_trajectories(
    world: World,
    layout: AssetLayout,
    sft: SFTParams,
    vlm: VLMParams,
    student: Any,
    *,
    split: str | None = None,
    per_query: int | None = None,
    seed: int | None = None,
    limit: int | None = None,
    progress: bool = False,
) -> tuple[list[Trajectory], RecoveryStats]:
    """The student's own mistakes with the teacher's recoveries, over a split (``sft.split``).

    ``student`` (any policy, e.g. a :class:`~urbex.agents.vlm.VLMPolicy` of the model being
    trained) proposes every turn through :class:`~urbex.agents.oracle.RecoveryTeacher`; its
    invalid proposals are played (unsupervised in SFT), the teacher plays the rest. Returned:
    the episodes with at least one student mistake that still ended in a valid answer, and the
    counts. The teacher makes no deliberate mistakes here (the student supplies them).
    ``world``, ``layout``, ``sft``, ``vlm``: as :func:`teacher_trajectories`.
    """
    from tqdm.auto import tqdm

    s = sft
    split = split or s.split
    per_query = per_query or s.recovery_per_query
    seed = s.seed if seed is None else seed
    queries = load_queries(layout, split, limit=limit or s.limit, sample_seed=seed)
    _, env, teacher = _teacher_in_env(world, s, vlm, p_mistake=0.0)
    policy = RecoveryTeacher(env, student, teacher, max_errors=s.recovery_max_errors)
    out: list[Trajectory] = []
    n_err = errors = 0
    t0 = time.perf_counter()
    for q in tqdm(queries, desc=f"recovery/{split}", unit="query", disable=not progress):
        for k in range(per_query):
            # seeds disjoint from teacher_trajectories' (seed * 1000 + k, k < per_query)
            ep_seed = episode_seed(seed * 1000 + 500 + k, q.query_id)
            traj = play_episode(env, policy, q, seed=ep_seed)
            errors += policy.errors
            if policy.errors:
                n_err += 1
                if traj.outcome.answered:
                    out.append(traj)
    stats = RecoveryStats(
        episodes=len(queries) * per_query,
        with_errors=n_err,
        kept=len(out),
        proposals=policy.proposals,
        errors=errors,
        seconds=time.perf_counter() - t0,
    )
    return out, stats


def recovery_round(
    world: World,
    layout: AssetLayout,
    sft: SFTParams,
    vlm: VLMParams,
    model: Any,
    processor: Any,
    *,
    progress: bool,
) -> tuple[list[Trajectory], RecoveryStats]:
    """The model as it is now plays the split as the student of :func:`recovery_trajectories`
    (a snapshot saved to a temporary directory and loaded as the ``vlm`` policy, the same
    generation code evaluation uses; the model being trained is not touched)."""
    import tempfile

    s = sft
    with tempfile.TemporaryDirectory(prefix="urbex-sft-student-") as tmp:
        model.save_pretrained(tmp)
        processor.save_pretrained(tmp)
        student = VLMPolicy.from_params(
            vlm,
            checkpoint=tmp,
            device="cpu",
            dtype="float32",
            do_sample=s.recovery_temperature > 0,
            temperature=max(s.recovery_temperature, 1e-5),
            top_p=1.0,
            max_batch=1,
            tool_names=tuple(world.env_params.tools),
        )
        return recovery_trajectories(world, layout, sft, vlm, student, progress=progress)
