"""The exports of :mod:`urbex.language`: type checkers read them here, and ``lazy_loader`` loads each
from its submodule on first use."""

from .parse import check_description, context_objects, map_regions, parse
from .records import MAP_SIDES, RELATIONS, ContextObject, Count, Mention, Ordinal, Parse

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
