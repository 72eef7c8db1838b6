"""Small pictures for asset metadata and reports."""

from __future__ import annotations

import base64
import io
from pathlib import Path

__all__ = ["png_markdown", "thumbnail_markdown"]


def png_markdown(image: object, *, alt: str = "image", max_side: int = 256) -> str:
    """A PIL image (or HxWx3 uint8 array) as a Markdown inline PNG, long side ≤ ``max_side`` px."""
    import numpy as np
    from PIL import Image

    img = Image.fromarray(np.asarray(image)) if not isinstance(image, Image.Image) else image
    img = img.copy()
    img.thumbnail((max_side, max_side), Image.Resampling.LANCZOS)
    buf = io.BytesIO()
    img.save(buf, format="PNG", optimize=True)
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return f"![{alt}](data:image/png;base64,{data})"


def thumbnail_markdown(png_path: Path, *, alt: str = "BEV", max_side: int = 256) -> str:
    """Markdown inline thumbnail of a PNG file (e.g. a scene cache's ``global_view.png``)."""
    from PIL import Image

    with Image.open(png_path) as im:
        return png_markdown(im.convert("RGB"), alt=alt, max_side=max_side)
