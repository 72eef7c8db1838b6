"""The words a description is read with: nouns by role, colours and shades, sizes, shapes, numbers.

One vocabulary for every reader of descriptions (:func:`urbex.language.parse`). Words are
normalised (:func:`urbex.landmarks.names.words_of`: lower case, no accents, no apostrophes) and
singular; :func:`singular` maps a plural onto them. Nothing here is fitted to a data set: the
lists are the everyday words for the four target classes (CityRefer's), their parts and what
stands around them.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = [
    "CLASS_NOUNS",
    "COLOURS",
    "COLOUR_NAMES",
    "CONTEXT_NOUNS",
    "NUMBERS",
    "ORDINALS",
    "PART_NOUNS",
    "SHADE_WORDS",
    "SHAPES",
    "SIZES",
    "UNITS",
    "colour_of",
    "singular",
]

# ----------------------------------------------------------------------------------------------
# nouns
# ----------------------------------------------------------------------------------------------


def _classes(**groups: str) -> dict[tuple[str, ...], str]:
    return {tuple(w.split("_")): cls for cls, words in groups.items() for w in words.split()}


#: Class nouns (word tuples, singular) → target class. A compound's head is its last noun, so
#: "school bus" is a Car and "bus station" a Building; multi-word entries are the compounds
#: whose last word alone would mislead ("car park", "parking lot", "block of flats").
CLASS_NOUNS: Mapping[tuple[str, ...], str] = _classes(
    Building="building house home flat apartment condo bungalow cottage villa mansion "
    "terrace townhouse dwelling residence property premises shed garage barn hut cabin "
    "workshop factory warehouse mill depot church chapel cathedral mosque "
    "temple synagogue school college university office hall tower skyscraper structure "
    "shop store supermarket mall hotel pub restaurant cafe bank hospital clinic library "
    "museum theatre theater cinema gym station complex facility annex annexe "
    "block_of_flats apartment_block tower_block office_block housing_block "
    "shopping_centre leisure_centre community_centre sports_centre sports_hall car_wash",
    Car="car vehicle automobile van minivan truck lorry bus minibus suv pickup jeep taxi cab "
    "sedan saloon hatchback convertible coupe limo limousine 4x4 trailer caravan camper "
    "campervan motorhome ambulance tractor",
    Parking="parking lot carpark car_park parking_lot parking_area parking_space parking_spot "
    "parking_bay parking_garage parking_structure parking_place park_and_ride lorry_park "
    "coach_park",
    Ground="ground field pitch lawn grass grassland green park meadow playground garden yard "
    "courtyard common open_space green_space open_green_space green_area grass_area "
    "grassy_area open_area lawn_area grass_field green_field playing_field sports_field "
    "recreation_ground patch_of_grass area_of_grass strip_of_grass piece_of_grass "
    "plot_of_land patch_of_land area_of_land",
)

#: Parts of an object (their colours are the object's): "a house with a red roof".
PART_NOUNS: frozenset[str] = frozenset(
    "roof rooftop wall facade door window chimney panel solar_panel bonnet hood windscreen "
    "windshield trim stripe porch balcony conservatory gable dome spire steeple tile shingle "
    "siding cladding brickwork paint paintwork body skylight awning frame floor storey story "
    "level top bottom front back side edge corner end middle centre center part half "
    "section entrance exit outline surface patch".split()
)  # fmt: skip

#: Nouns of things that are not targets (trees, roads, signs) and of collections and places.
CONTEXT_NOUNS: frozenset[str] = frozenset(
    "tree bush shrub hedge hedgerow vegetation forest wood woodland road street lane avenue "
    "path pathway footpath walkway pavement sidewalk driveway drive track railway rail river "
    "canal stream pond lake water bridge roundabout junction intersection crossroads crossing "
    "fence gate sign pole lamp streetlight light bench bin pool trampoline row column line "
    "group cluster pair set bunch couple number map image picture view area region "
    "neighbourhood neighborhood city town village shadow shade neighbour neighbor one thing "
    "object target item way entry boundary border".split()
)  # fmt: skip

#: Words that are materials, not heads: "a red brick house" is a house.
MATERIALS: frozenset[str] = frozenset(
    "brick stone concrete metal tile glass wood wooden slate tarmac asphalt gravel steel".split()
)

# ----------------------------------------------------------------------------------------------
# colours
# ----------------------------------------------------------------------------------------------

#: The basic colour names a description's colours are folded onto (beige and tan are kept).
COLOUR_NAMES: tuple[str, ...] = (
    "red", "orange", "yellow", "green", "blue", "purple", "pink", "brown", "beige", "tan",
    "white", "silver", "grey", "black",
)  # fmt: skip

#: Colour words (normalised) → basic colour (shades folded: turquoise → blue, maroon → red).
COLOURS: Mapping[str, str] = {
    **{c: c for c in COLOUR_NAMES},
    "gray": "grey", "charcoal": "grey", "slate": "grey", "ash": "grey",
    "silvery": "silver", "metallic": "silver", "chrome": "silver",
    "navy": "blue", "turquoise": "blue", "teal": "blue", "cyan": "blue", "aqua": "blue",
    "azure": "blue", "cobalt": "blue", "indigo": "blue", "sapphire": "blue",
    "maroon": "red", "burgundy": "red", "crimson": "red", "scarlet": "red", "cherry": "red",
    "ruby": "red", "rust": "red", "wine": "red",
    "terracotta": "orange", "peach": "orange", "amber": "orange",
    "gold": "yellow", "golden": "yellow", "mustard": "yellow", "lemon": "yellow",
    "olive": "green", "lime": "green", "emerald": "green", "khaki": "beige",
    "violet": "purple", "lilac": "purple", "lavender": "purple", "mauve": "purple",
    "magenta": "pink", "rose": "pink", "salmon": "pink", "fuchsia": "pink",
    "bronze": "brown", "chocolate": "brown", "coffee": "brown",
    "cream": "beige", "sand": "beige", "sandy": "beige", "buff": "beige", "fawn": "beige",
    "ivory": "white", "snow": "white", "offwhite": "white",
    "ebony": "black", "jet": "black", "dark": "black",
    "reddish": "red", "orangey": "orange", "orangish": "orange", "yellowish": "yellow",
    "greenish": "green", "bluish": "blue", "blueish": "blue", "purplish": "purple",
    "pinkish": "pink", "brownish": "brown", "whitish": "white", "greyish": "grey",
    "grayish": "grey", "blackish": "black",
}  # fmt: skip

#: Words that shade a colour ("light blue", "dark grey", "blue-ish"): folded away.
SHADE_WORDS: frozenset[str] = frozenset(
    "light dark pale bright deep vivid dull faded pastel off ish darkish lightish".split()
)


def colour_of(word: str) -> str | None:
    """The basic colour of a colour word, or None.

    >>> colour_of("gray"), colour_of("turquoise"), colour_of("tan"), colour_of("greyish")
    ('grey', 'blue', 'tan', 'grey')
    >>> colour_of("car") is None
    True
    """
    return COLOURS.get(word)


# ----------------------------------------------------------------------------------------------
# sizes, shapes, numbers
# ----------------------------------------------------------------------------------------------

#: Size words → their normal form: positive (``large``, ``small``, ``tall``, ``low``, ``long``,
#: ``wide``, ``narrow``) or superlative (``largest``, ``smallest``, ``tallest``, ``lowest``,
#: ``longest``).
SIZES: Mapping[str, str] = {
    "big": "large", "large": "large", "huge": "large", "massive": "large", "giant": "large",
    "enormous": "large", "vast": "large", "sizeable": "large", "bigger": "large",
    "larger": "large", "biggest": "largest", "largest": "largest",
    "small": "small", "little": "small", "tiny": "small", "smaller": "small",
    "smallest": "smallest", "tall": "tall", "high": "tall", "taller": "tall",
    "higher": "tall", "tallest": "tallest", "highest": "tallest", "short": "low",
    "low": "low", "lower": "low", "shorter": "low", "lowest": "lowest",
    "shortest": "lowest", "long": "long", "longer": "long", "longest": "longest",
    "wide": "wide", "broad": "wide", "wider": "wide", "widest": "wide", "narrow": "narrow",
    "thin": "narrow", "slim": "narrow",
}  # fmt: skip

#: Shape words (a single word, or a letter before "shaped") → shape name.
SHAPES: Mapping[str, str] = {
    "rectangular": "rectangular", "rectangle": "rectangular", "oblong": "rectangular",
    "square": "square", "squarish": "square", "round": "round", "circular": "round",
    "oval": "oval", "elliptical": "oval", "triangular": "triangular",
    "irregular": "irregular", "irregularly": "irregular", "l": "L-shaped", "u": "U-shaped",
    "t": "T-shaped", "h": "H-shaped", "c": "C-shaped", "e": "E-shaped", "cross": "cross-shaped",
}  # fmt: skip

#: Number words → value (digits are read as numbers too).
NUMBERS: Mapping[str, int] = {
    "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "twenty": 20, "both": 2,
}  # fmt: skip

#: Ordinal words → rank.
ORDINALS: Mapping[str, int] = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
    "eighth": 8, "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12,
}  # fmt: skip

#: Units of measure: a number before one of these counts nothing ("20 metres").
UNITS: frozenset[str] = frozenset(
    "m metre meter metres meters km ft foot feet yard yards mile miles percent o clock "
    "degree degrees minute minutes second seconds".split()
)


def singular(word: str, known: frozenset[str] | Mapping[str, object]) -> str:
    """``word`` as the singular in ``known`` ("houses" → "house", "lorries" → "lorry"), or
    ``word`` unchanged.

    >>> k = frozenset({"house", "lorry", "bus", "church", "roof"})
    >>> [singular(w, k) for w in ("houses", "lorries", "buses", "churches", "rooves", "glass")]
    ['house', 'lorry', 'bus', 'church', 'roof', 'glass']
    """
    if word in known:
        return word
    for cut, add in (("s", ""), ("es", ""), ("ies", "y"), ("ves", "f"), ("oves", "oof")):
        if word.endswith(cut) and (w := word[: -len(cut)] + add) in known:
            return w
    return word
