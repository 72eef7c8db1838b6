"""Numbered marks over the scene's instance proposals (Set-of-Mark prompting).

With ``env.marks.enabled``, every view the agent receives carries the scene's proposals
(:mod:`urbex.scene.proposals`, computed from the points alone) that lie under it as numbered
marks: drawn on the image where legible (a box outline and the mark's number), and — for tool
views — listed in the tool text with the mark's class and its box in the view's 0–1000 frame.
An answer may then name a mark (``{"mark": 7}``) instead of writing a box: its boxes and points
are the proposal's own. A mark counts as *shown* once a view the agent received drew or listed
it; naming any other mark is an invalid turn.

Frames
------
* ``box_view``: view units 0–1000 of the view (x right, y down), clipped to the view.
* Proposal boxes: world metres (BEV ``[x_min, y_min, x_max, y_max]``, z range).
* Drawing: view pixels of the view's image.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from PIL import Image, ImageDraw, ImageFont

from urbex.classes import TARGET_CLASSES
from urbex.colour import colour_name, exposure_gain
from urbex.config_env import MarksParams
from urbex.geometry import gap_2d, iou_2d
from urbex.landmarks.table import footprint_bounds
from urbex.language.chat import chat_safe
from urbex.scene.proposals import ProposalSet

__all__ = [
    "MarkState",
    "ViewMark",
    "draw_marks",
    "landmark_footprints",
    "listing_order",
    "mark_names",
    "mark_words",
    "marks_text",
    "marks_under_bev",
    "marks_under_oblique",
    "relation_words",
    "shuffled_ids",
]

#: Outline and label colours (yellow on black reads on grass, asphalt and roofs alike).
_OUTLINE = (255, 230, 0)
_LABEL_BG = (0, 0, 0)
_LABEL_FG = (255, 230, 0)


@dataclass(frozen=True, slots=True, kw_only=True)
class ViewMark:
    """One mark as a view shows it.

    Attributes
    ----------
    mark_id : int
        The proposal's id (stable per scene).
    class_name : str
        The proposal's class (``Building``, ``Car``, ``Parking``, ``Ground``).
    box_view : tuple of 4 int
        Its box in the view, view units 0–1000, clipped to the view (for an oblique view: the
        image box of its projected 3D box).
    drawn : bool
        Its number is drawn on the view's image.
    words : tuple of str
        Attribute words (``env.marks.describe: attributes``), e.g. ``("red", "small")``.
    name : str
        The map landmark the proposal covers (:func:`mark_names`), ``""`` for none.
    relations : tuple of str
        Where it lies from the landmarks the episode queried (``env.marks.relate``), e.g.
        ``('west of "Clare Park"',)`` (:func:`relation_words`).
    """

    mark_id: int
    class_name: str
    box_view: tuple[int, int, int, int]
    drawn: bool = False
    words: tuple[str, ...] = ()
    name: str = ""
    relations: tuple[str, ...] = ()


@dataclass(slots=True)
class MarkState:
    """The marks of one episode: the scene's proposals, their map names and attribute words,
    the ids the agent sees, and those shown so far.

    The agent sees each proposal under its ``mark_id`` (stable per scene), unless the episode
    shuffles them (``to_display``: scene id → the id shown; SFT's augmentation, so that a model
    learns to copy the ids it reads rather than remember a training scene's) or numbers them
    itself (``env.marks.numbering: episode``: 1, 2, 3 … in the order its views first show
    them, :meth:`number`; the shuffle is then unused). ``shown`` holds ids as the agent sees
    them.
    """

    proposals: ProposalSet
    params: MarksParams
    shown: set[int] = field(default_factory=set)
    words: dict[int, tuple[str, ...]] = field(default_factory=dict)
    names: dict[int, str] = field(default_factory=dict)
    to_display: dict[int, int] | None = None
    anchors: list[tuple[str, NDArray[np.float64]]] = field(default_factory=list)
    _to_scene: dict[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.params.numbering == "episode":
            self.to_display = {}
        if self.to_display is not None:
            self._to_scene = {d: s for s, d in self.to_display.items()}

    @property
    def episode_numbering(self) -> bool:
        """Ids are numbered per episode, as first shown (``env.marks.numbering: episode``)."""
        return self.params.numbering == "episode"

    def display(self, mark_id: int) -> int:
        """The id the agent sees for the scene's ``mark_id`` (``KeyError``: with episode
        numbering, a mark no view has numbered yet; :meth:`displayed` asks without raising)."""
        return mark_id if self.to_display is None else self.to_display[mark_id]

    def displayed(self, mark_id: int) -> int | None:
        """The id the agent sees for the scene's ``mark_id``; None when it has none yet."""
        return mark_id if self.to_display is None else self.to_display.get(mark_id)

    def number(self, mark_ids: Iterable[int]) -> dict[int, int]:
        """The id each scene ``mark_id`` would be seen under: with episode numbering its
        number when a view numbered it already, else the next free numbers in the order given
        (kept only once :meth:`commit` records them); otherwise the ids :meth:`display` gives."""
        if not self.episode_numbering:
            return {int(m): self.display(int(m)) for m in mark_ids}
        assert self.to_display is not None
        out: dict[int, int] = {}
        nxt = max(self.to_display.values(), default=0) + 1
        for m in (int(v) for v in mark_ids):
            if m in out:
                continue
            known = self.to_display.get(m)
            if known is None:
                known, nxt = nxt, nxt + 1
            out[m] = known
        return out

    def commit(self, ids: dict[int, int]) -> None:
        """Keep ``ids`` (scene id → id shown, from :meth:`number`) for the rest of the episode
        (episode numbering; a no-op otherwise)."""
        if not self.episode_numbering:
            return
        assert self.to_display is not None
        for m, d in ids.items():
            if self.to_display.setdefault(m, d) != d or self._to_scene.setdefault(d, m) != m:
                raise ValueError(f"mark {m}: numbered {self.to_display[m]}, asked to show as {d}")

    def scene(self, shown_id: int) -> int:
        """The scene's ``mark_id`` of an id the agent saw (``KeyError``: no such mark)."""
        if self.to_display is None:
            self.proposals.row(shown_id)
            return shown_id
        return self._to_scene[shown_id]

    def describe(
        self, marks: Iterable[ViewMark], ids: dict[int, int] | None = None
    ) -> list[ViewMark]:
        """``marks`` (scene ids) as the agent sees them: its ids (``ids``: scene id → the id
        to show, from :meth:`number`; default :meth:`display`), with their map names and
        (``describe: attributes``) attribute words."""
        attrs = self.params.describe == "attributes"
        relate = self.params.relate and self.anchors and self.params.describe != "none"
        return [
            replace(
                m,
                mark_id=self.display(m.mark_id) if ids is None else ids[m.mark_id],
                name=self.names.get(m.mark_id, ""),
                words=self.words.get(m.mark_id, ()) if attrs else (),
                relations=self._relations(m.mark_id) if relate else (),
            )
            for m in marks
        ]

    def _relations(self, mark_id: int) -> tuple[str, ...]:
        box = self.proposals.box_2d_m[self.proposals.row(mark_id)]
        mine = self.names.get(mark_id, "")
        out: list[str] = []
        for name, anchor in self.anchors:
            if name != mine:  # the landmark's own mark carries its name already
                out += relation_words(box, anchor, name)
        return tuple(out)

    def label(self, mark_id: int | None) -> int | None:
        """How a picture names the scene's ``mark_id``: the id the agent saw, or (a mark no view
        numbered, such as a snapped box's under episode numbering) its scene id."""
        if mark_id is None:
            return None
        shown = self.displayed(int(mark_id))
        return int(mark_id) if shown is None else shown

    def add_anchor(self, name: str, box_m: ArrayLike) -> None:
        """A landmark the episode queried (``box_m``: its footprint, or its point as a zero-size
        box, world metres): later listings relate their marks to the last
        :data:`MAX_ANCHORS` (``env.marks.relate``)."""
        self.anchors = [a for a in self.anchors if a[0] != name]
        self.anchors.append((name, np.asarray(box_m, dtype=np.float64).reshape(4)))
        del self.anchors[:-MAX_ANCHORS]

    def show(self, marks: Iterable[ViewMark]) -> None:
        """Record the marks a view the agent received drew or listed."""
        self.shown.update(m.mark_id for m in marks)


