"""Trajectory pictures: one PNG of what the agent did in one episode (PIL only, no I/O).

:func:`trajectory_picture` draws, left, the global BEV with every zoom/oblique region the agent
opened as a numbered box (the number is the turn), the landmarks it looked up, the predicted box
and, when known, the ground-truth box, a legend and the list of steps; right, the zoom and
oblique images it created, captioned with turn, tool and arguments; on top, the query.

Frames
------
* **World**: the scene's metric frame, metres (x east, y north). Every box argument is a world
  BEV box ``[x_min, y_min, x_max, y_max]``; landmark points are world ``(x, y)``.
* **View pixels**: continuous ``(col, row)`` of a BEV view image, ``(0, 0)`` its top-left
  corner; a view's :class:`~urbex.geometry.Affine` maps them to world XY.
* **Picture pixels**: ``(x, y)`` of the returned image, ``(0, 0)`` top-left. The global BEV
  image ``(W, H)`` is scaled by ``s = panel_px / max(W, H)`` and centred in the square global
  panel whose top-left corner is ``(PAD, HEADER_H)``: view pixel ``(col, row)`` lands at
  ``(PAD + (panel_px − s·W)/2 + s·col, HEADER_H + (panel_px − s·H)/2 + s·row)``.

Layout and size (see :func:`picture_size`)::

    +-----------------------------------------------------------------------+
    | query text (up to 3 lines) and a one-line summary          HEADER_H   |
    +-------------------------------+---------------------------------------+
    | global panel (panel_px)^2     | zoom/oblique views, STRIP_COLS per row |
    | legend               LEGEND_H | thumb_px^2 each + CAPTION_H caption    |
    | one line per step    STEP_H   |                                        |
    +-------------------------------+---------------------------------------+
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from urbex.geometry import Affine, iou_2d
from urbex.viz.style import pil_font

if TYPE_CHECKING:
    from PIL import Image, ImageDraw

    from urbex.env.records import Step
    from urbex.env.views import EpisodeView
    from urbex.scene import SceneCache

__all__ = [
    "CAPTION_H",
    "COLORS",
    "HEADER_H",
    "LEGEND_H",
    "PAD",
    "STEP_H",
    "STRIP_COLS",
    "picture_size",
    "trajectory_picture",
]

#: Margin between panels, picture pixels.
PAD = 12
_TITLE_PT, _BODY_PT, _SMALL_PT = 20, 15, 13
_TITLE_LINES = 3
#: Header height: up to three lines of query text and one summary line.
HEADER_H = PAD + _TITLE_LINES * (_TITLE_PT + 6) + (_BODY_PT + 6) + PAD
#: Legend height under the global panel.
LEGEND_H = 2 * (_BODY_PT + 8) + 4
#: Height of one line of the step list.
STEP_H = _SMALL_PT + 6
#: Caption height under each view thumbnail (a title line and two lines of arguments).
CAPTION_H = 3 * (_SMALL_PT + 5) + 4
#: View thumbnails per row of the right strip.
STRIP_COLS = 2

#: RGB colours of the picture's marks.
COLORS: dict[str, tuple[int, int, int]] = {
    "background": (24, 24, 28),
    "text": (235, 235, 235),
    "muted": (160, 160, 170),
    "pred": (255, 48, 48),
    "target": (40, 230, 90),
    "zoom": (255, 200, 0),
    "oblique": (0, 200, 255),
    "landmark": (255, 80, 255),
    "invalid": (255, 120, 120),
}


def picture_size(
    n_steps: int, n_views: int, *, panel_px: int = 768, thumb_px: int = 256
) -> tuple[int, int]:
    """``(width, height)`` in pixels of :func:`trajectory_picture`'s image.

    ``width = 3·PAD + panel_px + STRIP_COLS·(thumb_px + PAD)``;
    ``height = max(HEADER_H + panel_px + PAD + LEGEND_H + n_steps·STEP_H + PAD,
    HEADER_H + rows·(thumb_px + CAPTION_H + PAD) + PAD)`` with
    ``rows = ceil(n_views / STRIP_COLS)``.

    Parameters
    ----------
    n_steps : int
        Steps listed (every turn, valid or not).
    n_views : int
        Zoom and oblique views shown in the strip (the global view is not counted).

    Examples
    --------
    >>> picture_size(0, 0, panel_px=100, thumb_px=50) == (
    ...     3 * PAD + 100 + STRIP_COLS * (50 + PAD), HEADER_H + 100 + PAD + LEGEND_H + PAD)
    True
    """
    if n_steps < 0 or n_views < 0:
        raise ValueError(f"n_steps, n_views: expected >= 0, got {n_steps}, {n_views}")
    width = 3 * PAD + panel_px + STRIP_COLS * (thumb_px + PAD)
    left = HEADER_H + panel_px + PAD + LEGEND_H + n_steps * STEP_H + PAD
    rows = math.ceil(n_views / STRIP_COLS)
    right = HEADER_H + rows * (thumb_px + CAPTION_H + PAD) + PAD
    return width, max(left, right)


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------


def _args(step: Step) -> dict[str, Any]:
    return step.arguments


def _fmt_args(tool: str, args: dict[str, Any]) -> str:
    """A compact one-line rendering of a step's arguments."""
    if "raw" in args and len(args) == 1:
        raw = " ".join(str(args["raw"]).split())
        return f"raw: {raw[:80]!r}"
    parts = []
    for k, v in args.items():
        if k == "bbox_2d" and isinstance(v, list):
            v = "[" + ",".join(f"{float(c):g}" for c in v) + "]"
        elif k == "name":
            v = repr(v)
        elif isinstance(v, float):
            v = f"{v:g}"
        key = {"view_id": "in", "azimuth_deg": "az", "elevation_deg": "el"}.get(k, k)
        parts.append(f"{key}={v}")
    return " ".join(parts)


