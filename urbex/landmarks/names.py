"""Landmark-name normalisation and landmark kinds.

:func:`normalize_name` maps spelling variants of one place name to one key (case, accents,
punctuation, possessives, abbreviations); :func:`landmark_kind` classifies a landmark.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

__all__ = [
    "GENERIC_WORDS",
    "LANDMARK_KINDS",
    "Word",
    "distinctive_tokens",
    "landmark_kind",
    "normalize_name",
    "words_of",
]

LANDMARK_KINDS: tuple[str, ...] = ("building", "road", "park", "parking", "ground", "other")

_ABBREV: dict[str, str] = {
    "str": "street", "rd": "road", "ave": "avenue", "av": "avenue",
    "pde": "parade", "ln": "lane", "sq": "square", "pl": "place", "ct": "court",
    "cres": "crescent", "mt": "mount", "bldg": "building", "ctr": "centre",
    "center": "centre", "hosp": "hospital", "univ": "university", "coll": "college",
    "stn": "station", "hwy": "highway", "blvd": "boulevard", "pk": "park", "gdns": "gardens",
    "gdn": "garden", "terr": "terrace", "tce": "terrace", "cl": "close", "ch": "church",
}  # fmt: skip
_DROP = frozenset({"the"})
#: Words that may follow a street-type word ("High St North", "Queen St West").
_QUALIFIERS = frozenset("north south east west upper lower great little".split())


def _positional(tok: str, i: int, toks: list[str], ends_clause: bool = False) -> str:
    """ "st" → saint/street and "dr" → doctor/drive by position (see :func:`normalize_name`);
    ``ends_clause``: punctuation (``,;:)``) follows it, as the last word of a name does."""
    if tok not in ("st", "dr"):
        return tok
    street_like = i > 0 and (i == len(toks) - 1 or toks[i + 1] in _QUALIFIERS or ends_clause)
    if tok == "st":
        return "street" if street_like else "saint"
    return "drive" if i > 0 else "doctor"


# Words that name a kind of place, not a particular one: a match on them alone is weak.
GENERIC_WORDS = frozenset(
    "saint street road avenue lane parade square place court crescent drive mount building centre "
    "hospital university college station highway boulevard park gardens garden terrace close "
    "church hall house tower bridge market school library museum hotel pub cafe shop store "
    "bank office stadium ground field way hill car parking lot and of north south east west "
    "new old great little upper lower main green common walk row gate parkway auditorium "
    "pavilion gymnasium quad lawn plaza structure leisure community town playing fields ride "
    "recreation".split()
)
_APOSTROPHES = re.compile(r"['’‘`´]")
#: A word of a text: letters/digits with inner apostrophes ("King's"), or an ampersand.
_WORD = re.compile(r"[^\W_]+(?:['’‘`´][^\W_]+)*|&")
_NON_WORD = re.compile(r"[\W_]+", re.UNICODE)
#: Punctuation that ends a clause right after a word ("Bishop St, in ..." is a street).
_CLAUSE_END = re.compile(r"\.?\s*[,;:)]")


class Word(NamedTuple):
    """One word of a text: its normalised form and its character span in the text."""

    norm: str
    start: int
    end: int


def _fold(token: str) -> list[str]:
    """Accents stripped, case folded, apostrophes dropped; "&" → "and" (may split in two)."""
    if token == "&":
        return ["and"]
    s = unicodedata.normalize("NFKD", token)
    s = "".join(c for c in s if not unicodedata.combining(c)).casefold()
    return _NON_WORD.sub(" ", _APOSTROPHES.sub("", s)).split()


def words_of(text: str) -> list[Word]:
    """The words of ``text``, normalised as :func:`normalize_name` does, ``the`` kept.

    Each word keeps its character span in ``text`` (a word that folds into two, such as a
    ligature, gives two words with the same span). Punctuation separates words and is not a
    word. :func:`normalize_name` is these words without ``the``, joined by spaces.

    >>> [w.norm for w in words_of("The Red Lion, St. Mary's Rd & Co")]
    ['the', 'red', 'lion', 'saint', 'marys', 'road', 'and', 'co']
    >>> [w.norm for w in words_of("along Bishop St, in front")][2]
    'street'
    >>> words_of("Café!")[0]
    Word(norm='cafe', start=0, end=4)
    """
    text = str(text)
    raw = [(t, m.start(), m.end()) for m in _WORD.finditer(text) for t in _fold(m.group())]
    toks = [_ABBREV.get(t, t) for t, _, _ in raw]
    ends = [bool(_CLAUSE_END.match(text, b)) for _, _, b in raw]
    return [
        Word(_positional(t, i, toks, e), a, b)
        for i, (t, (_, a, b), e) in enumerate(zip(toks, raw, ends))
    ]


def normalize_name(name: str) -> str:
    """Normalise a place name for matching.

    Unicode accents are stripped, case is folded, possessives lose their apostrophe
    ("King's" → "kings"), punctuation becomes space, "&" becomes "and", common abbreviations take
    one canonical form (Rd → "road", Pde → "parade", ...; "St" is "street" as the last word,
    before a qualifier such as "North" or before a comma, and "saint" elsewhere; "Dr" is "doctor" as the first word
    and "drive" elsewhere) and "the" is dropped (:func:`words_of` keeps it).

    Examples
    --------
    >>> normalize_name("St. Mary's Church")
    'saint marys church'
    >>> normalize_name("Saint Marys  Church")
    'saint marys church'
    >>> normalize_name("St Andrew's St")
    'saint andrews street'
    >>> normalize_name("High St North"), normalize_name("Dr Johnson House"), normalize_name("Mill Dr")
    ('high street north', 'doctor johnson house', 'mill drive')
    >>> normalize_name("King's Parade") == normalize_name("Kings Pde")
    True
    >>> normalize_name("The Café & Bar")
    'cafe and bar'
    >>> normalize_name("")
    ''
    """
    return " ".join(w.norm for w in words_of(name) if w.norm not in _DROP)


def distinctive_tokens(tokens: Sequence[str]) -> list[str]:
    """The tokens of a name that are not :data:`GENERIC_WORDS` (all of them when none is).

    >>> distinctive_tokens(["merton", "hall"]), distinctive_tokens(["car", "park"])
    (['merton'], ['car', 'park'])
    """
    d = [t for t in tokens if t not in GENERIC_WORDS]
    return d if d else list(tokens)


_KIND_WORDS: tuple[tuple[str, frozenset[str]], ...] = (
    ("road", frozenset("saint street road avenue lane parade drive highway boulevard way close crescent terrace".split())),
    ("parking", frozenset("parking car lot structure ride".split())),
    ("park", frozenset("park gardens garden common green recreation quad lawn plaza".split())),
    ("ground", frozenset("ground field pitch stadium track".split())),
)  # fmt: skip
_OBJECT_KINDS = {"building": "building", "ground": "ground", "parking": "parking"}


def landmark_kind(
    name: str,
    *,
    object_name: str | None = None,
    tags: Mapping[str, Any] | None = None,
    geom_type: str | None = None,
) -> str:
    """Classify a landmark into one of :data:`LANDMARK_KINDS`.

    Priority: an explicit ``kind`` tag, OSM tags (``building``, ``highway``, ``leisure=park``,
    ``amenity=parking``, ...), the instance's class (Building/Ground/Parking), a line geometry
    (→ road), then the last matching word of the name.

    Examples
    --------
    >>> landmark_kind("Merton Hall", object_name="Building")
    'building'
    >>> landmark_kind("Kings Pde", geom_type="LineString")
    'road'
    >>> landmark_kind("Jesus Green")
    'park'
    >>> landmark_kind("Big Ben")
    'other'
    """
    tags = {k: v for k, v in (tags or {}).items() if v is not None and v == v}
    k = str(tags.get("kind", "")).lower()
    if k in LANDMARK_KINDS:
        return k
    if tags.get("building") not in (None, "", "no"):
        return "building"
    if tags.get("highway") not in (None, ""):
        return "road"
    if tags.get("amenity") == "parking":
        return "parking"
    if tags.get("leisure") in ("park", "garden", "common") or tags.get("landuse") in (
        "grass",
        "recreation_ground",
        "village_green",
    ):
        return "park"
    if tags.get("leisure") in ("pitch", "stadium", "track", "sports_centre"):
        return "ground"
    if object_name is not None:
        ok = _OBJECT_KINDS.get(object_name.strip().lower().rstrip("s"))
        if ok is not None:
            return ok
    if geom_type is not None and "LineString" in geom_type:
        return "road"
    norm = normalize_name(name)
    if "car park" in norm or "park and ride" in norm or "parking" in norm:
        return "parking"
    toks = norm.split()
    for tok in reversed(toks):
        for kind, words in _KIND_WORDS:
            if tok in words:
                return kind
    return "other"