#: Landmarks a listing relates its marks to (``env.marks.relate``): the most recently queried.
MAX_ANCHORS = 2
#: A mark is ``next to`` a landmark within this BEV gap, metres.
NEXT_TO_M = 6.0


def relation_words(
    box_m: NDArray[np.float64], anchor_m: NDArray[np.float64], name: str
) -> list[str]:
    """Where a mark lies from a landmark, as a description says it: the compass side of the
    larger separation of their centres (world metres, x east, y north; north up on the map),
    preceded by ``next to`` when their BEV gap is at most :data:`NEXT_TO_M`.

    >>> relation_words(np.array([0.0, 0, 4, 2]), np.array([10.0, -5, 30, 5]), "Clare Park")
    ['next to "Clare Park"', 'west of "Clare Park"']
    >>> relation_words(np.array([0.0, 40, 4, 42]), np.array([0.0, 0, 4, 4]), "Mill Road")
    ['north of "Mill Road"']
    """
    box, anchor = np.asarray(box_m, np.float64), np.asarray(anchor_m, np.float64)
    dx, dy = (box[:2] + box[2:] - anchor[:2] - anchor[2:]) / 2
    side = (
        ("east" if dx >= 0 else "west") if abs(dx) >= abs(dy) else ("north" if dy >= 0 else "south")
    )
    label = f'"{chat_safe(name)}"'
    near = float(gap_2d(box, anchor)) <= NEXT_TO_M
    return [f"next to {label}"] * near + [f"{side} of {label}"]


