"""The one parse of a description: target class, colours, sizes, shape, counts, ordinal, mentions.

:func:`parse` reads a referring expression the way people write one — long, several sentences,
other objects with their own colours, parts of the target, counts, shapes, the map frame,
hedges, shades and misspelled place names — into a :class:`~urbex.language.records.Parse`.
Every reader of descriptions uses it: the landmark prior, both rankers (rules and trained),
the Without-GT ranker and the class-aware answer lift.

How it reads:

1. **Words and names.** The description's words are normalised
   (:func:`urbex.landmarks.names.words_of`) and the landmark names found in them with the
   landmark index's own fuzzy finder (:func:`urbex.landmarks.mentions.mention_spans`,
   misspellings included); each mention becomes one opaque token, so a name's words ("Green
   Park", "Red Lion", "White Hart Lane") are never read as a class or a colour.
2. **Noun phrases.** Words are chunked into noun phrases (determiner, adjectives, colours,
   sizes, numbers, nouns); a phrase's head is its last noun ("school bus" is a bus, "bus
   station" a station). Nouns come from :mod:`urbex.language.vocabulary`: class nouns, parts
   (roof, walls), context objects (trees, driveways), materials.
3. **The target.** A phrase governed by a preposition or by "with"/"has" ("in the parking
   lot of", "a house with a red car in front of it") is context, not the target. The target
   is the first phrase with a class noun after a target cue ("this is", "I mean", "look
   for"), else the first one that is not context ("the largest *of the buildings*" counts).
4. **Attributes.** Colours, sizes and shape are the target phrase's, those of its parts ("with
   a red roof", "its walls are white") and those said of it ("it is dark grey or black");
   those of context objects are left out. Shades fold to basic colours
   (:func:`urbex.language.vocabulary.colour_of`).
5. **Relations and ordinals.** Each mention's relation is read from the words just before it
   (:func:`urbex.language.relations.relation_before`), inherited across "A and B", or turned
   round from the words after it; an ordinal ("the third house from the left", "8 houses to
   the right of X", "the northernmost car") with what it counts from.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from urbex.landmarks.mentions import mention_spans
from urbex.landmarks.names import normalize_name, words_of
from urbex.language.records import ContextObject, Count, Mention, Ordinal, Parse
from urbex.language.relations import RELATION_WORDS, relation_after, relation_before
from urbex.language.vocabulary import (
    CLASS_NOUNS,
    COLOURS,
    CONTEXT_NOUNS,
    MATERIALS,
    NUMBERS,
    ORDINALS,
    PART_NOUNS,
    SHADE_WORDS,
    SHAPES,
    SIZES,
    UNITS,
    singular,
)

__all__ = ["context_objects", "parse"]

#: Mention threshold of :func:`parse` (the landmark index's default).
MENTION_THRESHOLD = 0.9

_DETS = frozenset(
    "the a an these those its their his her my our your some any each every another".split()
)
_PRONOUNS = frozenset("it this that which who they them".split())
_PREPS = frozenset(
    "in on at of near by beside besides behind between across from to into onto under over above "
    "below beneath along alongside around round past toward towards within inside outside opposite "
    "beyond against among amongst via through off with without like than as next front upon "
    "about after before for facing fronting overlooking adjacent close containing including has "
    "have having had holds holding surrounded surrounding bordering adjoining featuring whose "
    "where while".split()
)  # fmt: skip
_COPULA = frozenset("is are was were be been being looks look appears appear seems seem".split())
_ADVERBS = frozenset(
    "very quite fairly mostly mainly slightly rather pretty somewhat really partly partially "
    "completely entirely almost nearly predominantly probably possibly maybe perhaps likely "
    "also all kind sort".split()
)  # fmt: skip
#: Words that may sit between adjectives and the noun they describe ("red-roofed", "L shaped").
_PARTICIPLES = frozenset("shaped coloured colored roofed sided storey story tone toned ish".split())
_LINKS = frozenset({"and", "or"})
_STRONG_CUES = (
    ("this", "is"), ("its",), ("it", "is"), ("target", "is"), ("object", "is"), ("i", "mean"),
    ("looking", "for"), ("look", "for"), ("search", "for"), ("searching", "for"),
    ("referring", "to"), ("talking", "about"), ("describing",), ("find",), ("locate",),
    ("select",), ("choose",), ("pick",), ("spot",), ("answer", "is"),
)  # fmt: skip
#: Head nouns that are a class only with a determiner or an adjective ("the green", "a flat").
_WEAK_HEADS = frozenset({"green", "flat", "common"})
_DIRECTIONAL = {
    "northernmost": "north", "southernmost": "south", "easternmost": "east",
    "westernmost": "west", "leftmost": "left", "rightmost": "right", "topmost": "top",
    "uppermost": "top", "bottommost": "bottom", "lowermost": "bottom",
}  # fmt: skip
_SIDE_WORDS = {"top": "top", "bottom": "bottom", "left": "left", "right": "right",
               "upper": "top", "lower": "bottom"}  # fmt: skip
_ORD_RE = re.compile(r"^(\d+)(?:st|nd|rd|th)$")


@dataclass(slots=True)
class _Tok:
    """One token: a word (``norm``) or a whole mention (``mention`` ≥ 0); ``brk`` is the
    punctuation before it: ``.`` (a new sentence), ``,`` (a new clause), ``/`` (a joiner)."""

    norm: str
    start: int
    end: int
    mention: int = -1
    brk: str = ""
    kind: str = "w"
    cls: str | None = None
    sent: int = 0


@dataclass(slots=True)
class _Phrase:
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
# tokens
# ----------------------------------------------------------------------------------------------


def _break(gap: str, prev_raw: str, prev: str, nxt: str) -> str:
    if re.search(r"[!?;]", gap) or (
        "." in gap
        and prev_raw.lower() not in ("st", "dr", "mr", "mrs", "ms", "rd", "ave", "no", "approx")
        and not (gap == "." and prev.isdigit() and nxt.isdigit())
    ):
        return "."
    if re.search(r"[,:()\[\]–—]| - ", gap):
        return ","
    if "/" in gap or "-" in gap:
        return "/"
    return ""


def _spelled(word: str) -> str:
    """``word``, or the one word of the reading vocabulary one edit away from it (a letter
    dropped, added, changed or two swapped: "besidde", "frist", "builing"); words of five or
    more letters only, never a word the vocabulary knows."""
    if len(word) < 5 or word in _KNOWN or not word.isalpha():
        return word
    from rapidfuzz import process
    from rapidfuzz.distance import OSA

    near = process.extract(word, _SPELLABLE, scorer=OSA.distance, score_cutoff=1, limit=2)
    return near[0][0] if len(near) == 1 else word


def _tokens(description: str, names: Sequence[str], threshold: float) -> list[_Tok]:
    words = words_of(description)
    keep = [i for i, w in enumerate(words) if w.norm != "the"]
    spans = mention_spans(
        [words[i].norm for i in keep], [normalize_name(n) for n in names], threshold=threshold
    )
    at = {keep[s.start]: (keep[s.end - 1] + 1, s.which) for s in spans}
    toks: list[_Tok] = []
    i = 0
    while i < len(words):
        if i in at:
            j, idx = at[i]
            toks.append(_Tok(f"<m{idx}>", words[i].start, words[j - 1].end, mention=idx, kind="m"))
            i = j
        else:
            toks.append(_Tok(_spelled(words[i].norm), words[i].start, words[i].end))
            i += 1
    sent = 0
    for k, t in enumerate(toks):
        if k == 0:
            t.brk = "."
        else:
            p = toks[k - 1]
            t.brk = _break(
                description[p.end : t.start], description[p.start : p.end], p.norm, t.norm
            )
        sent += t.brk == "." and k > 0
        t.sent = sent
    return _merge_nouns(toks)


def _merge_nouns(toks: list[_Tok]) -> list[_Tok]:
    """Multi-word class nouns become one token; every token gets its kind."""
    out: list[_Tok] = []
    i = 0
    while i < len(toks):
        t = toks[i]
        if t.kind == "m":
            out.append(t)
            i += 1
            continue
        for n in (4, 3, 2, 1):
            part = toks[i : i + n]
            if len(part) < n or any(
                p.kind == "m" or (k and p.brk in (".", ",")) for k, p in enumerate(part)
            ):
                continue
            key = (*(p.norm for p in part[:-1]), singular(part[-1].norm, _CLASS_WORDS))
            if key in CLASS_NOUNS and not (n == 1 and key[0] in COLOURS):
                merged = _Tok(" ".join(key), t.start, part[-1].end, brk=t.brk, sent=t.sent)
                merged.kind, merged.cls = "class", CLASS_NOUNS[key]
                out.append(merged)
                i += n
                break
        else:
            t.kind = _kind(t.norm)
            out.append(t)
            i += 1
    for k, t in enumerate(out):  # context-dependent words
        nxt = out[k + 1] if k + 1 < len(out) and out[k + 1].brk not in (".", ",") else None
        if t.norm in ("this", "that"):
            t.kind = "det" if nxt is not None and nxt.kind in _NOUNISH | _ADJ else "pron"
        elif t.norm == "its" and nxt is not None and nxt.kind == "det":
            t.kind = "cop"  # "it's a ..."
        elif t.kind == "shade" and not (nxt is not None and nxt.kind in ("colour", "shade")):
            t.kind = "colour" if t.norm == "dark" else "w"
        elif (
            t.norm == "lot"
            and nxt is not None
            and nxt.norm == "of"
            and k
            and out[k - 1].norm == "a"
        ):
            t.kind = "w"  # "a lot of"
        elif (
            t.kind == "shape"
            and len(t.norm) == 1
            and not (nxt is not None and nxt.norm == "shaped")
        ):
            t.kind = "w"
    return out


_CLASS_WORDS = frozenset(k[-1] for k in CLASS_NOUNS)
#: Every word the reader knows (never spelling-corrected), and those a misspelling may become.
_KNOWN = frozenset(
    {w for k in CLASS_NOUNS for w in k}
    | PART_NOUNS
    | CONTEXT_NOUNS
    | MATERIALS
    | set(COLOURS)
    | set(SIZES)
    | set(SHAPES)
    | set(NUMBERS)
    | set(ORDINALS)
    | set(_DIRECTIONAL)
    | _PREPS
    | _COPULA
    | _ADVERBS
    | _PARTICIPLES
    | _DETS
    | _PRONOUNS
    | RELATION_WORDS
    | {"horse", "mouse", "power", "ditch", "trunk", "sorry", "towel", "score", "shore", "stove"}
)
_SPELLABLE = sorted(w for w in _KNOWN if len(w) >= 5)
_NOUNISH = frozenset({"class", "part", "context", "material", "m", "one"})
_ADJ = frozenset({"colour", "shade", "size", "shape", "number", "ordinal", "participle", "adv"})
_CONTEXT_SINGULAR = frozenset(CONTEXT_NOUNS - {"one"})


def _kind(w: str) -> str:
    if w in COLOURS and w != "dark":
        return "colour"
    if w in SHADE_WORDS:
        return "shade"
    if w in SIZES:
        return "size"
    if w in SHAPES:
        return "shape"
    if w in NUMBERS or w.isdigit():
        return "number"
    if w in ORDINALS or _ORD_RE.match(w) or w in _DIRECTIONAL:
        return "ordinal"
    if w in _PARTICIPLES:
        return "participle"
    if w in ("one", "ones"):
        return "one"
    if w in _DETS:
        return "det"
    if w in _PRONOUNS:
        return "pron"
    if w in _ADVERBS:
        return "adv"
    if w in _LINKS:
        return "link"
    if w in _COPULA:
        return "cop"
    if w in _PREPS:
        return "prep"
    if singular(w, PART_NOUNS) in PART_NOUNS:
        return "part"
    if singular(w, _CONTEXT_SINGULAR) in _CONTEXT_SINGULAR:
        return "context"
    if w in MATERIALS:
        return "material"
    return "w"


# ----------------------------------------------------------------------------------------------
# phrases
# ----------------------------------------------------------------------------------------------


def _joined(toks: list[_Tok], k: int) -> bool:
    """Token ``k`` continues the phrase of token ``k - 1`` (no clause break between them)."""
    return toks[k].brk in ("", "/")


def _noun_ahead(toks: list[_Tok], k: int, limit: int = 3) -> bool:
    """A noun follows token ``k`` within ``limit`` tokens, through modifiers only."""
    for j in range(k + 1, min(len(toks), k + 1 + limit)):
        if not _joined(toks, j):
            return False
        if toks[j].kind in _NOUNISH:
            return True
        if toks[j].kind not in _ADJ | {"w", "link"}:
            return False
    return False


def _phrases(toks: list[_Tok]) -> list[_Phrase]:
    out: list[_Phrase] = []
    k = 0
    while k < len(toks):
        t = toks[k]
        starts = t.kind in _NOUNISH | _ADJ | {"det"} or (t.kind == "w" and _noun_ahead(toks, k))
        if t.kind == "adv" and not (k + 1 < len(toks) and toks[k + 1].kind in _ADJ - {"adv"}):
            starts = False
        if not starts:
            k += 1
            continue
        a, j, seen_noun = k, k, False
        while True:
            cur = toks[j]
            if cur.kind in _NOUNISH:
                seen_noun = True
            nxt = j + 1
            if nxt >= len(toks) or not _joined(toks, nxt):
                break
            n = toks[nxt]
            if seen_noun:
                ok = n.kind in _NOUNISH - {"one"} and cur.kind != "one"
            elif n.kind == "link":
                ok = (
                    cur.kind in _ADJ
                    and nxt + 1 < len(toks)
                    and toks[nxt + 1].kind in _ADJ | {"shade"}
                )
            else:
                ok = n.kind in _NOUNISH | _ADJ or (n.kind == "w" and _noun_ahead(toks, nxt))
            if not ok:
                break
            j = nxt
        out.append(_describe(toks, _Phrase(a, j + 1)))
        k = j + 1
    return out


def _describe(toks: list[_Tok], p: _Phrase) -> _Phrase:
    """Fill a phrase's head, class, colours, sizes, shape and number."""
    span = toks[p.a : p.b]
    p.has_det = span[0].kind == "det"
    heads = [i for i in range(p.a, p.b) if toks[i].kind in _NOUNISH]
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


