"""The one checkpoint publisher of SFT and GRPO: assemble beside the weights, then rename.

A trained checkpoint is assembled in ``<assets>/checkpoints/.staging-<name>/``
(:meth:`urbex.layout.AssetLayout.checkpoint_staging`): the caller saves the weights there, then
:func:`publish_checkpoint` writes the processor, the log tables and the summary JSON beside them
(file names from :mod:`urbex.layout`; timings in their unversioned folder) and renames the directory into
``<assets>/checkpoints/<name>/`` (:func:`urbex.atomic.publish_dir`), so a reader never sees a
checkpoint without its processor or summary. :func:`refuse_replacing` is the check the commands
run before training: the rename replaces ``<assets>/checkpoints/<name>/`` whole, so what is there
must be this command's own earlier output.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from urbex.atomic import publish_dir
from urbex.errors import OutputExistsError
from urbex.layout import TIMINGS_DIR

__all__ = ["publish_checkpoint", "refuse_replacing"]


def _published_here(out: Path, summary_file: str) -> bool:
    """True when ``out`` holds a checkpoint published under its own name with ``summary_file``
    (SFT's ``sft.json`` records the name in ``params``, GRPO's ``train.json`` at the top)."""
    try:
        summary = json.loads((out / summary_file).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(summary, dict):
        return False
    params = summary.get("params")
    name = summary.get("run_name", params.get("run_name") if isinstance(params, dict) else None)
    return name is None or name == out.name


def refuse_replacing(out: Path, *, base: Path, summary_file: str, force: bool) -> None:
    """Refuse to train into ``out`` when publishing there would destroy something else.

    :func:`publish_checkpoint` replaces ``out`` whole. That is a rerun when ``out`` holds a
    checkpoint the same command published under the same name (its ``summary_file``); anything
    else there (a user's file or folder, the other trainer's checkpoint) is replaced only with
    ``force``. The base checkpoint (``out`` is ``base`` or holds it) is never replaced: its
    weights are the ones being trained.

    Parameters
    ----------
    out
        ``<assets>/checkpoints/<run name>``.
    base
        The base checkpoint directory the run reads.
    summary_file
        :data:`urbex.layout.SFT_SUMMARY_FILE` or :data:`~urbex.layout.GRPO_SUMMARY_FILE`.
    force
        The command's ``--force``.

    Raises
    ------
    OutputExistsError
        Naming ``out``, what is there, and the way out (another ``--run-name``; ``--force``).
    """
    if not out.exists() and not out.is_symlink():
        return
    target, source = out.resolve(), base.resolve()
    if source == target or target in source.parents:
        raise OutputExistsError(
            f"is the base checkpoint ({base}) or holds it; training would replace the weights it "
            "reads (--force does not allow this). Pick another --run-name",
            path=out,
        )
    if force or (out.is_dir() and _published_here(out, summary_file)):
        return
    what = "a folder" if out.is_dir() else "a file"
    raise OutputExistsError(
        f"{what} that is not a checkpoint of this run (no {summary_file} naming {out.name!r}) is "
        "in the way of the trained checkpoint, which replaces it whole. Pick another --run-name, "
        "or pass --force to replace it",
        path=out,
    )


def publish_checkpoint(
    model_dir: Path,
    final: Path,
    *,
    processor: Any,
    summary_file: str,
    summary: Mapping[str, Any],
    tables: Mapping[str, pl.DataFrame] | None = None,
    timings: Mapping[str, Mapping[str, Any] | pl.DataFrame] | None = None,
) -> Path:
    """Complete the checkpoint in ``model_dir`` and rename it to ``final``.

    Parameters
    ----------
    model_dir
        Holds the saved model (``save_pretrained`` / ``trainer.save_model``) and whatever else
        the caller wrote (pictures).
    final
        ``<assets>/checkpoints/<name>`` (replaced if it exists).
    processor
        Saved beside the weights (``processor.save_pretrained``): a checkpoint loads alone.
    summary_file, summary
        The run's JSON summary (:data:`urbex.layout.SFT_SUMMARY_FILE` or
        :data:`~urbex.layout.GRPO_SUMMARY_FILE`).
    tables
        ``{file name: frame}`` written as Parquet (the step logs).
    timings
        ``{file name: dict or frame}`` written as JSON or Parquet into the checkpoint's
        :data:`~urbex.layout.TIMINGS_DIR` folder (not versioned): wall seconds, seconds per
        step, timestamps, whether the run resumed — what differs between two runs of the same
        inputs.

    Returns
    -------
    Path
        ``final``.
    """
    processor.save_pretrained(model_dir)
    for name, frame in (tables or {}).items():
        frame.write_parquet(model_dir / name)
    (model_dir / summary_file).write_text(json.dumps(dict(summary), indent=2, default=str) + "\n")
    if timings:
        (model_dir / TIMINGS_DIR).mkdir(exist_ok=True)
        for name, value in timings.items():
            if isinstance(value, pl.DataFrame):
                value.write_parquet(model_dir / TIMINGS_DIR / name)
            else:
                text = json.dumps(dict(value), indent=2, default=str) + "\n"
                (model_dir / TIMINGS_DIR / name).write_text(text)
    publish_dir(model_dir, final)
    return final
