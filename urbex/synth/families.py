"""The paraphrase families: how an expression's worded pieces become sentences.

:func:`render` words an :class:`~urbex.synth.expressions.Expression` in one family (the table
of :mod:`urbex.synth.phrasing`); the words of each predicate come from
:mod:`urbex.synth.wording`. A family may rearrange, never add: every piece is one of the
expression's predicates, so the sentence says what the checker checked. A selector's group
("the buildings north of Merton Hall", "the three cars on Mill Lane") is said before what it
picks; ``also`` facts are said of the one picked (inline where that keeps the meaning, else as
a clause or a sentence of their own).

Frames: none — text only.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from urbex.synth.expressions import Expression, Extreme, Filter, IsLandmark, OnRoad, Ordinal
from urbex.synth.predicates import Counted
from urbex.synth.wording import (
    NOUNS,
    PLURALS,
    Pick,
    Worded,
    article,
    count_word,
    join,
    phrase_filter,
)
from urbex.synth.wording import VOCABULARY as WORDING_VOCABULARY

__all__ = ["VOCABULARY", "render"]

_NAMED = ("the {noun} called {name}", "the {noun} known as {name}", "the {noun} named {name}")
_ORDINALS = ("first", "second", "third", "fourth")
_OPENERS = ("This is {h}.", "Look for {h}.", "I mean {h}.", "Find {h}.")
_DETAIL_OPENERS = ("This is {h}.", "The target is {h}.", "I'm looking for {h}.", "Look for {h}.")
_HEDGED = ("This appears to be {h}.", "It looks like {h}.", "It seems to be {h}.")
_GROUP = ("Look at {g}.", "Find {g}.", "Consider {g}.")
_THAT = ("that is", "which is")
_FRONTED = ("{r}, {h}.", "{r}: {h}.", "{r}, look for {h}.")
_WHERE = ("It is {r}.", "It sits {r}.", "You will find it {r}.")
_SHAPES = ("L-shaped", "square", "rectangular")
#: Every word a family's template or a predicate's wording can produce (a typo must not make
#: one of them).
VOCABULARY = WORDING_VOCABULARY | frozenset(
    w.lower()
    for t in (
        *_NAMED,
        *_ORDINALS,
        *_OPENERS,
        *_DETAIL_OPENERS,
        *_HEDGED,
        *_GROUP,
        *_THAT,
        *_FRONTED,
        *_WHERE,
        "largest smallest tallest counted counting from end its one "
        "which has there are is mean that of the look pick",
    )
    for w in re.findall(r"[A-Za-z]+", t)
)


def _ordinal(rank: int) -> str:
    return _ORDINALS[rank - 1] if rank <= len(_ORDINALS) else f"{rank}th"


@dataclass(frozen=True, slots=True)
class _Parts:
    """An expression's pieces, worded once (synonyms picked once, shared by every family).

    ``pre``: the filters before the count (all of them without a count); ``post``: those
    after it (what singles the target out of the counted group); ``also``: facts stated of
    the selected one.
    """

    cls: str
    noun: str
    named: str | None
    selector: Extreme | Ordinal | None
    count: int | None
    pre: tuple[Worded, ...]
    post: tuple[Worded, ...]
    also: tuple[Worded, ...]

    @property
    def plural(self) -> str:
        return PLURALS[self.noun]


def _parts(expression: Expression, pick: Pick) -> _Parts:
    cls = expression.object_name
    noun = pick(NOUNS[cls])
    named = next((f.name for f in expression.filters if isinstance(f, IsLandmark)), None)
    sel = expression.selector
    skip = OnRoad(sel.road) if isinstance(sel, Ordinal) else None  # the ordinal says the road

    def worded(fs: Sequence[Filter]) -> tuple[Worded, ...]:
        return tuple(
            phrase_filter(f, cls, pick) for f in fs if not isinstance(f, IsLandmark) and f != skip
        )

    k = next((i for i, f in enumerate(expression.filters) if isinstance(f, Counted)), None)
    count = None if k is None else expression.filters[k].n  # type: ignore[union-attr]
    pre = expression.filters if k is None else expression.filters[:k]
    post = () if k is None else expression.filters[k + 1 :]
    return _Parts(cls, noun, named, sel, count, worded(pre), worded(post), worded(expression.also))


def _adjs(ws: Sequence[Worded]) -> list[str]:
    a = [w.adj for w in ws if w.adj]
    return sorted(a, key=lambda x: x not in _SHAPES)  # shape before colour: "L-shaped white"


def _withs(ws: Sequence[Worded]) -> str:
    w = [x.with_ for x in ws if x.with_ and x.kind == "look"]
    w += [x.with_ for x in ws if x.with_ and x.kind != "look"]  # parts, then what is around
    return f" with {join(w)}" if w else ""


def _rels(ws: Sequence[Worded]) -> str:
    return " and ".join(w.rel for w in ws if w.rel)


def _np(det: str, ws: Sequence[Worded], noun: str, *extra: str) -> str:
    """``det [extra adjs] [adjs] noun [with ...]`` (no relations)."""
    return " ".join([det, *extra, *_adjs(ws), noun]) + _withs(ws)


def _states(ws: Sequence[Worded]) -> str:
    """ "is dark blue, has a red roof and is on Mill Lane"."""
    parts = []
    if _adjs(ws):
        parts.append("is " + join(_adjs(ws)))
    w = [x.with_ for x in ws if x.with_ and x.kind == "look"]
    w += [x.with_ for x in ws if x.with_ and x.kind != "look"]
    if w:
        parts.append("has " + join(w))
    if _rels(ws):
        parts.append("is " + join([x.rel for x in ws if x.rel]))
    return join(parts)


def _tail(ws: Sequence[Worded]) -> str:
    return ", which " + _states(ws) if ws else ""


def _space(s: str) -> str:
    return f" {s}" if s else ""


def _group(p: _Parts, pick: Pick) -> str:
    """The counted or ranked group: "the three red cars on Mill Lane", "the buildings north of
    Merton Hall" (the selector's candidates)."""
    n = [count_word(p.count, pick)] if p.count is not None else []
    head = _np("the", p.pre, p.plural, *n)
    if isinstance(p.selector, Ordinal):
        return f"{head} on {p.selector.road}"
    return head + _space(_rels(p.pre))


