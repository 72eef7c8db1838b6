"""Training: ``reader_model`` → ``sft_checkpoint`` → ``grpo_checkpoint``, and the evaluation of
checkpoints.

The training assets read the **training params** (resource ``training_params``; default
``params.yaml`` overlaid with ``params-cpu.yaml``, the tiny CPU recipe — set its ``overlays`` to
your own overlay for a real Qwen3-VL run): the view sizes a policy is trained with are the ones
it must be evaluated with, so ``checkpoint_evaluation`` reads the same files. The overlay leaves
the ``paths``/``data`` sections to ``params.yaml``, so every asset sees the same scene caches,
landmark tables and splits.

* ``reader_model``: ``urbex train-reader`` (reading drills → ``<assets>/checkpoints/<reader.run_name>``),
  from the base model; skipped when ``reader.checkpoint`` is unset (a real, pretrained model
  arrives able to read).
* ``sft_checkpoint``: ``urbex sft`` (teacher trajectories → ``<assets>/checkpoints/<sft.run_name>``).
  The paper has no SFT stage: with ``sft.checkpoint`` unset (real checkpoints) it is skipped and
  GRPO starts from ``train.checkpoint``.
* ``grpo_checkpoint``: ``urbex train`` from the SFT checkpoint (or ``train.checkpoint``); its
  ``training_log.parquet`` and ``train_curves.png`` go beside the model.
* ``checkpoint_evaluation``: the ``vlm`` policy from one checkpoint (dynamic partition
  ``checkpoints``: a directory name under ``<assets>/checkpoints/``) on one test split.
* ``checkpoint_workflow_evaluation``: the fixed ``workflow`` over the same checkpoint and
  partition (the paper's Table 9: free vs fixed; ``urbex report`` shows the two side by side).

Model work carries ``pool="gpu"``: with a pool limit of 1 (``dagster.yaml``: ``concurrency:
pools: default_limit: 1``) two trainings or model evaluations never share a device. The sensor
``new_checkpoints`` adds a partition (and requests both test splits) for every published
checkpoint it has not seen (its job materializes both evaluations of a partition); the schedule
``nightly_checkpoint_evaluation`` re-evaluates the **latest** checkpoint (re-running the
deterministic heuristics nightly measures nothing).
"""

from pathlib import Path

import dagster as dg

from pipelines.defs.annotations import landmark_tables, splits
from pipelines.defs.executors import GPU_OP_TAGS, GPU_POOL
from pipelines.defs.resources import UrbexParams
from pipelines.defs.versions import data_version
from urbex.agents.registry import policy_info
from urbex.config import Params
from urbex.eval.runner import evaluate
from urbex.eval.runspec import RunSpec
from urbex.stages import refresh
from urbex.train.grpo import train
from urbex.train.reader import train_reader
from urbex.train.sft import sft

#: Published checkpoints (directory names under ``<assets>/checkpoints/``).
CHECKPOINTS = dg.DynamicPartitionsDefinition(name="checkpoints")
#: Splits a checkpoint is evaluated on.
CHECKPOINT_SPLITS = ("test_nd", "test_no")
CHECKPOINT_EVAL_PARTITIONS = dg.MultiPartitionsDefinition(
    {"checkpoint": CHECKPOINTS, "split": dg.StaticPartitionsDefinition(list(CHECKPOINT_SPLITS))}
)


class StepsConfig(dg.Config):
    """Override the recipe's optimizer steps for one materialization; ``progress``: tqdm bars
    on the terminal (``make learn``; off in the demo and in the UI's runs)."""

    steps: int | None = None
    progress: bool = False


class SampleConfig(dg.Config):
    """A seeded sample of ``limit`` queries of the split for one materialization (the demo's
    probe); a later materialization without it extends the same run to the whole split."""

    limit: int | None = None


@dg.asset(deps=[splits], group_name="training")
def base_model(
    context: dg.AssetExecutionContext, training_params: UrbexParams
) -> dg.MaterializeResult:
    """The model training starts from: for the CPU recipe, the tiny model
    (:func:`urbex.train.tiny.make_recipe_model`) built offline at ``reader.checkpoint`` (else
    ``sft.checkpoint``) when that directory does not exist yet; an existing checkpoint (a real
    Qwen3-VL snapshot) is left as it is (urbex never downloads weights)."""
    from urbex.train.tiny import make_recipe_model

    params = training_params.load()
    ckpt = params.reader.checkpoint or params.sft.checkpoint or params.train.checkpoint
    if ckpt is None:
        raise dg.Failure(
            "none of reader.checkpoint, sft.checkpoint, train.checkpoint is set in the training "
            "params"
        )
    path = ckpt if ckpt.is_absolute() else params.base_dir / ckpt
    built = False
    if not (path / "config.json").is_file():
        if params.reader.checkpoint is None and params.sft.checkpoint is None:
            raise dg.Failure(f"train.checkpoint {path} is not a local model directory")
        make_recipe_model(params, path, seed=params.sft.seed)
        built = True
        context.log.info(f"built the tiny recipe model at {path}")
    return dg.MaterializeResult(
        metadata={"checkpoint": dg.MetadataValue.path(str(path)), "built": built}
    )