def _clip_text(draw: ImageDraw.ImageDraw, text: str, font: Any, width: float) -> str:
    """``text`` cut to ``width`` pixels with ``...``: a binary search over the prefix length
    (a description may be 100,000 characters of user text)."""
    text = text[: 4 * int(width) + 4]  # no glyph of these fonts is narrower than 1/4 px
    if draw.textlength(text, font=font) <= width:
        return text
    lo, hi = 0, len(text)  # the longest prefix that fits with its "..."
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if draw.textlength(text[:mid] + "...", font=font) <= width:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo] + "..."


def _wrap(draw: ImageDraw.ImageDraw, text: str, font: Any, width: float, lines: int) -> list[str]:
    """Greedy word wrap to ``width`` pixels, at most ``lines`` lines (the last one clipped).

    Stops reading words once the lines are full, so its cost is bounded by the box, not by the
    text's length."""
    words = text.split()
    out: list[str] = []
    cur = ""
    for w in words:
        cand = f"{cur} {w}" if cur else w
        if not cur or draw.textlength(cand, font=font) <= width:
            cur = cand
        else:
            out.append(cur)
            cur = w
            if len(out) == lines:  # the text overflows: the last line gets "..."
                break
    else:
        if cur:
            out.append(cur)
        cur = ""
    if len(out) > lines or cur:
        rest = _clip_text(draw, f"{out[lines - 1]} {cur}".strip(), font, width - 4)
        out = [*out[: lines - 1], rest]
        if not out[-1].endswith("..."):
            out[-1] += "..."
    return [_clip_text(draw, s, font, width) for s in out]


class _Panel:
    """World XY (m) → picture pixels for one BEV image drawn scaled into a square."""

    def __init__(self, transform: Affine, size: tuple[int, int], x0: float, y0: float, side: int):
        w, h = size
        self.inv = transform.inverse()
        self.s = side / max(w, h)
        self.ox = x0 + (side - self.s * w) / 2
        self.oy = y0 + (side - self.s * h) / 2
        self.rect = (self.ox, self.oy, self.ox + self.s * w, self.oy + self.s * h)

    def point(self, x: float, y: float) -> tuple[float, float]:
        col, row = self.inv.apply(x, y)
        return self.ox + self.s * float(col), self.oy + self.s * float(row)

    def box(self, world_box: ArrayLike) -> tuple[float, float, float, float]:
        b = np.asarray(world_box, dtype=np.float64).reshape(4)
        xs, ys = zip(*(self.point(x, y) for x, y in ((b[0], b[1]), (b[2], b[3]))))
        return min(xs), min(ys), max(xs), max(ys)


def _rect(
    draw: ImageDraw.ImageDraw,
    box: tuple[float, float, float, float],
    color: tuple[int, int, int],
    width: int,
    clip: tuple[float, float, float, float],
) -> tuple[float, float, float, float] | None:
    """Outline ``box`` clipped to ``clip`` (picture px); None when it lies outside."""
    x0, y0 = max(box[0], clip[0]), max(box[1], clip[1])
    x1, y1 = min(box[2], clip[2] - 1), min(box[3], clip[3] - 1)
    if x1 < x0 or y1 < y0:
        return None
    r = (round(x0), round(y0), max(round(x1), round(x0) + 1), max(round(y1), round(y0) + 1))
    draw.rectangle(r, outline=color, width=width)
    return float(r[0]), float(r[1]), float(r[2]), float(r[3])


