"""Scene caches for environments: opened on demand by scene id, the most recent kept."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from urbex.scene import SceneCache

__all__ = ["CachedSceneProvider", "SceneProvider"]

#: A callable scene_id → opened scene cache (``urbex.scene.SceneCache``).
SceneProvider = Callable[[str], Any]


class CachedSceneProvider:
    """Opens scene caches ``root/<scene_id>`` on demand and keeps the ``maxsize`` most recent.

    Parameters
    ----------
    root : path
        Directory holding one cache directory per scene (``assets/scenes``).
    maxsize : int
        Opened caches kept (least recently used dropped first).
    """

    def __init__(self, root: str | Path, *, maxsize: int = 8) -> None:
        if maxsize < 1:
            raise ValueError(f"maxsize: expected >= 1, got {maxsize}")
        self.root = Path(root)
        self.maxsize = maxsize
        self._open: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()  # environments of several threads share one provider

    def __call__(self, scene_id: str) -> Any:
        with self._lock:
            if scene_id in self._open:
                self._open.move_to_end(scene_id)
                return self._open[scene_id]

            cache = SceneCache.open(self.root / scene_id)
            self._open[scene_id] = cache
            while len(self._open) > self.maxsize:
                self._open.popitem(last=False)
            return cache