def _gov(toks: list[_Tok], p: _Phrase) -> tuple[str, int]:
    """The word governing a phrase (``"."``/``","`` at a break) and its index."""
    k = p.a
    if toks[k].brk in (".", ","):
        return toks[k].brk, k - 1
    j = k - 1
    while j >= 0 and toks[j].kind == "adv" and toks[j].brk not in (".", ","):
        j -= 1
    return toks[j].norm if j >= 0 else ".", j


def _cue(toks: list[_Tok], j: int) -> int:
    """2 when the words ending at ``j`` are a target cue ("this is", "I mean"), 1 for another
    copula ("there is"), else 0."""
    for cue in _STRONG_CUES:
        n = len(cue)
        if j - n + 1 >= 0 and tuple(t.norm for t in toks[j - n + 1 : j + 1]) == cue:
            if all(t.brk != "." or i == 0 for i, t in enumerate(toks[j - n + 1 : j + 1])):
                return 2
    return 1 if j >= 0 and toks[j].kind == "cop" else 0


def _roles(toks: list[_Tok], phrases: list[_Phrase]) -> None:
    ends = {p.b: p for p in phrases}
    for p in phrases:
        g, j = _gov(toks, p)
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
        elif g in _PREPS or g in ("to", "of"):
            p.role = "context"
        elif g in _LINKS and j in ends:
            p.role = ends[j].role
        elif p.cue == 1:
            p.role = "predicate"


