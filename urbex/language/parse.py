"""The one parse of a description: target class, colours, sizes, shape, counts, ordinal, mentions.

:func:`parse` reads a referring expression the way people write one — long, several sentences,
other objects with their own colours, parts of the target, counts, shapes, the map frame,
hedges, shades and misspelled place names — into a :class:`~urbex.language.records.Parse`.
Every reader of descriptions uses it: the landmark prior, both rankers (rules and trained),
the Without-GT ranker and the class-aware answer lift.

How it reads:

1. **Words and names** (:func:`urbex.language.tokens.tokenize`). The description's words are
   normalised (:func:`urbex.landmarks.names.words_of`), one-letter misspellings of known words
   corrected ("besidde", "frist"), and the landmark names found in them with the
   landmark index's own fuzzy finder (:func:`urbex.landmarks.mentions.mention_spans`,
   misspellings included); each mention becomes one opaque token, so a name's words ("Green
   Park", "Red Lion", "White Hart Lane") are never read as a class or a colour.
2. **Noun phrases** (:mod:`urbex.language.phrases`). Words are chunked into noun phrases (determiner, adjectives, colours,
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
   (:func:`urbex.language.relation_phrases.relation_before`), inherited across "A and B", or turned
   round from the words after it; an ordinal ("the third house from the left", "8 houses to
   the right of X", "the northernmost car") with what it counts from.

Beside the parse (whose fields are fixed), :func:`context_objects` reads the unnamed objects
the target is placed against and :func:`map_regions` the parts of the map it names.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from urbex.config_data import MAX_DESCRIPTION_CHARS
from urbex.errors import DescriptionError
from urbex.language.phrases import (
    Phrase,
    assign_roles,
    governor,
    phrases_of,
    said_of_target,
    target_phrase,
)
from urbex.language.records import ContextObject, Count, Mention, Ordinal, Parse
from urbex.language.relation_phrases import relation_after, relation_before
from urbex.language.tokens import (
    ADJECTIVAL,
    COPULA,
    DETS,
    DIRECTIONAL,
    ORDINAL_RE,
    SIDE_WORDS,
    Token,
    tokenize,
)
from urbex.language.vocabulary import (
    CONTEXT_NOUNS,
    MATERIALS,
    ORDINALS,
    PART_NOUNS,
    UNITS,
    singular,
)

__all__ = ["MENTION_THRESHOLD", "check_description", "context_objects", "map_regions", "parse"]

#: Mention threshold of :func:`parse` (the landmark index's default).
MENTION_THRESHOLD = 0.9


# ----------------------------------------------------------------------------------------------
# ordinal, counts, mentions
# ----------------------------------------------------------------------------------------------


def _from_what(toks: list[Token], k: int, names: Sequence[str]) -> str | None:
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
    return SIDE_WORDS.get(words[0])


def _ordinal(
    toks: list[Token], phrases: list[Phrase], names: Sequence[str]
) -> tuple[Ordinal | None, Phrase | None]:
    """The description's ordinal, and the phrase of "N houses to the right of X" (no count)."""
    for p in phrases:  # "8 houses to the right of X", "3 doors down from X"
        h = toks[p.head] if p.head >= 0 else None
        if p.number is None or h is None or h.kind not in ("class", "part") or p.b >= len(toks):
            continue
        if p.has_det or toks[p.a].kind != "number" or governor(toks, p)[0] in ("of", *COPULA):
            continue  # "the three houses north of X", "there are 3 houses ...": a count
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
                or t.norm in SIDE_WORDS
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
            if t.norm in DIRECTIONAL:
                return Ordinal(k=1, from_=DIRECTIONAL[t.norm]), None
            m = ORDINAL_RE.match(t.norm)
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
            if nxt and nxt[0] in SIDE_WORDS and t.norm != "most":
                return Ordinal(k=1, from_=SIDE_WORDS[nxt[0]]), None
    return None, None


def _counts(toks: list[Token], phrases: list[Phrase], skip: Phrase | None) -> tuple[Count, ...]:
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


def _mentions(toks: list[Token], names: Sequence[str], description: str) -> tuple[Mention, ...]:
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
        bare = [w for w in words if w not in DETS and w != "the"]
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
        elif " ".join(bare) in _NAMING_CUES and toks[k].brk not in (".", ","):
            text = description[window[0].start : window[-1].end]
            m = Mention(name=name, relation="other", text=text)  # "This is Merton Hall, a ..."
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


