"""The reader stage (``urbex train-reader``): reading drills before SFT.

A student trained from random weights on whole episodes never learns to *copy from its
context* — the described mark's id from a listing, the landmark's name from the description,
the printed box into ``zoom_in``. In-context copying is learned by attention after a phase
transition that long contexts delay and short, dense, repeated look-ups bring forward
(multi-query associative recall; Arora et al., 2023, "Zoology"). So this stage drills exactly
those look-ups (:mod:`urbex.train.drills`), many answers per sequence, in the environment's own
text formats, with a curriculum from short listings to full ones that moves on when held-out
accuracy says so (``reader.levels``, ``reader.advance_at``), not after a fixed time. The
teacher's whole conversations (``whole_turn``) are mixed in from the start, so the stage also
learns the protocol.

Accuracy (per family, on held-out drills generated from held-out train queries with another
seed): the share of answers whose every token is the model's greedy choice under teacher
forcing — for a look-up, the mark id (and the answer's fixed tokens) exactly.

Output, published atomically as SFT's::

    <assets>/checkpoints/<reader.run_name>/
        config.json, model.safetensors, processor files
        reader_log.parquet        one row per step: loss, learning rate, level
        reader_eval.parquet       one row per evaluation: step, level, accuracy per family
        reader.json               params, steps, final accuracies, level reached
        reader_curves.png         held-out accuracy per family and the level, per step
        runs/reader/              the same as TensorBoard events (train.report_to)

An interrupted run (Ctrl-C: exit 130; a kill) started again with the same settings resumes from
its last save (``reader.save_steps``) in ``<assets>/checkpoints/.staging-<run_name>/resume/``.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from urbex.agents.checkpoints import (
    check_vocabulary,
    load_local_vlm,
    recipe_record,
    resolve_checkpoint,
)
from urbex.atomic import atomic_path
from urbex.config_reader import DRILL_FAMILIES
from urbex.env.world import World
from urbex.errors import ConfigError
from urbex.layout import READER_CURVES_FILE, READER_SUMMARY_FILE
from urbex.train.drill_loss import (
    answer_logits,
    drill_loss,
    exact_answers,
    length_batches,
    right_answers,
    turn_owner,
)
from urbex.train.drills import (
    Drill,
    DrillSources,
    drill_batch,
    drill_sources,
    lookup_size,
    make_drill,
)
from urbex.train.publish import publish_checkpoint
from urbex.train.reader_plot import plot_reader_curves
from urbex.train.sft import causal_lm_loss
from urbex.train.sft_examples import SFTExample, render_examples
from urbex.train.sft_examples import example_batch as sft_batch
from urbex.train.teacher import teacher_trajectories
from urbex.train.tensorboard import RUNS_DIR, ScalarLog, move_runs

if TYPE_CHECKING:
    from urbex.config import Params, SFTParams, VLMParams
    from urbex.config_env import EnvParams, MarksParams
    from urbex.config_reader import ReaderParams
    from urbex.env.trajectory import Trajectory
    from urbex.layout import AssetLayout

__all__ = [
    "READER_EVAL_FILE",
    "READER_LOG_FILE",
    "READER_SUMMARY_FILE",
    "ReaderResult",
    "held_out",
    "lookup_size",
    "reader_episodes",
    "split_episodes",
    "train_reader",
]

READER_LOG_FILE = "reader_log.parquet"
READER_EVAL_FILE = "reader_eval.parquet"
#: One train query in this many is held out (its drills score the reader, never train it).
HOLD_OUT_EVERY = 8


@dataclass(frozen=True, slots=True, kw_only=True)
class ReaderResult:
    """What :func:`train_reader` published.

    Attributes
    ----------
    checkpoint_dir, base_checkpoint : Path
    steps : int
    level : int
        Marks per listing at the end (the curriculum's last level when it got there).
    reached_full_at : int or None
        The step at which the curriculum reached its last level.
    accuracy : dict of str to float
        Held-out accuracy per family at the end (mark look-up at the full level).
    loss_first, loss_last : float
        Mean loss of the first and last 10 steps.
    wall_s, s_per_step : float
    resumed_from : int or None
    """

    checkpoint_dir: Path
    base_checkpoint: Path
    steps: int
    level: int
    reached_full_at: int | None
    accuracy: dict[str, float]
    loss_first: float
    loss_last: float
    wall_s: float
    s_per_step: float
    resumed_from: int | None = None


def split_episodes(trajs: Sequence[Trajectory]) -> tuple[list[Trajectory], list[Trajectory]]:
    """Train and held-out episodes, by a stable hash of the query id (one query in
    :data:`HOLD_OUT_EVERY` held out; with none held out, the first episode is)."""

    def held(t: Trajectory) -> bool:
        h = hashlib.sha256(t.query.query_id.encode()).digest()
        return h[0] % HOLD_OUT_EVERY == 0

    train, kept = [t for t in trajs if not held(t)], [t for t in trajs if held(t)]
    if not kept:
        return list(trajs[1:]), list(trajs[:1])
    return train, kept


def reader_episodes(
    world: World,
    layout: AssetLayout,
    sft: SFTParams,
    vlm: VLMParams,
    reader: ReaderParams,
    *,
    progress: bool = False,
) -> tuple[list[Trajectory], list[Trajectory]]:
    """The teacher's episodes of the train split that the drills are cut from
    (``reader.per_query`` paths per query, seed ``reader.seed``;
    :func:`urbex.train.teacher.teacher_trajectories`), split into train and held-out
    (:func:`split_episodes`)."""
    trajs = teacher_trajectories(
        world,
        layout,
        sft,
        vlm,
        split="train",
        per_query=reader.per_query,
        seed=reader.seed,
        progress=progress,
    )
    return split_episodes(trajs)


def held_out(
    family: str,
    src: DrillSources,
    r: ReaderParams,
    marks: MarksParams,
    *,
    level: int,
    n: int,
    seed: int,
) -> list[Drill]:
    """``n`` drills of ``family`` (not ``whole_turn``) at ``level``, seeded (held-out sets), by
    the curriculum of ``r`` with the mark listing of ``marks``."""
    rng = np.random.default_rng([seed, 77, DRILL_FAMILIES.index(family), level])
    out: list[Drill] = []
    for _ in range(20 * n):
        d = make_drill(family, rng, src, r, marks, level=level)
        if d is not None:
            out.append(d)
        if len(out) >= n:
            break
    return out


def _accuracy(
    model: Any,
    tok: Any,
    processor: Any,
    sets: dict[str, list[Drill]],
    whole: Sequence[SFTExample],
    max_length: int,
    whole_max_length: int | None,
) -> dict[str, float]:
    """Held-out accuracy of each drill set (encoded to ``max_length`` tokens) and of the
    whole turns (``whole_max_length``, SFT's)."""
    import torch

    model.eval()
    out: dict[str, float] = {}
    for name, drills in sets.items():
        right = total = 0
        for b in length_batches(drills, tok, max_length, size=16):
            with torch.no_grad():
                logits, target, owner = answer_logits(model, b)
            r, n = right_answers(logits.argmax(-1) != target, owner)
            right, total = right + r, total + n
        out[name] = right / total if total else float("nan")
    right = total = 0
    for i in range(0, len(whole), 4):
        inputs = sft_batch(processor, list(whole[i : i + 4]), whole_max_length)
        r, n = exact_answers(model, inputs, turn_owner(inputs["labels"]))
        right, total = right + r, total + n
    out["whole_turn"] = right / total if total else float("nan")
    model.train()
    return out


def _fingerprint(
    r: ReaderParams, env: EnvParams, sft: SFTParams, base: Path, name: str, n_steps: int
) -> dict[str, Any]:
    """What a resumed run must share with the one that saved its state."""
    section = {k: v for k, v in r.model_dump(mode="json").items() if k != "save_steps"}
    weights = sorted((p.name, p.stat().st_size) for p in base.glob("*.safetensors"))
    return {
        "base_checkpoint": str(base),
        "base_weights": weights,
        "run_name": name,
        "steps": n_steps,
        "reader": section,
        "env": env.model_dump(mode="json"),
        "sft": sft.model_dump(mode="json"),
    }


def _save_state(staging: Path, state: dict[str, Any], fingerprint: dict[str, Any]) -> None:
    import torch

    d = staging / "resume"
    d.mkdir(parents=True, exist_ok=True)
    with atomic_path(d / "state.pt") as tmp:
        torch.save(state, tmp)
    with atomic_path(d / "fingerprint.json") as tmp:
        tmp.write_text(json.dumps(fingerprint, sort_keys=True, default=str))


def _load_state(staging: Path, fingerprint: dict[str, Any]) -> dict[str, Any] | None:
    import torch

    d = staging / "resume"
    try:
        saved = json.loads((d / "fingerprint.json").read_text())
    except (OSError, ValueError):
        return None
    if saved != json.loads(json.dumps(fingerprint, sort_keys=True, default=str)):
        return None
    try:
        return dict(torch.load(d / "state.pt", weights_only=False))
    except (OSError, RuntimeError, EOFError):
        return None


def train_reader(
    params: Params,
    *,
    checkpoint: str | Path | None = None,
    run_name: str | None = None,
    steps: int | None = None,
    progress: bool = True,
    trajectories: Sequence[Trajectory] | None = None,
) -> ReaderResult:
    """Pretrain ``checkpoint`` (``reader.checkpoint``) on reading drills; publish the result.

    Parameters
    ----------
    params
        ``reader`` (curriculum, mix, steps), ``env.marks`` (the listing's format), ``sft`` (the
        teacher's settings for the whole-turn drills and the drills' sources).
    checkpoint, run_name, steps
        Override ``reader.checkpoint`` / ``reader.run_name`` / ``reader.steps``.
    trajectories
        Train-split teacher trajectories to build drills from instead of playing them.

    Raises
    ------
    ConfigError
        No base checkpoint; a drill longer than ``reader.max_length``; no drill of a family can
        be built from the split.
    PolicyError
        The checkpoint cannot be loaded, or its tokenizer and model do not fit together.
    """
    import polars as pl
    import torch
    from tqdm.auto import tqdm

    r = params.reader
    base = resolve_checkpoint(
        params.base_dir,
        checkpoint if checkpoint is not None else r.checkpoint,
        field="reader.checkpoint",
    )
    name = run_name or r.run_name
    n_steps = steps or r.steps
    out = params.layout.checkpoint(name)
    model, processor = load_local_vlm(base, field="reader.checkpoint")
    check_vocabulary(model, processor, base, field="reader.checkpoint")
    tok = processor.tokenizer
    if trajectories is not None:
        train_t, held_t = split_episodes(list(trajectories))
    else:
        world = World.from_params(params)
        train_t, held_t = reader_episodes(
            world, params.layout, params.sft, params.vlm, r, progress=progress
        )
    src, src_held = drill_sources(train_t), drill_sources(held_t)
    whole = render_examples(train_t, processor, params.env, params.vlm)
    # whole turns are long (images); a quarter as many as each text family's set
    whole_held = render_examples(held_t, processor, params.env, params.vlm)[
        : max(4, r.held_out // 4)
    ]
    families = [f for f in DRILL_FAMILIES if f != "whole_turn"]
    for fam in families:
        if not held_out(fam, src, r, params.env.marks, level=r.levels[-1], n=1, seed=r.seed):
            raise ConfigError(
                f"no {fam} drill can be built from the train split's teacher episodes "
                f"({len(train_t)}); check env.marks and the landmark tables",
                field="reader.mix",
            )

    full = r.levels[-1]
    full_sets = {  # the full-length held-out drills, built once; a level adds its own look-ups
        f: held_out(f, src_held, r, params.env.marks, level=full, n=r.held_out, seed=r.seed)
        for f in families
    }
    stop = [tok.convert_tokens_to_ids(t) for t in ("<|vision_start|>", "<|image_pad|>")]

    def eval_sets(level: int) -> dict[str, list[Drill]]:
        sets = dict(full_sets)
        if level < full:
            sets["mark_lookup_level"] = held_out(
                "mark_lookup", src_held, r, params.env.marks, level=level, n=r.held_out, seed=r.seed
            )
        return sets

    mix: dict[str, float] = {str(k): float(v) for k, v in r.mix.items()}
    probs = np.array([mix[f] for f in DRILL_FAMILIES], dtype=np.float64)
    probs /= probs.sum()
    rng = np.random.default_rng([r.seed, 5])
    torch.manual_seed(r.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=r.learning_rate, weight_decay=0.0)
    warm = max(1, r.warmup_steps)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda k: min(1.0, (k + 1) / warm))
    staging = params.layout.checkpoint_staging(name)
    fingerprint = _fingerprint(r, params.env, params.sft, base, name, n_steps)
    state = _load_state(staging, fingerprint)
    if state is None and staging.exists():
        shutil.rmtree(staging)
    log: list[dict[str, Any]] = []
    evals: list[dict[str, Any]] = []
    li, start, spent, reached = 0, 0, 0.0, None
    if state is not None:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        sched.load_state_dict(state["schedule"])
        torch.set_rng_state(state["torch_rng"])
        rng.bit_generator.state = state["numpy_rng"]
        log, evals, li, start = state["log"], state["evals"], state["level_index"], state["step"]
        spent, reached = state["seconds"], state["reached_full_at"]
    sets = eval_sets(r.levels[li])
    model.train()
    scalars = ScalarLog(params.train.report_to, staging / RUNS_DIR / "reader", start_step=start)
    t_start = time.perf_counter()
    limit = max(n_steps, r.max_steps or 0)

    def gate_open() -> bool:  # the look-up at the last level has reached advance_at
        last = evals[-1] if evals else None
        top = r.levels[-1]
        return (
            last is not None
            and last["level"] == top
            and last["acc_mark_lookup_level"] >= r.advance_at
        )

    bar = tqdm(total=limit, initial=start, desc="reader", unit="step", disable=not progress)
    step = start
    while step < n_steps or (step < limit and not gate_open()):
        level = r.levels[li]
        counts = rng.multinomial(r.batch_size, probs)
        text_counts = {f: int(c) for f, c in zip(DRILL_FAMILIES, counts, strict=True)}
        drills = drill_batch(rng, src, r, params.env.marks, text_counts, level_index=li)
        n_whole = int(counts[DRILL_FAMILIES.index("whole_turn")])
        t0 = time.perf_counter()
        lr = float(sched.get_last_lr()[0])
        loss = torch.zeros(())
        if drills:
            loss = loss + drill_loss(model, drills, tok, r.max_length) * len(drills)
        if n_whole:
            idx = rng.choice(len(whole), size=n_whole, replace=len(whole) < n_whole)
            inputs = sft_batch(processor, [whole[int(i)] for i in idx], params.sft.max_length)
            loss = loss + causal_lm_loss(model, inputs, stop) * n_whole
        loss = loss / max(1, len(drills) + n_whole)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        log.append(
            {
                "step": step + 1,
                "loss": float(loss.detach()),
                "learning_rate": lr,
                "level": level,
                "seconds": time.perf_counter() - t0,
            }
        )
        scalars.add(step + 1, loss=log[-1]["loss"], learning_rate=lr, level=level)
        if (step + 1) % r.eval_every == 0 or step + 1 in (n_steps, limit):
            acc = _accuracy(
                model, tok, processor, sets, whole_held, r.max_length, params.sft.max_length
            )
            at_level = acc.pop("mark_lookup_level", acc["mark_lookup"])
            scalars.add(
                step + 1, acc_mark_lookup_level=at_level, **{f"acc_{k}": v for k, v in acc.items()}
            )
            evals.append(
                {"step": step + 1, "level": level, "acc_mark_lookup_level": at_level}
                | {f"acc_{k}": v for k, v in acc.items()}
            )
            bar.set_postfix(level=level, lookup=f"{at_level:.2f}", loss=f"{log[-1]['loss']:.3f}")
            if at_level >= r.advance_at and li + 1 < len(r.levels):
                li += 1
                sets = eval_sets(r.levels[li])
                if li + 1 == len(r.levels):
                    reached = step + 1
        if (step + 1) % r.save_steps == 0 and step + 1 < limit:
            _save_state(
                staging,
                {
                    "model": model.state_dict(),
                    "optimizer": opt.state_dict(),
                    "schedule": sched.state_dict(),
                    "torch_rng": torch.get_rng_state(),
                    "numpy_rng": dict(rng.bit_generator.state),
                    "log": log,
                    "evals": evals,
                    "level_index": li,
                    "step": step + 1,
                    "seconds": spent + time.perf_counter() - t_start,
                    "reached_full_at": reached,
                },
                fingerprint,
            )
        step += 1
        bar.update(1)
    bar.close()
    n_steps = step  # with reader.max_steps: the steps the gate took
    wall = spent + time.perf_counter() - t_start
    scalars.close()
    model.eval()
    if li == 0 and len(r.levels) == 1:
        reached = 0
    final = evals[-1] if evals else {}
    accuracy = {f: float(final.get(f"acc_{f}", float("nan"))) for f in DRILL_FAMILIES}
    losses = [row["loss"] for row in log]
    result = ReaderResult(
        checkpoint_dir=out,
        base_checkpoint=base,
        steps=n_steps,
        level=r.levels[li],
        reached_full_at=reached,
        accuracy=accuracy,
        loss_first=float(np.mean(losses[:10])),
        loss_last=float(np.mean(losses[-10:])),
        wall_s=wall,
        s_per_step=wall / max(1, n_steps - start),
        resumed_from=start or None,
    )
    model_dir = staging / "model"
    if model_dir.exists():
        shutil.rmtree(model_dir)
    model_dir.mkdir(parents=True)
    try:
        model.save_pretrained(model_dir)
        eval_frame = pl.DataFrame(evals)
        plot_reader_curves(eval_frame, model_dir / READER_CURVES_FILE, levels=list(r.levels))
        meta = {
            "kind": "reader",
            "base_checkpoint": params.portable(base),
            "params": params.section_dict("reader"),
            "marks": params.section_dict("env")["marks"],
            "steps": n_steps,
            "level": result.level,
            "reached_full_at": reached,
            "accuracy": accuracy,
            "loss_first": result.loss_first,
            "loss_last": result.loss_last,
            "recipe": recipe_record(params.recipe, "reader", n_steps, base),
            "drill_sources": {
                "train_episodes": len(train_t),
                "held_out_episodes": len(held_t),
                "listings": len(src.listings),
                "names": len(src.names),
                "query_texts": len(src.query_texts),
                "id_pool": src.id_pool,
            },
        }
        timing = {
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "base_checkpoint": str(base),
            "wall_s": wall,
            "s_per_step": result.s_per_step,
            "resumed_from": result.resumed_from,
        }
        seconds = pl.DataFrame([{"step": row["step"], "seconds": row["seconds"]} for row in log])
        publish_checkpoint(
            model_dir,
            out,
            processor=processor,
            summary_file=READER_SUMMARY_FILE,
            summary=meta,
            tables={
                READER_LOG_FILE: pl.DataFrame(log).drop("seconds"),
                READER_EVAL_FILE: eval_frame,
            },
            timings={READER_SUMMARY_FILE: timing, READER_LOG_FILE: seconds},
        )
    except BaseException:
        shutil.rmtree(model_dir, ignore_errors=True)
        raise
    move_runs(staging, out)  # the TensorBoard events (train.report_to)
    shutil.rmtree(staging, ignore_errors=True)
    return result
