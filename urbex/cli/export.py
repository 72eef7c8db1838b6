"""``urbex export``: a split's teacher conversations or evaluated episodes as a ``datasets``
dataset (``save_to_disk``), for trl's ``SFTTrainer`` and any other trainer.

    urbex export data/teacher-train --split train                 # the teacher's conversations
    urbex export data/episodes-val --split val --what episodes     # every evaluation run's episodes
    urbex export data/teacher-train --split train --force          # replace an earlier export

Read it back with ``datasets.load_from_disk(OUT)`` (:mod:`urbex.train.export`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from urbex.config import SPLIT_NAMES, Params

__all__ = ["add_export_command", "cmd_export"]

_WHAT = ("teacher", "episodes")  # urbex.train.export.WHAT, named here so --help imports nothing


def add_export_command(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Register ``urbex export`` on the command line's subparsers."""
    p = sub.add_parser(
        "export", help="write a split's teacher conversations or episodes as a datasets dataset",
        parents=[common],
    )  # fmt: skip
    p.add_argument("out", type=Path, help="output folder (datasets' save_to_disk)")
    p.add_argument("--split", required=True, choices=SPLIT_NAMES, help="the split to export")
    p.add_argument(
        "--what", choices=_WHAT, default="teacher",
        help="teacher: the teacher's conversations (messages + images, what `urbex sft` trains "
        "on); episodes: the finished episodes of every evaluation run of the split",
    )  # fmt: skip
    p.add_argument(
        "--limit", type=int, help="teacher: at most this many queries (default sft.limit)"
    )
    p.add_argument("--force", action="store_true", help="replace what OUT holds")
    p.set_defaults(func=cmd_export)


def cmd_export(args: argparse.Namespace, params: Params) -> int:
    """``urbex export``: write the dataset and print its folder."""
    from urbex.train.export import export_dataset

    out = export_dataset(
        params, args.out, split=args.split, what=args.what, force=args.force, limit=args.limit,
        progress=not getattr(args, "quiet", False),
    )  # fmt: skip
    print(f"{args.what} dataset of split {args.split!r}: {out}")
    return 0
