"""The one checkpoint publisher of SFT and GRPO: assemble beside the weights, then rename.

A trained checkpoint is assembled in ``<assets>/checkpoints/.staging-<name>/``
(:meth:`urbex.layout.AssetLayout.checkpoint_staging`): the caller saves the weights there, then
:func:`publish_checkpoint` writes the processor, the log tables and the summary JSON beside them
(file names from :mod:`urbex.layout`; timings in their unversioned folder) and renames the directory into
``<assets>/checkpoints/<name>/`` (:func:`urbex.atomic.publish_dir`), so a reader never sees a
checkpoint without its processor or summary.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from urbex.atomic import publish_dir
from urbex.layout import TIMINGS_DIR

__all__ = ["publish_checkpoint"]


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
