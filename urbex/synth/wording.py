"""Words for each predicate: nouns, colours (shades, hedges, "-ish"), relations, parts, counts.

:func:`phrase_filter` words one filter of an :class:`~urbex.synth.expressions.Expression` as a
:class:`Worded` piece — an adjective ("dark blue", "L-shaped"), a *with* clause ("with a red
roof", "with a red car parked in front of it") or a relation ("behind Merton Hall", "at the
top of the map") — that :mod:`urbex.synth.phrasing` assembles into sentences. Every word says
what the predicate checks: a shade is the object's own shade, a hedge ("dark grey or black")
names the colours its predicate accepts, "left" is west on the map, "in front of" is the side
facing the road.

Frames: none — text only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from urbex.synth.expressions import (
    AcrossRoad,
    AtCorner,
    Filter,
    HasColour,
    InParking,
    NearLandmark,
    OnRoad,
)
from urbex.synth.predicates import (
    AtRoadEnd,
    Between,
    Context,
    FacingSide,
    HasShape,
    HasWalls,
    MapRegion,
    MapRelation,
    OffRoad,
)

__all__ = [
    "HEDGES",
    "NOUNS",
    "PLURALS",
    "VOCABULARY",
    "Pick",
    "Worded",
    "article",
    "count_word",
    "join",
    "phrase_filter",
]

#: Chooses one of several wordings (the caller's seeded draw, or always the first).
Pick = Callable[[tuple[str, ...]], str]

NOUNS = {
    "Building": ("building", "building", "house", "structure"),
    "Car": ("car", "car", "vehicle", "automobile"),
    "Parking": ("parking lot", "car park", "parking area"),
    "Ground": ("ground", "green field", "grass field", "open green space"),
}
#: Plural of every noun of :data:`NOUNS`.
PLURALS = {
    "building": "buildings",
    "house": "houses",
    "structure": "structures",
    "car": "cars",
    "vehicle": "vehicles",
    "automobile": "automobiles",
    "parking lot": "parking lots",
    "car park": "car parks",
    "parking area": "parking areas",
    "ground": "grounds",
    "green field": "green fields",
    "grass field": "grass fields",
    "open green space": "open green spaces",
}
#: A hedged colour: the words said and the basic colours they may mean (the true one first).
HEDGES: dict[str, tuple[str, tuple[str, ...]]] = {
    "black": ("dark grey or black", ("black", "grey")),
    "grey": ("grey or silver", ("grey", "silver")),
    "silver": ("silver or light grey", ("silver", "grey", "white")),
    "white": ("white or light grey", ("white", "grey", "silver")),
    "brown": ("brown or dark red", ("brown", "red")),
    "green": ("green or teal", ("green", "blue")),
}
_ISH = {"red": "reddish", "blue": "bluish", "green": "greenish", "grey": "greyish",
        "brown": "brownish", "yellow": "yellowish"}  # fmt: skip
_COUNTS = ("two", "three", "four", "five", "six", "seven", "eight", "nine")

_ON_ROAD = {
    "Car": ("on {r}", "on the road {r}", "along {r}", "parked on {r}"),
    "Building": ("on {r}", "facing {r}", "along {r}", "fronting {r}"),
    "Parking": ("beside {r}", "next to {r}", "along {r}", "off {r}"),
    "Ground": ("beside {r}", "next to {r}", "along {r}"),
}
_CORNER = (
    "at the corner of {a} and {b}",
    "near the junction of {a} and {b}",
    "where {a} meets {b}",
)
_COMPASS = ("{d} of {lm}", "to the {d} of {lm}", "on the {d} side of {lm}", "just {d} of {lm}")
_NEXT = ("next to {lm}", "beside {lm}", "adjacent to {lm}", "right next to {lm}")
_ACROSS = ("across {r} from {lm}", "on the other side of {r} from {lm}", "facing {lm} across {r}")
_IN_LOT = ("in {lot}", "parked in {lot}", "inside {lot}")
_IN_ANY_LOT = ("in a parking lot", "parked in a car park", "in a parking area")
_EDGE = ("at the {s} of the map", "near the {s} edge of the map", "along the {s} of the map",
         "in the {s} part of the map")  # fmt: skip
_SIDE = ("on the {s} side of the map", "at the {s} edge of the map", "on the far {s} of the map",
         "near the {s} of the map")  # fmt: skip
_CORNER_MAP = (
    "in the {s} corner of the map",
    "at the {s} of the map",
    "near the {s} corner of the map",
)
_MAP_REL = (
    "to the {s} of {lm}",
    "{s} of {lm}",
    "just {s} of {lm}",
    "on the {s} of {lm} on the map",
)
_FRONT = ("in front of {lm}", "right in front of {lm}", "out in front of {lm}")
_BACK = ("behind {lm}", "just behind {lm}", "at the back of {lm}", "round the back of {lm}")
_BETWEEN = ("between {a} and {b}", "in between {a} and {b}", "sitting between {a} and {b}")
_OFF = ("off {r}", "just off {r}", "set back off {r}")
_END = (
    "at the end of {r}",
    "at the far end of {r}",
    "near the end of {r}",
    "down at the end of {r}",
)
_CTX_REL = {
    "in front of": ("in front of it", "right in front of it", "out front"),
    "behind": ("behind it", "at the back", "just behind it"),
    "next to": ("next to it", "beside it", "right beside it"),
    "in": ("in it", "inside it", "parked in it"),
}
_CTX_FIRST = {
    "in front of": ("in front of {x}", "right in front of {x}", "outside {x}"),
    "behind": ("behind {x}", "just behind {x}", "at the back of {x}"),
    "next to": ("next to {x}", "beside {x}", "alongside {x}"),
}


@dataclass(frozen=True, slots=True)
class Worded:
    """One filter in words: exactly one of ``adj`` (before the noun), ``with_`` (after
    "with") or ``rel`` (a relation phrase) is set; ``sentence`` says it on its own, with
    "it" as the subject ("It has a red roof."). ``kind``: ``look`` (colour, walls, shape),
    ``context`` (an object around it) or ``where`` (a relation)."""

    sentence: str
    kind: str
    adj: str = ""
    with_: str = ""
    rel: str = ""


def join(items: list[str]) -> str:
    """``"a"``, ``"a and b"``, ``"a, b and c"``.

    >>> join(["on Mill Lane"]), join(["red", "big", "old"]), join([])
    ('on Mill Lane', 'red, big and old', '')
    """
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def count_word(n: int, pick: Pick) -> str:
    """``n`` in words or digits, as people mix them (``"three"``, ``"3"``).

    >>> count_word(3, lambda o: o[0]), count_word(12, lambda o: o[0])
    ('three', '12')
    """
    if 2 <= n <= len(_COUNTS) + 1:
        return pick((_COUNTS[n - 2], _COUNTS[n - 2], str(n)))
    return str(n)


def _colour(f: HasColour, pick: Pick) -> str:
    if f.among:
        return HEDGES[f.colour][0]
    if f.shade:
        return f.shade
    if f.colour in _ISH:
        return pick((f.colour, f.colour, _ISH[f.colour]))
    return f.colour


def article(word: str) -> str:
    """The indefinite article before ``word`` (by sound: "an L-shaped", "a turquoise").

    >>> article("L-shaped"), article("orange"), article("red")
    ('an', 'an', 'a')
    """
    return "an" if word[:1].lower() in "aeiou" or word[:2] in ("L-", "F-", "S-") else "a"


def _context_np(f: Context, pick: Pick, *, nested: bool = False) -> str:
    """ "a red car", "a building with a grey roof" (``nested``: "a grey-roofed building", as
    inside another with-clause), "a car park"."""
    if f.cls == "Car":
        noun = pick(("car", "car", "vehicle"))
        return f"{article(f.colour)} {f.colour} {noun}" if f.colour else f"a {noun}"
    if f.cls == "Building":
        noun = pick(("building", "house"))
        if not f.colour:
            return f"a {noun}"
        roofed = f"{article(f.colour)} {f.colour}-roofed {noun}"
        return roofed if nested else pick((f"a {noun} with a {f.colour} roof", roofed))
    return pick(("a car park", "a parking lot")) if f.cls == "Parking" else "a green space"


def _relation(f: Filter, cls: str, pick: Pick) -> str:
    if isinstance(f, OnRoad):
        return pick(_ON_ROAD[cls]).format(r=f.road)
    if isinstance(f, AtCorner):
        return pick(_CORNER).format(a=f.road_a, b=f.road_b)
    if isinstance(f, NearLandmark):
        if f.relation == "next to":
            return pick(_NEXT).format(lm=f.landmark)
        return pick(_COMPASS).format(d=f.relation, lm=f.landmark)
    if isinstance(f, AcrossRoad):
        return pick(_ACROSS).format(r=f.road, lm=f.landmark)
    if isinstance(f, InParking):
        return pick(_IN_LOT).format(lot=f.lot) if f.lot else pick(_IN_ANY_LOT)
    if isinstance(f, MapRegion):
        if " " in f.side:
            return pick(_CORNER_MAP).format(s=f.side)
        return pick(_EDGE if f.side in ("top", "bottom") else _SIDE).format(s=f.side)
    if isinstance(f, MapRelation):
        return pick(_MAP_REL).format(s=f.side, lm=f.landmark)
    if isinstance(f, FacingSide):
        return pick(_FRONT if f.side == "front" else _BACK).format(lm=f.landmark)
    if isinstance(f, Between):
        return pick(_BETWEEN).format(a=f.a, b=f.b)
    if isinstance(f, OffRoad):
        return pick(_OFF).format(r=f.road)
    if isinstance(f, AtRoadEnd):
        return pick(_END).format(r=f.road)
    if isinstance(f, Context) and f.target_first:
        verb = "parked " if cls == "Car" and f.relation != "next to" and pick(("", "p")) else ""
        return verb + pick(_CTX_FIRST[f.relation]).format(x=_context_np(f, pick))
    raise TypeError(f"no relation phrase for {f!r}")


def phrase_filter(f: Filter, cls: str, pick: Pick) -> Worded:
    """Word one filter of an expression about a ``cls`` target.

    Raises
    ------
    TypeError
        ``f`` has no wording (an :class:`~urbex.synth.expressions.IsLandmark` or a
        :class:`~urbex.synth.predicates.Counted`, which the families word themselves).

    Examples
    --------
    >>> first = lambda options: options[0]
    >>> phrase_filter(HasColour("black", among=("black", "grey")), "Car", first).adj
    'dark grey or black'
    >>> phrase_filter(HasColour("red"), "Building", first).with_
    'a red roof'
    >>> phrase_filter(Context("Car", "red", "in front of"), "Building", first).with_
    'a red car in front of it'
    >>> phrase_filter(MapRegion("top"), "Car", first).rel
    'at the top of the map'
    >>> phrase_filter(HasWalls("beige", "light brown"), "Building", first).sentence
    'It has light brown walls.'
    """
    if isinstance(f, HasColour):
        c = _colour(f, pick)
        if cls == "Building":
            return Worded(f"It has {article(c)} {c} roof.", "look", with_=f"{article(c)} {c} roof")
        return Worded(f"It is {c}.", "look", adj=c)
    if isinstance(f, HasWalls):
        c = f.shade or f.colour
        if pick(("adj", "with")) == "adj":
            return Worded(f"It has {c} walls.", "look", adj=c)
        return Worded(f"It has {c} walls.", "look", with_=f"{c} walls")
    if isinstance(f, HasShape):
        return Worded(f"It is {f.shape}.", "look", adj=f.shape)
    if isinstance(f, Context) and not f.target_first:
        rel = pick(_CTX_REL[f.relation])
        if f.cls == "Car" and f.relation in ("in front of", "behind") and pick(("", "p")):
            rel = f"parked {rel}"
        x, nested = _context_np(f, pick), _context_np(f, pick, nested=True)
        return Worded(f"There is {x} {rel}.", "context", with_=f"{nested} {rel}")
    rel = _relation(f, cls, pick)
    return Worded(f"It is {rel}.", "where", rel=rel)


#: Every word a template of this module can produce (a typo must not turn one into another).
VOCABULARY = frozenset(
    w.lower()
    for group in (
        *NOUNS.values(),
        tuple(PLURALS.values()),
        *_ON_ROAD.values(),
        _CORNER, _COMPASS, _NEXT, _ACROSS, _IN_LOT, _IN_ANY_LOT, _EDGE, _SIDE, _CORNER_MAP,
        _MAP_REL, _FRONT, _BACK, _BETWEEN, _OFF, _END, *_CTX_REL.values(), *_CTX_FIRST.values(),
        tuple(h for h, _ in HEDGES.values()), tuple(_ISH.values()), _COUNTS,
        ("top", "bottom", "left", "right", "roof", "walls", "parked", "green", "space",
         "L-shaped", "square", "rectangular", "vehicle", "house", "building", "roofed"),
    )
    for t in group
    for w in t.replace("-", " ").replace("{", " ").replace("}", " ").split()
    if w.isalpha()
)  # fmt: skip
