"""Training scalars as TensorBoard event files under a checkpoint's ``runs/`` folder.

GRPO logs through trl (``report_to`` in its config): transformers' ``TensorBoardCallback`` writes
``<trainer output_dir>/runs/<date>_<host>/`` and :mod:`urbex.train.grpo` moves that ``runs/``
folder into the checkpoint it publishes. SFT's loop (:mod:`urbex.train.sft`) has no trainer: a
:class:`ScalarLog` writes its scalars, with the tags the trainer would use (``train/loss``,
``train/learning_rate``), into ``<staging>/runs/sft/`` while it trains (``tensorboard --logdir
assets/checkpoints`` shows the curves live) and the same move publishes them. Read them with
``tensorboard --logdir assets/checkpoints``.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

__all__ = ["RUNS_DIR", "ScalarLog", "move_runs"]

#: The folder of TensorBoard runs in a checkpoint (the trainer's name for it).
RUNS_DIR = "runs"


class ScalarLog:
    """Scalars of one training loop, one event file per folder (a no-op with ``report_to`` none).

    Parameters
    ----------
    report_to : {"tensorboard", "none"}
        ``train.report_to``.
    folder : Path
        The run's folder (``<staging>/runs/<name>``); a resumed run writes to the same one.
    start_step : int
        Steps already done. A resumed run rewrites the scalars logged up to ``start_step`` into
        its own event file and deletes the earlier files, so the folder holds one file and a step
        is never shown twice. (TensorBoard's ``purge_step`` is not enough: it relies on the files'
        names sorting in the order they were written, and two writers started in the same second
        sort by a counter compared as text, 10 before 9.)
    """

    def __init__(self, report_to: str, folder: Path, *, start_step: int = 0) -> None:
        if report_to not in ("tensorboard", "none"):
            raise ValueError(f"report_to: expected 'tensorboard' or 'none', got {report_to!r}")
        self.folder = Path(folder)
        self._writer: Any = None
        if report_to == "tensorboard":
            from torch.utils.tensorboard import SummaryWriter

            earlier = sorted(self.folder.glob("events.out.tfevents.*")) if start_step else []
            kept = _scalars_up_to(earlier, start_step)
            self._writer = SummaryWriter(log_dir=str(self.folder))
            for (tag, step), (wall_time, value) in sorted(kept.items(), key=lambda kv: kv[0][1]):
                self._writer.add_scalar(tag, value, step, walltime=wall_time)
            self._writer.flush()
            own = Path(self._writer.file_writer.event_writer._file_name)
            for path in earlier:
                if path != own:
                    path.unlink(missing_ok=True)

    def add(self, step: int, **scalars: float) -> None:
        """Write ``train/<name>`` = value at ``step`` for each keyword, then flush."""
        if self._writer is None:
            return
        for name, value in scalars.items():
            self._writer.add_scalar(f"train/{name}", float(value), step)
        self._writer.flush()

    def close(self) -> None:
        """Close the event file (further :meth:`add` calls are no-ops)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None


def _scalars_up_to(paths: list[Path], last_step: int) -> dict[tuple[str, int], tuple[float, float]]:
    """``(tag, step) → (wall_time, value)`` of the scalars at steps ``≤ last_step`` in the event
    files ``paths``; where files repeat a step, the one written last (by wall time) wins."""
    from tensorboard.backend.event_processing.event_file_loader import LegacyEventFileLoader

    kept: dict[tuple[str, int], tuple[float, float]] = {}
    for path in paths:
        for event in LegacyEventFileLoader(str(path)).Load():
            if not event.HasField("summary") or event.step > last_step:
                continue
            for value in event.summary.value:
                if value.WhichOneof("value") != "simple_value":
                    continue
                key = (value.tag, int(event.step))
                if key not in kept or kept[key][0] <= event.wall_time:
                    kept[key] = (float(event.wall_time), float(value.simple_value))
    return kept


def move_runs(src: Path, dst: Path) -> Path | None:
    """Move ``src/runs`` into ``dst/runs`` (merged folder by folder); return it, or None when
    ``src`` has no runs."""
    runs = Path(src) / RUNS_DIR
    if not runs.is_dir():
        return None
    target = Path(dst) / RUNS_DIR
    target.mkdir(parents=True, exist_ok=True)
    for run in sorted(runs.iterdir()):
        if (target / run.name).exists():
            shutil.rmtree(target / run.name)
        shutil.move(str(run), str(target / run.name))
    runs.rmdir()
    return target