#: Words before a name that say the target *is* that place ("This is Merton Hall, ...").
_NAMING_CUES = frozenset({"this is", "it is", "its", "i mean", "target is"})
_ACROSS = re.compile(r"(?:across|over|(?:other|opposite|far) side of)$")


def _start_of(toks: list[Token], k: int, m: Mention) -> int:
    """Character where mention ``m`` (token ``k``)'s relation text starts (its name if none)."""
    n = len(m.text.split())
    j = k - n
    return toks[j].start if m.text and j >= 0 else toks[k].start


def _names_next(toks: list[Token], k: int) -> bool:
    """Token ``k`` (a mention at a clause start) is followed by "(is) (a|the) ... <class noun>"."""
    j = k + 1
    if j < len(toks) and toks[j].norm == "is":
        j += 1
    while (
        j < len(toks) and toks[j].kind in ADJECTIVAL | {"det", "w"} and toks[j].sent == toks[k].sent
    ):
        j += 1
    return j < len(toks) and toks[j].kind == "class" and toks[j].sent == toks[k].sent


# ----------------------------------------------------------------------------------------------
# the parse
# ----------------------------------------------------------------------------------------------


def check_description(text: str, *, what: str = "description") -> str:
    """``text`` if urbex can read it as a description, else a :class:`DescriptionError`.

    The one limit of every place a description enters (:func:`parse`, ``urbex parse``, ``urbex
    ground``; the splits hold to it through ``annotations.max_chars``): UTF-8 text of at most
    :data:`urbex.config_data.MAX_DESCRIPTION_CHARS` characters, surrounding white space not counted.

    Parameters
    ----------
    text
        The description.
    what
        Where it came from, for the message (``--query``, ``line 3``).

    Examples
    --------
    >>> check_description("the red car next to Tesco")
    'the red car next to Tesco'
    >>> check_description("x" * 2001, what="--query")
    Traceback (most recent call last):
    ...
    urbex.errors.DescriptionError: --query: 2,001 characters; urbex reads descriptions of at most 2,000 (MAX_DESCRIPTION_CHARS): shorten it
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise DescriptionError(
            f"{what}: not UTF-8 (character {exc.start} is {text[exc.start]!r}, a byte that is not "
            "UTF-8 text); write the description as UTF-8"
        ) from None
    n = len(text.strip())
    if n > MAX_DESCRIPTION_CHARS:
        raise DescriptionError(
            f"{what}: {n:,} characters; urbex reads descriptions of at most "
            f"{MAX_DESCRIPTION_CHARS:,} (MAX_DESCRIPTION_CHARS): shorten it"
        )
    return text


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

    Raises
    ------
    DescriptionError
        ``description`` is longer than :data:`urbex.config_data.MAX_DESCRIPTION_CHARS` or not UTF-8
        (:func:`check_description`).

    Examples
    --------
    >>> p = parse("Along Bishop St, in the car park of the Tesco, there's a gray hatchback",
    ...           ["Bishop Street", "Tesco"])
    >>> p.target_class, p.target_colours, [(m.name, m.relation) for m in p.mentions]
    ('Car', ('grey',), [('Bishop Street', 'on'), ('Tesco', 'in')])
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
    """The unnamed objects of the target classes the description places the target against:
    the target stands in a relation to them ("parked behind a white van", "In a parking area:
    the yellow car") or they to it (``reverse``: "a house with a red car in front of it",
    "There is a red car in front of it."). Same arguments as :func:`parse` (and the same,
    cached, reading).

    >>> context_objects("the red car in a car park next to Mill Lane", ["Mill Lane"])
    (ContextObject(cls='Parking', relation='in', colours=(), reverse=False, text='in'),)
    >>> c = context_objects("a house with a white van parked in front of it")[0]
    >>> c.cls, c.relation, c.colours, c.reverse
    ('Car', 'in_front_of', ('white',), True)
    """
    return _read(str(description), tuple(str(n) for n in landmark_names), float(threshold))[1]


def map_regions(
    description: str, landmark_names: Sequence[str] = (), *, threshold: float = MENTION_THRESHOLD
) -> tuple[str, ...]:
    """The parts of the map the description puts the target in ("at the top of the map" →
    ``top``, "in the bottom left corner of the map" → ``bottom left``; north is up). Same
    arguments as :func:`parse`.

    >>> map_regions("a red car near the left edge of the map"), map_regions("the second from the top")
    (('left',), ())
    """
    return _read(str(description), tuple(str(n) for n in landmark_names), float(threshold))[2]


#: The words after a context object that relate it to the target ("... parked in front of it").
_CONTEXT_AFTER = re.compile(
    r"^(?:(?:is|are|parked|standing|sitting|stands|sits) )?(?:(?:right|just|out) )?"
    r"(?P<rel>in front of|behind|next to|beside|alongside|inside|in|at the back|out front|"
    r"round the back|at the front)(?:(?<=of) (?:it|them|this)| (?:it|them|this)|(?<=back)|"
    r"(?<=front))(?: |$)"
)
_CONTEXT_REL = {"in front of": "in_front_of", "out front": "in_front_of", "at the front": "in_front_of",
                "behind": "behind", "at the back": "behind", "round the back": "behind",
                "next to": "next_to", "beside": "next_to", "alongside": "next_to", "in": "in",
                "inside": "in"}  # fmt: skip


def _context(
    toks: list[Token], phrases: list[Phrase], target: Phrase | None, description: str
) -> tuple[ContextObject, ...]:
    out: list[ContextObject] = []
    for p in phrases:
        if p is target or p.role not in ("context", "predicate") or p.cls is None:
            continue
        if toks[p.head].kind != "class" or (
            target is not None and p.a < target.b and p.b > target.a
        ):
            continue
        a = p.a
        while a > 0 and toks[a].brk not in (".", ",") and toks[a - 1].kind != "m":
            a -= 1
        window = toks[a : p.a]
        rel = relation_before([u.norm for u in window]) if window else None
        colours = tuple(dict.fromkeys([*p.colours, *_part_colours(toks, phrases, p)]))
        if rel is not None and rel[0] not in ("other", "near") and p.role == "context":
            r, s0, s1 = rel
            text = description[window[s0].start : window[s1 - 1].end]
            out.append(ContextObject(cls=p.cls, relation=r, colours=colours, text=text))
            continue
        after = [t for t in toks[p.b : p.b + 8] if t.sent == toks[p.a].sent]
        m = _CONTEXT_AFTER.match(" ".join(t.norm for t in after) + " ")
        if m is not None:
            n = len(m.group().split())
            text = description[after[0].start : after[n - 1].end]
            rel_ = _CONTEXT_REL[m.group("rel")]
            out.append(
                ContextObject(cls=p.cls, relation=rel_, colours=colours, reverse=True, text=text)
            )
    return tuple(out)


def _part_colours(toks: list[Token], phrases: list[Phrase], p: Phrase) -> list[str]:
    """Colours of the parts said right after a phrase ("a building *with a grey roof*")."""
    out: list[str] = []
    for q in phrases:
        if q.a <= p.b or toks[q.a].sent != toks[p.a].sent:
            continue
        if q.head < 0 or toks[q.head].kind != "part" or toks[q.a - 1].norm not in ("with", "and"):
            break
        out += q.colours
    return out


_REGION = re.compile(
    r"(?:^| )(?:at|near|along|in|on|towards?|by) (?:the )?(?:far |very )?"
    r"(?P<a>top|bottom|upper|lower|left|right|north|south|east|west)(?:ern)?"
    r"(?: (?P<b>left|right|east|west)(?:ern)?)?(?: hand)?"
    r"(?: (?:edge|side|corner|part|end|half|area|section|border))? of (?:the )?"
    r"(?:map|image|picture|view|plan|scene|screen)\b"
)
_REGION_WORD = {"upper": "top", "lower": "bottom", "north": "top", "south": "bottom",
                "east": "right", "west": "left"}  # fmt: skip


def _regions(toks: list[Token]) -> tuple[str, ...]:
    out: list[str] = []
    for sent in sorted({t.sent for t in toks}):
        text = " ".join(t.norm for t in toks if t.sent == sent)
        for m in _REGION.finditer(text):
            words = [_REGION_WORD.get(w, w) for w in (m.group("a"), m.group("b")) if w]
            side = " ".join(words)
            if side not in out:
                out.append(side)
    return tuple(out)


@lru_cache(maxsize=4096)
def _read(
    description: str, names: tuple[str, ...], threshold: float
) -> tuple[Parse, tuple[ContextObject, ...], tuple[str, ...]]:
    check_description(description)  # the reading below is not linear in the length
    toks = tokenize(description, names, threshold)
    phrases = phrases_of(toks)
    assign_roles(toks, phrases)
    target = target_phrase(phrases)
    colours: list[str] = []
    sizes: list[str] = []
    shape: str | None = None
    for p in said_of_target(toks, phrases, target):
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
    return parsed, _context(toks, phrases, target, description), _regions(toks)