# ----------------------------------------------------------------------------------------------
# the target and what is said of it
# ----------------------------------------------------------------------------------------------


def _target(phrases: list[_Phrase]) -> _Phrase | None:
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


def _subject(toks: list[_Tok], phrases: list[_Phrase], j: int, target: _Phrase | None) -> str:
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


def _whose(p: _Phrase, target: _Phrase | None) -> str:
    if (
        p is target
        or p.cls is None
        or (target is not None and p.cls == target.cls and p.role != "context")
    ):
        return "target"
    return "other"


def _owner(toks: list[_Tok], phrases: list[_Phrase], p: _Phrase, target: _Phrase | None) -> str:
    """Whose part a part phrase ("a red roof") is: ``target`` or ``other``."""
    if p.cls is not None:
        return _whose(p, target)
    after = next((q for q in phrases if q.a == p.b + 1 and toks[p.b].norm == "of"), None)
    if after is not None and after.head >= 0:  # "the roof of the house"
        return _whose(after, target) if after.cls is not None else "other"
    if toks[p.a].norm in ("its", "their"):
        return "target"
    g, _ = _gov(toks, p)
    if g in ("with", "has", "have", "having", "featuring", "whose", "and"):
        before = [
            q
            for q in phrases
            if q.b <= p.a and q.cls is not None and toks[q.a].sent == toks[p.a].sent
        ]
        return _whose(before[-1], target) if before else "target"
    if g in _PREPS:
        return "other"
    return _subject(toks, phrases, p.a - 1, target) if p.a else "target"