def _selected(p: _Parts) -> str:
    """What the selector picks from :func:`_group`: "the second one from the east end"."""
    sel = p.selector
    if isinstance(sel, Ordinal):
        return f"the {_ordinal(sel.rank)} one from the {sel.end} end"
    assert isinstance(sel, Extreme)
    return f"the {sel.measure} one"


def _plain(p: _Parts, pick: Pick) -> str:
    sel = p.selector
    if p.named is not None:
        head = pick(_NAMED).format(name=p.named, noun=p.noun)
        rels = _rels((*p.pre, *p.also))
        looks = [w for w in (*p.pre, *p.also) if not w.rel]
        return head + (f", {rels}" if rels else "") + _tail(looks)
    if isinstance(sel, Ordinal):
        if p.count is not None:
            h = f"the {_ordinal(sel.rank)} of {_group(p, pick)}, counted from the {sel.end} end"
        else:
            h = _np("the", p.pre, p.noun, _ordinal(sel.rank))
            h += f" from the {sel.end} end of {sel.road}"
        return h + _tail(p.also)
    if isinstance(sel, Extreme):
        if p.count is not None:
            return f"the {sel.measure} of {_group(p, pick)}" + _tail(p.also)
        ws = (*p.pre, *p.also)
        return _np("the", ws, p.noun, sel.measure) + _space(_rels(ws))
    if p.count is not None:
        one = _np("the", (*p.post, *p.also), "one") + _space(_rels(p.also))
        return pick(("{o} of {g}", "{o}, one of {g}")).format(g=_group(p, pick), o=one)
    ws = (*p.pre, *p.also)
    rels = _rels(ws)
    return _np("the", ws, p.noun) + (pick((" ", ", ")) + rels if rels else "")


def _two_sentence(p: _Parts, pick: Pick) -> str:
    if p.named is not None:
        first = pick(_OPENERS).format(h=pick(_NAMED).format(name=p.named, noun=p.noun))
        ws = (*p.pre, *p.also)
        return first + (f" It {_states(ws)}." if ws else "")
    if p.selector is not None:
        out = f"{pick(_GROUP).format(g=_group(p, pick))} I mean {_selected(p)}."
        return out + (f" It {_states(p.also)}." if p.also else "")
    if p.count is not None:
        one = _np("the", (*p.post, *p.also), "one") + _space(_rels(p.also))
        return f"This is one of {_group(p, pick)}. It is {one}."
    ws = (*p.pre, *p.also)
    first = pick(_OPENERS).format(h=_np("the", ws, p.noun))
    return first if not _rels(ws) else f"{first} It is {_rels(ws)}."


def _only(p: _Parts, pick: Pick) -> str:
    if p.selector is not None or p.named is not None or p.count is not None:
        raise ValueError("the 'only' family needs filters and no selector, count or name")
    ws = (*p.pre, *p.also)
    rels = _rels(ws)
    adjs = [w for w in ws if w.adj and w.adj not in _SHAPES]
    if p.cls == "Car" and len(adjs) == 1 and rels and pick(("pre", "post")) == "post":
        rest = [w for w in ws if w is not adjs[0]]
        return f"{_np('the only', rest, p.noun)} {_rels(rest)} that is {adjs[0].adj}"
    return _np("the only", ws, p.noun) + _space(rels)


def _relative(p: _Parts, pick: Pick) -> str:
    that = pick(_THAT)
    sel = p.selector
    if p.named is not None:
        head = f"the {p.noun} {that} called {p.named}"
        ws = (*p.pre, *p.also)
        return head if not ws else f"{head}, which {_states(ws)}"
    if isinstance(sel, Ordinal):
        return (
            f"the {_ordinal(sel.rank)} of {_group(p, pick)}, counted from its {sel.end} end"
            + _tail(p.also)
        )
    if isinstance(sel, Extreme):
        return f"the {sel.measure} of {_group(p, pick)}" + _tail(p.also)
    if p.count is not None:
        return f"the one of {_group(p, pick)} {that.split()[0]} {_states((*p.post, *p.also))}"
    ws = (*p.pre, *p.also)
    if not ws:
        return f"the {p.noun}"
    return f"the {p.noun} {that.split()[0]} {_states(ws)}"


