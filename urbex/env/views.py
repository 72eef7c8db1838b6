"""The views of one episode: ids, kinds, images and view↔world transforms.

Frames
------
* **View pixels**: continuous ``(col, row)`` of a view image, ``(0, 0)`` its top-left corner.
* **View units**: what the agent writes, ``[0, 1000]`` normalised to the view's width (x) and
  height (y): ``u = col / W · 1000``, ``v = row / H · 1000``.
* **World**: the scene's metric frame (metres, z up). A BEV view (``global``, ``zoom_N``)
  carries an :class:`~urbex.geometry.Affine` from view pixels to world XY; an oblique view has
  none (it is a perspective render, evidence only) but remembers the world region it shows.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from PIL import Image

from urbex.config import EnvParams, env_params
from urbex.env.marks import ViewMark
from urbex.geometry import Affine

__all__ = [
    "EpisodeView",
    "GlobalViews",
    "ViewKind",
    "ViewRegistry",
    "expand_to_aspect",
    "make_global_view",
    "view_image",
]

ViewKind = Literal["global", "zoom", "oblique"]
_KINDS = ("global", "zoom", "oblique")


def expand_to_aspect(
    box: ArrayLike, aspect: float, *, min_extent: float = 0.0
) -> NDArray[np.float64]:
    """Grow a BEV box about its centre until ``width / height == aspect`` and both ≥ ``min_extent``.

    Parameters
    ----------
    box : array_like, shape (4,)
        ``[x_min, y_min, x_max, y_max]``, world metres (any planar frame).
    aspect : float
        Target width / height (e.g. image ``w / h``), > 0.
    min_extent : float
        Smallest side after expansion, same units as ``box``.

    Returns
    -------
    ndarray, shape (4,), float64
        The expanded box; it always contains ``box``.

    Examples
    --------
    >>> expand_to_aspect([0, 0, 4, 2], 1.0).tolist()
    [0.0, -1.0, 4.0, 3.0]
    >>> expand_to_aspect([0, 0, 1, 1], 2.0, min_extent=4).tolist()
    [-3.5, -1.5, 4.5, 2.5]
    """
    if not aspect > 0:
        raise ValueError(f"aspect: expected > 0, got {aspect}")
    b = np.asarray(box, dtype=np.float64)
    cx, cy = (b[0] + b[2]) / 2, (b[1] + b[3]) / 2
    w, h = max(b[2] - b[0], 0.0), max(b[3] - b[1], 0.0)
    w, h = max(w, h * aspect), max(h, w / aspect)
    if min(w, h) < min_extent:
        s = min_extent / max(min(w, h), 1e-12)
        w, h = w * s, h * s
        if min(w, h) < min_extent:  # degenerate input
            w, h = max(min_extent * aspect, min_extent), max(min_extent / aspect, min_extent)
    return np.array([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2])


@dataclass(frozen=True, slots=True, kw_only=True)
class EpisodeView:
    """One view the agent has seen.

    Attributes
    ----------
    view_id : str
        ``"global"``, ``"zoom_N"`` or ``"oblique_N"`` (N = creation order in the episode).
    kind : {"global", "zoom", "oblique"}
    image : PIL.Image.Image
        RGB, the fixed size of its kind (``params.env``).
    world_box : ndarray, shape (4,), float64
        BEV region the view covers (BEV kinds) or was rendered from (oblique), world metres.
    transform : Affine or None
        View pixels → world XY (metres); None for oblique views.
    parent : str or None
        The view the box that created this view was drawn in.
    turn : int
        The turn that created it (0 for the global view).
    camera : object or None
        The oblique camera (renderer-specific), for diagnostics.
    marks : tuple of ViewMark
        The numbered marks this view shows (``env.marks``; :mod:`urbex.env.marks`): drawn on
        ``image`` or listed in the tool text that came with it. Empty without marks.
    """

    view_id: str
    kind: ViewKind
    image: Image.Image
    world_box: NDArray[np.float64]
    transform: Affine | None = None
    parent: str | None = None
    turn: int = 0
    camera: Any = None
    marks: tuple[ViewMark, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"EpisodeView.kind: expected one of {_KINDS}, got {self.kind!r}")
        wb = np.asarray(self.world_box, dtype=np.float64)
        if wb.shape != (4,) or not np.all(np.isfinite(wb)):
            raise ValueError(f"EpisodeView.world_box: expected 4 finite numbers, got {wb!r}")
        object.__setattr__(self, "world_box", wb)
        if (self.kind == "oblique") != (self.transform is None):
            raise ValueError(
                "EpisodeView.transform: BEV views (global/zoom) need an Affine, oblique views None; "
                f"got kind={self.kind!r}, transform={self.transform!r}"
            )

    @property
    def size(self) -> tuple[int, int]:
        """Image ``(width, height)`` in pixels."""
        return self.image.size

    @property
    def is_bev(self) -> bool:
        return self.kind != "oblique"

    def _require_bev(self) -> Affine:
        if self.transform is None:
            raise ValueError(f"view {self.view_id!r} is oblique: it has no view↔world transform")
        return self.transform

    def to_world_box(self, bbox_2d: ArrayLike) -> NDArray[np.float64]:
        """View units ``[x1, y1, x2, y2]`` (0–1000) → world BEV box ``[x_min, y_min, x_max, y_max]`` (m)."""
        t = self._require_bev()
        w, h = self.size
        b = np.asarray(bbox_2d, dtype=np.float64) * np.array([w, h, w, h]) / 1000.0
        return t.box_to_world(b)

    def from_world_box(self, box: ArrayLike) -> NDArray[np.float64]:
        """World BEV box (m) → view units ``[x1, y1, x2, y2]`` (unclipped floats, may lie outside 0–1000)."""
        t = self._require_bev()
        w, h = self.size
        return t.box_to_pixel(box) * 1000.0 / np.array([w, h, w, h])

    def world_to_units(self, x: ArrayLike, y: ArrayLike) -> tuple[NDArray, NDArray]:
        """World XY (m) → view units ``(u, v)`` (unclipped)."""
        t = self._require_bev()
        w, h = self.size
        col, row = t.inverse().apply(x, y)
        return col * 1000.0 / w, row * 1000.0 / h

    def center_world(self) -> NDArray[np.float64]:
        """Centre of ``world_box``, world XY metres, shape (2,)."""
        return (self.world_box[:2] + self.world_box[2:]) / 2


class ViewRegistry:
    """Every view of one episode, in creation order; ids are never reused.

    >>> reg = ViewRegistry()
    >>> reg.next_id("zoom"), reg.next_id("oblique")
    ('zoom_1', 'oblique_1')
    """

    __slots__ = ("_counter", "_views")

    def __init__(self) -> None:
        self._views: dict[str, EpisodeView] = {}
        self._counter = 0

    def next_id(self, kind: ViewKind) -> str:
        """The id the next view of ``kind`` will get (``global`` for the global view)."""
        if kind == "global":
            return "global"
        return f"{kind}_{self._counter + 1}"

    def add(self, view: EpisodeView) -> EpisodeView:
        """Register a view built with :meth:`next_id`; raises ``ValueError`` on a wrong/duplicate id."""
        if view.view_id in self._views:
            raise ValueError(f"ViewRegistry.add: view id {view.view_id!r} already exists")
        expected = self.next_id(view.kind)
        if view.view_id != expected:
            raise ValueError(
                f"ViewRegistry.add: expected view id {expected!r}, got {view.view_id!r}"
            )
        if view.kind != "global":
            self._counter += 1
        self._views[view.view_id] = view
        return view

    def __getitem__(self, view_id: str) -> EpisodeView:
        return self._views[view_id]

    def __contains__(self, view_id: object) -> bool:
        return view_id in self._views

    def __iter__(self) -> Iterator[EpisodeView]:
        return iter(self._views.values())

    def __len__(self) -> int:
        return len(self._views)

    @property
    def ids(self) -> list[str]:
        """All view ids, in creation order."""
        return list(self._views)

    @property
    def oblique_ids(self) -> frozenset[str]:
        return frozenset(k for k, v in self._views.items() if v.kind == "oblique")

    def last(self, kind: ViewKind) -> EpisodeView | None:
        """The most recent view of ``kind`` (None if there is none)."""
        for v in reversed(self._views.values()):
            if v.kind == kind:
                return v
        return None


def _scene_box2d(scene: Any) -> NDArray[np.float64]:
    """World BEV box of the whole full-resolution raster (≥ 1 px per axis, unlike the points'
    bounds, which have zero extent for a single point); the points' bounds without a raster."""
    t, shape = getattr(scene, "bev_transform", None), getattr(scene, "bev_shape", None)
    if t is not None and shape is not None:
        h, w = shape
        return np.asarray(t.box_to_world([0.0, 0.0, float(w), float(h)]), dtype=np.float64)
    b = np.asarray(scene.bounds, dtype=np.float64).reshape(-1)
    return b[[0, 1, 3, 4]] if b.size == 6 else b[:4]


