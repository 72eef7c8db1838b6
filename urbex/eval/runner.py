"""The evaluation runner: a policy over a split, resumable, parallel across scenes where allowed.

:func:`evaluate` loads the split's queries (``<assets>/splits/queries.parquet`` joined with each
scene's instance table for the target boxes), skips the queries the run already finished, plays
the rest in chunks of ``params.eval.chunk_size`` episodes — written as Parquet shards
(:mod:`urbex.eval.episodes`) as they finish — then aggregates ``metrics.parquet`` and updates
``run.json``.

* **Named by structure**: a run is a :class:`urbex.eval.runspec.RunSpec` (policy, split,
  checkpoint, landmark perturbation, sample), stored in ``run.json`` (the run's
  :class:`~urbex.eval.rundir.RunRecord`, written by :func:`~urbex.eval.rundir.write_run`)
  under ``"spec"`` and as columns of ``metrics.parquet``; the run directory name defaults to
  ``spec.run_id`` (``<policy>-<split>``, plus the checkpoint's name, plus ``-lm_<tag>``). A
  ``run.json`` of an older schema is refused (``--restart-stale`` plays the run afresh).
* **Resumable**: the run directory is keyed by ``run_id``; a restarted run skips every query
  already in an episodes shard, so a kill loses at most the chunk in flight and the episodes
  of the last quarter second not yet written (:class:`urbex.eval.episodes.ShardWriter`; a
  policy error flushes the chunk's finished episodes first, then propagates). Per-episode seeds derive from
  ``(eval.seed, query_id)``, so a resumed run plays each episode exactly as an uninterrupted
  one would.
* **One writer**: the run directory is locked for the whole call
  (:func:`urbex.eval.runlock.run_lock`, an OS ``flock`` released even when the holder is
  killed); a second ``evaluate`` of the same run id raises :class:`urbex.errors.RunLockedError`
  at once. ``run.json``'s ``status`` is ``running`` while it plays, ``complete`` at the end, or
  ``failed`` with the ``error`` text when anything raised (a policy that fails to build
  included); the warehouse shows the episodes of complete runs only.
* **Parallel**: policies marked ``parallel`` (``oracle``, ``landmark_prior``) play chunks in
  this process and ``eval.workers - 1`` spawned worker processes when the episodes left after
  the first chunk would take at least ``eval.parallel_min_s`` seconds in one process
  (:mod:`urbex.eval.schedule`; the decision is printed); a caller that evaluates several
  runs passes them one :class:`urbex.eval.workers.WorkerPool`, which keeps the processes from
  one run to the next. Model policies run in this process (``vlm`` with
  ``vlm.batch_size > 1`` plays episodes in lockstep batches; a thread-safe policy — ``openai``,
  and ``workflow``/``no_tools`` over it — keeps ``openai.concurrency`` episodes in flight, one
  thread each, :mod:`urbex.eval.inflight`, and writes a shard each time ``eval.chunk_size``
  episodes have finished; the episodes played do not depend on the concurrency).
* **Bounded**: each episode stops at the env's turn budget or after ``eval.episode_timeout_s``
  (checked between turns; a timed-out episode counts as unanswered).
* **Latency** ("warm online", as the paper): model + environment time per query, excluding
  offline scene preparation — each scene is opened and its global view built by an untimed warm
  reset before its first timed episode. Recorded per step and per episode (``env_s``,
  ``policy_s``, ``latency_s``). With lockstep batches a step's policy time is the batch's wall
  time divided by the episodes in the batch.

Frames: boxes in world metres (see :mod:`urbex.eval.metrics`).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from urbex.agents.registry import PolicyMaker, PolicySettings, policy_class_sizes, policy_info
from urbex.annotations.splits import load_queries
from urbex.env.play import episode_seed
from urbex.eval.perturb import LandmarkPerturbation
from urbex.eval.player import RunWork
from urbex.eval.rundir import RunRecord, RunTimes, finalize_run, pending_queries, write_run
from urbex.eval.runlock import run_lock
from urbex.eval.runspec import RunSpec
from urbex.eval.schedule import play_pending
from urbex.layout import RUN_TIMES_FILE, TIMINGS_DIR

if TYPE_CHECKING:
    import polars as pl

    from urbex.config import EvalParams, Params
    from urbex.env.policy import Policy
    from urbex.eval.workers import WorkerPool

__all__ = [
    "RUN_TIMES_FILE",
    "RunResult",
    "episode_seed",
    "evaluate",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class RunResult:
    """What :func:`evaluate` did.

    Attributes
    ----------
    run_id, policy, split : str
    spec : RunSpec
        What the run is (``run_id`` is ``spec.run_id`` unless a custom id was given).
    run_dir : Path
        ``<assets>/eval/runs/<run_id>``.
    n_queries : int
        Queries selected (the split, or its seeded sample when ``limit`` is set).
    n_skipped : int
        Already finished by an earlier (interrupted) run.
    n_played : int
        Episodes played now.
    seconds : float
        Wall time of this call.
    metrics : polars.DataFrame
        The run's metrics rows (one per split), as in ``metrics.parquet``.
    schedule : str or None
        How the episodes were shared between this process and worker processes, and why
        (:mod:`urbex.eval.schedule`); None when the policy plays in one process anyway.
    """

    run_id: str
    policy: str
    split: str
    spec: RunSpec
    run_dir: Path
    n_queries: int
    n_skipped: int
    n_played: int
    seconds: float
    metrics: pl.DataFrame = field(repr=False)
    schedule: str | None = None


# ---------------------------------------------------------------------------------------------
# the run
# ---------------------------------------------------------------------------------------------


def _fingerprint(
    s: PolicySettings,
    ev: EvalParams,
    policy: str,
    checkpoint: Path | None,
    class_sizes: dict[str, tuple[float, float]] | None = None,
) -> dict[str, Any]:
    """The settings a resumed run must share with the run it continues: the policy's settings
    ``s`` and the evaluation's ``ev``."""
    env = s.env.model_dump(mode="json")
    if not s.env.marks.enabled:  # absent when off: runs started before marks still resume
        env.pop("marks", None)
    if s.env.answer_snap == "none":
        env.pop("answer_snap", None)
        env.pop("snap_min_iou", None)
    fp: dict[str, Any] = {
        "env": env,
        "policy": s.policy.model_dump(mode="json"),
        "candidate_classes": ev.candidate_classes,
        "seed": ev.seed,
        "point_metrics": ev.point_metrics,
        "checkpoint": None if checkpoint is None else str(checkpoint),
    }
    if ev.benchmark != "cityrefer":  # absent for cityrefer: its runs still resume
        fp["benchmark"] = ev.benchmark
    pert = LandmarkPerturbation.from_eval(ev).fingerprint()
    if pert is not None:  # absent when clean: runs started before the knob existed still resume
        fp["landmark_perturbation"] = pert
    info = policy_info(policy)
    if info.scores_with_ranker:  # the fitted weights it scores with
        fp["ranker"] = _ranker_hash(s.layout.ranker_model)
    if class_sizes is not None:  # {class: [dx_m, dy_m]} of the train split (landmark_prior)
        fp["class_sizes"] = {c: list(v) for c, v in sorted(class_sizes.items())}
    # the vlm settings, for the vlm policy and for a wrapper on either backend (the wrappers'
    # stored fingerprints hold them: without them, their runs would not resume)
    if info.takes_checkpoint("vlm"):
        fp["vlm"] = {
            k: v
            for k, v in s.vlm.model_dump(mode="json").items()
            if k not in ("batch_size", "device", "checkpoint")
        }
    if info.needs_server(s.policy.backend):
        fp["openai"] = {
            k: v
            for k, v in s.openai.model_dump(mode="json").items()
            if k not in ("timeout_s", "max_retries", "backoff_s", "concurrency")
        }
    return fp


