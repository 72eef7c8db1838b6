"""GRPO training of a grounding policy with trl's ``GRPOTrainer(environment_factory=...)``.

:func:`train` is the whole glue: a LOCAL base checkpoint (Qwen3-VL family) + the split's queries
(:func:`urbex.env.trl_adapter.grpo_rows`) + the real tool environment over the built scene caches
and landmark tables (:func:`urbex.env.trl_adapter.make_environment_class`) + the terminal reward
(:func:`urbex.env.trl_adapter.answer_reward`; the environment's ``get_reward()`` adds the tool
shaping). Outputs, published atomically (trained in a staging directory, then renamed)::

    <assets>/checkpoints/<run_name>/
        config.json, model.safetensors, ...   the trained model (save_pretrained)
        processor / tokenizer files           the processor, unchanged
        train_log.parquet                     trainer.state.log_history, one row per log entry
        training_log.parquet, train_curves.png  what the environment saw, per step (urbex.train.logs)
        train.json                            params, steps, reward mean per logged step, tool
                                              calls made during training
        runs/<date>_<host>/                   trl's scalars as TensorBoard events, one folder per
                                              (resumed) run (train.report_to)
        timings/                              wall time, seconds per step, when, resumed or not
                                              (not versioned: urbex.layout.TIMINGS_DIR)

While training, everything lives in ``<assets>/checkpoints/.staging-<run_name>/`` (``trainer/``
holds the intermediate ``checkpoint-N`` folders every ``train.save_steps`` but the last, each with the
training log's rows up to it); on success the model folder is renamed into place and the
staging directory removed. A run that crashed or was interrupted (Ctrl-C) is resumed from its
latest intermediate checkpoint when rerun with the same base model and ``train``/``env`` params,
and its training log holds every step. Evaluate the result with
``urbex evaluate --policy vlm --checkpoint <assets>/checkpoints/<run_name>``.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import warnings
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from urbex.agents.checkpoints import load_local_vlm, recipe_record, resolve_checkpoint
from urbex.annotations.splits import load_queries
from urbex.atomic import PUBLIC
from urbex.config import Params
from urbex.env.episode import GroundingEnv
from urbex.env.trl_adapter import RolloutRules, answer_reward, grpo_rows, make_environment_class
from urbex.env.world import World
from urbex.errors import CacheError, ConfigError, LandmarkError
from urbex.layout import (
    GRPO_SUMMARY_FILE,
    GRPO_TRAINER_LOG_FILE,
    TRAIN_CURVES_FILE,
    TRAINING_LOG_FILE,
    AssetLayout,
)
from urbex.train.config import make_grpo_config
from urbex.train.curves import plot_training_curves
from urbex.train.logs import (
    RESUME_LOG_FILE,
    TIMING_COLUMNS,
    TrainingLogCallback,
    TrainingRecorder,
    episode_summary,
    training_log_frame,
)
from urbex.train.publish import publish_checkpoint
from urbex.train.teacher import solvable_queries
from urbex.train.tensorboard import move_runs

__all__ = ["TrainResult", "checkpoint_dir", "train"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TrainResult:
    """What :func:`train` published.

    Attributes
    ----------
    run_name
        Name of the run (the checkpoint directory's name).
    checkpoint_dir
        ``<assets>/checkpoints/<run_name>``: loadable with ``AutoModelForImageTextToText`` /
        ``AutoProcessor`` (``local_files_only=True``).
    base_checkpoint
        The model training started from.
    steps
        Optimizer steps done (``trainer.state.global_step``).
    wall_s
        Wall-clock seconds of ``trainer.train()``.
    n_queries
        Training prompts (queries of the split, or the sample).
    reward_mean
        ``(step, mean total reward)`` per logged step.
    tool_calls
        Tool name → calls the environment played during training, valid or not (``episodes``:
        rollouts started).
    """

    run_name: str
    checkpoint_dir: Path
    base_checkpoint: Path
    steps: int
    wall_s: float
    n_queries: int
    reward_mean: list[tuple[int, float]] = field(default_factory=list)
    tool_calls: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.steps < 0:
            raise ValueError(f"steps: expected >= 0, got {self.steps}")
        if self.wall_s < 0:
            raise ValueError(f"wall_s: expected >= 0, got {self.wall_s}")

    @property
    def log_path(self) -> Path:
        """``train_log.parquet`` of the run."""
        return self.checkpoint_dir / GRPO_TRAINER_LOG_FILE

    @property
    def summary_path(self) -> Path:
        """``train.json`` of the run."""
        return self.checkpoint_dir / GRPO_SUMMARY_FILE


def checkpoint_dir(layout: AssetLayout, run_name: str) -> Path:
    """``<assets>/checkpoints/<run_name>``."""
    return layout.checkpoint(run_name)


def _check_inputs(layout: AssetLayout, scene_ids: list[str]) -> None:
    """Fail before the model loads when a scene cache or the landmark tables are missing."""
    missing = [s for s in scene_ids if not layout.scene_meta(s).is_file()]
    if missing:
        raise CacheError(
            f"scene caches missing for {missing[:5]} ({len(missing)} scenes); build them with "
            "`urbex cache`",
            path=layout.scenes,
        )
    lm = layout.landmarks
    if not lm.is_dir() or not any(lm.glob(f"{PUBLIC}.parquet")):
        raise LandmarkError("landmark tables not found; build them with `urbex landmarks`", path=lm)


@dataclass(slots=True)
class _Counter:
    """The rollout environments' observer (:class:`urbex.env.trl_adapter.EpisodeObserver`):
    counts rollouts into ``counts`` and hands each finished episode's
    :class:`~urbex.train.logs.EpisodeSummary` (a projection of its records, with its environment
    seconds) to ``recorder``; the episode's tool calls (:func:`urbex.env.trajectory.tool_counts`,
    valid or not, as the summary counts them) are added to ``counts``."""

    counts: Counter[str]
    recorder: TrainingRecorder | None = None

    def on_reset(self) -> None:
        self.counts["episodes"] += 1

    def on_end(self, env: GroundingEnv, env_s: float) -> None:
        if env.outcome is None:
            return
        summary = episode_summary(env.outcome, env.steps, env_s=env_s)
        self.counts.update({t: n for t, n in summary.tool_calls.items() if n})
        if self.recorder is not None:
            self.recorder.add(summary)


def _log_frame(history: list[dict[str, Any]]) -> Any:
    import polars as pl

    rows = []
    for h in history:
        row: dict[str, Any] = {}
        for k, v in h.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                row[k] = str(v)
            else:
                row[k] = int(v) if k == "step" else float(v)
        rows.append(row)
    if not rows:
        return pl.DataFrame({"step": pl.Series([], dtype=pl.Int64)})
    return pl.from_dicts(rows, infer_schema_length=None)


#: A transformers deprecation trl triggers (message start), filtered while training.
_TRL_DEPRECATION = "`is_gradient_checkpointing` is deprecated"

#: trl's log entries that are measured seconds or rates (they differ between two runs of the
#: same inputs): ``timings/train_log.parquet`` rather than ``train_log.parquet``.
_TRAINER_TIMING = (
    "step_time",
    "train_runtime",
    "train_samples_per_second",
    "train_steps_per_second",
)


def _split_timings(
    frame: Any, keys: list[str], timing: Sequence[str] = _TRAINER_TIMING
) -> tuple[Any, Any]:
    """``frame`` without its ``timing`` columns, and ``keys`` + those columns (the part that
    goes to the checkpoint's unversioned ``timings/`` folder)."""
    measured = [c for c in timing if c in frame.columns]
    return frame.drop(measured), frame.select([*keys, *measured])


def _skip_final_save() -> Any:
    """A ``TrainerCallback`` that keeps the trainer from saving ``checkpoint-<max_steps>``.

    The finished model is published right after the last step, so that checkpoint serves only a
    run killed between the two, and transformers (5.25) resumed from a checkpoint at
    ``max_steps`` trains one step more (it tests the step count only after a step). Without it,
    such a rerun resumes from the previous save and trains the remaining steps again, as the
    reader stage does.
    """
    from transformers import TrainerCallback

    class _SkipFinalSave(TrainerCallback):  # type: ignore[misc]
        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> Any:
            if state.max_steps > 0 and state.global_step >= state.max_steps:
                control.should_save = False
            return control

    return _SkipFinalSave()


def _prepare_staging(staging: Path, fingerprint: dict[str, Any]) -> bool:
    """Create the staging dir; True when it holds trainer checkpoints of the same settings.

    A run that crashed leaves ``staging/trainer/checkpoint-N``; rerunning with the same base
    model and ``train``/``env`` params resumes from the latest *complete* one: transformers
    writes a checkpoint's files one by one and the training log's rows
    (:data:`urbex.train.logs.RESUME_LOG_FILE`) are written after them, so a run killed in
    between leaves a checkpoint that would resume with steps missing from its log; such
    checkpoints are removed first. Other leftovers are removed. Only the main process (``RANK``
    0) touches the directory.
    """
    spec = staging / "fingerprint.json"
    if int(os.environ.get("RANK", "0")) != 0:
        return staging.is_dir() and any((staging / "trainer").glob("checkpoint-*"))
    if staging.exists():
        same = spec.is_file() and json.loads(spec.read_text()) == json.loads(
            json.dumps(fingerprint, default=str)
        )
        for ck in sorted((staging / "trainer").glob("checkpoint-*")):
            if not all((ck / f).is_file() for f in ("trainer_state.json", RESUME_LOG_FILE)):
                shutil.rmtree(ck)  # cut short between the trainer's files and the log's rows
        if same and any((staging / "trainer").glob("checkpoint-*")):
            return True
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    spec.write_text(json.dumps(fingerprint, indent=2, default=str))
    return False


def train(
    params: Params,
    *,
    checkpoint: str | Path | None = None,
    run_name: str | None = None,
    max_steps: int | None = None,
    progress: bool = True,
    **config_overrides: Any,
) -> TrainResult:
    """Train a policy with GRPO on ``params.train.split`` and publish the checkpoint.

    Parameters
    ----------
    params
        All parameters: ``train`` (trainer knobs), ``env`` (turn budget, image sizes, rewards),
        ``landmarks`` (lookup), ``paths`` (where the caches are and the checkpoint goes).
    checkpoint
        LOCAL base model directory (overrides ``train.checkpoint``); never downloaded.
    run_name
        Output name (overrides ``train.run_name``): ``<assets>/checkpoints/<run_name>``.
    max_steps
        Optimizer steps (overrides ``train.max_steps``).
    progress
        Show the trainer's progress bar.
    **config_overrides
        Extra ``trl.GRPOConfig`` fields (see :func:`urbex.train.config.make_grpo_config`).

    Returns
    -------
    TrainResult

    Raises
    ------
    ConfigError
        No base checkpoint given; an invalid ``run_name``; the generation batch is not a
        multiple of ``train.num_generations`` (or another field trl's ``GRPOConfig`` rejects).
    PolicyError
        The base checkpoint is not a loadable local model directory.
    AnnotationError, CacheError, LandmarkError
        The split table, a scene cache or the landmark tables are missing (`urbex splits`,
        `urbex cache`, `urbex landmarks`).
    """
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

    updates: dict[str, Any] = {}
    if run_name is not None:
        updates["run_name"] = run_name
    if max_steps is not None:
        updates["max_steps"] = max_steps
    if checkpoint is not None:
        updates["checkpoint"] = Path(checkpoint).resolve()
    if updates:
        params = params.with_updates(train=updates)  # ConfigError naming train.<field>
    t = params.train
    base = resolve_checkpoint(params.base_dir, t.checkpoint, field="train.checkpoint")
    queries = load_queries(params.layout, t.split, limit=t.limit, sample_seed=t.seed)
    _check_inputs(params.layout, sorted({q.scene_id for q in queries}))
    if t.query_filter == "solvable":
        queries = solvable_queries(
            World.from_params(params), params.sft, params.vlm, queries, seed=t.seed
        )

    from datasets import Dataset
    from trl import GRPOTrainer

    final = checkpoint_dir(params.layout, params.train.run_name)
    staging = params.layout.checkpoint_staging(final.name)
    fingerprint = {
        "base_checkpoint": str(base),
        "train": params.section_dict("train"),
        "env": params.section_dict("env"),
        "overrides": {k: repr(v) for k, v in sorted(config_overrides.items())},
    }
    try:  # before anything is written: a batch/num_generations mismatch is a params error
        config = make_grpo_config(
            params.train,
            params.env,
            staging / "trainer",
            disable_tqdm=not progress,
            **config_overrides,
        )
    except ValueError as exc:
        raise ConfigError(str(exc), field="train") from exc
    resume = _prepare_staging(staging, fingerprint)
    world = World.from_params(params, require_landmarks=True)
    provider, index = world.scenes, world.landmarks
    dataset = Dataset.from_list(grpo_rows(queries, provider, params.env))
    counts: Counter[str] = Counter()
    recorder = TrainingRecorder()
    rules = RolloutRules(tool_bonus=t.tool_bonus, mask_budget=t.mask_budget)
    env_cls = make_environment_class(
        params.env, provider, index, observer=_Counter(counts, recorder), rules=rules
    )
    # fp32 master weights; bf16 (when set) is autocast mixed precision in the trainer
    model, processor = load_local_vlm(base, dtype="float32", field="train.checkpoint")
    trainer = GRPOTrainer(
        model=model,
        processing_class=processor,
        reward_funcs=[answer_reward],
        environment_factory=env_cls,
        train_dataset=dataset,
        args=config,
    )
    log_callback = TrainingLogCallback(recorder, t.run_name, counts)
    trainer.add_callback(log_callback.callback())
    trainer.add_callback(_skip_final_save())  # after DefaultFlowCallback, which sets should_save
    if resume:  # the rows and tool counts up to the checkpoint trl resumes from
        from transformers.trainer_utils import get_last_checkpoint

        last = get_last_checkpoint(str(staging / "trainer"))
        if last is not None:
            log_callback.restore(Path(last))
    if not progress:
        from transformers.trainer_callback import PrinterCallback

        trainer.remove_callback(PrinterCallback)  # the per-step log dicts printed to stdout
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        # trl 1.16 reads transformers' deprecated ``is_gradient_checkpointing`` on every
        # generation: a warning the user can do nothing about
        warnings.filterwarnings("ignore", _TRL_DEPRECATION, FutureWarning)
        trainer.train(resume_from_checkpoint=resume)
    wall = time.perf_counter() - t0
    steps = int(trainer.state.global_step)
    history = list(trainer.state.log_history)
    rewards = [
        (int(h["step"]), float(h["reward"]))
        for h in history
        if isinstance(h.get("reward"), (int, float))
    ]
    tool_calls = dict(sorted(counts.items()))
    trainer.save_model(str(staging / "model"))  # every rank calls it; rank 0 writes
    trainer.accelerator.wait_for_everyone()
    if trainer.is_world_process_zero():
        out = staging / "model"
        # the pickled TrainingArguments: absolute staging paths and a timestamped logging_dir;
        # train.json records the settings
        (out / "training_args.bin").unlink(missing_ok=True)
        log = training_log_frame(log_callback.rows)
        plot_training_curves(log, out / TRAIN_CURVES_FILE, title=f"GRPO {t.run_name}")
        summary = {
            "run_name": t.run_name,
            "base_checkpoint": params.portable(base),
            "split": t.split,
            "n_queries": len(queries),
            "steps": steps,
            "reward_mean": [{"step": s, "reward": r} for s, r in rewards],
            "tool_calls": tool_calls,
            "recipe": recipe_record(params.recipe, "grpo", steps, base),
            "params": {**fingerprint, "base_checkpoint": params.portable(base)},
        }
        timing = {
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "base_checkpoint": str(base),
            "resumed_from": resume or None,
            "wall_s": wall,
            "seconds_per_step": wall / steps if steps else None,
        }
        trainer_log, trainer_times = _split_timings(_log_frame(history), ["step"])
        log, log_times = _split_timings(log, ["run", "step"], TIMING_COLUMNS)
        publish_checkpoint(
            out,
            final,
            processor=processor,
            summary_file=GRPO_SUMMARY_FILE,
            summary=summary,
            tables={GRPO_TRAINER_LOG_FILE: trainer_log, TRAINING_LOG_FILE: log},
            timings={
                GRPO_SUMMARY_FILE: timing,
                GRPO_TRAINER_LOG_FILE: trainer_times,
                TRAINING_LOG_FILE: log_times,
            },
        )
        move_runs(staging / "trainer", final)  # trl's TensorBoard events (train.report_to)
        shutil.rmtree(staging)  # the intermediate trainer checkpoints
    trainer.accelerator.wait_for_everyone()
    return TrainResult(
        run_name=t.run_name,
        checkpoint_dir=final,
        base_checkpoint=base,
        steps=steps,
        wall_s=wall,
        n_queries=len(queries),
        reward_mean=rewards,
        tool_calls=tool_calls,
    )