def _fronted(p: _Parts, pick: Pick) -> str:
    sel = p.selector
    if p.count is not None:
        raise ValueError("the 'fronted' family does not word counts")
    if isinstance(sel, Ordinal) and not _rels(p.pre):
        lead = pick(("Along {r}, from the {e} end", "On {r}, counting from the {e} end"))
        return f"{lead.format(r=sel.road, e=sel.end)}: {_np('the', p.pre, p.noun, _ordinal(sel.rank))}."
    rels = _rels(p.pre)
    if not rels:
        raise ValueError("the 'fronted' family needs a relation or an ordinal to put first")
    lead = rels[0].upper() + rels[1:]
    rest = [w for w in p.pre if not w.rel]
    if p.named is not None:
        head = pick(_NAMED).format(name=p.named, noun=p.noun)
    elif isinstance(sel, Extreme):
        head = _np("the", rest, p.noun, sel.measure)
    elif isinstance(sel, Ordinal):
        head = _np("the", rest, p.noun, _ordinal(sel.rank))
        head += f" from the {sel.end} end of {sel.road}"
    else:
        head = _np("the", rest, p.noun)
    return pick(_FRONTED).format(r=lead, h=head) + (f" It {_states(p.also)}." if p.also else "")


def _a(ws: Sequence[Worded], noun: str) -> str:
    return article((_adjs(ws) or [noun])[0])


def _detailed(p: _Parts, pick: Pick) -> str:
    """2–4 sentences: what it is (and, often, what stands by it), where it is, the rest."""
    sel = p.selector
    everything = (*p.pre, *p.post, *p.also)
    if sel is not None:  # the group, then facts of the one picked
        first = f"{pick(_GROUP).format(g=_group(p, pick))} I mean {_selected(p)}"
        if not p.also:
            return first + "."
        if pick(("join", "join", "apart")) == "join":
            return f"{first}, which {_states(p.also)}."
        return f"{first}. It {_states(p.also)}."
    looks = [w for w in everything if w.kind == "look"]
    around = [w for w in everything if w.kind == "context"]
    # mostly "... with a red car in front of it." in the first sentence
    if around and pick(("fold", "fold", "fold", "apart")) == "fold":
        looks, around = [*looks, around[0]], around[1:]
    opener = pick(_HEDGED if pick(("", "", "", "", "", "h")) else _DETAIL_OPENERS)
    where = [w.rel for w in (everything if p.count is None else (*p.post, *p.also)) if w.rel]
    if p.named is not None:
        out = [f"This is {p.named}, {_np(_a(looks, p.noun), looks, p.noun)}."]
    else:
        out = [opener.format(h=_np(_a(looks, p.noun), looks, p.noun))]
    if p.count is not None:
        out.append(f"It is one of {_group(p, pick)}" + (f", {join(where)}." if where else "."))
    elif where:
        out.append(pick(_WHERE).format(r=join(where)))
    out += [w.sentence for w in around]
    return " ".join([*out[:3], " ".join(out[3:])] if len(out) > 4 else out)


def _existential(p: _Parts, pick: Pick) -> str:
    sel = p.selector
    also = f" It {_states(p.also)}." if p.also else ""
    if p.count is not None:
        g = _group(p, pick).removeprefix("the ")
        if isinstance(sel, Ordinal):
            return (
                f"There are {g}. Counting from the {sel.end} end, I mean the "
                f"{_ordinal(sel.rank)} one.{also}"
            )
        if isinstance(sel, Extreme):
            return f"There are {g}. I mean the {sel.measure} one.{also}"
        one = _np("the", (*p.post, *p.also), "one") + _space(_rels(p.also))
        return f"There are {g}. The one I mean is {one}."
    if sel is not None or p.named is not None or not _rels(p.pre):
        raise ValueError("the 'existential' family needs a count, or relations and no selector")
    ws = (*p.pre, *p.also)
    head = _np(_a(ws, p.noun), ws, p.noun)
    return f"There is {head} {_rels(ws)}. {pick(('That is the one.', 'That one.', 'I mean that one.'))}"


_RENDER: dict[str, Callable[[_Parts, Pick], str]] = {
    "plain": _plain,
    "two_sentence": _two_sentence,
    "only": _only,
    "relative": _relative,
    "detailed": _detailed,
    "fronted": _fronted,
    "existential": _existential,
}


def render(expression: Expression, family: str, pick: Pick) -> str:
    """``expression`` worded in ``family`` (synonyms and templates drawn with ``pick``).

    Raises
    ------
    KeyError
        Unknown family.
    ValueError
        The family cannot word this expression (see
        :func:`urbex.synth.phrasing.applicable_families`).
    """
    return _RENDER[family](_parts(expression, pick), pick)