@dg.asset(
    deps=[splits, landmark_tables, base_model],
    group_name="training",
    pool=GPU_POOL,
    op_tags=GPU_OP_TAGS,
)
def reader_model(
    context: dg.AssetExecutionContext, config: StepsConfig, training_params: UrbexParams
) -> dg.MaterializeResult:
    """The reader stage: the base model drilled on reading its context (model + processor,
    ``reader_log.parquet``, ``reader_eval.parquet``, ``reader.json``, ``reader_curves.png``)."""
    params = training_params.load()
    if params.reader.checkpoint is None:
        context.log.info("reader.checkpoint is unset (a pretrained model): no reader stage")
        return dg.MaterializeResult(metadata={"skipped": True})
    r = train_reader(params, steps=config.steps, progress=config.progress)
    return dg.MaterializeResult(
        data_version=data_version(params, r.checkpoint_dir),
        metadata={
            "run_name": r.checkpoint_dir.name,
            "checkpoint_dir": dg.MetadataValue.path(str(r.checkpoint_dir)),
            "steps": r.steps,
            "s_per_step": r.s_per_step,
            "level": r.level,
            "reached_full_at": r.reached_full_at,
            **{f"acc_{k}": v for k, v in r.accuracy.items()},
            "curves": dg.MetadataValue.path(str(r.checkpoint_dir / "reader_curves.png")),
        },
    )


@dg.asset(
    deps=[splits, landmark_tables, reader_model],
    group_name="training",
    pool=GPU_POOL,
    op_tags=GPU_OP_TAGS,
)
def sft_checkpoint(
    context: dg.AssetExecutionContext, config: StepsConfig, training_params: UrbexParams
) -> dg.MaterializeResult:
    """The SFT warm start (model + processor, ``sft_log.parquet``, ``sft.json``)."""
    params = training_params.load()
    if params.sft.checkpoint is None:
        context.log.info("sft.checkpoint is unset (a real base model): no SFT stage")
        return dg.MaterializeResult(metadata={"skipped": True})
    r = sft(params, steps=config.steps, progress=config.progress)
    return dg.MaterializeResult(
        data_version=data_version(params, r.checkpoint_dir),
        metadata={
            "run_name": r.checkpoint_dir.name,
            "checkpoint_dir": dg.MetadataValue.path(str(r.checkpoint_dir)),
            "steps": r.steps,
            "s_per_step": r.s_per_step,
            "conversations": r.n_examples,
            "loss_first": r.loss_first,
            "loss_last": r.loss_last,
            "recovery_episodes_kept": r.recovery.kept if r.recovery is not None else 0,
        },
    )


@dg.asset(deps=[sft_checkpoint], group_name="training", pool=GPU_POOL, op_tags=GPU_OP_TAGS)
def grpo_checkpoint(
    context: dg.AssetExecutionContext, config: StepsConfig, training_params: UrbexParams
) -> dg.MaterializeResult:
    """A GRPO-trained policy (model + processor, ``training_log.parquet``, ``train_curves.png``)."""
    import polars as pl

    params = training_params.load()
    base = params.layout.checkpoint(params.sft.run_name) if params.sft.checkpoint else None
    r = train(params, checkpoint=base, max_steps=config.steps, progress=config.progress)
    context.instance.add_dynamic_partitions(CHECKPOINTS.name, [r.run_name])
    log = pl.read_parquet(params.layout.training_log(r.run_name))
    curves = params.layout.train_curves(r.run_name)
    return dg.MaterializeResult(
        data_version=data_version(params, r.checkpoint_dir),
        metadata={
            "run_name": r.run_name,
            "base_checkpoint": dg.MetadataValue.path(str(r.base_checkpoint)),
            "steps": r.steps,
            "n_queries": r.n_queries,
            "s_per_step": r.wall_s / max(1, r.steps),
            "reward_first": float(log["reward_mean"][0]) if log.height else None,
            "reward_last": float(log["reward_mean"][-1]) if log.height else None,
            "frac_zero_std": float(log["frac_zero_std"].mean()) if log.height else None,  # type: ignore[arg-type]
            "tool_calls": r.tool_calls,
            "checkpoint_dir": dg.MetadataValue.path(str(r.checkpoint_dir)),
            "train_curves": dg.MetadataValue.path(str(curves)),
        },
    )


@dg.asset(
    partitions_def=CHECKPOINT_EVAL_PARTITIONS,
    deps=[grpo_checkpoint],
    group_name="training",
    pool=GPU_POOL,
    op_tags=GPU_OP_TAGS,
)
def checkpoint_evaluation(
    context: dg.AssetExecutionContext, config: SampleConfig, training_params: UrbexParams
) -> dg.MaterializeResult:
    """The ``vlm`` policy from one checkpoint on one test split (a resumable evaluation run)."""
    return _evaluate_checkpoint(context, training_params.load(), "vlm", config.limit)


