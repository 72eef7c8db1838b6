"""The house look of every picture urbex draws with PIL: one palette, one font.

Shared by the trajectory pictures (:mod:`urbex.viz.trajectory`), the diagnostic plots
(:mod:`urbex.report.plots`) and the training curves (:mod:`urbex.train.curves`).
"""

from __future__ import annotations

from PIL import ImageFont

__all__ = ["COLOURS", "pil_font"]

#: Series colours (tab10, then tab20's lighter companions): up to 20 distinct series, RGB.
COLOURS: tuple[tuple[int, int, int], ...] = (
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
    (214, 39, 40),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (127, 127, 127),
    (188, 189, 34),
    (23, 190, 207),
    (174, 199, 232),
    (255, 187, 120),
    (152, 223, 138),
    (255, 152, 150),
    (197, 176, 213),
    (196, 156, 148),
    (247, 182, 210),
    (199, 199, 199),
    (219, 219, 141),
    (158, 218, 229),
)


def pil_font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    """PIL's bundled scalable font at ``size`` pixels (no system font needed)."""
    return ImageFont.load_default(size=size)
