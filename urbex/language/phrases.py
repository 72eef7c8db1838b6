"""Noun phrases of a tokenized description, their roles, the target's and what is said of it.

:func:`phrases_of` chunks tokens (:mod:`urbex.language.tokens`) into noun phrases (determiner,
adjectives, colours, sizes, numbers, nouns; the head is the last noun) and adjective phrases
without a noun; :func:`assign_roles` marks each as ``context`` (governed by a preposition or by
"with"/"has"), ``partitive`` ("the largest *of the buildings*"), ``predicate`` (after a copula
or a target cue such as "this is", "I mean") or ``main``; :func:`target_phrase` picks the
target's phrase and :func:`said_of_target` the phrases whose colours, sizes and shape are the
target's (its own, its parts', those said of it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from urbex.language.tokens import (
    ADJECTIVAL,
    LINKS,
    NOUNISH,
    PREPS,
    Token,
)
from urbex.language.vocabulary import COLOURS, NUMBERS, SHAPES, SIZES

__all__ = ["Phrase", "assign_roles", "governor", "phrases_of", "said_of_target", "target_phrase"]

_STRONG_CUES = (
    ("this", "is"), ("its",), ("it", "is"), ("target", "is"), ("object", "is"), ("i", "mean"),
    ("looking", "for"), ("look", "for"), ("search", "for"), ("searching", "for"),
    ("referring", "to"), ("talking", "about"), ("describing",), ("find",), ("locate",),
    ("select",), ("choose",), ("pick",), ("spot",), ("answer", "is"),
)  # fmt: skip
#: Head nouns that are a class only with a determiner or an adjective ("the green", "a flat").
_WEAK_HEADS = frozenset({"green", "flat", "common"})


@dataclass(slots=True)
class Phrase:
    """A noun phrase (or an adjective phrase without a noun): tokens ``[a, b)``."""

    a: int
    b: int
    head: int = -1
    cls: str | None = None
    role: str = "main"  # main, context, partitive, predicate
    cue: int = 0  # 2 strong target cue before it, 1 a copula
    colours: list[str] = field(default_factory=list)
    sizes: list[str] = field(default_factory=list)
    shape: str | None = None
    number: int | None = None
    has_det: bool = False


# ----------------------------------------------------------------------------------------------
# phrases
# ----------------------------------------------------------------------------------------------


def _joined(toks: list[Token], k: int) -> bool:
    """Token ``k`` continues the phrase of token ``k - 1`` (no clause break between them)."""
    return toks[k].brk in ("", "/")


def _noun_ahead(toks: list[Token], k: int, limit: int = 3) -> bool:
    """A noun follows token ``k`` within ``limit`` tokens, through modifiers only."""
    for j in range(k + 1, min(len(toks), k + 1 + limit)):
        if not _joined(toks, j):
            return False
        if toks[j].kind in NOUNISH:
            return True
        if toks[j].kind not in ADJECTIVAL | {"w", "link"}:
            return False
    return False


def phrases_of(toks: list[Token]) -> list[Phrase]:
    """The noun phrases (and adjective phrases) of a tokenized description, left to right;
    a phrase runs through determiners, adjectives, colours, numbers and nouns, and ends after
    its last noun (a compound: "car park entrance") or at a break or another word.

    >>> from urbex.language.tokens import tokenize
    >>> toks = tokenize("the big red brick house with a grey roof", (), 0.9)
    >>> [" ".join(t.norm for t in toks[p.a : p.b]) for p in phrases_of(toks)]
    ['the big red brick house', 'a grey roof']
    """
    out: list[Phrase] = []
    k = 0
    while k < len(toks):
        t = toks[k]
        starts = t.kind in NOUNISH | ADJECTIVAL | {"det"} or (
            t.kind == "w" and _noun_ahead(toks, k)
        )
        if t.kind == "adv" and not (k + 1 < len(toks) and toks[k + 1].kind in ADJECTIVAL - {"adv"}):
            starts = False
        if not starts:
            k += 1
            continue
        a, j, seen_noun = k, k, False
        while True:
            cur = toks[j]
            if cur.kind in NOUNISH:
                seen_noun = True
            nxt = j + 1
            if nxt >= len(toks) or not _joined(toks, nxt):
                break
            n = toks[nxt]
            if seen_noun:
                ok = n.kind in NOUNISH - {"one"} and cur.kind != "one"
            elif n.kind == "link":
                ok = (
                    cur.kind in ADJECTIVAL
                    and nxt + 1 < len(toks)
                    and toks[nxt + 1].kind in ADJECTIVAL | {"shade"}
                )
            else:
                ok = n.kind in NOUNISH | ADJECTIVAL or (n.kind == "w" and _noun_ahead(toks, nxt))
            if not ok:
                break
            j = nxt
        out.append(_describe(toks, Phrase(a, j + 1)))
        k = j + 1
    return out


def _describe(toks: list[Token], p: Phrase) -> Phrase:
    """Fill a phrase's head, class, colours, sizes, shape and number."""
    span = toks[p.a : p.b]
    p.has_det = span[0].kind == "det"
    heads = [i for i in range(p.a, p.b) if toks[i].kind in NOUNISH]
    if heads:
        p.head = heads[-1]
    elif toks[p.b - 1].norm in _WEAK_HEADS or (toks[p.b - 1].norm == "green"):
        if p.has_det or any(t.kind == "size" for t in span):
            p.head = p.b - 1  # "the green", "a small green"
            toks[p.head].kind, toks[p.head].cls = "class", "Ground"
    if p.head >= 0:
        h = toks[p.head]
        if h.kind == "class":
            weak = h.norm in _WEAK_HEADS and not (p.has_det or p.head > p.a)
            p.cls = None if weak else h.cls
        elif h.kind == "part":
            owner = [toks[i].cls for i in range(p.a, p.head) if toks[i].kind == "class"]
            p.cls = owner[-1] if owner else None
    for i in range(p.a, p.b):
        t = toks[i]
        if i == p.head:
            continue
        if t.kind == "colour" or (t.kind == "class" and t.norm == "green" and i < p.b - 1):
            c = COLOURS.get(t.norm)
            if c is not None and c not in p.colours:
                p.colours.append(c)
        elif t.kind == "size":
            p.sizes.append(SIZES[t.norm])
        elif t.kind == "shape":
            p.shape = SHAPES[t.norm]
        elif t.kind == "number" and p.number is None:
            p.number = NUMBERS.get(t.norm) or (int(t.norm) if t.norm.isdigit() else None)
    return p