@dg.asset(
    partitions_def=CHECKPOINT_EVAL_PARTITIONS,
    deps=[grpo_checkpoint],
    group_name="training",
    pool=GPU_POOL,
    op_tags=GPU_OP_TAGS,
)
def checkpoint_workflow_evaluation(
    context: dg.AssetExecutionContext, config: SampleConfig, training_params: UrbexParams
) -> dg.MaterializeResult:
    """The paper's fixed workflow (``workflow``: Landmark Query → Zoom-in → Oblique Render →
    Answer) imposed on the same checkpoint, on one test split: the fixed row of Table 9 beside
    ``checkpoint_evaluation``'s free one (:mod:`urbex.report.table9` pairs them)."""
    params = training_params.load()
    if not policy_info("workflow").takes_checkpoint(params.policy.backend):
        raise dg.Failure(
            f"policy.backend is {params.policy.backend!r} in the training params; the workflow "
            "over a checkpoint needs policy.backend: vlm"
        )
    return _evaluate_checkpoint(context, params, "workflow", config.limit)


def _evaluate_checkpoint(
    context: dg.AssetExecutionContext, params: Params, policy: str, limit: int | None
) -> dg.MaterializeResult:
    key = context.partition_key.keys_by_dimension
    ckpt = params.layout.checkpoint(key["checkpoint"])
    spec = RunSpec.from_params(
        params, policy=policy, split=key["split"], checkpoint=ckpt, limit=limit
    )
    r = evaluate(params, spec=spec, progress=False)
    refresh(params)
    m = r.metrics.row(0, named=True) if r.metrics.height else {}
    return dg.MaterializeResult(
        data_version=data_version(params, r.run_dir),
        metadata={
            "run_id": r.run_id,
            "checkpoint": dg.MetadataValue.path(str(ckpt)),
            "n": r.n_queries,
            "played": r.n_played,
            "sample": limit,
            "hit1": float(m.get("hit1") or 0.0),
            "iou_bev": float(m.get("iou_bev") or 0.0),
            "turns": float(m.get("turns") or 0.0),
            "run_dir": dg.MetadataValue.path(str(r.run_dir)),
        },
    )


def published_checkpoints(checkpoints_dir: Path) -> list[tuple[float, str]]:
    """``(mtime, name)`` of every published checkpoint (a model directory, not a staging one),
    oldest first."""
    from urbex.atomic import PUBLIC

    if not checkpoints_dir.is_dir():
        return []
    found = [
        (p.stat().st_mtime, p.parent.name)
        for p in checkpoints_dir.glob(f"{PUBLIC}/config.json")
        if p.parent.is_dir()
    ]
    return sorted(found)


checkpoint_evaluation_job = dg.define_asset_job(
    "checkpoint_evaluation_job", selection=[checkpoint_evaluation, checkpoint_workflow_evaluation]
)


def _requests(name: str, tag: str) -> list[dg.RunRequest]:
    return [
        dg.RunRequest(
            run_key=f"{tag}-{name}-{split}",
            partition_key=dg.MultiPartitionKey({"checkpoint": name, "split": split}),
        )
        for split in CHECKPOINT_SPLITS
    ]


@dg.sensor(job=checkpoint_evaluation_job, minimum_interval_seconds=60)
def new_checkpoints(
    context: dg.SensorEvaluationContext, training_params: UrbexParams
) -> dg.SensorResult:
    """Evaluate every checkpoint that appears under ``<assets>/checkpoints/`` (both test splits)."""
    params = training_params.load()
    seen = set(context.instance.get_dynamic_partitions(CHECKPOINTS.name))
    new = [name for _, name in published_checkpoints(params.layout.checkpoints) if name not in seen]
    return dg.SensorResult(
        run_requests=[r for name in new for r in _requests(name, "new")],
        dynamic_partitions_requests=[CHECKPOINTS.build_add_request(new)] if new else [],
    )


@dg.schedule(job=checkpoint_evaluation_job, cron_schedule="0 3 * * *", execution_timezone="UTC")
def nightly_checkpoint_evaluation(
    context: dg.ScheduleEvaluationContext, training_params: UrbexParams
) -> dg.SkipReason | list[dg.RunRequest]:
    """Re-evaluate the latest checkpoint on both test splits every night."""
    params = training_params.load()
    found = published_checkpoints(params.layout.checkpoints)
    if not found:
        return dg.SkipReason(f"no checkpoint under {params.layout.checkpoints}")
    name = found[-1][1]
    if name not in context.instance.get_dynamic_partitions(CHECKPOINTS.name):
        context.instance.add_dynamic_partitions(CHECKPOINTS.name, [name])
    return _requests(name, f"{context.scheduled_execution_time:%Y%m%d}")
