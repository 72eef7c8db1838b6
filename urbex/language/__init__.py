"""Reading descriptions: the one parse every reader shares, and user text made chat-safe.

:func:`parse` reads a referring expression into a :class:`Parse` (target class, colours, sizes,
shape, counts, ordinal, landmark mentions with their relations). It stands beside
:mod:`urbex.landmarks` (whose fuzzy name finder it uses) and below everything that reads a
description (the lift, the rankers, the baselines, ``urbex parse``).
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
