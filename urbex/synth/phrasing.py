"""How a referring expression is worded: paraphrase families and human-like noise.

:func:`describe` renders one :class:`~urbex.synth.expressions.Expression` in one of the
paraphrase :data:`FAMILIES`; :func:`add_noise` then roughens the text the way people write
(articles dropped, one typo). Every family says the same thing about the scene — the same
predicates, nothing added — so a description stays true whatever its wording:

======================  ===================================================================
family                  example
======================  ===================================================================
``plain``               the red car on Mill Lane, north of Merton Hall
``two_sentence``        This is the red car. It is on Mill Lane and north of Merton Hall.
``only``                the only red car on Mill Lane (no selector: the filters alone single
                        the target out, which :func:`urbex.synth.satisfying` checks)
``relative``            the car that is red and on Mill Lane; the largest of the buildings
                        north of Merton Hall
``fronted`` (held out)  North of Merton Hall, the largest building.
======================  ===================================================================

:data:`HELD_OUT_FAMILY` is never used in training or validation scenes: the generator gives
it only to held-out (test) scenes (:func:`family_weights`), so ``test_no`` measures how a
method copes with phrasing it never saw. Noise never touches a place name (a landmark, road
or car park named in the expression), so every name stays verbatim for the landmark matcher.

Frames: none — this module handles text only.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from urbex.synth.expressions import (
    AcrossRoad,
    AtCorner,
    Expression,
    Extreme,
    Filter,
    HasColour,
    InParking,
    IsLandmark,
    NearLandmark,
    OnRoad,
    Ordinal,
    filter_names,
)

__all__ = [
    "FAMILIES",
    "HELD_OUT_FAMILY",
    "NOISE_KINDS",
    "NOISE_RATES",
    "TRAIN_FAMILIES",
    "Phrasing",
    "add_noise",
    "applicable_families",
    "describe",
    "family_weights",
    "names_in",
    "phrase",
]

#: The paraphrase families, in a fixed order.
FAMILIES: tuple[str, ...] = ("plain", "two_sentence", "only", "relative", "fronted")
#: The family held out of training: only held-out (test) scenes use it.
HELD_OUT_FAMILY = "fronted"
#: The families training and validation scenes use.
TRAIN_FAMILIES: tuple[str, ...] = tuple(f for f in FAMILIES if f != HELD_OUT_FAMILY)
#: Kinds of noise :func:`add_noise` applies.
NOISE_KINDS: tuple[str, ...] = ("no_articles", "typo")
#: Default chance of each noise kind per description (independent draws).
NOISE_RATES: Mapping[str, float] = {"no_articles": 0.25, "typo": 0.2}


@dataclass(frozen=True, slots=True, kw_only=True)
class Phrasing:
    """How one description was worded: its paraphrase family and the noise applied, in order."""

    family: str
    noise: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(f"Phrasing.family: expected one of {FAMILIES}, got {self.family!r}")
        bad = [n for n in self.noise if n not in NOISE_KINDS]
        if bad:
            raise ValueError(f"Phrasing.noise: expected kinds from {NOISE_KINDS}, got {bad}")


def family_weights(*, held_out_scene: bool) -> dict[str, float]:
    """Relative weights of the families in one scene.

    Training and validation scenes use :data:`TRAIN_FAMILIES` evenly; a held-out scene gives
    :data:`HELD_OUT_FAMILY` half of the weight and the others the rest (so about half of a
    ``test_no`` split is worded in a way no training description was).

    >>> family_weights(held_out_scene=False)["fronted"]
    0.0
    >>> w = family_weights(held_out_scene=True); w["fronted"] == sum(w.values()) / 2
    True
    """
    w = dict.fromkeys(FAMILIES, 1.0)
    w[HELD_OUT_FAMILY] = float(len(TRAIN_FAMILIES)) if held_out_scene else 0.0
    return w


# -- vocabulary -------------------------------------------------------------------------------

_NOUNS = {
    "Building": ("building", "building", "house", "structure"),
    "Car": ("car", "car", "vehicle", "automobile"),
    "Parking": ("parking lot", "car park", "parking area"),
    "Ground": ("ground", "green field", "grass field", "open green space"),
}
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
_ACROSS = (
    "across {r} from {lm}",
    "on the other side of {r} from {lm}",
    "facing {lm} across {r}",
)
_IN_LOT = ("in {lot}", "parked in {lot}", "inside {lot}")
_IN_ANY_LOT = ("in a parking lot", "parked in a car park", "in a parking area")
_NAMED = ("the {noun} called {name}", "the {noun} known as {name}", "the {noun} named {name}")
_ORDINALS = ("first", "second", "third", "fourth")
_OPENERS = ("This is {h}.", "Look for {h}.", "I mean {h}.", "Find {h}.")
_THAT = ("that is", "which is")
_FRONTED = ("{r}, {h}.", "{r}: {h}.", "{r}, look for {h}.")
_ARTICLES = frozenset({"the", "a", "an"})
# Every word a template can produce: a typo must not turn one of them into another.
_VOCAB = frozenset(
    w.lower()
    for group in (
        *_NOUNS.values(),
        *_ON_ROAD.values(),
        _CORNER,
        _COMPASS,
        _NEXT,
        _ACROSS,
        _IN_LOT,
        _IN_ANY_LOT,
        _NAMED,
        _ORDINALS,
        _OPENERS,
        _THAT,
        _FRONTED,
        ("north", "south", "east", "west", "largest", "smallest", "tallest", "roof", "with",
         "counted", "from", "end", "its", "that", "has", "there", "cars", "buildings", "it"),
        ("red", "blue", "white", "black", "silver", "yellow", "green", "grey", "brown"),
    )
    for t in group
    for w in re.findall(r"[A-Za-z]+", t)
)  # fmt: skip


def _ordinal(rank: int) -> str:
    return _ORDINALS[rank - 1] if rank <= len(_ORDINALS) else f"{rank}th"


def _relation(f: Filter, cls: str, pick: Callable[[tuple[str, ...]], str]) -> str:
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
    raise TypeError(f"no relation phrase for {f!r}")


def names_in(expression: Expression) -> tuple[str, ...]:
    """Every place name the expression mentions (roads, landmarks, car parks), longest first.

    >>> names_in(Expression(object_name="Car", filters=(AtCorner("Mill Lane", "Soho Road"),)))
    ('Mill Lane', 'Soho Road')
    """
    out = [n for f in expression.filters for n in filter_names(f)]
    if isinstance(expression.selector, Ordinal):
        out.append(expression.selector.road)
    return tuple(sorted(dict.fromkeys(out), key=lambda s: (-len(s), s)))


def applicable_families(expression: Expression) -> tuple[str, ...]:
    """The families that can word ``expression`` (in :data:`FAMILIES` order).

    ``only`` needs at least one filter and no selector (and no landmark name: "the only
    building called X" says nothing); ``fronted`` needs a relation or an ordinal to put first.
    """
    named = any(isinstance(f, IsLandmark) for f in expression.filters)
    rels = [f for f in expression.filters if not isinstance(f, HasColour | IsLandmark)]
    ok = ["plain", "two_sentence", "relative"]
    if expression.selector is None and not named and expression.filters:
        ok.append("only")
    if rels or isinstance(expression.selector, Ordinal):
        ok.append("fronted")
    return tuple(f for f in FAMILIES if f in ok)


# -- families ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Parts:
    """An expression's pieces, worded (synonyms picked once, shared by every family)."""

    cls: str
    noun: str
    colour: str | None
    roof: str  # " with a red roof" (buildings) or ""
    named: str | None
    rels: tuple[str, ...]
    selector: Extreme | Ordinal | None

    def adjectives(self) -> list[str]:
        """Selector word + colour adjective (cars/others; a building's colour is its roof)."""
        words: list[str] = []
        if isinstance(self.selector, Extreme):
            words.append(self.selector.measure)
        elif isinstance(self.selector, Ordinal):
            words.append(_ordinal(self.selector.rank))
        if self.colour is not None and self.cls != "Building":
            words.append(self.colour)
        return words

    def head(self) -> str:
        """``the [selector] [colour] noun [roof] [from the E end of R]``."""
        h = " ".join(["the", *self.adjectives(), self.noun]) + self.roof
        if isinstance(self.selector, Ordinal):
            h += f" from the {self.selector.end} end of {self.selector.road}"
        return h

    def joined(self) -> str:
        return " and ".join(self.rels)


def _parts(expression: Expression, pick: Callable[[tuple[str, ...]], str]) -> _Parts:
    cls = expression.object_name
    noun = pick(_NOUNS[cls])
    named = next((f.name for f in expression.filters if isinstance(f, IsLandmark)), None)
    colour = next((f.colour for f in expression.filters if isinstance(f, HasColour)), None)
    roof = ""
    if colour is not None and cls == "Building":
        roof = pick((" with a {c} roof", " with the {c} roof")).format(c=colour)
    rels = tuple(
        _relation(f, cls, pick)
        for f in expression.filters
        if not isinstance(f, HasColour | IsLandmark)
    )
    return _Parts(cls, noun, colour, roof, named, rels, expression.selector)


def _plain(p: _Parts, pick: Callable[[tuple[str, ...]], str]) -> str:
    if p.named is not None:
        head = pick(_NAMED).format(name=p.named, noun=p.noun)
        return head if not p.rels else f"{head}, {p.joined()}"
    if not p.rels:
        return p.head()
    return p.head() + pick((" ", ", ")) + p.joined()


def _two_sentence(p: _Parts, pick: Callable[[tuple[str, ...]], str]) -> str:
    head = pick(_NAMED).format(name=p.named, noun=p.noun) if p.named is not None else p.head()
    first = pick(_OPENERS).format(h=head)
    return first if not p.rels else f"{first} It is {p.joined()}."


def _only(p: _Parts, pick: Callable[[tuple[str, ...]], str]) -> str:
    if p.selector is not None or p.named is not None or not (p.rels or p.colour):
        raise ValueError("the 'only' family needs filters and no selector or landmark name")
    adj = " ".join(["the", "only", *p.adjectives(), p.noun])
    if not p.rels:
        return adj + p.roof
    if p.colour is not None and p.cls != "Building" and pick(("pre", "post")) == "post":
        return f"the only {p.noun} {p.joined()} that is {p.colour}"
    return f"{adj}{p.roof} {p.joined()}"


def _relative(p: _Parts, pick: Callable[[tuple[str, ...]], str]) -> str:
    that = pick(_THAT)
    if p.named is not None:
        head = f"the {p.noun} {that} called {p.named}"
        return head if not p.rels else f"{head}, which is {p.joined()}"
    sel = p.selector
    colour = f"{p.colour} " if p.colour is not None and p.cls != "Building" else ""
    if isinstance(sel, Ordinal):
        return (
            f"the {_ordinal(sel.rank)} of the {colour}{p.noun}s{p.roof} on {sel.road}, "
            f"counted from its {sel.end} end"
        )
    if isinstance(sel, Extreme):
        tail = f" {p.joined()}" if p.rels else ""
        return f"the {sel.measure} of the {colour}{p.noun}s{p.roof}{tail}"
    clauses: list[str] = []  # "has a red roof and is on X and north of Y"
    if p.colour is not None and p.cls == "Building":
        clauses.append(f"has a {p.colour} roof")
    states = ([p.colour] if p.colour is not None and p.cls != "Building" else []) + list(p.rels)
    if states:
        clauses.append("is " + " and ".join(states))
    if not clauses:
        return p.head()
    return f"the {p.noun} {that.split()[0]} {' and '.join(clauses)}"


def _fronted(p: _Parts, pick: Callable[[tuple[str, ...]], str]) -> str:
    sel = p.selector
    if isinstance(sel, Ordinal) and not p.rels:
        lead = pick(("Along {r}, from the {e} end", "On {r}, counting from the {e} end"))
        head = " ".join(["the", *p.adjectives(), p.noun]) + p.roof
        return f"{lead.format(r=sel.road, e=sel.end)}: {head}."
    if not p.rels:
        raise ValueError("the 'fronted' family needs a relation or an ordinal to put first")
    lead = p.joined()
    lead = lead[0].upper() + lead[1:]
    head = pick(_NAMED).format(name=p.named, noun=p.noun) if p.named is not None else p.head()
    return pick(_FRONTED).format(r=lead, h=head)


_RENDER: dict[str, Callable[[_Parts, Callable[[tuple[str, ...]], str]], str]] = {
    "plain": _plain,
    "two_sentence": _two_sentence,
    "only": _only,
    "relative": _relative,
    "fronted": _fronted,
}


def describe(
    expression: Expression, *, rng: np.random.Generator | None = None, family: str = "plain"
) -> str:
    """Render an expression as an English referring expression in one paraphrase family.

    Parameters
    ----------
    expression
        What to say.
    rng
        Picks synonyms and templates; ``None`` gives the canonical wording.
    family
        One of :func:`applicable_families` ``(expression)``.

    Raises
    ------
    ValueError
        ``family`` is unknown or cannot word this expression.

    Examples
    --------
    >>> describe(Expression(object_name="Car", filters=(HasColour("red"), OnRoad("Mill Lane"))))
    'the red car on Mill Lane'
    >>> describe(Expression(object_name="Car", selector=Ordinal(2, "Mill Lane", "east")))
    'the second car from the east end of Mill Lane'
    >>> big = Expression(object_name="Building",
    ...                  filters=(NearLandmark("Merton Hall", "north"),), selector=Extreme("largest"))
    >>> describe(big)
    'the largest building north of Merton Hall'
    >>> describe(big, family="fronted")
    'North of Merton Hall, the largest building.'
    >>> describe(big, family="relative")
    'the largest of the buildings north of Merton Hall'
    >>> describe(Expression(object_name="Car", filters=(HasColour("red"), InParking("Soho Car Park"))),
    ...          family="only")
    'the only red car in Soho Car Park'
    >>> describe(Expression(object_name="Building", filters=(AcrossRoad("Mill Lane", "Merton Hall"),)),
    ...          family="two_sentence")
    'This is the building. It is across Mill Lane from Merton Hall.'
    """
    if family not in FAMILIES:
        raise ValueError(f"family: expected one of {FAMILIES}, got {family!r}")
    if family not in applicable_families(expression):
        raise ValueError(
            f"family {family!r} cannot word {expression!r}; use one of "
            f"{applicable_families(expression)}"
        )

    def pick(options: tuple[str, ...]) -> str:
        return options[0] if rng is None else options[int(rng.integers(len(options)))]

    return _RENDER[family](_parts(expression, pick), pick)


# -- noise ------------------------------------------------------------------------------------

_WORD = re.compile(r"[A-Za-z]+")


def _protected(text: str, names: Sequence[str]) -> np.ndarray:
    """Boolean mask over ``text``'s characters: inside one of ``names``."""
    mask = np.zeros(len(text), bool)
    for name in names:
        start = text.find(name)
        while name and start >= 0:
            mask[start : start + len(name)] = True
            start = text.find(name, start + 1)
    return mask


def _drop_articles(text: str, names: Sequence[str]) -> str:
    keep = _protected(text, names)
    cut = [
        (m.start(), m.end())
        for m in _WORD.finditer(text)
        if m.group().lower() in _ARTICLES and not keep[m.start()]
    ]
    capital = text[:1].isupper()
    for a, b in reversed(cut):
        b += 1 if b < len(text) and text[b] == " " else 0
        text = text[:a] + text[b:]
    text = text.strip()
    return text[:1].upper() + text[1:] if capital else text


def _typo(text: str, names: Sequence[str], rng: np.random.Generator) -> str | None:
    keep = _protected(text, names)
    words = [m for m in _WORD.finditer(text) if len(m.group()) >= 5 and not keep[m.start()]]
    if not words:
        return None
    for k in rng.permutation(len(words)).tolist():
        w = words[k].group()
        i = 1 + int(rng.integers(len(w) - 2))  # an interior letter: first and last stay
        op = int(rng.integers(3))
        if op == 0 and w[i] != w[i + 1] and i + 1 < len(w) - 1:
            new = w[:i] + w[i + 1] + w[i] + w[i + 2 :]  # swap two neighbours
        elif op == 1:
            new = w[:i] + w[i + 1 :]  # drop one
        else:
            new = w[: i + 1] + w[i] + w[i + 1 :]  # double one
        if new.lower() not in _VOCAB and new != w:
            a, b = words[k].span()
            return text[:a] + new + text[b:]
    return None


def add_noise(
    text: str,
    kinds: Sequence[str],
    *,
    names: Sequence[str] = (),
    rng: np.random.Generator,
    min_words: int = 3,
) -> tuple[str, tuple[str, ...]]:
    """Roughen a description as people write: drop its articles and/or make one typo.

    Place names (``names``, e.g. :func:`names_in`) are never touched, so the landmark matcher
    still finds every one verbatim; a typo changes one interior letter of one word of five or
    more letters (swap, drop or double) and never yields another word the templates use.

    Parameters
    ----------
    text
        The worded description.
    kinds
        Subset of :data:`NOISE_KINDS`, applied in :data:`NOISE_KINDS` order.
    names
        Spans of ``text`` to leave alone.
    rng
        Chooses the typo's word, position and kind.
    min_words
        Articles are kept when dropping them would leave fewer words (the annotation cleaner
        drops descriptions under ``annotations.min_words``, 3 by default).

    Returns
    -------
    text, applied
        The noisy text, and the kinds that changed it (a kind with nothing to change is left
        out: no article to drop, no eligible word).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> add_noise("the red car next to The Elm Tower", ["no_articles"], names=["The Elm Tower"],
    ...           rng=rng)
    ('red car next to The Elm Tower', ('no_articles',))
    >>> add_noise("a car", ["typo"], rng=rng)
    ('a car', ())
    >>> add_noise("the red car", ["no_articles"], rng=rng)
    ('the red car', ())
    """
    bad = [k for k in kinds if k not in NOISE_KINDS]
    if bad:
        raise ValueError(f"kinds: expected a subset of {NOISE_KINDS}, got {bad}")
    applied: list[str] = []
    if "no_articles" in kinds:
        new = _drop_articles(text, names)
        if new != text and len(new.split()) >= min_words:
            text, applied = new, [*applied, "no_articles"]
    if "typo" in kinds:
        typo = _typo(text, names, rng)
        if typo is not None:
            text, applied = typo, [*applied, "typo"]
    return text, tuple(applied)


def phrase(
    expression: Expression,
    *,
    rng: np.random.Generator,
    families: Mapping[str, float],
    noise_rates: Mapping[str, float] = NOISE_RATES,
) -> tuple[str, Phrasing]:
    """Word ``expression``: draw a family (by weight, among the applicable ones), then noise.

    Parameters
    ----------
    expression
        What to say.
    rng
        Draws the family, the wording and the noise (seeded by the caller: deterministic).
    families
        Family → relative weight (e.g. :func:`family_weights`); zero-weight families are never
        used. ``plain`` is the fallback when no weighted family applies.
    noise_rates
        Noise kind → chance per description.

    Returns
    -------
    text, phrasing
        The description and how it was worded.
    """
    bad = [f for f in families if f not in FAMILIES]
    if bad:
        raise ValueError(f"families: unknown {bad}; expected names from {FAMILIES}")
    usable = [f for f in applicable_families(expression) if families.get(f, 0.0) > 0]
    if usable:
        w = np.array([families[f] for f in usable], dtype=np.float64)
        family = usable[int(rng.choice(len(usable), p=w / w.sum()))]
    else:
        family = "plain"
    text = describe(expression, rng=rng, family=family)
    kinds = [k for k in NOISE_KINDS if rng.random() < noise_rates.get(k, 0.0)]
    text, applied = add_noise(text, kinds, names=names_in(expression), rng=rng)
    return text, Phrasing(family=family, noise=applied)