def _clip_units(b: NDArray[np.float64]) -> tuple[int, int, int, int]:
    c = np.clip(np.rint(b), 0, 1000).astype(int).tolist()
    return (c[0], c[1], c[2], c[3])


def _nearest_first(
    centres: NDArray[np.float64], classes: NDArray[np.str_], limit: int | None
) -> NDArray[np.int64]:
    """Rows nearest the view's centre first (centres in view units; ties: the lower row, i.e.
    the lower mark id), at most ``limit`` of each class (None: all)."""
    d = np.hypot(centres[:, 0] - 500.0, centres[:, 1] - 500.0)
    order = np.argsort(d, kind="stable")
    if limit is None:
        return order
    rank = np.zeros(len(order), np.int64)
    seen: dict[str, int] = {}
    for i in order.tolist():
        seen[classes[i]] = rank[i] = seen.get(classes[i], 0) + 1
    return order[rank[order] <= limit]


def marks_under_bev(
    proposals: ProposalSet,
    world_box_m: NDArray[np.float64],
    from_world_box: Any,
    *,
    limit: int | None,
) -> list[ViewMark]:
    """The marks of a BEV view: proposals whose box overlaps the view's ``world_box_m``.

    Parameters
    ----------
    proposals
        The scene's proposals (world metres).
    world_box_m : ndarray, shape (4,)
        The view's region, world metres.
    from_world_box : callable
        World BEV boxes ``(K, 4)`` (m) → view units ``(K, 4)`` (the view's
        :meth:`EpisodeView.from_world_box`).
    limit
        Most marks of each class returned (those nearest the view's centre;
        ``env.marks.max_listed``); None: all.

    Returns
    -------
    list of ViewMark
        From the view's centre outwards (nearest first), not yet drawn.
    """
    b = proposals.box_2d_m
    w = np.asarray(world_box_m, dtype=np.float64)
    hit = np.flatnonzero((b[:, 2] > w[0]) & (b[:, 0] < w[2]) & (b[:, 3] > w[1]) & (b[:, 1] < w[3]))
    if hit.size == 0:
        return []
    units = np.clip(np.asarray(from_world_box(b[hit]), dtype=np.float64).reshape(-1, 4), 0, 1000)
    centres = (units[:, :2] + units[:, 2:]) / 2  # of the part inside the view, as listed
    rows = _nearest_first(centres, proposals.class_name[hit], limit)
    return [
        ViewMark(
            mark_id=int(proposals.mark_id[hit[r]]),
            class_name=str(proposals.class_name[hit[r]]),
            box_view=_clip_units(units[r]),
        )
        for r in rows.tolist()
    ]


