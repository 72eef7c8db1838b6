"""SFT warm start: teach a policy the protocol from teacher trajectories (``urbex sft``).

The teacher (:class:`urbex.agents.oracle.TeacherPolicy`: the oracle with seeded variety —
optional landmark query, jittered zoom windows, optional oblique render) plays the split's
queries through the one episode loop (:func:`urbex.env.play.play_episode`); every trajectory
that ends in a valid answer is one training example: its conversation (``Trajectory.messages``
and ``images``, exactly what the ``vlm`` policy is shown at evaluation) rendered with the
model's chat template — the tool schemas (``vlm.template_tools``), the tool calls, the tool
responses with their images — and the loss on the assistant turns only (each turn's text and its
``<|im_end|>``; system, user and tool-response tokens are ``-100``).

trl 1.16's ``SFTTrainer`` does not fit: its vision collator
renders without ``tools``, masks only padding (the loss would cover user and tool turns), and
``assistant_only_loss=True`` raises for VLMs. So this is a plain torch loop (AdamW, and
transformers' learning-rate schedule: linear warmup then cosine decay, :func:`lr_schedule`),
honest and small.

Output, published atomically (written in a staging directory, then renamed), the same layout as
``urbex train``'s::

    <assets>/checkpoints/<sft.run_name>/
        config.json, model.safetensors, ...   the trained model (save_pretrained)
        processor / tokenizer files           the processor, unchanged
        sft_log.parquet                       one row per step: loss, learning rate
        sft.json                              params, examples, tokens, steps, losses
        runs/sft/                             loss and learning rate as TensorBoard events
                                              (train.report_to; urbex.train.tensorboard)
        timings/sft.json, sft_log.parquet     wall time, seconds per step, when, resumed from
                                              (not versioned: urbex.layout.TIMINGS_DIR)

While it trains, ``<assets>/checkpoints/.staging-<sft.run_name>/resume/`` holds the loop's state
every ``sft.save_steps`` steps (:mod:`urbex.train.sft_state`): an interrupted run (Ctrl-C, a
kill) started again with the same settings resumes from it, and trains exactly as if it had not
stopped.

The paper trains no SFT stage: ``train.sft`` is off for real Qwen3-VL checkpoints and on in the
tiny CPU recipe (``params-cpu.yaml``).
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from urbex.agents.checkpoints import (
    check_vocabulary,
    load_local_vlm,
    recipe_record,
    resolve_checkpoint,
)
from urbex.env.world import World
from urbex.errors import AnnotationError, PolicyError
from urbex.layout import READER_SUMMARY_FILE, SFT_LOG_FILE, SFT_SUMMARY_FILE
from urbex.train.drill_loss import drill_loss
from urbex.train.drills import drill_batch, drill_sources
from urbex.train.publish import publish_checkpoint
from urbex.train.sft_examples import SFTExample, assistant_labels, render_examples
from urbex.train.sft_examples import example_batch as _batch
from urbex.train.sft_state import SFTState, examples_digest, load_state, save_state
from urbex.train.teacher import RecoveryStats, recovery_round, teacher_trajectories
from urbex.train.tensorboard import RUNS_DIR, ScalarLog, move_runs

if TYPE_CHECKING:
    from urbex.config import Params, SFTParams, VLMParams
    from urbex.config_env import EnvParams
    from urbex.env.trajectory import Trajectory

__all__ = [
    "LR_SCHEDULE",
    "MIN_LR_RATE",
    "SFTExample",
    "SFTResult",
    "assistant_labels",
    "drill_level_index",
    "lr_schedule",
    "sft",
]


# ---------------------------------------------------------------------------------------------
# training
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class SFTResult:
    """What :func:`sft` published.

    Attributes
    ----------
    checkpoint_dir : Path
    base_checkpoint : Path
    n_trajectories, n_examples, steps : int
    tokens_mean, assistant_tokens_mean : float
        Per example: all tokens (image pads included) and the supervised ones.
    loss_first, loss_last : float
        Mean loss of the first and last 10 steps.
    wall_s, s_per_step : float
        Training wall time (the recovery round's play included) and seconds per optimizer step
        (excluding it).
    recovery : RecoveryStats or None
        The recovery round's counts (``sft.recovery_at`` > 0).
    resumed_from : int or None
        The step an interrupted run was resumed from (its saved state), else None.
    """

    checkpoint_dir: Path
    base_checkpoint: Path
    n_trajectories: int
    n_examples: int
    steps: int
    tokens_mean: float
    assistant_tokens_mean: float
    loss_first: float
    loss_last: float
    wall_s: float
    s_per_step: float
    recovery: RecoveryStats | None = None
    resumed_from: int | None = None


#: The learning-rate schedule (a ``transformers.get_scheduler`` name): linear warmup, then cosine
#: decay to :data:`MIN_LR_RATE` of ``sft.learning_rate``.
LR_SCHEDULE = "cosine_warmup_with_min_lr"
#: The floor of the cosine decay, a share of ``sft.learning_rate``.
MIN_LR_RATE = 0.1


def lr_schedule(optimizer: Any, *, steps: int, warmup_steps: int) -> Any:
    """The learning-rate schedule of ``steps`` optimizer steps: transformers'
    ``get_scheduler(LR_SCHEDULE)`` over ``optimizer`` (transformers is imported here, when
    training, not with the module).

    With η the optimizer's ``lr`` (``sft.learning_rate``), ``W = warmup_steps`` and ``T = steps``,
    the rate of the 0-based step ``k`` is::

        η · (k + 1) / W                                              k < W   (linear warmup)
        η · (0.1 + 0.9 · ½ · (1 + cos(π · (k − W + 1) / (T − W))))     k ≥ W   (cosine decay)

    from ``η / W`` up to η at step ``W − 1``, down to ``0.1 η`` at the last step ``T − 1``. Read
    a step's rate with ``get_last_lr()`` before the optimizer step, then call ``step()``.
    """
    from transformers import get_scheduler

    return get_scheduler(
        LR_SCHEDULE,
        optimizer,
        num_warmup_steps=warmup_steps,
        num_training_steps=steps,
        scheduler_specific_kwargs={"min_lr_rate": MIN_LR_RATE},
    )


def shared_prefix_length(
    input_ids: Any, attention_mask: Any, labels: Any, stop_ids: Sequence[int]
) -> int:
    """Tokens every row of the batch starts with, before any padding, supervised token or image.

    Every SFT conversation opens with the same system prompt and tool schemas (~420 of ~680
    tokens in the CPU recipe); :func:`causal_lm_loss` runs that prefix once, not once per row.
    """
    import torch

    same = (input_ids == input_ids[:1]).all(dim=0)
    ok = same & (attention_mask == 1).all(dim=0) & (labels == -100).all(dim=0)
    for t in stop_ids:
        ok &= ~(input_ids == t).any(dim=0)
    bad = torch.nonzero(~ok)
    n = int(bad[0, 0]) if bad.numel() else int(input_ids.shape[1])
    return max(0, n - 1)  # the last prefix token's prediction is computed with the suffix


def causal_lm_loss(model: Any, inputs: dict[str, Any], stop_ids: Sequence[int]) -> Any:
    """The model's causal-LM loss on ``inputs`` (mean over supervised tokens), computing the
    rows' shared prefix (:func:`shared_prefix_length`) once and reusing its key/value cache.

    Mathematically the loss and gradients of ``model(**inputs).loss`` (tested to fp32
    round-off): the prefix's keys and values are broadcast to every row, so its gradient is
    the sum over rows, as without sharing. Positions are the batch's own 3D M-RoPE indices
    (``get_rope_index`` over the whole rows), sliced at the prefix boundary.
    """
    import torch

    ids, mask, labels = inputs["input_ids"], inputs["attention_mask"], inputs["labels"]
    n_rows, length = ids.shape
    p = shared_prefix_length(ids, mask, labels, stop_ids)
    if n_rows == 1 or p < 16 or p >= length - 1:
        return model(**inputs).loss
    core = model.model
    mm = inputs.get("mm_token_type_ids")
    position_ids, _ = core.get_rope_index(
        ids, mm_token_type_ids=mm, image_grid_thw=inputs.get("image_grid_thw"), attention_mask=mask
    )
    pre = model(
        input_ids=ids[:1, :p],
        attention_mask=mask[:1, :p],
        position_ids=position_ids[:, :1, :p],
        use_cache=True,
    )
    cache = pre.cache
    for layer in cache.layers:
        layer.keys = layer.keys.expand(n_rows, *layer.keys.shape[1:])
        layer.values = layer.values.expand(n_rows, *layer.values.shape[1:])
    extra = {k: v for k, v in inputs.items() if k in ("pixel_values", "image_grid_thw")}
    out = model(
        input_ids=ids[:, p:],
        attention_mask=mask,
        position_ids=position_ids[:, :, p:],
        mm_token_type_ids=None if mm is None else mm[:, p:],
        cache=cache,
        use_cache=True,
        **extra,
    )
    logits = out.logits[:, :-1].float()
    target = labels[:, p + 1 :]
    return torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), target.reshape(-1), ignore_index=-100
    )


def _drill_counts(mix: Mapping[str, float], n: int) -> dict[str, float]:
    """The text drill families' shares of ``mix`` (``reader.mix`` without ``whole_turn``: SFT's
    own conversations are the whole turns), normalised; empty when ``n`` is 0."""
    shares = {f: float(v) for f, v in mix.items() if f != "whole_turn"}
    total = sum(shares.values())
    return {f: v / total for f, v in shares.items()} if n and total > 0 else {}


def drill_level_index(base: Path, levels: Sequence[int]) -> int:
    """Where in ``levels`` (``reader.levels``, marks per look-up listing) SFT's drills are drawn:
    the level the reader stage that wrote ``base`` had reached (its ``reader.json``), so that SFT
    keeps the listings the reader last trained on; the first level for a checkpoint no reader
    stage wrote. A reached level between two of ``levels`` counts as the shorter one.

    Raises
    ------
    PolicyError
        ``base``'s ``reader.json`` is not a JSON object with a whole-number ``level``.
    """
    f = base / READER_SUMMARY_FILE
    if not f.is_file():
        return 0
    try:
        level = json.loads(f.read_text(encoding="utf-8")).get("level")
    except (ValueError, AttributeError) as exc:
        raise PolicyError(f"unreadable reader summary: {exc}", path=f) from None
    if not isinstance(level, int) or isinstance(level, bool) or level < 1:
        raise PolicyError(f"'level' is {level!r}, not a number of marks >= 1", path=f)
    return max([i for i, n in enumerate(levels) if n <= level], default=0)


def _fingerprint(
    s: SFTParams,
    env: EnvParams,
    vlm: VLMParams,
    base: Path,
    name: str,
    n_steps: int,
    examples: Sequence[SFTExample],
) -> dict[str, Any]:
    """The settings a resumed run must share with the run it continues (``sft.save_steps``
    aside, which changes nothing trained)."""
    section = {k: v for k, v in s.model_dump(mode="json").items() if k != "save_steps"}
    weights = sorted((p.name, p.stat().st_size) for p in base.glob("*.safetensors"))
    return {
        "base_checkpoint": str(base),
        "base_weights": weights,
        "run_name": name,
        "steps": n_steps,
        "sft": section,
        "env": env.model_dump(mode="json"),
        "template_tools": vlm.template_tools,
        "examples": examples_digest([e.text for e in examples], [e.supervised for e in examples]),
    }


def sft(
    params: Params,
    *,
    checkpoint: str | Path | None = None,
    run_name: str | None = None,
    steps: int | None = None,
    progress: bool = True,
    trajectories: Sequence[Trajectory] | None = None,
) -> SFTResult:
    """Fine-tune ``checkpoint`` (``sft.checkpoint``) on teacher trajectories; publish the result.

    Every ``sft.save_steps`` steps the loop's state (model, optimizer, schedule, RNG states, the
    example order, the log) is saved in the run's staging directory
    (:mod:`urbex.train.sft_state`); a run interrupted (Ctrl-C, a kill) and started again with the
    same settings resumes from the last saved step and trains exactly as if it had not stopped.

    Parameters
    ----------
    params
        ``sft`` (steps, batch size, learning rate, teacher data), ``vlm.template_tools``, ``env``.
    checkpoint
        The LOCAL base model (overrides ``sft.checkpoint``); never downloaded.
    run_name, steps
        Override ``sft.run_name`` / ``sft.steps``.
    trajectories
        Teacher trajectories to use instead of playing them (:func:`teacher_trajectories`).

    Raises
    ------
    ConfigError
        No base checkpoint given; an example longer than ``sft.max_length``.
    PolicyError
        The checkpoint has no loadable model, tokenizer or processor.
    AnnotationError
        No valid teacher trajectory.
    """
    import numpy as np
    import polars as pl
    import torch
    from tqdm.auto import tqdm

    s = params.sft
    base = resolve_checkpoint(
        params.base_dir,
        checkpoint if checkpoint is not None else s.checkpoint,
        field="sft.checkpoint",
    )
    name = run_name or s.run_name
    n_steps = steps or s.steps
    out = params.layout.checkpoint(name)
    model, processor = load_local_vlm(base, field="sft.checkpoint")
    check_vocabulary(model, processor, base, field="sft.checkpoint")
    # the teacher's and the recovery round's environment, opened only where one of them plays
    world: World | None = None
    if trajectories is None:
        world = World.from_params(params)
        trajs = teacher_trajectories(world, params.layout, s, params.vlm, progress=progress)
    else:
        trajs = list(trajectories)
        world = World.from_params(params) if s.recovery_at > 0 else None
    if not trajs:
        raise AnnotationError("no valid teacher trajectory to train on", field="sft.split")
    examples = render_examples(trajs, processor, params.env, params.vlm)
    drill_src = drill_sources(trajs) if s.drills else None
    drill_counts = _drill_counts({str(f): v for f, v in params.reader.mix.items()}, s.drills)
    tok = processor.tokenizer
    stop_ids = [tok.convert_tokens_to_ids(t) for t in ("<|vision_start|>", "<|image_pad|>")]
    rng = np.random.default_rng(s.seed)
    torch.manual_seed(s.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=s.learning_rate, weight_decay=0.0)
    schedule = lr_schedule(opt, steps=n_steps, warmup_steps=s.warmup_steps)
    staging = params.layout.checkpoint_staging(name)
    fingerprint = _fingerprint(params.sft, params.env, params.vlm, base, name, n_steps, examples)
    drill_level = drill_level_index(base, params.reader.levels) if s.drills else 0
    if s.drills:  # the drills' generator settings shape every step
        fingerprint["reader"] = params.reader.model_dump(mode="json")
        fingerprint["drill_level"] = drill_level
    state = load_state(staging, fingerprint)
    if state is None and staging.exists():  # another run's leftovers (other settings)
        shutil.rmtree(staging)
    model.train()
    log: list[dict[str, Any]] = []
    seconds: list[dict[str, Any]] = []
    n_tok: list[int] = []
    n_sup: list[int] = []
    order: list[int] = []
    recovery: RecoveryStats | None = None
    added: list[SFTExample] = []  # the recovery round's examples
    start, spent = 0, 0.0
    if state is not None:
        model.load_state_dict(state.tensors["model"])
        opt.load_state_dict(state.tensors["optimizer"])
        schedule.load_state_dict(state.tensors["schedule"])
        torch.set_rng_state(state.tensors["torch_rng"])
        rng.bit_generator.state = state.numpy_rng
        order, n_tok, n_sup, start, spent = (
            state.order,
            state.n_tok,
            state.n_sup,
            state.step,
            state.seconds,
        )
        log = [{k: r[k] for k in ("step", "loss", "learning_rate")} for r in state.log]
        seconds = [{"step": r["step"], "seconds": r["seconds"]} for r in state.log]
        recovery = None if state.recovery is None else RecoveryStats(**state.recovery)
        added = [SFTExample(**e) for e in state.recovery_examples]
        examples += added
    t_start = time.perf_counter()
    at = round(s.recovery_at * n_steps) if s.recovery_at > 0 else -1
    bar = tqdm(range(start, n_steps), desc="sft", unit="step", disable=not progress)
    scalars = ScalarLog(params.train.report_to, staging / RUNS_DIR / "sft", start_step=start)
    for step in bar:
        if step == at and world is not None:  # world: opened when recovery_at > 0
            more, recovery = recovery_round(
                world, params.layout, s, params.vlm, model, processor, progress=progress
            )
            added = render_examples(more, processor, params.env, params.vlm)
            examples += added
            order = []  # the new episodes enter the next permutation at once
        if len(order) < s.batch_size:
            order += rng.permutation(len(examples)).tolist()
        idx, order = order[: s.batch_size], order[s.batch_size :]
        t0 = time.perf_counter()
        inputs = _batch(processor, [examples[i] for i in idx], s.max_length)
        lr = float(schedule.get_last_lr()[0])
        loss = causal_lm_loss(model, inputs, stop_ids)
        if drill_src is not None:  # weighted per sequence, as the reader stage weighs them
            counts = dict(zip(drill_counts, rng.multinomial(s.drills, list(drill_counts.values()))))
            drills = drill_batch(
                rng, drill_src, params.reader, params.env.marks, counts, level_index=drill_level
            )
            if drills:
                d_loss = drill_loss(model, drills, tok, params.reader.max_length)
                loss = (loss * len(idx) + d_loss * len(drills)) / (len(idx) + len(drills))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        schedule.step()
        mask = inputs["attention_mask"].sum(dim=1)
        n_tok += mask.tolist()
        n_sup += (inputs["labels"] != -100).sum(dim=1).tolist()
        log.append({"step": step + 1, "loss": float(loss.detach()), "learning_rate": lr})
        scalars.add(step + 1, loss=log[-1]["loss"], learning_rate=lr)
        seconds.append({"step": step + 1, "seconds": time.perf_counter() - t0})
        bar.set_postfix(loss=f"{log[-1]['loss']:.3f}")
        if (step + 1) % s.save_steps == 0 and step + 1 < n_steps:
            save_state(
                staging,
                SFTState(
                    step=step + 1,
                    tensors={
                        "model": model.state_dict(),
                        "optimizer": opt.state_dict(),
                        "schedule": schedule.state_dict(),
                        "torch_rng": torch.get_rng_state(),
                    },
                    numpy_rng=dict(rng.bit_generator.state),
                    order=order,
                    log=[r | t for r, t in zip(log, seconds, strict=True)],
                    n_tok=n_tok,
                    n_sup=n_sup,
                    recovery=None if recovery is None else asdict(recovery),
                    recovery_examples=[
                        {
                            "text": e.text,
                            "query_id": e.query_id,
                            "supervised": list(e.supervised),
                            "images": e.images,
                        }
                        for e in added
                    ],
                    seconds=spent + time.perf_counter() - t_start,
                ),
                fingerprint,
            )
    wall = spent + time.perf_counter() - t_start
    scalars.close()
    model.eval()
    losses = [r["loss"] for r in log]
    result = SFTResult(
        checkpoint_dir=out,
        base_checkpoint=base,
        n_trajectories=len(trajs),
        n_examples=len(examples),
        steps=n_steps,
        tokens_mean=float(np.mean(n_tok)),
        assistant_tokens_mean=float(np.mean(n_sup)),
        loss_first=float(np.mean(losses[:10])),
        loss_last=float(np.mean(losses[-10:])),
        wall_s=wall,
        s_per_step=(wall - (recovery.seconds if recovery is not None else 0.0)) / n_steps,
        recovery=recovery,
        resumed_from=start or None,
    )
    model_dir = staging / "model"
    if model_dir.exists():
        shutil.rmtree(model_dir)
    model_dir.mkdir(parents=True)
    try:
        model.save_pretrained(model_dir)
        meta = {
            "kind": "sft",
            "base_checkpoint": params.portable(base),
            "params": params.section_dict("sft"),
            "env": params.section_dict("env"),
            "n_trajectories": result.n_trajectories,
            "n_examples": result.n_examples,
            "steps": n_steps,
            "tokens_mean": result.tokens_mean,
            "assistant_tokens_mean": result.assistant_tokens_mean,
            "loss_first": result.loss_first,
            "loss_last": result.loss_last,
            "recipe": recipe_record(params.recipe, "sft", n_steps, base),
            "drill_marks": params.reader.levels[drill_level] if s.drills else None,
            "recovery": None
            if recovery is None
            else {
                "at_step": at,
                "episodes": recovery.episodes,
                "with_errors": recovery.with_errors,
                "kept": recovery.kept,
                "error_rate": recovery.error_rate,
            },
        }
        timing = {
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "base_checkpoint": str(base),
            "wall_s": wall,
            "s_per_step": result.s_per_step,
            "recovery_s": None if recovery is None else recovery.seconds,
            "resumed_from": result.resumed_from,
        }
        publish_checkpoint(
            model_dir,
            out,
            processor=processor,
            summary_file=SFT_SUMMARY_FILE,
            summary=meta,
            tables={SFT_LOG_FILE: pl.DataFrame(log)},
            timings={SFT_SUMMARY_FILE: timing, SFT_LOG_FILE: pl.DataFrame(seconds)},
        )
    except BaseException:
        shutil.rmtree(model_dir, ignore_errors=True)  # the resume state stays
        raise
    move_runs(staging, out)  # the TensorBoard events (train.report_to)
    shutil.rmtree(staging, ignore_errors=True)  # the resume state: the checkpoint is published
    return result
