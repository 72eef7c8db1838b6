"""``reader_curves.png``: the reader stage's held-out accuracy per drill family, per step.

One panel, accuracy 0–1 against the step, a line per family (mark look-up at the full listing
length, at the curriculum's current level, name copy, box copy, whole turns), the level changes
marked by vertical lines with the marks per listing they moved to.
"""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl

from urbex.atomic import atomic_path
from urbex.viz.style import COLOURS, pil_font

__all__ = ["READER_SERIES", "plot_reader_curves"]

#: (column of ``reader_eval.parquet``, label) drawn, in order.
READER_SERIES: tuple[tuple[str, str], ...] = (
    ("acc_mark_lookup", "mark look-up (full length)"),
    ("acc_mark_lookup_level", "mark look-up (current level)"),
    ("acc_name_copy", "name copy"),
    ("acc_box_copy", "box copy"),
    ("acc_whole_turn", "whole turn"),
)


def plot_reader_curves(evals: pl.DataFrame, path: Path, *, levels: list[int]) -> Path:
    """Draw ``evals`` (rows of ``reader_eval.parquet``: ``step``, ``level``, ``acc_*``) to
    ``path`` (PNG, written atomically); ``levels`` is the curriculum (for the legend)."""
    from PIL import Image, ImageDraw

    w, h = 1100, 560
    img = Image.new("RGB", (w, h), "white")
    d = ImageDraw.Draw(img)
    big, small = pil_font(20), pil_font(14)
    d.text(
        (20, 12), f"Reader drills: held-out accuracy (curriculum {levels})", fill="black", font=big
    )
    left, right, y0, y1 = 70, w - 260, 60, h - 50
    d.rectangle([left, y0, right, y1], outline=(90, 90, 90))
    steps = [float(s) for s in evals["step"].to_list()] if evals.height else []
    x_lo, x_hi = (min(steps), max(steps)) if steps else (0.0, 1.0)
    if x_hi - x_lo < 1e-9:
        x_lo, x_hi = x_lo - 0.5, x_hi + 0.5

    def x_px(x: float) -> float:
        return left + (x - x_lo) / (x_hi - x_lo) * (right - left)

    def y_px(y: float) -> float:
        return y1 - y * (y1 - y0)

    for t in range(6):
        v = t / 5
        d.line([left, y_px(v), right, y_px(v)], fill=(235, 235, 235))
        d.text((20, y_px(v) - 7), f"{v:.1f}", fill="black", font=small)
    if evals.height and "level" in evals.columns:
        prev = None
        for s, lv in zip(steps, evals["level"].to_list(), strict=True):
            if prev is not None and lv != prev:
                d.line([x_px(s), y0, x_px(s), y1], fill=(200, 200, 200))
                d.text((x_px(s) + 3, y0 + 3), f"{lv} marks", fill=(120, 120, 120), font=small)
            prev = lv
    for j, (col, label) in enumerate(READER_SERIES):
        colour = COLOURS[j % len(COLOURS)]
        ly = y0 + 8 + 22 * j
        d.line([right + 15, ly + 7, right + 45, ly + 7], fill=colour, width=3)
        d.text((right + 52, ly), label, fill="black", font=small)
        if col not in evals.columns:
            continue
        vals = [float(v) for v in evals[col].fill_null(math.nan).to_list()]
        pts = [(x_px(x), y_px(v)) for x, v in zip(steps, vals, strict=True) if math.isfinite(v)]
        if len(pts) > 1:
            d.line(pts, fill=colour, width=3)
        for px, py in pts:
            d.ellipse([px - 3, py - 3, px + 3, py + 3], fill=colour)
    for x in sorted({round(x_lo + (x_hi - x_lo) * t / 5) for t in range(6)}):
        if x_lo <= x <= x_hi:
            d.text((x_px(x) - 10, y1 + 6), f"{x:d}", fill="black", font=small)
    d.text(((left + right) // 2 - 30, h - 24), "reader step", fill="black", font=small)
    with atomic_path(path) as tmp:
        img.save(tmp, format="PNG")
    return path