def _said_of_target(
    toks: list[_Tok], phrases: list[_Phrase], target: _Phrase | None
) -> list[_Phrase]:
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
            g, j = _gov(toks, p)
            nxt = next((q for q in phrases if q.a == p.b + 1 and toks[p.b].norm == "of"), None)
            if nxt is not None:
                if nxt is target or nxt.role == "partitive":
                    out.append(p)
            elif g in _PREPS and toks[j].kind == "prep":
                continue
            elif _subject(toks, phrases, j, target) == "target":
                out.append(p)
        elif (
            h.kind == "class" and p.role == "predicate" and (target is None or p.cls == target.cls)
        ):
            _, j = _gov(toks, p)
            if j > 0 and toks[j - 1].norm in ("there", "theres"):
                continue
            if _subject(toks, phrases, j, target) == "target":
                out.append(p)
    return out


# ----------------------------------------------------------------------------------------------
# ordinal, counts, mentions
# ----------------------------------------------------------------------------------------------


def _from_what(toks: list[_Tok], k: int, names: Sequence[str]) -> str | None:
    """What "from" at token ``k`` counts from: a compass end, a map side, ``corner``, a name."""
    j = k + 1
    while j < len(toks) and toks[j].norm in ("the", "its", "their", "very", "far", "in"):
        j += 1
    words = [t.norm for t in toks[j : j + 4] if t.sent == toks[k].sent]
    if not words:
        return None
    if toks[j].kind == "m":
        return names[toks[j].mention]
    if "corner" in words[:3]:
        return "corner"
    m = re.match(r"(north|south|east|west)", words[0])
    if m:
        return m.group(1)
    return _SIDE_WORDS.get(words[0])


