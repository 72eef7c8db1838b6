"""How a referring expression is worded: paraphrase families, noise, and what it says.

:func:`describe` renders one :class:`~urbex.synth.expressions.Expression` in one of the
paraphrase :data:`FAMILIES` (the words of each predicate come from :mod:`urbex.synth.wording`);
:func:`phrase` draws the family, lets the caller decorate the expression for it (more true
facts: :mod:`urbex.synth.enrich`), words it and roughens it (:mod:`urbex.synth.noise`). Every
family says the same thing about the scene — the expression's predicates, nothing added — so a
description stays true whatever its wording:

=========================  ================================================================
family                     example
=========================  ================================================================
``plain``                  the red car on Mill Lane, north of Merton Hall
``two_sentence``           This is the red car. It is on Mill Lane and north of Merton Hall.
``only``                   the only red car on Mill Lane
``relative``               the car that is red and on Mill Lane
``detailed``               This is an L-shaped white house with a red roof. It is behind
                           Merton Hall. There is a red car parked in front of it. (2–4
                           sentences, 20–40 words)
``fronted`` (held out)     North of Merton Hall, the largest building.
``existential`` (held out) There are three cars on Mill Lane. The one I mean is the red one.
=========================  ================================================================

:data:`HELD_OUT_FAMILIES` are never used in training or validation scenes: the generator gives
them only to held-out (test) scenes (:func:`family_weights`), so ``test_no`` measures how a
method copes with phrasing it never saw. :func:`phenomena` names what a description does that
people do (context objects, the map frame, counts, shades, ...), as recorded in the manifest.

Frames: none — this module handles text only.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from urbex.synth.expressions import (
    Expression,
    Filter,
    HasColour,
    IsLandmark,
    Ordinal,
    filter_names,
)
from urbex.synth.families import VOCABULARY, render
from urbex.synth.noise import NOISE_KINDS, NOISE_RATES, Findable, add_noise
from urbex.synth.predicates import (
    AtRoadEnd,
    Between,
    Context,
    Counted,
    FacingSide,
    HasShape,
    HasWalls,
    MapRegion,
    MapRelation,
    OffRoad,
)

__all__ = [
    "FAMILIES",
    "HELD_OUT_FAMILIES",
    "HELD_OUT_FAMILY",
    "NOISE_KINDS",
    "NOISE_RATES",
    "PHENOMENA",
    "TRAIN_FAMILIES",
    "WORD_RANGE",
    "Decorate",
    "Phrasing",
    "add_noise",
    "applicable_families",
    "describe",
    "family_weights",
    "names_in",
    "phenomena",
    "phrase",
]

#: The paraphrase families, in a fixed order.
FAMILIES: tuple[str, ...] = (
    "plain",
    "two_sentence",
    "only",
    "relative",
    "detailed",
    "fronted",
    "existential",
)
#: The first family held out of training (kept for callers of one family).
HELD_OUT_FAMILY = "fronted"
#: The families held out of training: only held-out (test) scenes use them.
HELD_OUT_FAMILIES: tuple[str, ...] = ("fronted", "existential")
#: The families training and validation scenes use.
TRAIN_FAMILIES: tuple[str, ...] = tuple(f for f in FAMILIES if f not in HELD_OUT_FAMILIES)
#: Words (inclusive) of a ``detailed`` description, as people's 2–4-sentence ones.
WORD_RANGE = (20, 40)
#: What a description can do that people do (recorded per row in the manifest).
PHENOMENA: tuple[str, ...] = (
    "context",
    "map_frame",
    "left_right",
    "front_behind",
    "between",
    "off",
    "road_end",
    "parts",
    "multi_colour",
    "count",
    "shape",
    "shade",
    "hedge",
    "misspelled_name",
    "multi_sentence",
)
#: Relative weights of the training families (``detailed`` more: people write long).
_TRAIN_WEIGHT = {"plain": 1.0, "two_sentence": 1.0, "only": 0.5, "relative": 1.0, "detailed": 3.0}

#: ``decorate(expression, family)``: the expressions to try for that family, richest first
#: (each selecting exactly the target), or none when the family cannot word it.
Decorate = Callable[[Expression, str], Sequence[Expression]]


@dataclass(frozen=True, slots=True, kw_only=True)
class Phrasing:
    """How one description was worded: its family, the noise applied (in order) and the
    :data:`PHENOMENA` it shows."""

    family: str
    noise: tuple[str, ...] = ()
    phenomena: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(f"Phrasing.family: expected one of {FAMILIES}, got {self.family!r}")
        bad = [n for n in self.noise if n not in NOISE_KINDS]
        if bad:
            raise ValueError(f"Phrasing.noise: expected kinds from {NOISE_KINDS}, got {bad}")
        bad = [n for n in self.phenomena if n not in PHENOMENA]
        if bad:
            raise ValueError(f"Phrasing.phenomena: expected names from {PHENOMENA}, got {bad}")


def family_weights(*, held_out_scene: bool) -> dict[str, float]:
    """Relative weights of the families in one scene.

    Training and validation scenes use :data:`TRAIN_FAMILIES` (``detailed`` three times as
    often as most, ``only`` half as often: people write long); a held-out scene gives :data:`HELD_OUT_FAMILIES` half of the weight, evenly
    (so about half of a ``test_no`` split is worded in ways no training description was).

    >>> family_weights(held_out_scene=False)["fronted"]
    0.0
    >>> w = family_weights(held_out_scene=True); w["fronted"] + w["existential"] == sum(w.values()) / 2
    True
    """
    w = {f: _TRAIN_WEIGHT.get(f, 0.0) for f in FAMILIES}
    share = sum(w.values()) / len(HELD_OUT_FAMILIES)
    for f in HELD_OUT_FAMILIES:
        w[f] = share if held_out_scene else 0.0
    return w


def names_in(expression: Expression) -> tuple[str, ...]:
    """Every place name the expression mentions (roads, landmarks, car parks), longest first.

    >>> from urbex.synth.expressions import AtCorner
    >>> names_in(Expression(object_name="Car", filters=(AtCorner("Mill Lane", "Soho Road"),)))
    ('Mill Lane', 'Soho Road')
    """
    out = [n for f in (*expression.filters, *expression.also) for n in filter_names(f)]
    if isinstance(expression.selector, Ordinal):
        out.append(expression.selector.road)
    return tuple(sorted(dict.fromkeys(out), key=lambda s: (-len(s), s)))


def _is_rel(f: Filter) -> bool:
    return not isinstance(f, HasColour | HasWalls | HasShape | IsLandmark | Counted) and not (
        isinstance(f, Context) and not f.target_first
    )


def applicable_families(expression: Expression) -> tuple[str, ...]:
    """The families that can word ``expression`` (in :data:`FAMILIES` order).

    ``only`` needs at least one filter, no selector, no count and no landmark name ("the only
    building called X" says nothing); ``fronted`` needs a relation or an ordinal to put first
    and no count; ``existential`` needs a count, or relations and no selector or name.
    """
    named = any(isinstance(f, IsLandmark) for f in expression.filters)
    counted = any(isinstance(f, Counted) for f in expression.filters)
    rels = [f for f in expression.filters if _is_rel(f)]
    ok = ["plain", "two_sentence", "relative", "detailed"]
    if expression.selector is None and not named and not counted and expression.filters:
        ok.append("only")
    if (rels or isinstance(expression.selector, Ordinal)) and not counted:
        ok.append("fronted")
    if counted or (rels and expression.selector is None and not named):
        ok.append("existential")
    return tuple(f for f in FAMILIES if f in ok)


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
    >>> from urbex.synth.expressions import AcrossRoad, Extreme, InParking, NearLandmark, OnRoad
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
    >>> three = Expression(object_name="Car",
    ...                    filters=(OnRoad("Mill Lane"), Counted(3), HasColour("blue", shade="turquoise")))
    >>> describe(three, family="existential")
    'There are three cars on Mill Lane. The one I mean is the turquoise one.'
    >>> house = Expression(object_name="Building", filters=(FacingSide("Merton Hall", "back"),),
    ...                    also=(HasShape("L-shaped"), HasWalls("white"), HasColour("red"),
    ...                          Context("Car", "red", "in front of")))
    >>> describe(house, family="detailed")
    'This is an L-shaped white building with a red roof and a red car in front of it. It is behind Merton Hall.'
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

    return render(expression, family, pick)


def phenomena(expression: Expression, text: str, noise: Sequence[str] = ()) -> tuple[str, ...]:
    """The :data:`PHENOMENA` a description shows (from its expression, its words and noise).

    >>> e = Expression(object_name="Car", filters=(MapRelation("Merton Hall", "left"),),
    ...                also=(HasColour("blue", shade="dark blue"),))
    >>> phenomena(e, "the dark blue car left of Merton Hall")
    ('map_frame', 'left_right', 'shade')
    """
    fs = (*expression.filters, *expression.also)
    has = lambda *types: any(isinstance(f, types) for f in fs)  # noqa: E731
    colours = [f for f in fs if isinstance(f, HasColour)]
    building = expression.object_name == "Building"
    low = text.lower()
    out = {
        "context": has(Context),
        "map_frame": has(MapRegion, MapRelation),
        "left_right": has(MapRelation)
        or any(isinstance(f, MapRegion) and ("left" in f.side or "right" in f.side) for f in fs),
        "front_behind": has(FacingSide)
        or any(isinstance(f, Context) and f.relation in ("in front of", "behind") for f in fs),
        "between": has(Between),
        "off": has(OffRoad),
        "road_end": has(AtRoadEnd),
        "parts": has(HasWalls) or (building and bool(colours)),
        "multi_colour": has(HasWalls) and building and bool(colours),
        "count": has(Counted),
        "shape": has(HasShape),
        "shade": any(f.shade for f in colours)
        or any(isinstance(f, HasWalls) and f.shade for f in fs)
        or re.search(r"\b(reddish|bluish|greenish|greyish|brownish|yellowish)\b", low) is not None,
        "hedge": any(f.among for f in colours)
        or re.search(r"\b(appears to be|looks like|seems to be)\b", low) is not None,
        "misspelled_name": "misspelled_name" in noise,
        "multi_sentence": len(re.findall(r"[.!?](\s|$)", text.strip())) >= 3,
    }
    return tuple(k for k in PHENOMENA if out[k])


def phrase(
    expression: Expression,
    *,
    rng: np.random.Generator,
    families: Mapping[str, float],
    noise_rates: Mapping[str, float] = NOISE_RATES,
    decorate: Decorate | None = None,
    findable: Findable | None = None,
) -> tuple[str, Phrasing, Expression]:
    """Word ``expression``: draw a family (by weight, among those that can word it), decorate,
    word, then add noise.

    Parameters
    ----------
    expression
        What to say (selecting exactly its target).
    rng
        Draws the family, the wording and the noise (seeded by the caller: deterministic).
    families
        Family → relative weight (e.g. :func:`family_weights`); zero-weight families are never
        used. ``plain`` is the fallback when no weighted family applies.
    noise_rates
        Noise kind → chance per description.
    decorate
        The expressions to word for a family, richest first (:data:`Decorate`); ``None``: the
        expression as it is. A ``detailed`` wording must fall in :data:`WORD_RANGE`.
    findable
        The check a misspelled place name must pass (:func:`urbex.synth.noise.add_noise`);
        ``None``: names are never misspelled.

    Returns
    -------
    text, phrasing, expression
        The description, how it was worded, and the expression it says (the decorated one).
    """
    bad = [f for f in families if f not in FAMILIES]
    if bad:
        raise ValueError(f"families: unknown {bad}; expected names from {FAMILIES}")
    weights = {f: w for f, w in families.items() if w > 0}
    while True:
        usable = [f for f in FAMILIES if f in weights]
        if not usable:
            family, said = "plain", expression
            text = describe(said, rng=rng, family=family)
            break
        w = np.array([weights[f] for f in usable], dtype=np.float64)
        family = usable[int(rng.choice(len(usable), p=w / w.sum()))]
        tries = [expression] if decorate is None else list(decorate(expression, family))
        text = ""
        for said in tries:
            if family not in applicable_families(said):
                continue
            text = describe(said, rng=rng, family=family)
            lo, hi = WORD_RANGE
            if family != "detailed" or lo <= len(text.split()) <= hi:
                break
            text = ""
        if text:
            break
        del weights[family]
    kinds = [k for k in NOISE_KINDS if rng.random() < noise_rates.get(k, 0.0)]
    text, applied = add_noise(
        text, kinds, names=names_in(said), rng=rng, vocabulary=VOCABULARY, findable=findable
    )
    return (
        text,
        Phrasing(family=family, noise=applied, phenomena=phenomena(said, text, applied)),
        said,
    )