def _ranker_hash(path: Path) -> str | None:
    """SHA-256 of the ranker's parameters (not of its ``info``: the fit's timings change on every
    refit of the same data, and a rerun of the demo must resume, not refuse)."""
    import hashlib

    if not path.is_file():
        return None
    model = json.loads(path.read_text())
    model.pop("info", None)
    return hashlib.sha256(json.dumps(model, sort_keys=True).encode()).hexdigest()


def _one_line(exc: BaseException) -> str:
    """``Type: message`` of ``exc`` on one line (``run.json``'s ``error``)."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}"[:500] if text else type(exc).__name__


def evaluate(
    params: Params,
    spec: RunSpec,
    *,
    run_id: str | None = None,
    progress: bool = True,
    workers: int | None = None,
    policy_obj: Policy | None = None,
    restart_stale: bool = False,
    pool: WorkerPool | None = None,
) -> RunResult:
    """Play the run ``spec`` names (a policy over a split or its seeded sample), resumably; write
    episodes, steps, metrics.

    Parameters
    ----------
    params
        All parameters (``eval``, ``env``, ``policy``, ``vlm``/``openai`` sections); the spec's
        perturbation, sample, repeat seed, tools and benchmark replace theirs
        (:meth:`RunSpec.play_params`).
    spec
        The run by its fields: :meth:`RunSpec.from_params` builds one from command-line flags
        (``policy``, ``split``, ``checkpoint``, ``limit``) under ``params``.
    run_id
        The run directory name (default ``spec.run_id``): reusing it resumes the run.
    progress
        Show a tqdm bar.
    workers
        Processes for parallel-safe policies (default ``params.eval.workers``; 1 = in-process).
    policy_obj
        A ready policy instance to use instead of building ``policy`` (in-process only; the
        name is still recorded). For tests and notebooks.
    restart_stale
        An existing run directory of other settings (policy, split, fingerprint) or with
        episodes outside the selected queries (another sample) is deleted and the run starts
        afresh, instead of raising ``ConfigError``; the same run still resumes. For the DVC
        stages (``urbex evaluate --restart-stale``): their run directories are ``persist: true``
        outputs (an interrupted ``dvc repro`` resumes), and a changed param or a sweep
        (``dvc exp run -S``) must replace them, as DVC replaces any other output; the old
        version stays in DVC's cache.
    pool
        The worker processes of parallel-safe policies, owned by the caller: started by the
        first run that needs them, kept for the next run given the same pool (``with
        WorkerPool() as pool:``). None: this call starts its own if the run needs them and
        stops them at its end.

    Returns
    -------
    RunResult

    Raises
    ------
    ValueError
        A spec whose sample has no seed (read from a run that predates recorded seeds).
    RunLockedError
        Another process is writing this run (the message names its pid, host and start).
    ConfigError
        The run exists with another policy/split or other settings, or holds episodes outside
        the selected queries (another ``limit``/``sample_seed`` or a rebuilt split table), and
        ``restart_stale`` is off.
    AnnotationError, CacheError
        The split table, the class sizes (``landmark_prior`` without ``policy.class_sizes``)
        or a scene cache is missing.
    urbex.errors.PolicyError
        The model backend failed (finished chunks stay written; rerun to resume).
    """

    t_start = time.perf_counter()
    params = spec.play_params(params)
    policy, split = spec.policy, spec.split
    ckpt = None if spec.checkpoint is None else Path(spec.checkpoint)
    rid = run_id or spec.run_id
    sizes = policy_class_sizes(policy, params.policy, params.layout)
    settings = PolicySettings.of(params)
    fp = _fingerprint(settings, params.eval, policy, ckpt, sizes)
    lim = None if spec.sample is None else spec.sample.limit
    queries = load_queries(params.layout, split, limit=lim, sample_seed=params.eval.sample_seed)
    d, record_path = params.layout.run(rid), params.layout.run_json(rid)
    with run_lock(d, run_id=rid):  # one writer per run, from reading run.json to its last write
        todo = pending_queries(d, spec, fp, queries, restart_stale=restart_stale)
        times = RunTimes(d / TIMINGS_DIR / RUN_TIMES_FILE, rid)
        record = RunRecord(run_id=rid, spec=spec, fingerprint=fp, n_queries=len(queries))
        write_run(record, record_path)
        times.touch()
        try:
            played = play_pending(
                RunWork(
                    spec=spec,
                    run_id=rid,
                    maker=PolicyMaker(
                        name=policy, settings=settings, checkpoint=ckpt, class_sizes=sizes
                    ),
                    eval=params.eval,
                    landmarks=params.landmarks,
                    directory=d,
                ),
                todo,
                workers=workers,
                progress=progress,
                policy_obj=policy_obj,
                pool=pool,
            )
            metrics = finalize_run(params.layout, rid, played.written)
        except BaseException as exc:  # recorded, then re-raised: the run is not left "running"
            write_run(replace(record, status="failed", error=_one_line(exc)), record_path)
            times.touch()
            raise
        n_episodes = int(metrics["n"].sum()) if metrics.height else 0
        write_run(replace(record, status="complete", n_episodes=n_episodes), record_path)
        times.touch()
    return RunResult(
        run_id=rid,
        policy=policy,
        split=split,
        spec=spec,
        run_dir=d,
        n_queries=len(queries),
        n_skipped=len(queries) - len(todo),
        n_played=played.n,
        seconds=time.perf_counter() - t_start,
        metrics=metrics,
        schedule=played.schedule,
    )
