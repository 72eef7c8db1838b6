"""The house palette and font."""

from __future__ import annotations

from PIL import Image, ImageDraw

from urbex.viz.style import COLOURS, pil_font


def test_colours_are_twenty_distinct_rgb_triples_starting_with_tab10_blue():
    assert len(COLOURS) == 20 and len(set(COLOURS)) == 20
    assert all(len(c) == 3 and all(0 <= v <= 255 for v in c) for c in COLOURS)
    assert COLOURS[0] == (31, 119, 180)


def test_pil_font_scales_with_its_size():
    draw = ImageDraw.Draw(Image.new("RGB", (10, 10)))
    small = draw.textbbox((0, 0), "Hit@1", font=pil_font(10))
    large = draw.textbbox((0, 0), "Hit@1", font=pil_font(30))
    assert large[3] - large[1] > 2 * (small[3] - small[1])
    assert large[2] - large[0] > 2 * (small[2] - small[0])
