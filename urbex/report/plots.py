"""The two diagnostic plots of ``urbex diagnose``, drawn with PIL only (no matplotlib).

Both are :data:`PLOT_SIZE` pixels (width, height), RGB PNG, one colour per run × split with a
legend on the right, labelled axes and a title. A demo holds some 30 runs × splits, too many
series for one readable panel: :func:`plot_panels` draws **small multiples**, one panel per
policy family (the runs of one policy: its clean runs, perturbations, checkpoints, benchmarks),
at most :data:`MAX_SERIES` series each (a larger family is split over several panels):

* :func:`plot_success_vs_distractors` — local-disambiguation success (%) per distractor bin
  (``disambiguation`` table, ``factor = "distractors"``); a run without any successful zoom
  region has no local success, so its Hit@1 is drawn instead, dashed and labelled so.
* :func:`plot_area_ratio` — the predicted/target area-ratio histogram (share of valid answers, %)
  as grouped bars per ratio bin (``area_ratio`` table).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from urbex.atomic import atomic_path
from urbex.layout import safe_part
from urbex.viz.style import COLOURS, pil_font

if TYPE_CHECKING:
    from PIL import Image, ImageDraw

__all__ = [
    "MAX_SERIES",
    "PLOT_SIZE",
    "panels",
    "plot_area_ratio",
    "plot_panels",
    "plot_success_vs_distractors",
]

#: (width, height) of every diagnostic plot, pixels.
PLOT_SIZE: tuple[int, int] = (1160, 620)
#: The most series (run × split) one panel draws: beyond, a legend stops being readable.
MAX_SERIES = 8
_LEFT, _TOP, _BOTTOM, _LEGEND = 90, 60, 80, 360


def _series_label(run_id: str, split: str) -> str:
    return run_id if split in run_id else f"{run_id} [{split}]"


class _Axes:
    """A y-range 0–100 % plot area with category ticks on x."""

    def __init__(self, title: str, xlabel: str, ylabel: str, categories: Sequence[str]) -> None:
        from PIL import Image, ImageDraw

        w, h = PLOT_SIZE
        self.img: Image.Image = Image.new("RGB", (w, h), "white")
        self.draw: ImageDraw.ImageDraw = ImageDraw.Draw(self.img)
        self.x0, self.y0 = _LEFT, h - _BOTTOM  # plot origin (bottom-left), pixels
        self.x1, self.y1 = w - _LEGEND, _TOP
        self.categories = list(categories)
        d, f = self.draw, pil_font(15)
        d.text((w // 2 - _LEGEND // 2, 22), title, fill="black", font=pil_font(19), anchor="mm")
        for pct in range(0, 101, 20):
            y = self.y(pct)
            d.line([(self.x0, y), (self.x1, y)], fill=(225, 225, 225))
            d.text((self.x0 - 8, y), f"{pct}", fill="black", font=f, anchor="rm")
        d.line([(self.x0, self.y0), (self.x1, self.y0)], fill="black", width=2)
        d.line([(self.x0, self.y0), (self.x0, self.y1)], fill="black", width=2)
        for i, c in enumerate(self.categories):
            d.text((self.xc(i), self.y0 + 8), c, fill="black", font=f, anchor="mt")
        d.text(
            ((self.x0 + self.x1) // 2, h - 22), xlabel, fill="black", font=pil_font(16), anchor="mm"
        )
        self._ylabel(ylabel)

    def _ylabel(self, text: str) -> None:
        from PIL import Image, ImageDraw

        f = pil_font(16)
        box = self.draw.textbbox((0, 0), text, font=f)
        tw, th = int(box[2] - box[0]) + 4, int(box[3] - box[1]) + 6
        lab = Image.new("RGB", (tw, th), "white")
        ImageDraw.Draw(lab).text((2, 1 - box[1]), text, fill="black", font=f)
        lab = lab.rotate(90, expand=True)
        self.img.paste(lab, (12, (self.y0 + self.y1) // 2 - lab.height // 2))

    def y(self, pct: float) -> int:
        return round(self.y0 - (self.y0 - self.y1) * max(0.0, min(pct, 100.0)) / 100.0)

    def slot(self) -> float:
        return (self.x1 - self.x0) / max(len(self.categories), 1)

    def xc(self, i: int) -> int:
        return round(self.x0 + self.slot() * (i + 0.5))

    def legend(self, entries: Sequence[tuple[str, tuple[int, int, int], bool]]) -> None:
        d, f = self.draw, pil_font(13)
        x, y = self.x1 + 20, self.y1
        for label, colour, dashed in entries:
            if dashed:
                for k in range(0, 24, 8):
                    d.line([(x + k, y + 8), (x + k + 4, y + 8)], fill=colour, width=3)
            else:
                d.rectangle([x, y + 2, x + 22, y + 14], fill=colour)
            d.text((x + 30, y + 8), label, fill="black", font=f, anchor="lm")
            y += 20

    def save(self, path: Path) -> Path:

        path = Path(path)
        with atomic_path(path) as tmp:
            self.img.save(tmp, format="PNG")
        return path


def _empty_note(ax: _Axes, rows: int) -> None:
    if rows == 0:
        ax.draw.text(
            ((ax.x0 + ax.x1) // 2, (ax.y0 + ax.y1) // 2),
            "no evaluation runs",
            fill=(120, 120, 120),
            font=pil_font(18),
            anchor="mm",
        )


def plot_success_vs_distractors(table: pl.DataFrame, path: Path, *, subtitle: str = "") -> Path:
    """Local-disambiguation success (%) vs same-class distractor bin, one line per run × split.

    Parameters
    ----------
    table
        The ``disambiguation`` table (:func:`urbex.report.diagnostics.disambiguation`).
    path
        The PNG to write (atomically); :data:`PLOT_SIZE` pixels.
    subtitle
        Appended to the title (the panel's policy family).
    """
    t = table.filter(pl.col("factor") == "distractors").sort("run_id", "split", "bin_order")
    cats = t.sort("bin_order")["bin"].unique(maintain_order=True).to_list() or ["0"]
    ax = _Axes(
        "Local disambiguation vs nearby same-class distractors" + subtitle,
        "same-class distractors near the target (count bin)",
        "success (%)",
        cats,
    )
    entries = []
    groups = t.partition_by(["run_id", "split"], maintain_order=True)
    for k, g in enumerate(groups):
        colour = COLOURS[k % len(COLOURS)]
        has_local = int(g["n_regional"].sum()) > 0
        col = "local_success" if has_local else "hit1"
        pts = [(ax.xc(i), ax.y(100.0 * v)) for i, v in enumerate(g[col].to_list()) if v is not None]
        if len(pts) > 1:
            if has_local:
                ax.draw.line(pts, fill=colour, width=3)
            else:
                for a, b in itertools.pairwise(pts):
                    _dashed(ax.draw, a, b, colour)
        for x, y in pts:
            ax.draw.ellipse([x - 5, y - 5, x + 5, y + 5], fill=colour)
        label = _series_label(g["run_id"][0], g["split"][0])
        entries.append((label if has_local else f"{label} (Hit@1)", colour, not has_local))
    ax.legend(entries)
    if any(dashed for _, _, dashed in entries):
        ax.draw.text(
            (ax.x1 + 20, ax.y0 - 30),
            "dashed: Hit@1 of a run without zooms\n(it has no local success to show)",
            fill=(90, 90, 90),
            font=pil_font(12),
        )
    _empty_note(ax, len(groups))
    return ax.save(path)


def _dashed(
    draw: ImageDraw.ImageDraw, a: tuple[int, int], b: tuple[int, int], colour: tuple[int, int, int]
) -> None:
    n = max(int(((b[0] - a[0]) ** 2 + (b[1] - a[1]) ** 2) ** 0.5 // 10), 1)
    for i in range(0, n, 2):
        p = (a[0] + (b[0] - a[0]) * i / n, a[1] + (b[1] - a[1]) * i / n)
        q = (a[0] + (b[0] - a[0]) * (i + 1) / n, a[1] + (b[1] - a[1]) * (i + 1) / n)
        draw.line([p, q], fill=colour, width=3)


def plot_area_ratio(table: pl.DataFrame, path: Path, *, subtitle: str = "") -> Path:
    """Predicted/target area-ratio histogram (share of valid answers, %), bars per run × split.

    Parameters
    ----------
    table
        The ``area_ratio`` table (:func:`urbex.report.diagnostics.area_ratio_histogram`).
    path
        The PNG to write (atomically); :data:`PLOT_SIZE` pixels.
    subtitle
        Appended to the title (the panel's policy family).
    """
    t = table.sort("run_id", "split", "bin_order")
    cats = t.sort("bin_order")["bin"].unique(maintain_order=True).to_list() or ["-"]
    ax = _Axes(
        "Predicted / target BEV area ratio (valid answers)" + subtitle,
        "area ratio bin (1 = the predicted box has the target's area)",
        "share of valid answers (%)",
        cats,
    )
    groups = t.partition_by(["run_id", "split"], maintain_order=True)
    width = ax.slot() * 0.8 / max(len(groups), 1)
    entries = []
    for k, g in enumerate(groups):
        colour = COLOURS[k % len(COLOURS)]
        for i, v in enumerate(g["share"].to_list()):
            if v is None or ax.y(100.0 * v) >= ax.y0 - 1:
                continue
            x = ax.x0 + ax.slot() * (i + 0.1) + width * k
            ax.draw.rectangle([x, ax.y(100.0 * v), x + max(width - 1, 1), ax.y0 - 1], fill=colour)
        entries.append((_series_label(g["run_id"][0], g["split"][0]), colour, False))
    ax.legend(entries)
    _empty_note(ax, len(groups))
    return ax.save(path)


def panels(table: pl.DataFrame) -> list[tuple[str, pl.DataFrame]]:
    """The table's rows split into small multiples: one panel per policy family (the
    ``policy`` column, else the run id), its series (run × split) in order, at most
    :data:`MAX_SERIES` per panel; a larger family is split into ``family-1``, ``family-2``, ….

    Returns
    -------
    list of (name, rows)
        ``name`` is the family (a file-name part: letters, digits, ``_``, ``-``, ``.``).

    >>> t = pl.DataFrame({"policy": ["a"] * 9 + ["b"], "run_id": [f"r{i}" for i in range(10)],
    ...                   "split": ["s"] * 10})
    >>> [(n, rows.height) for n, rows in panels(t)]
    [('a-1', 5), ('a-2', 4), ('b', 1)]
    """
    if table.height == 0:
        return []
    family = pl.col("policy") if "policy" in table.columns else pl.col("run_id")
    t = table.with_columns(family.cast(pl.String).alias("_family"))
    out: list[tuple[str, pl.DataFrame]] = []
    for (name,), rows in t.sort("_family").group_by("_family", maintain_order=True):
        series = rows.select("run_id", "split").unique(maintain_order=True).sort("run_id", "split")
        n = -(-series.height // MAX_SERIES)  # panels, as even as can be
        size = -(-series.height // n)
        safe = safe_part(str(name))
        for k in range(n):
            part = series.slice(k * size, size)
            keep = rows.join(part, on=["run_id", "split"], how="semi").drop("_family")
            out.append((safe if n == 1 else f"{safe}-{k + 1}", keep))
    return out


#: The plots :func:`plot_panels` draws: file stem → its drawing function.
_PLOTS = {
    "success_vs_distractors": plot_success_vs_distractors,
    "area_ratio_hist": plot_area_ratio,
}


def plot_panels(stem: str, table: pl.DataFrame, out_dir: Path) -> list[Path]:
    """Draw the plot ``stem`` (``success_vs_distractors`` or ``area_ratio_hist``) as small
    multiples (:func:`panels`): ``<out_dir>/<stem>-<family>.png`` per panel, at most
    :data:`MAX_SERIES` series each; no rows: one empty ``<stem>-none.png`` saying so. Panels of
    an earlier call that are not drawn again are removed. Returns the files written."""
    draw = _PLOTS[stem]
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = table.filter(pl.col("factor") == "distractors") if "factor" in table.columns else table
    written = [
        draw(part, out_dir / f"{stem}-{name}.png", subtitle=f" — {name}")
        for name, part in panels(rows)
    ] or [draw(rows.clear(), out_dir / f"{stem}-none.png")]
    for old in [out_dir / f"{stem}.png", *out_dir.glob(f"{stem}-*.png")]:
        if old.is_file() and old not in written:
            old.unlink()
    return written