def make_global_view(scene: Any, params: EnvParams | None = None) -> EpisodeView:
    """The fixed-size ``global`` view of a scene: its whole BEV raster, north up, letterboxed to the
    image aspect (``params.global_view_size``) and resampled from the full-resolution raster.
    """
    p = env_params(params)
    w, h = p.global_view_size
    world = expand_to_aspect(_scene_box2d(scene), w / h)
    bev = scene.bev_window(world, out_size=(w, h))
    return EpisodeView(
        view_id="global",
        kind="global",
        image=view_image(bev.image, (w, h)),
        world_box=np.asarray(bev.world_box, dtype=np.float64),
        transform=bev.transform,
        parent=None,
        turn=0,
    )


class GlobalViews:
    """The ``global`` views of the most recent scenes, built once and shared by the
    environments of one run (:meth:`GroundingEnv.sibling`: episodes in flight in several
    threads, the slots of a lockstep batch); thread-safe.

    A view depends only on the scene and ``params.env``, so sharing it changes no episode:
    every environment would build the same one (an environment of its own builds it again,
    a 768 px view ~10 ms of CPU per scene, and the policy encodes its image again).

    Parameters
    ----------
    params : EnvParams
        ``global_view_size`` of every view built here (the sharing environments' params).
    maxsize : int
        Scenes kept (least recently used dropped first); an entry holds its scene, so the
        scene's identity cannot be reused by another scene while its view is kept.
    """

    def __init__(self, params: EnvParams, *, maxsize: int = 32) -> None:
        if maxsize < 1:
            raise ValueError(f"maxsize: expected >= 1, got {maxsize}")
        self.params = params
        self.maxsize = maxsize
        self._views: OrderedDict[tuple[str, int], tuple[Any, EpisodeView]] = OrderedDict()
        self._lock = threading.Lock()
        self._building: dict[tuple[str, int], threading.Lock] = {}

    def __call__(self, scene_id: str, scene: Any) -> EpisodeView:
        """The global view of ``scene`` (``scene_id``'s opened cache), built on first use."""
        key = (scene_id, id(scene))
        with self._lock:
            hit = self._views.get(key)
            if hit is not None:
                self._views.move_to_end(key)
                return hit[1]
            build = self._building.setdefault(key, threading.Lock())
        with build:  # one build per scene; hits on other scenes do not wait for it
            with self._lock:
                hit = self._views.get(key)
            view = hit[1] if hit is not None else make_global_view(scene, self.params)
            with self._lock:
                self._views[key] = (scene, view)
                self._views.move_to_end(key)
                while len(self._views) > self.maxsize:
                    self._views.popitem(last=False)
                if self._building.get(key) is build:
                    del self._building[key]
        return view


def view_image(image: Any, size: tuple[int, int]) -> Image.Image:
    """``image`` (a PIL image or an ``(H, W, 3)`` uint8 array) as an RGB PIL image of exactly
    ``size`` = ``(width, height)`` pixels: the fixed-size contract of every view (a scene renders
    at the asked size; anything else is resized).

    Raises
    ------
    ValueError
        An array that is not ``(H, W, 3)`` uint8.
    """
    if isinstance(image, Image.Image):
        img = image.convert("RGB") if image.mode != "RGB" else image
    else:
        arr = np.asarray(image)
        if arr.ndim != 3 or arr.shape[2] != 3 or arr.dtype != np.uint8:
            raise ValueError(f"expected an (H, W, 3) uint8 image, got {arr.shape} {arr.dtype}")
        img = Image.fromarray(np.ascontiguousarray(arr), "RGB")
    w, h = int(size[0]), int(size[1])
    return img if img.size == (w, h) else img.resize((w, h))
