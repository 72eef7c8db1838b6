"""Seeded place names for synthetic cities: roads, named buildings, parks and car parks.

Two name styles exist: ``"sensaturban"`` (British: "Merton Street", "St Mary's Church") and
``"stpls3d"`` (Southern Californian campus: "Figueroa Street", "Doheny Library"). Names are
drawn without replacement from a :class:`NamePool`, so one scene never repeats a name.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["NAME_STYLES", "NamePool"]

_UK_ROAD_STEMS = (
    "Merton",
    "Mill",
    "King's",
    "Trinity",
    "Queen's",
    "Silver",
    "Bridge",
    "Chapel",
    "Castle",
    "Station",
    "Church",
    "Market",
    "Regent",
    "Jesus",
    "Magdalene",
    "Bene't",
    "Pembroke",
    "Tennis Court",
    "Newnham",
    "Hills",
    "Lensfield",
    "Panton",
    "Mawson",
    "Gwydir",
    "Victoria",
    "Albert",
    "Perry",
    "Aston",
    "Soho",
    "Edgbaston",
    "Broad",
    "Corporation",
    "Colmore",
    "Harborne",
    "Selly",
    "Moseley",
    "Stratford",
    "Warwick",
    "Coventry",
    "Hagley",
    "Bristol",
    "Pershore",
    "Digbeth",
    "Bordesley",
    "Sherlock",
    "Lichfield",
    "Walsall",
    "Tower",
    "Orchard",
    "Granta",
    "Barton",
    "Grange",
    "Madingley",
    "Huntingdon",
    "Histon",
    "Milton",
    "Chesterton",
)
_UK_ROAD_SUFFIXES = (
    "Street",
    "Lane",
    "Road",
    "Parade",
    "Avenue",
    "Way",
    "Walk",
    "Row",
    "Place",
    "Hill",
    "Terrace",
    "Close",
    "Drive",
    "Gate",
)
_UK_SURNAMES = (
    "Merton",
    "Darwin",
    "Newton",
    "Wolfson",
    "Churchill",
    "Fitzwilliam",
    "Emmanuel",
    "Selwyn",
    "Girton",
    "Homerton",
    "Clare",
    "Downing",
    "Peterhouse",
    "Caius",
    "Sidney",
    "Christ's",
    "Chamberlain",
    "Baskerville",
    "Cadbury",
    "Boulton",
    "Priestley",
    "Watt",
    "Murdoch",
    "Elgar",
    "Tolkien",
    "Turing",
    "Babbage",
    "Lovelace",
    "Maxwell",
    "Rutherford",
    "Hawking",
    "Byron",
)
_UK_PLACES = (
    "Perry Barr",
    "Aston",
    "Edgbaston",
    "Selly Oak",
    "Kings Heath",
    "Harborne",
    "Digbeth",
    "Jericho",
    "Parker's Piece",
    "Midsummer",
    "Coldham",
    "Stourbridge",
    "Grantchester",
    "Trumpington",
    "Cherry Hinton",
    "Fen Ditton",
    "Romsey",
    "Petersfield",
    "Bournville",
    "Moseley",
    "Sparkhill",
    "Handsworth",
    "Erdington",
    "Northfield",
    "Acocks Green",
)
_UK_SAINTS = (
    "Mary",
    "Andrew",
    "Bene't",
    "Botolph",
    "Edward",
    "Giles",
    "Clement",
    "Michael",
    "Peter",
    "Paul",
    "Luke",
    "John",
    "Martin",
    "Chad",
    "Philip",
    "Alban",
    "George",
    "Barnabas",
)
_UK_BUILDING_PATTERNS = (
    "{surname} Hall",
    "{surname} College",
    "{surname} Library",
    "{surname} House",
    "{surname} Building",
    "St {saint}'s Church",
    "St {saint}'s School",
    "{place} Stadium",
    "{place} Station",
    "{place} Museum",
    "{place} Leisure Centre",
    "{place} Town Hall",
    "{place} Community Centre",
    "The {surname} Tower",
    "{surname} Court",
    "{place} Library",
)
_UK_PARK_PATTERNS = (
    "{surname} Park",
    "{place} Recreation Ground",
    "{place} Green",
    "{surname} Gardens",
    "{place} Playing Fields",
    "{surname} Common",
    "{place} Park",
)
_UK_PARKING_PATTERNS = ("{place} Car Park", "{surname} Street Car Park", "{place} Park and Ride")

_US_ROAD_STEMS = (
    "Figueroa",
    "Jefferson",
    "Exposition",
    "Vermont",
    "Hoover",
    "Flower",
    "Hope",
    "Grand",
    "Olive",
    "Trousdale",
    "Childs",
    "McClintock",
    "Menlo",
    "Orchard",
    "Portland",
    "Severance",
    "Adams",
    "Washington",
    "Pico",
    "Olympic",
    "Alvarado",
    "Union",
    "Normandie",
    "Western",
    "Crenshaw",
    "Wilshire",
    "Sunset",
    "Hill",
    "Spring",
    "Main",
    "Los Angeles",
    "Broadway",
)
_US_ROAD_SUFFIXES = ("Street", "Avenue", "Boulevard", "Way", "Drive", "Place", "Parkway")
_US_SURNAMES = (
    "Doheny",
    "Leavey",
    "Bovard",
    "Taper",
    "Ronald Tutor",
    "Annenberg",
    "Marshall",
    "Viterbi",
    "Kerckhoff",
    "Salvatori",
    "Waite Phillips",
    "Seeley Mudd",
    "Hancock",
    "Allan Hancock",
    "Von KleinSmid",
    "Galen",
    "Lyon",
    "Cromwell",
    "Heritage",
    "Mudd",
    "Wallis",
    "Irani",
)
_US_PLACES = (
    "Exposition Park",
    "University Park",
    "Figueroa",
    "Jefferson",
    "Vermont Square",
    "Adams",
    "Menlo",
    "Trousdale",
    "McCarthy",
    "Alumni",
    "Cromwell",
    "Dedeaux",
)
_US_BUILDING_PATTERNS = (
    "{surname} Hall",
    "{surname} Library",
    "{surname} Center",
    "{surname} Auditorium",
    "{place} Field House",
    "{surname} Pavilion",
    "{place} Museum",
    "{surname} Gymnasium",
)
_US_PARK_PATTERNS = ("{place} Quad", "{surname} Lawn", "{place} Field", "{surname} Plaza")
_US_PARKING_PATTERNS = ("{place} Parking Structure", "Lot {num}", "{surname} Lot")

#: Word lists per style: road stems/suffixes, building/park/parking name patterns.
NAME_STYLES: dict[str, dict[str, tuple[str, ...]]] = {
    "sensaturban": {
        "road_stems": _UK_ROAD_STEMS,
        "road_suffixes": _UK_ROAD_SUFFIXES,
        "surnames": _UK_SURNAMES,
        "places": _UK_PLACES,
        "saints": _UK_SAINTS,
        "building": _UK_BUILDING_PATTERNS,
        "park": _UK_PARK_PATTERNS,
        "parking": _UK_PARKING_PATTERNS,
    },
    "stpls3d": {
        "road_stems": _US_ROAD_STEMS,
        "road_suffixes": _US_ROAD_SUFFIXES,
        "surnames": _US_SURNAMES,
        "places": _US_PLACES,
        "saints": _UK_SAINTS,
        "building": _US_BUILDING_PATTERNS,
        "park": _US_PARK_PATTERNS,
        "parking": _US_PARKING_PATTERNS,
    },
}


class NamePool:
    """Draws unique names of one style with a caller-owned RNG.

    Parameters
    ----------
    rng
        The generator's RNG; every draw advances it, so the same seed gives the same names.
    style
        ``"sensaturban"`` or ``"stpls3d"`` (a key of :data:`NAME_STYLES`).

    Examples
    --------
    >>> pool = NamePool(np.random.default_rng(0), "sensaturban")
    >>> a, b = pool.road(), pool.road()
    >>> a != b and a.split()[-1] in NAME_STYLES["sensaturban"]["road_suffixes"]
    True
    """

    def __init__(self, rng: np.random.Generator, style: str) -> None:
        if style not in NAME_STYLES:
            raise ValueError(f"style: expected one of {sorted(NAME_STYLES)}, got {style!r}")
        self._rng = rng
        self._words = NAME_STYLES[style]
        self._used: set[str] = set()
        self._used_stems: set[str] = set()

    def _pick(self, key: str) -> str:
        words = self._words[key]
        return words[int(self._rng.integers(len(words)))]

    def _unique(self, make: Callable[[], str], what: str) -> str:
        for _ in range(200):
            name = make()
            if name not in self._used:
                self._used.add(name)
                return name
        # The word lists are exhausted: disambiguate with a number (still unique).
        base = make()
        k = 2
        while f"{base} {k}" in self._used:
            k += 1
        self._used.add(f"{base} {k}")
        return f"{base} {k}"

    def road(self) -> str:
        """A unique road name, e.g. ``"Mill Lane"``; stems are not reused while any are left."""

        def make() -> str:
            stems = [s for s in self._words["road_stems"] if s not in self._used_stems]
            pool = stems or list(self._words["road_stems"])
            stem = pool[int(self._rng.integers(len(pool)))]
            return f"{stem} {self._pick('road_suffixes')}"

        name = self._unique(make, "road")
        self._used_stems.add(name.rsplit(" ", 1)[0])
        return name

    def _pattern(self, key: str) -> str:
        def make() -> str:
            return self._pick(key).format(
                surname=self._pick("surnames"),
                place=self._pick("places"),
                saint=self._pick("saints"),
                num=int(self._rng.integers(1, 99)),
            )

        return self._unique(make, key)

    def building(self) -> str:
        """A unique landmark-building name, e.g. ``"St Mary's Church"``."""
        return self._pattern("building")

    def park(self) -> str:
        """A unique park / green-ground name, e.g. ``"Perry Barr Recreation Ground"``."""
        return self._pattern("park")

    def parking(self) -> str:
        """A unique car-park name, e.g. ``"Jericho Car Park"``."""
        return self._pattern("parking")
