"""A description as tokens: normalised words, landmark mentions as single tokens, word kinds.

:func:`tokenize` is the first step of :func:`urbex.language.parse`: the words
(:func:`urbex.landmarks.names.words_of`, misspellings of known words corrected), each landmark
mention found by the landmark index's finder (:func:`urbex.landmarks.mentions.mention_spans`)
made one token, the punctuation between words kept as sentence and clause breaks, multi-word
class nouns ("car park", "block of flats") merged, and every token given its kind (class noun,
part, context noun, colour, size, preposition, ...).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from urbex.landmarks.mentions import mention_spans
from urbex.landmarks.names import normalize_name, words_of
from urbex.language.relation_phrases import RELATION_WORDS
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
    singular,
)

__all__ = [
    "ADJECTIVAL",
    "ADVERBS",
    "COPULA",
    "DETS",
    "DIRECTIONAL",
    "KNOWN",
    "LINKS",
    "NOUNISH",
    "ORDINAL_RE",
    "PREPS",
    "PRONOUNS",
    "SIDE_WORDS",
    "Token",
    "tokenize",
]

DETS = frozenset(
    "the a an these those its their his her my our your some any each every another".split()
)
PRONOUNS = frozenset("it this that which who they them".split())
PREPS = frozenset(
    "in on at of near by beside besides behind between across from to into onto under over above "
    "below beneath along alongside around round past toward towards within inside outside opposite "
    "beyond against among amongst via through off with without like than as next front upon "
    "about after before for facing fronting overlooking adjacent close containing including has "
    "have having had holds holding surrounded surrounding bordering adjoining featuring whose "
    "where while".split()
)  # fmt: skip
COPULA = frozenset("is are was were be been being looks look appears appear seems seem".split())
ADVERBS = frozenset(
    "very quite fairly mostly mainly slightly rather pretty somewhat really partly partially "
    "completely entirely almost nearly predominantly probably possibly maybe perhaps likely "
    "also all kind sort".split()
)  # fmt: skip
#: Words that may sit between adjectives and the noun they describe ("red-roofed", "L shaped").
PARTICIPLES = frozenset("shaped coloured colored roofed sided storey story tone toned ish".split())
LINKS = frozenset({"and", "or"})
DIRECTIONAL = {
    "northernmost": "north", "southernmost": "south", "easternmost": "east",
    "westernmost": "west", "leftmost": "left", "rightmost": "right", "topmost": "top",
    "uppermost": "top", "bottommost": "bottom", "lowermost": "bottom",
}  # fmt: skip
SIDE_WORDS = {"top": "top", "bottom": "bottom", "left": "left", "right": "right",
               "upper": "top", "lower": "bottom"}  # fmt: skip
ORDINAL_RE = re.compile(r"^(\d+)(?:st|nd|rd|th)$")


@dataclass(slots=True)
class Token:
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


# ----------------------------------------------------------------------------------------------
# tokens
# ----------------------------------------------------------------------------------------------


def _break(gap: str, prev_raw: str, prev: str, nxt: str) -> str:
    """The break the punctuation ``gap`` between two words makes (see :class:`Token`)."""
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
    if len(word) < 5 or word in KNOWN or word in _PLURALS or not word.isalpha():
        return word
    from rapidfuzz import process
    from rapidfuzz.distance import OSA

    near = process.extract(word, _SPELLABLE, scorer=OSA.distance, score_cutoff=1, limit=2)
    return near[0][0] if len(near) == 1 else word


def tokenize(description: str, names: Sequence[str], threshold: float) -> list[Token]:
    """The tokens of a description (see the module docstring).

    Parameters
    ----------
    description
        Free text.
    names
        Landmark names it may mention; a mention is one token of kind ``m`` whose ``mention``
        is the name's index here.
    threshold
        Smallest fuzzy score (0–1) of a mention.

    >>> [(t.norm, t.kind) for t in tokenize("the red car park by Mill Ln.", ["Mill Lane"], 0.9)]
    [('the', 'det'), ('red', 'colour'), ('car park', 'class'), ('by', 'prep'), ('<m0>', 'm')]
    """
    words = words_of(description)
    keep = [i for i, w in enumerate(words) if w.norm != "the"]
    spans = mention_spans(
        [words[i].norm for i in keep], [normalize_name(n) for n in names], threshold=threshold
    )
    at = {keep[s.start]: (keep[s.end - 1] + 1, s.which) for s in spans}
    toks: list[Token] = []
    i = 0
    while i < len(words):
        if i in at:
            j, idx = at[i]
            toks.append(Token(f"<m{idx}>", words[i].start, words[j - 1].end, mention=idx, kind="m"))
            i = j
        else:
            toks.append(Token(_spelled(words[i].norm), words[i].start, words[i].end))
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


def _merge_nouns(toks: list[Token]) -> list[Token]:
    """Multi-word class nouns become one token; every token gets its kind."""
    out: list[Token] = []
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
                merged = Token(" ".join(key), t.start, part[-1].end, brk=t.brk, sent=t.sent)
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
            t.kind = "det" if nxt is not None and nxt.kind in NOUNISH | ADJECTIVAL else "pron"
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
KNOWN = frozenset(
    {w for k in CLASS_NOUNS for w in k}
    | PART_NOUNS
    | CONTEXT_NOUNS
    | MATERIALS
    | set(COLOURS)
    | set(SIZES)
    | set(SHAPES)
    | set(NUMBERS)
    | set(ORDINALS)
    | set(DIRECTIONAL)
    | PREPS
    | COPULA
    | ADVERBS
    | PARTICIPLES
    | DETS
    | PRONOUNS
    | RELATION_WORDS
    | {"horse", "mouse", "power", "ditch", "trunk", "sorry", "towel", "score", "shore", "stove"}
)
#: Plurals of the nouns: known too ("houses"), and what "housses" may be read as.
_PLURALS = frozenset(
    w + ("es" if w.endswith(("s", "sh", "ch", "x")) else "s")
    for w in {k[-1] for k in CLASS_NOUNS} | PART_NOUNS | CONTEXT_NOUNS
)
_SPELLABLE = sorted(w for w in KNOWN | _PLURALS if len(w) >= 5)
NOUNISH = frozenset({"class", "part", "context", "material", "m", "one"})
ADJECTIVAL = frozenset(
    {"colour", "shade", "size", "shape", "number", "ordinal", "participle", "adv"}
)
_CONTEXT_SINGULAR = frozenset(CONTEXT_NOUNS - {"one"})


def _kind(w: str) -> str:
    """A word's kind out of context (:func:`_merge_nouns` settles the ambiguous ones)."""
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
    if w in ORDINALS or ORDINAL_RE.match(w) or w in DIRECTIONAL:
        return "ordinal"
    if w in PARTICIPLES:
        return "participle"
    if w in ("one", "ones"):
        return "one"
    if w in DETS:
        return "det"
    if w in PRONOUNS:
        return "pron"
    if w in ADVERBS:
        return "adv"
    if w in LINKS:
        return "link"
    if w in COPULA:
        return "cop"
    if w in PREPS:
        return "prep"
    if singular(w, PART_NOUNS) in PART_NOUNS:
        return "part"
    if singular(w, _CONTEXT_SINGULAR) in _CONTEXT_SINGULAR:
        return "context"
    if w in MATERIALS:
        return "material"
    return "w"