def _ordinal(
    toks: list[_Tok], phrases: list[_Phrase], names: Sequence[str]
) -> tuple[Ordinal | None, _Phrase | None]:
    """The description's ordinal, and the phrase of "N houses to the right of X" (no count)."""
    for p in phrases:  # "8 houses to the right of X", "3 doors down from X"
        h = toks[p.head] if p.head >= 0 else None
        if p.number is None or h is None or h.kind not in ("class", "part") or p.b >= len(toks):
            continue
        rest = [t for t in toks[p.b : p.b + 7] if t.sent == toks[p.a].sent]
        mk = next((i for i, t in enumerate(rest) if t.kind == "m"), None)
        before = mk - 1 if mk is not None else -1
        while before > 0 and rest[before].kind == "det":
            before -= 1
        if (
            mk is not None
            and before >= 0
            and rest[before].norm in ("of", "from")
            and all(
                t.kind in ("prep", "det", "w", "size")
                or t.norm in _SIDE_WORDS
                or re.match(r"(north|south|east|west)", t.norm)
                for t in rest[:mk]
            )
        ):
            return Ordinal(k=p.number, from_=names[rest[mk].mention]), p
    for p in phrases:
        for i in range(p.a, p.b):
            t = toks[i]
            if t.kind != "ordinal":
                continue
            h = toks[p.head] if p.head >= 0 else None
            if h is not None and h.kind not in ("class", "one", "m"):
                continue  # "the first floor", "the second row"
            if t.norm in _DIRECTIONAL:
                return Ordinal(k=1, from_=_DIRECTIONAL[t.norm]), None
            m = _ORD_RE.match(t.norm)
            k = ORDINALS.get(t.norm) or (int(m.group(1)) if m else 0)
            if k < 1:
                continue
            same = [
                j for j in range(len(toks)) if toks[j].sent == t.sent and toks[j].norm == "from"
            ]
            after = [j for j in same if j > i]
            earlier = [j for j in same if j < i]
            for j in [*after, *reversed(earlier)]:
                what = _from_what(toks, j, names)
                if what is not None:
                    return Ordinal(k=k, from_=what), None
            return Ordinal(k=k, from_=None), None
    for k, t in enumerate(toks):  # "the most northern car", "the car furthest to the west"
        if t.norm in ("most", "furthest", "farthest") and k + 1 < len(toks):
            nxt = [u.norm for u in toks[k + 1 : k + 4] if u.norm not in ("to", "the", "on")]
            if nxt and (m := re.match(r"(north|south|east|west)", nxt[0])):
                return Ordinal(k=1, from_=m.group(1)), None
            if nxt and nxt[0] in _SIDE_WORDS and t.norm != "most":
                return Ordinal(k=1, from_=_SIDE_WORDS[nxt[0]]), None
    return None, None


