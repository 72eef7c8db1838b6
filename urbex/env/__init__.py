"""The interactive grounding environment: views, tools, action protocol, episodes, rewards.

Heavy dependencies (scene caches, trl, PIL) are imported lazily inside functions.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