def _tag(
    draw: ImageDraw.ImageDraw,
    xy: tuple[float, float],
    text: str,
    color: tuple[int, int, int],
    font: Any,
    *,
    fg: tuple[int, int, int] = (0, 0, 0),
    right: bool = False,
) -> None:
    """A filled label whose top-left (``right``: top-right) corner is ``xy``."""
    x, y = xy
    if right:
        x -= draw.textlength(text, font=font) + 6
    bb = draw.textbbox((x + 3, y + 1), text, font=font)
    draw.rectangle((x, y, bb[2] + 3, bb[3] + 2), fill=color)
    draw.text((x + 3, y + 1), text, fill=fg, font=font)


def _global_image(
    scene: SceneCache, views: Sequence[EpisodeView]
) -> tuple[Image.Image, Affine, str]:
    """The agent's global view when given, else the scene cache's ``global_view.png``."""
    from PIL import Image

    for v in views:
        if v.kind == "global" and v.transform is not None:
            return v.image.convert("RGB"), v.transform, "global view (what the agent saw)"
    g = scene.global_view()
    return Image.fromarray(np.asarray(g.image), "RGB"), g.transform, "scene global view"


# ---------------------------------------------------------------------------------------------
# the picture
# ---------------------------------------------------------------------------------------------


def trajectory_picture(
    scene: SceneCache,
    steps: Sequence[Step],
    views: Iterable[EpisodeView],
    *,
    query_text: str,
    pred_box_2d: ArrayLike | None = None,
    target_box_2d: ArrayLike | None = None,
    landmarks: Sequence[tuple[str, float, float]] | None = None,
    answer_mark: int | None = None,
    subtitle: str | None = None,
    panel_px: int = 768,
    thumb_px: int = 256,
) -> Image.Image:
    """One picture of an episode: what the agent looked at, in order, and what it answered.

    Parameters
    ----------
    scene : SceneCache
        The episode's scene; its ``global_view()`` is the backdrop when ``views`` holds no
        ``global`` view.
    steps : sequence of Step
        The episode's steps in order (a trajectory's ``steps``); each is one line of the step
        list.
    views : iterable of EpisodeView
        The episode's views (a trajectory's ``views``): the ``global`` one is the backdrop (its
        transform maps every world box), each ``zoom``/``oblique`` one is drawn as a numbered
        box on the backdrop (its ``world_box``, number = the turn that created it) and shown in
        the right strip.
    query_text : str
        The query, printed on top (wrapped, up to three lines).
    pred_box_2d : array_like, shape (4,), or None
        Predicted world BEV box ``[x_min, y_min, x_max, y_max]``, metres (red).
    target_box_2d : array_like, shape (4,), or None
        Ground-truth world BEV box, metres (green); None for a free-text query.
    landmarks : sequence of (name, x, y) or None
        Landmark hits (world metres) drawn as labelled points.
    answer_mark : int or None
        The numbered mark the answer named or snapped to (``env.marks``): the prediction is
        tagged ``mark N`` and the summary says so.
    subtitle : str or None
        Extra text for the summary line (e.g. scene and policy).
    panel_px, thumb_px : int
        Side of the global panel and of each view thumbnail, picture pixels.

    Returns
    -------
    PIL.Image.Image
        RGB, of size :func:`picture_size` ``(len(steps), n zoom/oblique views)``. The global
        panel's geometry is described in the module docstring.
    """
    from PIL import Image, ImageDraw

    if panel_px < 64 or thumb_px < 32:
        raise ValueError(f"panel_px >= 64 and thumb_px >= 32 expected, got {panel_px}, {thumb_px}")
    all_views = list(views)
    strip = [v for v in all_views if v.kind != "global"]
    steps = list(steps)
    size = picture_size(len(steps), len(strip), panel_px=panel_px, thumb_px=thumb_px)
    img = Image.new("RGB", size, COLORS["background"])
    draw = ImageDraw.Draw(img)
    f_title, f_body, f_small = pil_font(_TITLE_PT), pil_font(_BODY_PT), pil_font(_SMALL_PT)
    by_view = {s.view_id: s for s in steps if s.view_id}

    # -- header -------------------------------------------------------------------------------
    y = PAD
    for line in _wrap(draw, query_text, f_title, size[0] - 2 * PAD, _TITLE_LINES):
        draw.text((PAD, y), line, fill=COLORS["text"], font=f_title)
        y += _TITLE_PT + 6
    pred = None if pred_box_2d is None else np.asarray(pred_box_2d, dtype=np.float64).reshape(4)
    tgt = None if target_box_2d is None else np.asarray(target_box_2d, dtype=np.float64).reshape(4)
    summary = [getattr(scene, "scene_id", "")] + ([subtitle] if subtitle else [])
    summary.append(f"{len(steps)} step(s)")
    if pred is None:
        summary.append("no answer")
    elif answer_mark is not None:
        summary.append(f"answer: mark {answer_mark}")
    if pred is not None and tgt is not None:
        summary.append(f"IoU_bev {float(iou_2d(pred, tgt)):.3f}")
    elif tgt is None:
        summary.append("no ground truth")
    draw.text(
        (PAD, HEADER_H - PAD - _BODY_PT - 6),
        _clip_text(draw, "  |  ".join(s for s in summary if s), f_body, size[0] - 2 * PAD),
        fill=COLORS["muted"],
        font=f_body,
    )

    # -- global panel -------------------------------------------------------------------------
    gimg, gtr, gsrc = _global_image(scene, all_views)
    panel = _Panel(gtr, gimg.size, PAD, HEADER_H, panel_px)
    pw, ph = round(panel.s * gimg.size[0]), round(panel.s * gimg.size[1])
    img.paste(gimg.resize((pw, ph), Image.Resampling.LANCZOS), (round(panel.ox), round(panel.oy)))
    clip = (panel.ox, panel.oy, panel.ox + pw, panel.oy + ph)
    for v in strip:  # regions in turn order; later ones on top
        kind = v.kind
        box = _rect(draw, panel.box(v.world_box), COLORS[kind], 2, clip)
        if box is None:
            continue
        if kind == "oblique":
            made = by_view.get(v.view_id)
            az = None if made is None else _args(made).get("azimuth_deg")
            if isinstance(az, int | float):
                _camera_mark(draw, panel, v.world_box, float(az), clip)
        if kind == "zoom":  # zoom numbers top-left, oblique numbers top-right: no overlap
            _tag(draw, (box[0], box[1]), str(v.turn), COLORS[kind], f_small)
        else:
            _tag(draw, (box[2] + 1, box[1]), str(v.turn), COLORS[kind], f_small, right=True)
    if tgt is not None:
        # a wide band drawn first: a prediction on top of it leaves the GT visible inside
        box = _rect(draw, panel.box(tgt), COLORS["target"], 5, clip)
        if box is not None:
            _tag(draw, (box[0], box[3] + 1), "GT", COLORS["target"], f_small)
    if pred is not None:
        box = _rect(draw, panel.box(pred), COLORS["pred"], 3, clip)
        if box is not None:
            label = "pred" if answer_mark is None else f"pred: mark {answer_mark}"
            _tag(draw, (box[2] + 2, box[1]), label, COLORS["pred"], f_small)
    for name, lx, ly in landmarks or ():
        px, py = panel.point(float(lx), float(ly))
        if not (clip[0] <= px < clip[2] and clip[1] <= py < clip[3]):
            continue
        draw.ellipse((px - 5, py - 5, px + 5, py + 5), fill=COLORS["landmark"], outline=(0, 0, 0))
        _tag(draw, (px + 7, py - 8), str(name), (40, 0, 40), f_small, fg=COLORS["landmark"])

    # -- legend -------------------------------------------------------------------------------
    y = HEADER_H + panel_px + PAD
    items = [
        ("pred", "predicted box"),
        ("target", "ground truth"),
        ("landmark", "landmark hit"),
        ("zoom", "zoom region (n = turn)"),
        ("oblique", "oblique region, o = camera"),
    ]
    x = PAD
    for key, label in items:
        wlab = draw.textlength(label, font=f_body) + 28
        if x + wlab > PAD + panel_px:
            x, y = PAD, y + _BODY_PT + 8
        if key == "landmark":
            draw.ellipse((x + 2, y + 3, x + 14, y + 15), fill=COLORS[key])
        else:
            draw.rectangle((x, y + 2, x + 16, y + 16), outline=COLORS[key], width=3)
        draw.text((x + 22, y), label, fill=COLORS["text"], font=f_body)
        x += round(wlab) + 10
    draw.text(
        (PAD + panel_px - draw.textlength(gsrc, font=f_small), y + _BODY_PT + 8),
        gsrc,
        fill=COLORS["muted"],
        font=f_small,
    )

    # -- step list ----------------------------------------------------------------------------
    y = HEADER_H + panel_px + PAD + LEGEND_H
    for s in steps:
        ok = bool(s.valid)
        tool = s.tool or "invalid"
        text = f"{s.turn:>2}  {tool}  {_fmt_args(tool, _args(s))}"
        if s.view_id:
            text += f"  -> {s.view_id}"
        if not ok:
            text += f"  INVALID: {s.error}"
        color = COLORS["text"] if ok else COLORS["invalid"]
        draw.text((PAD, y), _clip_text(draw, text, f_small, panel_px), fill=color, font=f_small)
        y += STEP_H

    # -- strip of views -----------------------------------------------------------------------
    x_strip = 2 * PAD + panel_px
    for i, v in enumerate(strip):
        r, c = divmod(i, STRIP_COLS)
        x0 = x_strip + c * (thumb_px + PAD)
        y0 = HEADER_H + r * (thumb_px + CAPTION_H + PAD)
        vi = v.image.convert("RGB")
        scale = thumb_px / max(vi.size)
        tw, th = max(1, round(vi.size[0] * scale)), max(1, round(vi.size[1] * scale))
        ox, oy = x0 + (thumb_px - tw) // 2, y0 + (thumb_px - th) // 2
        img.paste(vi.resize((tw, th), Image.Resampling.LANCZOS), (ox, oy))
        if v.transform is not None:  # BEV zoom: GT and prediction in this view too
            tp = _Panel(v.transform, vi.size, ox, oy, max(tw, th))
            tclip = (ox, oy, ox + tw, oy + th)
            if tgt is not None:
                _rect(draw, tp.box(tgt), COLORS["target"], 4, tclip)
            if pred is not None:
                _rect(draw, tp.box(pred), COLORS["pred"], 2, tclip)
        draw.rectangle((ox - 1, oy - 1, ox + tw, oy + th), outline=COLORS[v.kind], width=2)
        step = by_view.get(v.view_id)
        tool = (step.tool or "invalid") if step is not None else v.kind
        line1 = f"turn {v.turn}  {tool} -> {v.view_id}"
        args = _fmt_args(tool, _args(step)) if step is not None else ""
        yc = y0 + thumb_px + 4
        draw.text(
            (x0, yc), _clip_text(draw, line1, f_small, thumb_px), fill=COLORS[v.kind], font=f_small
        )
        for line in _wrap(draw, args, f_small, thumb_px, 2) if args else ():
            yc += _SMALL_PT + 5
            draw.text((x0, yc), line, fill=COLORS["muted"], font=f_small)
    if not strip:
        draw.text(
            (x_strip, HEADER_H),
            "no zoom or oblique views",
            fill=COLORS["muted"],
            font=f_body,
        )
    return img