def _counts(toks: list[_Tok], phrases: list[_Phrase], skip: _Phrase | None) -> tuple[Count, ...]:
    out: list[Count] = []
    for p in phrases:
        if p is skip or p.number is None or p.head < 0:
            continue
        h = toks[p.head]
        if h.kind == "one" or h.kind == "m" or singular(h.norm, UNITS) in UNITS:
            continue
        noun = h.norm if h.kind == "class" else singular(h.norm, _ALL_NOUNS)
        out.append(Count(n=p.number, noun=noun))
    return tuple(out)


_ALL_NOUNS = PART_NOUNS | CONTEXT_NOUNS | MATERIALS


def _mentions(toks: list[_Tok], names: Sequence[str], description: str) -> tuple[Mention, ...]:
    out: list[Mention] = []
    prev: tuple[int, Mention] | None = None  # (token index, mention) of the last mention
    for k, t in enumerate(toks):
        if t.kind != "m":
            continue
        name = names[t.mention]
        a = k
        while a > 0 and toks[a].brk not in (".", ",") and toks[a - 1].kind != "m":
            a -= 1
        window = toks[a:k]
        words = [u.norm for u in window]
        bare = [w for w in words if w not in _DETS and w != "the"]
        m: Mention | None = None
        same = prev is not None and toks[prev[0]].sent == t.sent
        if (
            prev is not None
            and same
            and bare in (["and"], ["or"], ["and", "also"])
            and toks[k].brk not in (".", ",")
        ):
            m = Mention(name=name, relation=prev[1].relation, text=prev[1].text)
        elif prev is not None and bare == ["from"] and _ACROSS.search(prev[1].text.lower()):
            span = description[_start_of(toks, prev[0], prev[1]) : window[-1].end]
            m = Mention(name=name, relation="across_from", text=span)
            out[-1] = Mention(name=prev[1].name, relation="other", text=prev[1].text)
        elif prev is not None and same and bare in (["meets"], ["meet"], ["crosses"], ["joins"]):
            m = Mention(name=name, relation="corner", text=window[-1].norm)
            out[-1] = Mention(name=prev[1].name, relation="corner", text=prev[1].text or "where")
        else:
            rel = relation_before(words)
            if rel is not None:
                r, s0, s1 = rel
                m = Mention(
                    name=name, relation=r, text=description[window[s0].start : window[s1 - 1].end]
                )
        if m is None:
            after = [u.norm for u in toks[k + 1 : k + 10] if u.sent == t.sent]
            rev = relation_after(after)
            if rev is not None:
                r, n = rev
                m = Mention(
                    name=name, relation=r, text=description[toks[k + 1].start : toks[k + n].end]
                )
            elif after[:1] in (["junction"], ["intersection"], ["crossroads"], ["corner"]):
                m = Mention(name=name, relation="corner", text=toks[k + 1].norm)
                if (
                    prev is not None
                    and out
                    and out[-1].relation == "near"
                    and toks[prev[0]].sent == t.sent
                ):
                    out[-1] = Mention(name=prev[1].name, relation="corner", text=toks[k + 1].norm)
            elif (
                a == k
                and k + 1 < len(toks)
                and (toks[k + 1].brk in (",", ":") or toks[k + 1].norm == "is")
                and _names_next(toks, k)
            ):
                sep = "," if toks[k + 1].brk else "is"
                m = Mention(name=name, relation="other", text=sep)
            else:
                m = Mention(name=name, relation="near", text="")
        out.append(m)
        prev = (k, m)
    return tuple(out)


_ACROSS = re.compile(r"(?:across|over|(?:other|opposite|far) side of)$")


def _start_of(toks: list[_Tok], k: int, m: Mention) -> int:
    """Character where mention ``m`` (token ``k``)'s relation text starts (its name if none)."""
    n = len(m.text.split())
    j = k - n
    return toks[j].start if m.text and j >= 0 else toks[k].start