def governor(toks: list[Token], p: Phrase) -> tuple[str, int]:
    """The word governing a phrase (``"."``/``","`` at a break) and its index."""
    k = p.a
    if toks[k].brk in (".", ","):
        return toks[k].brk, k - 1
    j = k - 1
    while j >= 0 and toks[j].kind == "adv" and toks[j].brk not in (".", ","):
        j -= 1
    return toks[j].norm if j >= 0 else ".", j


def _cue(toks: list[Token], j: int) -> int:
    """2 when the words ending at ``j`` are a target cue ("this is", "I mean"), 1 for another
    copula ("there is"), else 0."""
    for cue in _STRONG_CUES:
        n = len(cue)
        if j - n + 1 >= 0 and tuple(t.norm for t in toks[j - n + 1 : j + 1]) == cue:
            if all(t.brk != "." or i == 0 for i, t in enumerate(toks[j - n + 1 : j + 1])):
                return 2
    return 1 if j >= 0 and toks[j].kind == "cop" else 0


def assign_roles(toks: list[Token], phrases: list[Phrase]) -> None:
    """Set each phrase's ``role`` and ``cue`` from the word governing it (see the module
    docstring); a phrase after "and"/"or" takes the role of the phrase before."""
    ends = {p.b: p for p in phrases}
    for p in phrases:
        g, j = governor(toks, p)
        p.cue = _cue(toks, j) if j >= 0 else 0
        if p.cue == 2:
            p.role = "predicate"
        elif g == "of":
            before = ends.get(j)
            lead = j <= 0 or toks[j].brk == "." or toks[j - 1].kind in ("ordinal", "number", "one")
            headless = before is not None and before.head < 0
            p.role = "partitive" if lead or headless or toks[j - 1].kind == "size" else "context"
        elif g in ("look", "looking", "search", "searching") or (
            g == "for" and j > 0 and toks[j - 1].norm in ("look", "looking", "search", "searching")
        ):
            p.role, p.cue = "predicate", 2
        elif g in PREPS or g in ("to", "of"):
            p.role = "context"
        elif g in LINKS and j in ends:
            p.role = ends[j].role
        elif p.cue == 1:
            p.role = "predicate"