def marks_under_oblique(
    proposals: ProposalSet, world_box_m: NDArray[np.float64], camera: Any, *, limit: int
) -> list[ViewMark]:
    """The marks of an oblique view: proposals overlapping the rendered region whose 3D box
    projects into the image (``camera``: :class:`urbex.scene.oblique.Camera`); ``box_view`` is
    the image box of the projected 3D box corners, in view units."""
    b = proposals.box_2d_m
    w = np.asarray(world_box_m, dtype=np.float64)
    hit = np.flatnonzero((b[:, 2] > w[0]) & (b[:, 0] < w[2]) & (b[:, 3] > w[1]) & (b[:, 1] < w[3]))
    out_units, keep = [], []
    for i in hit.tolist():
        x0, y0, z0, x1, y1, z1 = proposals.box_3d_m(i)
        corners = np.array([[x, y, z] for x in (x0, x1) for y in (y0, y1) for z in (z0, z1)])
        u, v, depth = camera.project(corners)
        if not np.all(depth > 0):
            continue
        box = np.array(
            [u.min() / camera.width, v.min() / camera.height,
             u.max() / camera.width, v.max() / camera.height]
        ) * 1000.0  # fmt: skip
        if box[2] <= 0 or box[0] >= 1000 or box[3] <= 0 or box[1] >= 1000:
            continue
        out_units.append(box)
        keep.append(i)
    if not keep:
        return []
    units = np.clip(np.stack(out_units), 0, 1000)
    rows = _nearest_first((units[:, :2] + units[:, 2:]) / 2, proposals.class_name[keep], limit)
    return [
        ViewMark(
            mark_id=int(proposals.mark_id[keep[r]]),
            class_name=str(proposals.class_name[keep[r]]),
            box_view=_clip_units(units[r]),
        )
        for r in rows.tolist()
    ]