def _names_next(toks: list[_Tok], k: int) -> bool:
    """Token ``k`` (a mention at a clause start) is followed by "(is) (a|the) ... <class noun>"."""
    j = k + 1
    if j < len(toks) and toks[j].norm == "is":
        j += 1
    while j < len(toks) and toks[j].kind in _ADJ | {"det", "w"} and toks[j].sent == toks[k].sent:
        j += 1
    return j < len(toks) and toks[j].kind == "class" and toks[j].sent == toks[k].sent


# ----------------------------------------------------------------------------------------------
# the parse
# ----------------------------------------------------------------------------------------------


def parse(
    description: str, landmark_names: Sequence[str] = (), *, threshold: float = MENTION_THRESHOLD
) -> Parse:
    """The one parse of a description (see the module docstring).

    Parameters
    ----------
    description
        A referring expression, free text.
    landmark_names
        The names the description may mention (a scene's landmark names and aliases,
        :meth:`urbex.landmarks.LandmarkIndex.names`); each mention's ``name`` is one of them.
    threshold
        Smallest fuzzy score (0–1) of a mention (``landmarks.mention_threshold``).

    Returns
    -------
    Parse

    Examples
    --------
    >>> p = parse("On Regina Drive in the parking lot of the McDonald's this gray car is parked",
    ...           ["Regina Drive", "McDonald's"])
    >>> p.target_class, p.target_colours, [(m.name, m.relation) for m in p.mentions]
    ('Car', ('grey',), [('Regina Drive', 'on'), ("McDonald's", 'in')])
    >>> p = parse("a white house with a red car in front of it, across the street from Red Lion",
    ...           ["Red Lion"])
    >>> p.target_class, p.target_colours, p.mentions[0].relation, p.mentions[0].text
    ('Building', ('white',), 'across_from', 'across the street from')
    >>> parse("the third house from the left with a dark grey roof").ordinal
    Ordinal(k=3, from_='left')
    >>> parse("two light blue vans next to Green Park", ["Green Park"]).to_json()["target_colours"]
    ['blue']
    """
    return _read(str(description), tuple(str(n) for n in landmark_names), float(threshold))[0]


def context_objects(
    description: str, landmark_names: Sequence[str] = (), *, threshold: float = MENTION_THRESHOLD
) -> tuple[ContextObject, ...]:
    """The unnamed objects of the target classes the description places the target against,
    with the relation read as for a mention ("In a parking area: the yellow car" → a Parking
    ``in``). Same arguments as :func:`parse` (and the same, cached, reading).

    >>> context_objects("the red car in a car park next to Mill Lane", ["Mill Lane"])
    (ContextObject(cls='Parking', relation='in', text='in'),)
    """
    return _read(str(description), tuple(str(n) for n in landmark_names), float(threshold))[1]


def _context(
    toks: list[_Tok], phrases: list[_Phrase], description: str
) -> tuple[ContextObject, ...]:
    out: list[ContextObject] = []
    for p in phrases:
        if p.role != "context" or p.cls is None or toks[p.head].kind != "class":
            continue
        a = p.a
        while a > 0 and toks[a].brk not in (".", ",") and toks[a - 1].kind != "m":
            a -= 1
        window = toks[a : p.a]
        rel = relation_before([u.norm for u in window]) if window else None
        if rel is not None and rel[0] != "other":
            r, s0, s1 = rel
            out.append(
                ContextObject(
                    cls=p.cls, relation=r, text=description[window[s0].start : window[s1 - 1].end]
                )
            )
    return tuple(out)


@lru_cache(maxsize=4096)
def _read(
    description: str, names: tuple[str, ...], threshold: float
) -> tuple[Parse, tuple[ContextObject, ...]]:
    toks = _tokens(description, names, threshold)
    phrases = _phrases(toks)
    _roles(toks, phrases)
    target = _target(phrases)
    colours: list[str] = []
    sizes: list[str] = []
    shape: str | None = None
    for p in _said_of_target(toks, phrases, target):
        colours += [c for c in p.colours if c not in colours]
        sizes += [s for s in p.sizes if s not in sizes]
        shape = shape or p.shape
    ordinal, skip = _ordinal(toks, phrases, names)
    parsed = Parse(
        target_class=None if target is None else target.cls,
        target_colours=tuple(colours),
        sizes=tuple(sizes),
        shape=shape,
        counts=_counts(toks, phrases, skip),
        ordinal=ordinal,
        mentions=_mentions(toks, names, description),
    )
    return parsed, _context(toks, phrases, description)
    return parsed, _context(toks, phrases, description)