# ----------------------------------------------------------------------------------------------
# the target and what is said of it
# ----------------------------------------------------------------------------------------------


def target_phrase(phrases: list[Phrase]) -> Phrase | None:
    """The target's phrase: the first class phrase after a strong cue, else the first one
    that is not context, else the first class phrase at all."""
    classed = [p for p in phrases if p.cls is not None]
    for pick in (
        lambda p: p.cue == 2 and p.role != "context",
        lambda p: p.role != "context",
        lambda p: True,
    ):
        hit = [p for p in classed if pick(p)]
        if hit:
            return hit[0]
    return None


def _subject(toks: list[Token], phrases: list[Phrase], j: int, target: Phrase | None) -> str:
    """Who a predicate after token ``j`` (a copula or a comma) is said of: ``target`` or
    ``other`` (the target when nothing comes before it in the sentence)."""
    sent = toks[j].sent if j >= 0 else 0
    by_end = {p.b - 1: p for p in phrases}
    i = j if j >= 0 and toks[j].kind != "cop" else j - 1
    while i >= 0 and toks[i].sent == sent and toks[i].kind in ("cop", "adv", "prep"):
        i -= 1  # "appears to be", "looks like"
    while i >= 0 and toks[i].sent == sent:
        t = toks[i]
        if t.kind == "pron":
            if t.norm in ("which", "that", "who") and i - 1 in by_end:
                p = by_end[i - 1]
                if p.head >= 0 and toks[p.head].kind == "m":
                    i = p.a - 1
                    continue
                return _whose(p, target)
            return "target"
        if i in by_end:
            p = by_end[i]
            if p.role != "context":
                return _whose(p, target)
            i = p.a - 1
            continue
        i -= 1
    return "target"


def _whose(p: Phrase, target: Phrase | None) -> str:
    """``target`` when phrase ``p`` is (or may be) the target, else ``other``."""
    if (
        p is target
        or p.cls is None
        or (target is not None and p.cls == target.cls and p.role != "context")
    ):
        return "target"
    return "other"


def _owner(toks: list[Token], phrases: list[Phrase], p: Phrase, target: Phrase | None) -> str:
    """Whose part a part phrase ("a red roof") is: ``target`` or ``other``."""
    if p.cls is not None:
        return _whose(p, target)
    after = next((q for q in phrases if q.a == p.b + 1 and toks[p.b].norm == "of"), None)
    if after is not None and after.head >= 0:  # "the roof of the house"
        return _whose(after, target) if after.cls is not None else "other"
    if toks[p.a].norm in ("its", "their"):
        return "target"
    g, _ = governor(toks, p)
    if g in ("with", "has", "have", "having", "featuring", "whose", "and"):
        before = [
            q
            for q in phrases
            if q.b <= p.a and q.cls is not None and toks[q.a].sent == toks[p.a].sent
        ]
        return _whose(before[-1], target) if before else "target"
    if g in PREPS:
        return "other"
    return _subject(toks, phrases, p.a - 1, target) if p.a else "target"


def said_of_target(toks: list[Token], phrases: list[Phrase], target: Phrase | None) -> list[Phrase]:
    """The phrases whose colours, sizes and shape are the target's."""
    out = [] if target is None else [target]
    for p in phrases:
        if p is target:
            continue
        h = toks[p.head] if p.head >= 0 else None
        if h is not None and h.kind == "part":
            if _owner(toks, phrases, p, target) == "target":
                out.append(p)
        elif h is not None and h.kind == "one":
            if p.role != "context":
                out.append(p)
        elif h is None:  # an adjective phrase: "it is dark grey or black", "the largest of ..."
            g, j = governor(toks, p)
            nxt = next((q for q in phrases if q.a == p.b + 1 and toks[p.b].norm == "of"), None)
            if nxt is not None:
                if nxt is target or nxt.role == "partitive":
                    out.append(p)
            elif g in PREPS and toks[j].kind == "prep":
                continue
            elif _subject(toks, phrases, j, target) == "target":
                out.append(p)
        elif (
            h.kind == "class" and p.role == "predicate" and (target is None or p.cls == target.cls)
        ):
            _, j = governor(toks, p)
            if p.cue < 1 or (j > 0 and toks[j - 1].norm in ("there", "theres")):
                continue  # "... and a red house next to it", "there is a car ..."
            if _subject(toks, phrases, j, target) == "target":
                out.append(p)
    return out