@lru_cache(maxsize=16)
def _font(px: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.load_default(size=px)


def _font_px(size: tuple[int, int]) -> int:
    """Label font size for an image of ``size`` (width, height): legible, never huge."""
    return int(np.clip(round(min(size) / 48), 8, 18))


def draw_marks(
    image: Image.Image, marks: Sequence[ViewMark], params: MarksParams
) -> tuple[Image.Image, list[ViewMark]]:
    """Draw the legible marks on a copy of ``image``.

    A mark is drawn — its box outlined and its number on a filled tag at the box's top-left
    corner — when the box is at least ``params.min_label_px`` wide or tall in pixels and its tag
    does not cover a tag already placed (larger marks are placed first). Marks not drawn stay
    listed in the tool text.

    Returns
    -------
    image : PIL.Image.Image
        A new RGB image of the same size.
    marks : list of ViewMark
        ``marks`` with ``drawn`` set.
    """
    out = image.convert("RGB").copy()
    if not marks:
        return out, list(marks)
    w, h = out.size
    draw = ImageDraw.Draw(out)
    font = _font(_font_px((w, h)))
    px = [
        (m.box_view[0] * w / 1000, m.box_view[1] * h / 1000,
         m.box_view[2] * w / 1000, m.box_view[3] * h / 1000)
        for m in marks
    ]  # fmt: skip
    size = [max(b[2] - b[0], b[3] - b[1]) for b in px]
    placed: list[tuple[float, float, float, float]] = []
    drawn: set[int] = set()
    for i in sorted(range(len(marks)), key=lambda k: -size[k]):
        if size[i] < params.min_label_px:
            continue
        label = str(marks[i].mark_id)
        x0, y0, x1, y1 = px[i]
        tb = draw.textbbox((0, 0), label, font=font)
        tw, th = tb[2] - tb[0] + 2, tb[3] - tb[1] + 2
        tx, ty = min(max(x0, 0), w - tw), min(max(y0, 0), h - th)
        tag = (tx, ty, tx + tw, ty + th)
        if any(tag[0] < p[2] and p[0] < tag[2] and tag[1] < p[3] and p[1] < tag[3] for p in placed):
            continue
        draw.rectangle((x0, y0, max(x1 - 1, x0), max(y1 - 1, y0)), outline=_OUTLINE, width=1)
        draw.rectangle(tag, fill=_LABEL_BG)
        draw.text((tx + 1 - tb[0], ty + 1 - tb[1]), label, fill=_LABEL_FG, font=font)
        placed.append(tag)
        drawn.add(i)
    return out, [replace(m, drawn=k in drawn) for k, m in enumerate(marks)]


def mark_words(proposals: ProposalSet) -> dict[int, tuple[str, ...]]:
    """Short attribute words per mark, from its points (``env.marks.describe: attributes``):
    its size against the scene's proposals of its class (``large`` above the upper quartile of
    BEV area, ``small`` below the lower), ``tall`` for the upper quartile of height, and its
    colour name (:func:`urbex.colour.colour_name`, after the scene's exposure gain)."""
    out: dict[int, tuple[str, ...]] = {}
    colours = colour_name(proposals.rgb, gain=exposure_gain(proposals.rgb))
    area = (proposals.box_2d_m[:, 2] - proposals.box_2d_m[:, 0]) * (
        proposals.box_2d_m[:, 3] - proposals.box_2d_m[:, 1]
    )
    height = proposals.z_range_m[:, 1] - proposals.z_range_m[:, 0]
    for cls in np.unique(proposals.class_name).tolist():
        rows = np.flatnonzero(proposals.class_name == cls)
        a_lo, a_hi = np.quantile(area[rows], [0.25, 0.75]) if rows.size >= 4 else (-1.0, np.inf)
        h_hi = np.quantile(height[rows], 0.75) if rows.size >= 4 else np.inf
        for r in rows.tolist():
            words: list[str] = []
            if colours[r]:
                words.append(colours[r])
            if area[r] > a_hi:
                words.append("large")
            elif area[r] < a_lo:
                words.append("small")
            if cls == "Building" and height[r] > h_hi:
                words.append("tall")
            out[int(proposals.mark_id[r])] = tuple(words)
    return out


def shuffled_ids(mark_ids: NDArray[Any], seed: int, query_id: str = "") -> dict[int, int]:
    """A seeded one-to-one map of a scene's mark ids onto ids drawn from ``1..max(2K, 99)``, per
    episode: seeded by ``seed`` and ``query_id`` (stable across processes).

    >>> m = shuffled_ids(np.arange(1, 6), seed=0)
    >>> sorted(m) == [1, 2, 3, 4, 5] and len(set(m.values())) == 5 and max(m.values()) <= 99
    True
    """
    import zlib

    seed = (int(seed) * 1_000_003 + zlib.crc32(query_id.encode())) % (2**31) if query_id else seed
    ids = [int(v) for v in np.asarray(mark_ids).tolist()]
    pool = np.arange(1, max(2 * len(ids), 99) + 1)
    drawn = np.random.default_rng([seed, 4242]).choice(pool, size=len(ids), replace=False)
    return dict(zip(ids, (int(v) for v in drawn), strict=True))


def landmark_footprints(index: Any, scene_id: str) -> list[tuple[str, NDArray[np.float64]]]:
    """``(name, footprint BEV box)`` (world m) of a scene's map landmarks that have an area
    (``index``: a :class:`urbex.landmarks.LandmarkIndex` or None)."""
    if index is None:
        return []
    table = index.table
    if "scene_id" in table.columns:
        table = table.filter(table["scene_id"] == scene_id)
    out = []
    for row in table.iter_rows(named=True):
        b = footprint_bounds(row, require_area=True)
        if b is not None:
            out.append((str(row["name"]), np.asarray(b, dtype=np.float64)))
    return out


def mark_names(
    boxes_m: NDArray[np.float64], footprints: Sequence[tuple[str, NDArray[np.float64]]]
) -> list[str]:
    """The map name each box takes: the landmark footprint it covers (BEV box IoU ≥ 0.5, the
    best one), as an instance table names its landmark instances; ``""`` for none.

    >>> mark_names(np.array([[0.0, 0, 10, 10], [20, 0, 24, 2]]), [("Merton Hall", np.array([1.0, 0, 10, 10]))])
    ['Merton Hall', '']
    """
    boxes = np.asarray(boxes_m, dtype=np.float64).reshape(-1, 4)
    if not footprints or len(boxes) == 0:
        return [""] * len(boxes)
    lm = np.stack([np.asarray(b, dtype=np.float64) for _, b in footprints])
    iou = np.asarray(iou_2d(boxes[:, None, :], lm[None, :, :])).reshape(len(boxes), len(lm))
    best = iou.argmax(axis=1)  # the first of equal bests, in the footprints' order
    return [footprints[j][0] if iou[i, j] >= 0.5 else "" for i, j in enumerate(best.tolist())]


def _class_order(marks: Sequence[ViewMark]) -> list[str]:
    """The classes a listing's lines follow: :data:`urbex.classes.TARGET_CLASSES`, then others."""
    return [*TARGET_CLASSES, *sorted({m.class_name for m in marks} - set(TARGET_CLASSES))]


def listing_order(marks: Sequence[ViewMark]) -> list[ViewMark]:
    """``marks`` in the order :func:`marks_text` lists them: by class, each class in the order
    given (nearest the view's centre first) — the order episode numbering numbers them in.

    >>> m = [ViewMark(mark_id=7, class_name="Car", box_view=(0, 0, 1, 1)),
    ...      ViewMark(mark_id=3, class_name="Building", box_view=(0, 0, 1, 1))]
    >>> [v.mark_id for v in listing_order(m)]
    [3, 7]
    """
    rank = {c: i for i, c in enumerate(_class_order(marks))}
    return sorted(marks, key=lambda m: rank[m.class_name])


_CLASS_WORD = {"Building": "building", "Car": "car", "Parking": "parking", "Ground": "ground"}


def marks_text(
    view_id: str, marks: Sequence[ViewMark], describe: str, *, layout: str = "by_class"
) -> str:
    """The tool text's list of a view's marks: one line per class (``describe`` ``class`` or
    ``attributes``; classes in :data:`urbex.classes.TARGET_CLASSES` order), each class's marks in
    the order given (from the view's centre outwards, as :func:`marks_under_bev` returns them),
    ``id [map name] [words] [x1, y1, x2, y2]`` separated by ``;``. With ``describe: none`` one
    line holds every mark, ``id [x1, y1, x2, y2]``. ``layout="id_last"`` (``env.marks.layout``)
    writes one line per mark in the same order, ``[x1, y1, x2, y2] [map name] [words] class =
    id``: the id right after what describes it, the shape a copying attention head reads.

    >>> m = [ViewMark(mark_id=7, class_name="Car", box_view=(120, 340, 160, 380), words=("red",)),
    ...      ViewMark(mark_id=3, class_name="Building", box_view=(0, 0, 500, 500), name="Merton Hall"),
    ...      ViewMark(mark_id=9, class_name="Car", box_view=(600, 340, 640, 380))]
    >>> print(marks_text("zoom_1", m, "class"))
    Marks in "zoom_1" by class, each nearest its centre first (id [x1, y1, x2, y2]):
    building: 3 "Merton Hall" [0, 0, 500, 500]
    car: 7 [120, 340, 160, 380]; 9 [600, 340, 640, 380]
    >>> print(marks_text("zoom_1", m, "attributes").splitlines()[2])
    car: 7 red [120, 340, 160, 380]; 9 [600, 340, 640, 380]
    >>> print(marks_text("zoom_1", m, "none").splitlines()[1])
    7 [120, 340, 160, 380]; 3 [0, 0, 500, 500]; 9 [600, 340, 640, 380]
    >>> print(marks_text("zoom_1", m, "attributes", layout="id_last"))
    Marks in "zoom_1", each class nearest its centre first ([x1, y1, x2, y2] words class = id):
    [0, 0, 500, 500] "Merton Hall" building = 3
    [120, 340, 160, 380] red car = 7
    [600, 340, 640, 380] car = 9
    >>> marks_text("zoom_1", [], "class")
    'Marks in "zoom_1": none.'
    """
    if not marks:
        return f'Marks in "{view_id}": none.'

    def entry(m: ViewMark) -> str:
        box = f"[{m.box_view[0]}, {m.box_view[1]}, {m.box_view[2]}, {m.box_view[3]}]"
        words = [f'"{chat_safe(m.name)}"'] if m.name and describe != "none" else []
        if describe == "attributes":
            words += list(m.words)
        return " ".join([str(m.mark_id), *words, box, *m.relations])

    order = _class_order(marks)
    if layout == "id_last":
        lines = [
            f'Marks in "{view_id}", each class nearest its centre first '
            "([x1, y1, x2, y2] words class = id):"
        ]
        for cls in order:
            for m in marks:
                if m.class_name == cls:
                    box = f"[{m.box_view[0]}, {m.box_view[1]}, {m.box_view[2]}, {m.box_view[3]}]"
                    words = [f'"{chat_safe(m.name)}"'] if m.name and describe != "none" else []
                    if describe == "attributes":
                        words += list(m.words)
                    if describe != "none":
                        words.append(_CLASS_WORD.get(cls, cls.lower()))
                    lines.append(" ".join([box, *words, *m.relations, "=", str(m.mark_id)]))
        return "\n".join(lines)
    if describe == "none":
        head = f'Marks in "{view_id}", nearest its centre first (id [x1, y1, x2, y2]):'
        return head + "\n" + "; ".join(entry(m) for m in marks)
    lines = [f'Marks in "{view_id}" by class, each nearest its centre first (id [x1, y1, x2, y2]):']
    for cls in order:
        mine = [entry(m) for m in marks if m.class_name == cls]
        if mine:
            lines.append(f"{_CLASS_WORD.get(cls, cls.lower())}: " + "; ".join(mine))
    return "\n".join(lines)
