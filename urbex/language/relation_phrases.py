"""Relation phrases: the words before (or after) a landmark that say how the target relates to it.

:func:`relation_before` reads the words written just before a mention ("across the street
from", "on the north side of", "at the end of") and :func:`relation_after` the words just after
it that turn the relation round ("Merton Hall is to the north of it": the target is *south of*
Merton Hall). Both work on normalised words (:func:`urbex.landmarks.names.words_of`, ``the``
kept), with ``<m>`` standing for another mention, and return the relation
(:data:`urbex.language.records.RELATIONS`) and how many of the words expressed it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["INVERSE", "RELATION_WORDS", "relation_after", "relation_before"]

_D = r"(?:(?:north|south)(?:east|west)?|east|west)(?:ern|erly|wards?)?"
_DIR = rf"{_D}(?: {_D})?"
_ADV = r"(?:(?:right|just|directly|immediately|slightly|a bit|a little|further|farther|due|far) )?"
_ROADS = r"(?:street|road|lane|way|avenue|square|green|park|field|car park|carpark|parking lot|river|canal|railway|track|junction)"

#: (relation, pattern anchored at the end of the words before a mention); the first match wins.
_BEFORE: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (rel, re.compile(rf"(?:^| )(?:{pat})$"))
    for rel, pat in (
        ("other", r"called|named|known as|labell?ed|marked|signposted|by the name of|name is"),
        ("between", r"(?:in )?between(?: (?:the |a )?\w+(?: \w+)? and)?"),
        ("corner", r"(?:(?:on|at|near|by|close to) )?(?:the )?(?:\w+ )?(?:corner|junction|"
                   r"intersection|crossroads|crossing|meeting point)(?: of| with| between| by)?"
                   r"|where|meets|meet|crosses|joins|intersects|meeting"),
        ("at_end_of", rf"(?:(?:at|from|near|towards|toward|by|to|on) )?(?:the |its )?"
                      rf"(?:very |far |other |opposite |dead )?(?:(?:{_DIR}|top|bottom|upper|"
                      rf"lower|left|right|far|near|other) )?(?:hand )?end of"),
        ("across_from", rf"{_ADV}(?:across|over) (?:(?:the )?{_ROADS} )?from|{_ADV}opposite"
                        rf"(?: to| of| from)?|(?:on )?the (?:other|opposite|far) side of "
                        rf"(?:the )?(?:{_ROADS} )?(?:from|to)"),
        ("other", r"(?:on )?(?:the )?(?:other|opposite|far) side of"),
        ("facing", r"facing|faces|face|fronting|fronts(?: onto)?|front onto|overlooking|"
                   r"overlooks|looking (?:out )?(?:onto|over|towards?|at)|looks onto|"
                   r"pointing (?:at|towards?)"),
        ("in_front_of", rf"{_ADV}(?:in front of|(?:at|to|on) the front of|out front of)"),
        ("behind", rf"{_ADV}(?:behind|(?:at|to|in|on|round|around) the (?:back|rear) of|"
                   rf"(?:back|rear) of|in back of)"),
        ("left_of", rf"{_ADV}(?:(?:to|on|at) (?:the )?)?left(?: hand)?(?: side)? of"),
        ("right_of", rf"{_ADV}(?:(?:to|on|at) (?:the )?)?right(?: hand)?(?: side)? of"),
        ("compass", rf"{_ADV}(?:(?:to|on|at|in) (?:the )?)?{_DIR}(?: (?:side|part|edge|"
                    rf"corner|area|half))? of|{_DIR} (?:of|from)|above|below|beneath"),
        ("next_to", rf"{_ADV}(?:next to|next door to|beside|besides|adjacent to|adjacent|"
                    rf"adjoining|alongside|by|bordering|borders|abutting|abuts|neighbouring|"
                    rf"neighboring|flanking|attached to|connected to|joined to|against|touching|outside|"
                    rf"(?:on|at|by|to) the (?:side|edge) of|(?:side|edge) of)"),
        ("near", r"near(?: to)?|nearby|close(?: to| by)?|closest to|nearest(?: to)?|around|"
                 r"round|in the (?:vicinity|area|neighbou?rhood) of|not far from|"
                 r"(?:a )?short (?:walk|distance|way) from|a few \w+ (?:from|away from)|"
                 r"\w+ (?:m|metres|meters|feet|yards) (?:from|of|away from)|"
                 r"within \w+ (?:m|metres|meters) of|towards?|surrounding|surrounded by|"
                 r"(?:away |up |down |along )?from"),
        ("off", rf"{_ADV}off(?: of)?"),
        ("on", r"on|along|upon|onto|lining|lines|down|up|parked on|located on|situated on|"
               r"(?:on|along) (?:the )?(?:road|street|lane|avenue)"),
        ("in", r"in|inside|within|into|amid(?:st)?|among(?:st)?|at|part of|(?:in|at|on) "
               r"(?:the )?(?:middle|centre|center|heart|grounds) of|"
               r"(?:(?:in|at|on|inside|within) )?(?:the )?(?:\w+ ){1,2}of"),
        ("other", r"past|beyond|after|via|through|across|over"),
    )
)  # fmt: skip
#: The words of the relation phrases (what a misspelled word may be read as).
RELATION_WORDS: frozenset[str] = frozenset(
    w
    for _, pat in _BEFORE
    for w in re.findall(r"[a-z]{3,}", pat.pattern)
    if w not in ("north", "south", "east", "west", "ern", "erly", "wards")
) | frozenset(
    "north south east west northern southern eastern western northeast northwest southeast "
    "southwest parked located situated counted counting which called named known".split()
)
_COMPASS_REL = {"north": "north_of", "south": "south_of", "east": "east_of", "west": "west_of"}
#: Words dropped from the end of the words before a mention before they are read ("next to
#: the old Merton Hall").
_SKIP = frozenset(
    "the a an this that these those its their his her our my old new main big large small "
    "little tall famous local nearby busy quiet historic".split()
)
#: The relation seen from the landmark's side ("X is north of it": the target is south of X).
INVERSE: dict[str, str] = {
    "north_of": "south_of", "south_of": "north_of", "east_of": "west_of", "west_of": "east_of",
    "left_of": "right_of", "right_of": "left_of", "behind": "in_front_of",
    "in_front_of": "behind", "next_to": "next_to", "near": "near",
    "across_from": "across_from",
}  # fmt: skip


def _compass(words: str) -> str:
    """The relation of the first compass word (its north/south part for a diagonal)."""
    if words.split()[-1] in ("above",):
        return "north_of"
    if words.split()[-1] in ("below", "beneath"):
        return "south_of"
    m = re.search(r"(north|south|east|west)", words)
    assert m is not None
    return _COMPASS_REL[m.group(1)]


def relation_before(words: Sequence[str]) -> tuple[str, int, int] | None:
    """The relation the words just before a mention express, or None.

    Parameters
    ----------
    words
        Normalised words (``the`` kept; ``<m>`` for another mention), ending right before the
        mention; at most the current clause.

    Returns
    -------
    (relation, start, end) or None
        ``words[start:end]`` expressed it (determiners and a few adjectives between it and the
        mention are not part of it).

    Examples
    --------
    >>> relation_before("the red car across the street from the".split())
    ('across_from', 3, 7)
    >>> relation_before("a house on the north side of".split())[0]
    'north_of'
    >>> relation_before("the second car from the east end of".split())
    ('at_end_of', 3, 8)
    >>> relation_before("the car".split()) is None
    True
    """
    end = len(words)
    while end > 0 and words[end - 1] in _SKIP and end > len(words) - 3:
        end -= 1
    if end == 0:
        return None
    text = " ".join(words[:end])
    starts = [0]
    for w in words[: end - 1]:
        starts.append(starts[-1] + len(w) + 1)
    for rel, pat in _BEFORE:
        m = pat.search(text)
        if m is None:
            continue
        matched = m.group().strip()
        first = m.end() - len(matched)  # a word may hold a space ("car park")
        if rel == "compass":
            rel = _compass(matched)
        return rel, max(i for i, a in enumerate(starts) if a <= first), end
    return None


_AFTER = re.compile(
    r"^(?:(?:is|lies|sits|stands|are|can be seen|appears)(?: located| situated| found)? )?"
    rf"{_ADV}(?:(?:to|on|at) (?:its|their) (?P<own>{_DIR}|left|right)(?: side)?"
    rf"|(?:(?:to|on|at) (?:the )?)?(?P<dir>{_DIR}|left|right)(?: side| hand side)? of "
    r"(?:it|this|them|the \w+|this \w+)"
    r"|(?P<rel>behind|in front of|next to|beside|near|opposite|across from) (?:it|this|them))"
)


def relation_after(words: Sequence[str]) -> tuple[str, int] | None:
    """The relation, turned round, that the words just after a mention express, or None.

    "X is to the north of it" → ``south_of`` (the target is south of X); "X to its left" →
    ``right_of``.

    Returns
    -------
    (relation, n) or None
        The target's relation to the mention and how many words expressed it.

    Examples
    --------
    >>> relation_after("is to the north of it".split())
    ('south_of', 6)
    >>> relation_after("is behind it".split()), relation_after("to its left".split())
    (('in_front_of', 3), ('right_of', 3))
    >>> relation_after("is a red building".split()) is None
    True
    """
    text = " ".join(words)
    m = _AFTER.match(text)
    if m is None:
        return None
    n = len(m.group().split())
    word = m.group("own") or m.group("dir")
    if word is not None:
        rel = {"left": "left_of", "right": "right_of"}.get(word) or _compass(word)
    else:
        rel = {"in front of": "in_front_of", "next to": "next_to", "beside": "next_to",
               "opposite": "across_from", "across from": "across_from"}.get(m.group("rel"),
                                                                         m.group("rel"))  # fmt: skip
    return INVERSE.get(rel, rel), n