def _camera_mark(
    draw: ImageDraw.ImageDraw,
    panel: _Panel,
    world_box: NDArray[np.float64],
    az: float,
    clip: tuple[float, float, float, float],
) -> None:
    """A line from the region's centre towards the oblique camera (azimuth: degrees clockwise
    from north; 0 = camera north of the region), ending in a small circle."""
    b = np.asarray(world_box, dtype=np.float64)
    cx, cy = (b[0] + b[2]) / 2, (b[1] + b[3]) / 2
    reach = 0.5 * float(np.hypot(b[2] - b[0], b[3] - b[1])) + 1e-9
    a = math.radians(az)
    p0 = panel.point(cx, cy)
    p1 = panel.point(cx + reach * math.sin(a), cy + reach * math.cos(a))
    dx, dy = p1[0] - p0[0], p1[1] - p0[1]
    n = math.hypot(dx, dy) or 1.0
    ext = n + 14.0
    for k, (lo, hi) in enumerate(((clip[0] + 5, clip[2] - 6), (clip[1] + 5, clip[3] - 6))):
        d = (dx, dy)[k] / n
        if d:  # shorten so the mark stays inside the panel
            p = p0[k]
            ext = min(ext, max((hi - p) / d if d > 0 else (lo - p) / d, 0.0))
    end = (p0[0] + dx / n * ext, p0[1] + dy / n * ext)
    color = COLORS["oblique"]
    draw.line((p0, end), fill=color, width=2)
    draw.ellipse((end[0] - 4, end[1] - 4, end[0] + 4, end[1] + 4), outline=color, width=2)
