"""Scene caches: spatially sorted points, full-resolution BEV rasters, views, oblique renders.

Build with :func:`build_scene_cache`, open with :meth:`SceneCache.open`. Frames are documented in
:mod:`urbex.scene.build` (world metres, cache frame, BEV pixels) and :mod:`urbex.scene.oblique`
(azimuth/elevation, camera frame).
"""

from typing import TYPE_CHECKING

from urbex.lazy import lazy_exports

if TYPE_CHECKING:
    from urbex.scene.build import build_scene_cache, cache_is_fresh, content_hash
    from urbex.scene.cache import SceneCache, View
    from urbex.scene.meta import CacheMeta
    from urbex.scene.oblique import Camera, ObliqueRender, render_oblique

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

__getattr__, __dir__ = lazy_exports(__name__, __file__)
