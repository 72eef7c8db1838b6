"""Reading descriptions: the one parse every reader shares, and user text made chat-safe.

:func:`parse` reads a referring expression into a :class:`Parse` (target class, colours, sizes,
shape, counts, ordinal, landmark mentions with their relations). It stands beside
:mod:`urbex.landmarks` (whose fuzzy name finder it uses) and below everything that reads a
description (the lift, the rankers, the baselines, ``urbex parse``).
"""

from typing import TYPE_CHECKING

from urbex.lazy import lazy_exports

if TYPE_CHECKING:
    from urbex.language.parse import check_description, context_objects, map_regions, parse
    from urbex.language.records import (
        MAP_SIDES,
        RELATIONS,
        ContextObject,
        Count,
        Mention,
        Ordinal,
        Parse,
    )

__all__ = [
    "MAP_SIDES",
    "RELATIONS",
    "ContextObject",
    "Count",
    "Mention",
    "Ordinal",
    "Parse",
    "check_description",
    "context_objects",
    "map_regions",
    "parse",
]

__getattr__, __dir__ = lazy_exports(__name__, __file__)
