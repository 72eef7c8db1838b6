"""The parse of a description as a record: :class:`Parse`, its :class:`Mention` s and :class:`Ordinal`.

Directions are in the **map frame** (the top-down view with north up): ``left_of`` is west,
``right_of`` east, ``behind`` north (up the map) and ``in_front_of`` south (down the map,
towards the reader); :attr:`Mention.bearing` and :attr:`Ordinal.bearing` give them as unit
vectors ``(east, north)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from urbex.classes import TARGET_CLASSES
from urbex.language.vocabulary import COLOUR_NAMES

__all__ = [
    "MAP_SIDES",
    "RELATIONS",
    "ContextObject",
    "Count",
    "Mention",
    "Ordinal",
    "Parse",
]

#: The relations a mention can stand in (the target *is* ``relation`` the landmark).
RELATIONS: tuple[str, ...] = (
    "on", "off", "corner", "between", "across_from", "next_to", "near", "behind", "in_front_of",
    "left_of", "right_of", "north_of", "south_of", "east_of", "west_of", "in", "at_end_of",
    "facing", "other",
)  # fmt: skip
#: Sides of the map frame an ordinal may count from.
MAP_SIDES: tuple[str, ...] = ("top", "bottom", "left", "right")
_COMPASS = ("north", "south", "east", "west")
_UNIT = {
    "north": (0.0, 1.0), "south": (0.0, -1.0), "east": (1.0, 0.0), "west": (-1.0, 0.0),
    "top": (0.0, 1.0), "bottom": (0.0, -1.0), "right": (1.0, 0.0), "left": (-1.0, 0.0),
    "behind": (0.0, 1.0), "in_front_of": (0.0, -1.0), "right_of": (1.0, 0.0),
    "left_of": (-1.0, 0.0), "north_of": (0.0, 1.0), "south_of": (0.0, -1.0),
    "east_of": (1.0, 0.0), "west_of": (-1.0, 0.0),
}  # fmt: skip
#: Words of a mention's text that say the description *names* the target ("called X").
_NAMING = frozenset({"called", "named", "known", "labelled", "labeled", "marked", "name"})
_APPOSITION = frozenset({",", ":", "is", "-"})
_CUES = frozenset({"this is", "it is", "its", "i mean", "the target is", "target is"})


def _unit(x: float, y: float) -> tuple[float, float]:
    n = math.hypot(x, y)
    return (round(x / n, 6), round(y / n, 6))


@dataclass(frozen=True, slots=True, kw_only=True)
class Mention:
    """A landmark the description names, and how the target relates to it.

    Attributes
    ----------
    name : str
        As in the ``landmark_names`` given to :func:`urbex.language.parse`.
    relation : str
        One of :data:`RELATIONS`: the target is ``relation`` the landmark (``near`` when no
        words say more).
    text : str
        The words of the description that expressed the relation (``""`` for a bare ``near``).
    """

    name: str
    relation: str
    text: str = ""

    def __post_init__(self) -> None:
        if self.relation not in RELATIONS:
            raise ValueError(
                f"Mention.relation: expected one of {RELATIONS}, got {self.relation!r}"
            )

    @property
    def bearing(self) -> tuple[float, float] | None:
        """Unit vector ``(east, north)`` from the landmark to the target for a directional
        relation (compass, or the map frame's left/right/behind/in front), or towards the end
        ``at_end_of`` names ("at the north end of"); else None. A diagonal written in the text
        ("north-east of") is kept.

        >>> Mention(name="X", relation="north_of", text="north-east of").bearing
        (0.707107, 0.707107)
        >>> Mention(name="X", relation="left_of", text="to the left of").bearing
        (-1.0, 0.0)
        >>> Mention(name="X", relation="at_end_of", text="at the top end of").bearing
        (0.0, 1.0)
        >>> Mention(name="X", relation="near").bearing, Mention(name="X", relation="at_end_of").bearing
        (None, None)
        """
        if self.relation not in _UNIT and self.relation != "at_end_of":
            return None
        words = self.text.lower().replace("-", " ").split()
        if self.relation in ("north_of", "south_of", "east_of", "west_of", "at_end_of"):
            x = y = 0.0
            for w in words:
                for c in _COMPASS:
                    if w.startswith(c) or (len(w) > 5 and c in w):
                        x, y = x + _UNIT[c][0], y + _UNIT[c][1]
            if x or y:
                return _unit(x, y)
        if self.relation == "at_end_of":
            return next((_UNIT[w] for w in words if w in MAP_SIDES), None)
        return _UNIT[self.relation]

    @property
    def names_target(self) -> bool:
        """The description names the target itself ("the building called X", "X, the red
        building", "This is X, a ..."): ``other`` with naming words, an apposition or a
        target cue."""
        if self.relation != "other":
            return False
        t = self.text.lower().replace("'", "").split()
        return bool(t) and (
            t[0] in _NAMING or self.text.strip() in _APPOSITION or " ".join(t) in _CUES
        )

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "relation": self.relation, "text": self.text}


@dataclass(frozen=True, slots=True, kw_only=True)
class Ordinal:
    """An ordinal, "the k-th from ...": ``from_`` is a compass end (``north`` …), a side of the
    map frame (:data:`MAP_SIDES`), ``corner``, a mentioned landmark's name, or None when the
    description does not say ("the second car on Mill Lane")."""

    k: int
    from_: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.k, int) or self.k < 1:
            raise ValueError(f"Ordinal.k: expected an int >= 1, got {self.k!r}")

    @property
    def bearing(self) -> tuple[float, float] | None:
        """Unit vector ``(east, north)`` pointing at the end counted from (a compass end or a
        map side), else None.

        >>> Ordinal(k=2, from_="east").bearing, Ordinal(k=1, from_="top").bearing
        ((1.0, 0.0), (0.0, 1.0))
        """
        return _UNIT.get(self.from_) if self.from_ in (*_COMPASS, *MAP_SIDES) else None

    def to_json(self) -> dict[str, Any]:
        return {"k": self.k, "from": self.from_}


@dataclass(frozen=True, slots=True, kw_only=True)
class Count:
    """``n`` things named by ``noun`` (singular, as written): "two cars" → ``(2, "car")``."""

    n: int
    noun: str

    def to_json(self) -> dict[str, Any]:
        return {"n": self.n, "noun": self.noun}


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextObject:
    """An unnamed object of a target class that the description places the target against:
    its class, its colours, the relation (:data:`RELATIONS`) — of the target to it ("in a
    parking lot", "behind a white van"), or with ``reverse`` of it to the target ("with a red
    car in front of it") — and the words that said so. Not a field of :class:`Parse` (whose
    mentions are named landmarks); :func:`urbex.language.context_objects` reads them."""

    cls: str
    relation: str
    colours: tuple[str, ...] = ()
    reverse: bool = False
    text: str = ""

    def __post_init__(self) -> None:
        if self.cls not in TARGET_CLASSES or self.relation not in RELATIONS:
            raise ValueError(
                f"ContextObject: expected a class of {TARGET_CLASSES} and a relation of "
                f"{RELATIONS}, got {self.cls!r}, {self.relation!r}"
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class Parse:
    """The one reading of a description that every consumer shares (:func:`urbex.language.parse`).

    Attributes
    ----------
    target_class : str or None
        The class (:data:`urbex.classes.TARGET_CLASSES`) of the head noun of the target's phrase.
    target_colours : tuple of str
        Basic colours (:data:`urbex.language.vocabulary.COLOUR_NAMES`) of the target and its
        parts, in order of appearance, each once.
    sizes : tuple of str
        Size words of the target, normalised (``large``, ``largest``, ``tall`` …).
    shape : str or None
        The target's shape (``rectangular``, ``L-shaped`` …).
    counts : tuple of Count
        Numbers of things the description names ("a row of four cars").
    ordinal : Ordinal or None
        "The k-th from …".
    mentions : tuple of Mention
        Each mention of a landmark, in order of appearance.
    """

    target_class: str | None
    target_colours: tuple[str, ...] = ()
    sizes: tuple[str, ...] = ()
    shape: str | None = None
    counts: tuple[Count, ...] = ()
    ordinal: Ordinal | None = None
    mentions: tuple[Mention, ...] = ()

    def __post_init__(self) -> None:
        if self.target_class is not None and self.target_class not in TARGET_CLASSES:
            raise ValueError(
                f"Parse.target_class: expected one of {TARGET_CLASSES} or None, "
                f"got {self.target_class!r}"
            )
        bad = [c for c in self.target_colours if c not in COLOUR_NAMES]
        if bad:
            raise ValueError(f"Parse.target_colours: expected names of {COLOUR_NAMES}, got {bad}")

    def to_json(self) -> dict[str, Any]:
        """The parse as JSON-ready data: exactly the attributes' names as keys.

        >>> sorted(Parse(target_class="Car").to_json())
        ['counts', 'mentions', 'ordinal', 'shape', 'sizes', 'target_class', 'target_colours']
        """
        return {
            "target_class": self.target_class,
            "target_colours": list(self.target_colours),
            "sizes": list(self.sizes),
            "shape": self.shape,
            "counts": [c.to_json() for c in self.counts],
            "ordinal": None if self.ordinal is None else self.ordinal.to_json(),
            "mentions": [m.to_json() for m in self.mentions],
        }
