"""Scene caches: spatially sorted points, full-resolution BEV rasters, views, oblique renders.

Build with :func:`build_scene_cache`, open with :meth:`SceneCache.open`. Frames are documented in
:mod:`urbex.scene.build` (world metres, cache frame, BEV pixels) and :mod:`urbex.scene.oblique`
(azimuth/elevation, camera frame).
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
