"""The exports of :mod:`urbex.scene`: type checkers read them here, and ``lazy_loader`` loads each
from its submodule on first use."""

from .build import build_scene_cache, cache_is_fresh, content_hash
from .cache import SceneCache, View
from .meta import CacheMeta
from .oblique import Camera, ObliqueRender, render_oblique

__all__ = [
    "CacheMeta",
    "Camera",
    "ObliqueRender",
    "SceneCache",
    "View",
    "build_scene_cache",
    "cache_is_fresh",
    "content_hash",
    "render_oblique",
]
