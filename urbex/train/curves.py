"""``train_curves.png``: reward, IoU / valid answers and tool calls per GRPO step (the paper's Figure 7).

Drawn with PIL only, like the diagnostic plots: three stacked panels sharing the step axis, each
series as thin per-step points joined by a line plus a bold moving average (window
:data:`SMOOTH`), so a trend is readable through the noise of a few rollouts per step.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from urbex.atomic import atomic_path
from urbex.env.trajectory import TOOL_NAMES
from urbex.viz.style import COLOURS, pil_font

__all__ = ["CURVES_SIZE", "SMOOTH", "plot_training_curves"]

#: (width, height) of the picture, pixels.
CURVES_SIZE: tuple[int, int] = (1100, 1000)
#: Moving-average window, steps.
SMOOTH = 5

_PANELS: tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...] = (
    ("Reward per episode", "reward", (("reward_mean", "total reward"),)),
    (
        "Answers",
        "share / IoU",
        (
            ("valid_answer_rate", "valid answer rate"),
            ("iou_mean", "BEV IoU"),
            ("invalid_rate", "invalid-turn rate"),
        ),
    ),
    (
        "Tool calls per episode",
        "calls",
        tuple((f"calls_{t}", t) for t in TOOL_NAMES),
    ),
)


def _smooth(values: Sequence[float], window: int) -> list[float]:
    out = []
    for i in range(len(values)):
        chunk = [v for v in values[max(0, i - window + 1) : i + 1] if math.isfinite(v)]
        out.append(sum(chunk) / len(chunk) if chunk else math.nan)
    return out


def _nice_range(values: Sequence[float]) -> tuple[float, float]:
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return 0.0, 1.0
    lo, hi = min(finite), max(finite)
    if hi - lo < 1e-9:
        lo, hi = lo - 0.5, hi + 0.5
    pad = 0.05 * (hi - lo)
    return lo - pad, hi + pad


def plot_training_curves(log: pl.DataFrame, path: Path, *, title: str = "GRPO training") -> Path:
    """Draw the three panels of a ``training_log`` frame (one run) to ``path`` (PNG, atomic).

    Parameters
    ----------
    log
        Rows of :data:`urbex.train.logs.TRAINING_LOG_SCHEMA` (sorted by ``step`` here).
    path
        Output file.
    title
        Heading of the picture.

    Returns
    -------
    Path
        ``path``.
    """
    from PIL import Image, ImageDraw

    w, h = CURVES_SIZE
    img = Image.new("RGB", (w, h), "white")
    d = ImageDraw.Draw(img)
    big, small = pil_font(20), pil_font(14)
    d.text((20, 12), title, fill="black", font=big)
    log = log.sort("step")
    steps = [float(s) for s in log["step"].to_list()]
    left, right, top = 90, w - 230, 50
    panel_h = (h - top - 40) // len(_PANELS)
    x_lo, x_hi = (min(steps), max(steps)) if steps else (0.0, 1.0)
    if x_hi - x_lo < 1e-9:
        x_lo, x_hi = x_lo - 0.5, x_hi + 0.5

    def x_px(x: float) -> float:
        return left + (x - x_lo) / (x_hi - x_lo) * (right - left)

    for k, (name, ylabel, series) in enumerate(_PANELS):
        y0 = top + k * panel_h + 30
        y1 = top + (k + 1) * panel_h - 20
        cols = [c for c, _ in series if c in log.columns]
        allv = [float(v) for c in cols for v in log[c].fill_null(math.nan).to_list()]
        lo, hi = _nice_range(allv)

        def y_px(y: float, lo: float = lo, hi: float = hi, y0: int = y0, y1: int = y1) -> float:
            return y1 - (y - lo) / (hi - lo) * (y1 - y0)

        d.text((left, y0 - 24), name, fill="black", font=small)
        d.rectangle([left, y0, right, y1], outline=(90, 90, 90))
        decimals = max(0, 1 - math.floor(math.log10((hi - lo) / 4)))
        for t in range(5):  # y ticks, with as many decimals as their spacing needs
            v = lo + (hi - lo) * t / 4
            yy = y_px(v)
            d.line([left - 4, yy, left, yy], fill="black")
            d.line([left, yy, right, yy], fill=(235, 235, 235))
            d.text((8, yy - 7), f"{v:.{decimals}f}", fill="black", font=small)
        d.text((8, y0 - 24), ylabel, fill=(80, 80, 80), font=small)
        for j, (col, label) in enumerate(series):
            colour = COLOURS[j % len(COLOURS)]
            if col not in log.columns:
                continue
            vals = [float(v) for v in log[col].fill_null(math.nan).to_list()]
            light = tuple(int(c + (255 - c) * 0.6) for c in colour)
            pts = [(x_px(x), y_px(v)) for x, v in zip(steps, vals, strict=True) if math.isfinite(v)]
            if len(pts) > 1:
                d.line(pts, fill=light, width=1)
            for px, py in pts:
                d.ellipse([px - 2, py - 2, px + 2, py + 2], fill=light)
            sm = [
                (x_px(x), y_px(v))
                for x, v in zip(steps, _smooth(vals, SMOOTH), strict=True)
                if math.isfinite(v)
            ]
            if len(sm) > 1:
                d.line(sm, fill=colour, width=3)
            ly = y0 + 8 + 22 * j
            d.line([right + 15, ly + 7, right + 45, ly + 7], fill=colour, width=3)
            d.text((right + 52, ly), label, fill="black", font=small)
        for x in sorted({round(x_lo + (x_hi - x_lo) * t / 5) for t in range(6)}):
            if not x_lo <= x <= x_hi:  # whole steps on every panel
                continue
            xx = x_px(x)
            d.line([xx, y1, xx, y1 + 4], fill="black")
            d.text((xx - 8, y1 + 5), f"{x:d}", fill="black", font=small)
    d.text(((left + right) // 2 - 40, h - 24), "GRPO step", fill="black", font=small)
    d.text((right + 15, h - 24), f"bold: {SMOOTH}-step mean", fill=(80, 80, 80), font=small)
    with atomic_path(path) as tmp:
        img.save(tmp, format="PNG")
    return path
