"""Inline PNG thumbnails for Markdown metadata."""

from __future__ import annotations

import base64
import io
import re

import numpy as np
import pytest
from PIL import Image

from urbex.viz.thumbnails import png_markdown, thumbnail_markdown


def _decode(md: str) -> tuple[str, Image.Image]:
    m = re.fullmatch(r"!\[(.*)\]\(data:image/png;base64,([A-Za-z0-9+/=]+)\)", md)
    assert m, md
    return m.group(1), Image.open(io.BytesIO(base64.b64decode(m.group(2))))


def test_png_markdown_array_long_side_is_capped_keeping_the_aspect():
    arr = np.random.default_rng(0).integers(0, 256, (100, 400, 3), dtype=np.uint8)
    alt, img = _decode(png_markdown(arr, alt="bev", max_side=64))
    assert alt == "bev" and img.format == "PNG"
    assert img.size == (64, 16)


def test_png_markdown_small_image_is_not_enlarged_and_keeps_pixels():
    src = Image.new("RGB", (10, 6), (200, 10, 30))
    _, img = _decode(png_markdown(src))
    assert img.size == (10, 6)
    assert img.convert("RGB").getpixel((5, 3)) == (200, 10, 30)
    assert src.size == (10, 6)  # the caller's image is not resized in place


def test_thumbnail_markdown_reads_a_png_file_as_rgb(tmp_path):
    p = tmp_path / "global_view.png"
    Image.new("RGBA", (300, 300), (0, 128, 255, 10)).save(p)
    alt, img = _decode(thumbnail_markdown(p, max_side=100))
    assert alt == "BEV" and img.size == (100, 100) and img.mode == "RGB"


def test_thumbnail_markdown_missing_file_raises(tmp_path):
    with pytest.raises(FileNotFoundError):
        thumbnail_markdown(tmp_path / "nope.png")
