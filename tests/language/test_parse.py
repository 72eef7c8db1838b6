"""Tests of urbex.language.parse: the one parse of a description.

The table below was written for these tests, in the ways people describe objects on a city
map (long and multi-sentence, parts with colours, other objects with their own colours,
counts, shapes, the map frame, hedges, shades, misspelled names, ordinals counted from every
kind of place, every relation); no sentence comes from a data set.
"""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from urbex.config import MAX_DESCRIPTION_CHARS
from urbex.errors import DescriptionError
from urbex.language import RELATIONS, Mention, Ordinal, Parse, context_objects, map_regions, parse
from urbex.language.vocabulary import CLASS_NOUNS, COLOURS

N = [
    "Merton Hall", "Mill Lane", "Soho Road", "Green Park", "Red Lion", "White Hart Lane",
    "Walsall Road", "St Mary's Church", "Kings Parade", "Northfield Park", "Tesco",
    "Jubilee Library", "Albert Street", "Victoria Car Park", "Riverside Court", "Elm Tower",
    "Oakwood School", "Clifton Avenue", "Bishop Street", "Queens Park", "Black Horse",
    "Blue Bell Inn", "Rose Cottage",
]  # fmt: skip

#: (description, class, colours, [(name, relation)], ordinal (k, from) or None)
TABLE: list[tuple[str, str | None, tuple[str, ...], list[tuple[str, str]], tuple[int, str | None] | None]] = [
    ("The red car on Mill Lane, north of Merton Hall.", "Car", ("red",),
     [("Mill Lane", "on"), ("Merton Hall", "north_of")], None),
    ("This is a white van parked across the street from the Red Lion.", "Car", ("white",),
     [("Red Lion", "across_from")], None),
    ("A big house with a red car in front of it. The house has a grey roof and white walls.",
     "Building", ("grey", "white"), [], None),
    ("On Bishop Street, in the car park of the Tesco, there is a dark blue hatchback.", "Car",
     ("blue",), [("Bishop Street", "on"), ("Tesco", "in")], None),
    ("The home at the end of Clifton Avenue with a light brown roof", "Building", ("brown",),
     [("Clifton Avenue", "at_end_of")], None),
    ("A factory between Soho Road and the canal, next to Walsell Road", "Building", (),
     [("Soho Road", "between"), ("Walsall Road", "next_to")], None),
    ("The football pitch to the left of Oakwood School", "Ground", (),
     [("Oakwood School", "left_of")], None),
    ("the third house from the left in the row of five houses along Albert Street", "Building",
     (), [("Albert Street", "on")], (3, "left")),
    ("Second car from the top in the column of 4 cars, off Kings Parade.", "Car", (),
     [("Kings Parade", "off")], (2, "top")),
    ("It's the 2nd building from the corner of Mill Lane and Soho Road, a tall office block "
     "with blue windows.", "Building", ("blue",),
     [("Mill Lane", "corner"), ("Soho Road", "corner")], (2, "corner")),
    ("8 houses to the right of St Mary's Church, the one with a turquoise door", "Building",
     ("blue",), [("St Mary's Church", "right_of")], (8, "St Mary's Church")),
    ("The lorry parked behind Jubilee Library", "Car", (), [("Jubilee Library", "behind")], None),
    ("a maroon SUV in front of Elm Tower", "Car", ("red",), [("Elm Tower", "in_front_of")], None),
    ("The green between Queens Park and Riverside Court", "Ground", (),
     [("Queens Park", "between"), ("Riverside Court", "between")], None),
    ("the small shed in the garden of Rose Cottage", "Building", (), [("Rose Cottage", "in")],
     None),
    ("A beige pickup facing the Black Horse", "Car", ("beige",), [("Black Horse", "facing")],
     None),
    ("The car park west of White Hart Lane, next to a row of tall trees", "Parking", (),
     [("White Hart Lane", "west_of")], None),
    ("The lawn south-east of Green Park", "Ground", (), [("Green Park", "south_of")], None),
    ("The church on the east side of Northfield Park", "Building", (),
     [("Northfield Park", "east_of")], None),
    ("the parking area next to Victoria Car Park", "Parking", (),
     [("Victoria Car Park", "next_to")], None),
    ("I mean the blue/white bus at the north end of Kings Parade", "Car", ("blue", "white"),
     [("Kings Parade", "at_end_of")], None),
    ("Look for the tan hatchback. It is parked on Mill Lane, close to Merton Hall. There is a "
     "black car right next to it.", "Car", ("tan",),
     [("Mill Lane", "on"), ("Merton Hall", "near")], None),
    ("A long, L-shaped warehouse with a dark grey roof. It sits just off Walsal Road, behind a "
     "small white house.", "Building", ("grey",), [("Walsall Road", "off")], None),
    ("The rectangular field with a running track, north of Oakwood School", "Ground", (),
     [("Oakwood School", "north_of")], None),
    ("A flat next to the Blue Bell Inn", "Building", (), [("Blue Bell Inn", "next_to")], None),
    ("The apartment block that appears to be dark gray or black, at the corner of Bishop "
     "Street and Albert Street.", "Building", ("grey", "black"),
     [("Bishop Street", "corner"), ("Albert Street", "corner")], None),
    ("The greyish van right by Merton Hal", "Car", ("grey",), [("Merton Hall", "next_to")], None),
    ("Find the northernmost car in Victoria Car Park.", "Car", (),
     [("Victoria Car Park", "in")], (1, "north")),
    ("The patch of grass where Mill Lane meets Soho Road", "Ground", (),
     [("Mill Lane", "corner"), ("Soho Road", "corner")], None),
    ("A school with red brick walls and a white roof, opposite St Marys Church", "Building",
     ("red", "white"), [("St Mary's Church", "across_from")], None),
    ("The minibus in Jubilee Library's car park", "Car", (), [("Jubilee Library", "in")], None),
    ("From the west end of Albert Street, the fourth car.", "Car", (),
     [("Albert Street", "at_end_of")], (4, "west")),
    ("the second of the cars on Soho Road, counted from its east end", "Car", (),
     [("Soho Road", "on")], (2, "east")),
    ("A home that is L shaped, with a conservatory at the back, on Clifton Ave", "Building", (),
     [("Clifton Avenue", "on")], None),
    ("Near the bottom of the map, to the right of Queens Park, there is a small red car.", "Car",
     ("red",), [("Queens Park", "right_of")], None),
    ("Two cars are parked on the grass in front of Riverside Court. The target is the silver "
     "one.", "Car", ("silver",), [("Riverside Court", "in_front_of")], None),
    ("Large open space with a few trees, bordered by Mill Lane on the south", "Ground", (),
     [("Mill Lane", "next_to")], None),
    ("A lorry on Walsall Rd heading towards Soho Road", "Car", (),
     [("Walsall Road", "on"), ("Soho Road", "near")], None),
    ("The white car is in the middle of Victoria Car Park, surrounded by other cars.", "Car",
     ("white",), [("Victoria Car Park", "in")], None),
    ("Between the Red Lion and the Black Horse is a small parking lot.", "Parking", (),
     [("Red Lion", "between"), ("Black Horse", "between")], None),
    ("The garage behind Rose Cottage. It is light blue with a white door.", "Building",
     ("blue", "white"), [("Rose Cottage", "behind")], None),
    ("The pitch at the top of the map, north of Walsall Road, is the largest green area there.",
     "Ground", (), [("Walsall Road", "north_of")], None),
    ("a dark green estate car left of Elm Tower", "Car", ("green",), [("Elm Tower", "left_of")],
     None),
    ("The taxi facing Kings Parade, in front of a red postbox", "Car", (),
     [("Kings Parade", "facing")], None),
    ("An office building with solar panels on its roof, east of Oakwood School, with a large "
     "car park next to it", "Building", (), [("Oakwood School", "east_of")], None),
    ("The truck that is parked on the lawn west of Northfield Park", "Car", (),
     [("Northfield Park", "west_of")], None),
    ("The third car from Merton Hall along Mill Lane", "Car", (),
     [("Merton Hall", "near"), ("Mill Lane", "on")], (3, "Merton Hall")),
    ("Church, maybe a chapel, with a dark roof, south of Green Park", "Building", ("black",),
     [("Green Park", "south_of")], None),
    ("The house is white. It has a brown roof. It stands at the corner of Albert Street.",
     "Building", ("white", "brown"), [("Albert Street", "corner")], None),
    ("A bus near White Hart Lane", "Car", (), [("White Hart Lane", "near")], None),
    ("The building called Merton Hall", "Building", (), [("Merton Hall", "other")], None),
    ("Merton Hall, the big grey building by the river", "Building", ("grey",),
     [("Merton Hall", "other")], None),
    ("the yellow car in the car park across Mill Lane from Merton Hall", "Car", ("yellow",),
     [("Mill Lane", "other"), ("Merton Hall", "across_from")], None),
    ("A playing field, mostly green with brown patches, in between Oakwood School and Soho Road",
     "Ground", ("green", "brown"), [("Oakwood School", "between"), ("Soho Road", "between")],
     None),
    ("The second house from the bottom, just above the car park on Bishop St", "Building", (),
     [("Bishop Street", "on")], (2, "bottom")),
    ("It's the dark red vehicle parked outside Jubilee Library, next to a white van", "Car",
     ("red",), [("Jubilee Library", "next_to")], None),
    ("A semi-detached home, cream with a red roof, two doors down from the Red Lion",
     "Building", ("beige", "red"), [("Red Lion", "near")], (2, "Red Lion")),
    ("The small blue car in the lot next to Tesco", "Car", ("blue",), [("Tesco", "next_to")],
     None),
    ("A square building in the middle of Northfield Park", "Building", (),
     [("Northfield Park", "in")], None),
    ("Three lorries are parked along Soho Road. It is the first one from the east.", "Car", (),
     [("Soho Road", "on")], (1, "east")),
    ("The grass area on the far side of Mill Lane from the Black Horse", "Ground", (),
     [("Mill Lane", "other"), ("Black Horse", "across_from")], None),
    ("A van on Albert Street, a few metres south of the Elm Tower", "Car", (),
     [("Albert Street", "on"), ("Elm Tower", "south_of")], None),
    ("The house directly behind the Blue Bell Inn, with an orange-ish roof", "Building",
     ("orange",), [("Blue Bell Inn", "behind")], None),
    ("A ruby red convertible, possibly a coupe, on the right of Kings Parade", "Car", ("red",),
     [("Kings Parade", "right_of")], None),
    ("The tower block whose walls are navy and white, at the end of White Hart Lane",
     "Building", ("blue", "white"), [("White Hart Lane", "at_end_of")], None),
    ("The car park that lies between Albert Street and Bishop Street, the one with a sign at "
     "the entrance", "Parking", (), [("Albert Street", "between"), ("Bishop Street", "between")],
     None),
    ("North of the Walsall Road, find the pink house.", "Building", ("pink",),
     [("Walsall Road", "north_of")], None),
    ("There's a small green with a bench in the centre, west of Riverside Court.", "Ground", (),
     [("Riverside Court", "west_of")], None),
    ("The school is tall. Queens Park is to the south of it.", "Building", (),
     [("Queens Park", "north_of")], None),
    ("the house with the red car parked on its driveway, east of Mill Lane", "Building", (),
     [("Mill Lane", "east_of")], None),
    ("In the bottom left of the map there is a purple van facing Albert Street", "Car",
     ("purple",), [("Albert Street", "facing")], None),
    ("A grey hatchback, the fifth from the right, in the row of cars on Clifton Avenue", "Car",
     ("grey",), [("Clifton Avenue", "on")], (5, "right")),
    ("The second bungalow in from the corner, on Bishop Street", "Building", (),
     [("Bishop Street", "on")], (2, "corner")),
    ("the lorry park east of the Black Horse", "Parking", (), [("Black Horse", "east_of")], None),
    ("A big warehouse between the railway and Walsall Road", "Building", (),
     [("Walsall Road", "between")], None),
]  # fmt: skip


def _row_id(row: tuple) -> str:
    return row[0][:40]


@pytest.mark.parametrize("row", TABLE, ids=_row_id)
def test_parse_table_class_colours_relations_ordinal(row):
    text, cls, colours, mentions, ordinal = row
    p = parse(text, N)
    assert p.target_class == cls
    assert p.target_colours == colours
    assert [(m.name, m.relation) for m in p.mentions] == mentions
    assert (None if p.ordinal is None else (p.ordinal.k, p.ordinal.from_)) == ordinal


def test_parse_table_covers_every_relation_and_ordinal_kind():
    rels = {r for row in TABLE for _, r in row[3]}
    assert rels == set(RELATIONS)
    froms = {row[4][1] for row in TABLE if row[4] is not None}
    assert {"left", "top", "bottom", "right"} & froms and {"east", "west", "north"} & froms
    assert "corner" in froms and {"Merton Hall", "Red Lion"} & froms
    assert len(TABLE) >= 60


#: A second table in other styles and with other names (:data:`N2`); written after the first one.
N2 = [
    "Hanover Square",
    "Fox and Hounds",
    "Canal Street",
    "Brindley Place",
    "Sandy Lane",
    "Golden Cross",
    "Orchard Close",
    "Grey Friars",
    "Westgate",
    "Silver Birch Road",
    "Market Hall",
    "Pearl Court",
    "Crown Street",
    "Bluebell Wood",
    "Kingsway",
    "Moor Lane",
    "The Green Man",
    "Abbey Road",
]

TABLE_2 = [
    ('Big grey warehouse on the corner where Canal Street meets Moor Lane, with lorries parked outside.', 'Building', ('grey',), [('Canal Street', 'corner'), ('Moor Lane', 'corner')], None),
    ('There is a small orange car parked facing Hanover Square, just in front of a tall white building.', 'Car', ('orange',), [('Hanover Square', 'facing')], None),
    ("The field behind the Fox and Hounds pub. It's mostly grass, with a few trees along the edge.", 'Ground', (), [('Fox and Hounds', 'behind')], None),
    ('This is the fourth house from the top of the map on Sandy Lane, it has a red tiled roof', 'Building', ('red',), [('Sandy Lane', 'on')], (4, 'top')),
    ('A silver hatchback, next to the Golden Cross, parked between a black van and a white car', 'Car', ('silver',), [('Golden Cross', 'next_to')], None),
    ('the parking lot off Orchard Close that is mostly empty', 'Parking', (), [('Orchard Close', 'off')], None),
    ("Across from Grey Friars there's a church with a green copper spire.", 'Building', ('green',), [('Grey Friars', 'across_from')], None),
    ('It is a white minivan. Westgate runs along its north side.', 'Car', ('white',), [('Westgate', 'near')], None),
    ('Small terraced house, third from the end of Silver Birch Road, with a bright yellow door', 'Building', ('yellow',), [('Silver Birch Road', 'at_end_of')], (3, None)),
    ('The lawn in front of Market Hall, which is a large brick building', 'Ground', (), [('Market Hall', 'in_front_of')], None),
    ('pickup truck, maybe grey or silver, at the back of Pearl Court', 'Car', ('grey', 'silver'), [('Pearl Court', 'behind')], None),
    ("The car park between Bluebell Wood and Kingsway, it's the smaller of the two.", 'Parking', (), [('Bluebell Wood', 'between'), ('Kingsway', 'between')], None),
    ('A bus at the far end of Moor Lane, near the roundabout', 'Car', (), [('Moor Lane', 'at_end_of')], None),
    ('the second building from the right, on the west side of Abbey Road, beige with a flat roof', 'Building', ('beige',), [('Abbey Road', 'west_of')], (2, 'right')),
    ('A grassy area next to Kingsway with a red phone box in the corner', 'Ground', (), [('Kingsway', 'next_to')], None),
    ('Find the detached home at the junction of Crown Street and Canal Street. Its walls are cream and the roof is dark grey.', 'Building', ('beige', 'grey'), [('Crown Street', 'corner'), ('Canal Street', 'corner')], None),
    ('the 3rd van from the left in the car park of Market Hall', 'Car', (), [('Market Hall', 'in')], (3, 'left')),
    ('Next to Hanover Square is a tiny shed with a blue roof.', 'Building', ('blue',), [('Hanover Square', 'next_to')], None),
    ('A maroon car parked right outside the Golden Cross.', 'Car', ('red',), [('Golden Cross', 'next_to')], None),
    ('Near Bluebell Wood there is a huge open space, green and brown in colour.', 'Ground', ('green', 'brown'), [('Bluebell Wood', 'near')], None),
    ('The office block to the east of Westgate, six storeys high with blue glass windows', 'Building', ('blue',), [('Westgate', 'east_of')], None),
    ('A black taxi in front of the Fox and Hounds, behind a red bus', 'Car', ('black',), [('Fox and Hounds', 'in_front_of')], None),
    ('the northernmost of the three houses on Orchard Close', 'Building', (), [('Orchard Close', 'on')], (1, 'north')),
    ("The garage at the rear of Pearl Court, it's a grey-ish colour", 'Building', ('grey',), [('Pearl Court', 'behind')], None),
    ('In the top right corner of the map, the church opposite Abbey Road', 'Building', (), [('Abbey Road', 'across_from')], None),
    ('The second car from Brindley Place, heading along Canal Street', 'Car', (), [('Brindley Place', 'near'), ('Canal Street', 'on')], (2, 'Brindley Place')),
]  # fmt: skip


@pytest.mark.parametrize("row", TABLE_2, ids=_row_id)
def test_parse_second_table(row):
    text, cls, colours, mentions, ordinal = row
    p = parse(text, N2)
    got = (p.target_class, p.target_colours, [(m.name, m.relation) for m in p.mentions])
    assert got == (cls, colours, mentions)
    assert (None if p.ordinal is None else (p.ordinal.k, p.ordinal.from_)) == ordinal


#: (description, sizes, shape, counts) of table rows with more to say.
ATTRIBUTES = [
    ("A big house with a red car in front of it. The house has a grey roof and white walls.",
     ("large",), None, ()),
    ("the third house from the left in the row of five houses along Albert Street", (), None,
     ((5, "house"),)),
    ("Second car from the top in the column of 4 cars, off Kings Parade.", (), None,
     ((4, "car"),)),
    ("A long, L-shaped warehouse with a dark grey roof. It sits just off Walsal Road, behind a "
     "small white house.", ("long",), "L-shaped", ()),
    ("The rectangular field with a running track, north of Oakwood School", (), "rectangular",
     ()),
    ("A home that is L shaped, with a conservatory at the back, on Clifton Ave", (), "L-shaped",
     ()),
    ("Two cars are parked on the grass in front of Riverside Court. The target is the silver "
     "one.", (), None, ((2, "car"),)),
    ("the largest of the buildings north of Merton Hall, next to a big tree", ("largest",), None,
     ()),
    ("a tiny van beside two huge lorries on Mill Lane", ("small",), None, ((2, "lorry"),)),
    ("The pitch, 100 metres north of Walsall Road, is the largest green area there.",
     ("largest",), None, ()),
    ("8 houses to the right of St Mary's Church, the one with a turquoise door", (), None, ()),
]  # fmt: skip


@pytest.mark.parametrize("row", ATTRIBUTES, ids=_row_id)
def test_parse_sizes_shape_counts_of_the_target_only(row):
    text, sizes, shape, counts = row
    p = parse(text, N)
    assert p.sizes == sizes and p.shape == shape
    assert tuple((c.n, c.noun) for c in p.counts) == counts


def test_parse_mention_text_is_the_words_that_said_it():
    p = parse("This is a white van parked across the street from the Red Lion.", N)
    assert p.mentions == (
        Mention(name="Red Lion", relation="across_from", text="across the street from"),
    )
    p = parse("Merton Hall is to the north of it; the target is a red car", N)
    assert (p.mentions[0].relation, p.mentions[0].text) == ("south_of", "is to the north of it")
    m = parse("a car near Tesco, not Mill Lane", N).mentions[1]
    assert m == Mention(name="Mill Lane", relation="near")


def test_parse_to_json_has_exactly_the_documented_keys():
    d = parse("the 2nd red car from the east end of Mill Lane, one of two cars", N).to_json()
    assert list(d) == ["target_class", "target_colours", "sizes", "shape", "counts", "ordinal",
                       "mentions"]  # fmt: skip
    assert d["ordinal"] == {"k": 2, "from": "east"}
    assert d["mentions"] == [
        {"name": "Mill Lane", "relation": "at_end_of", "text": "from the east end of"}
    ]
    assert d["counts"] == [{"n": 2, "noun": "car"}]


def test_parse_without_names_or_words():
    assert parse("") == Parse(target_class=None)
    assert parse("   ...  ") == Parse(target_class=None)
    assert parse("next to it").target_class is None


# ------------------------------------------------------------------------------------------
# properties: a landmark name's words are never the target's class or colour
# ------------------------------------------------------------------------------------------

_NOUNS = {"car": "Car", "van": "Car", "house": "Building", "shed": "Building", "lawn": "Ground",
          "field": "Ground", "car park": "Parking", "parking lot": "Parking"}  # fmt: skip
_NAME_HEADS = sorted({*COLOURS, *(w for k in CLASS_NOUNS for w in k)} - {"dark"})
_NAME_TAILS = ["Lane", "Road", "Inn", "Hall", "Court", "Close", "House", "Park", "Green", "Arms",
               "Way", "Gardens", "Lion", "Hart Lane", "Car Park", "Field"]  # fmt: skip
_TEMPLATES = [
    "the {colour} {noun} {rel} {name}",
    "{Rel} {name}, the {colour} {noun}.",
    "I mean the {noun} {rel} {name}. It is {colour}.",
    "the {noun} that is {colour}, {rel} {name}",
    "{name} is close by; the target is a {colour} {noun}",
]
_RELS = ["next to", "north of", "on", "across the street from", "behind", "in front of", "near"]


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    head=st.sampled_from(_NAME_HEADS),
    tail=st.sampled_from(_NAME_TAILS),
    noun=st.sampled_from(sorted(_NOUNS)),
    colour=st.sampled_from(["red", "blue", "white", "black", "silver", "yellow"]),
    rel=st.sampled_from(_RELS),
    template=st.sampled_from(_TEMPLATES),
)
def test_parse_landmark_name_words_never_become_class_or_colour(
    head, tail, noun, colour, rel, template
):
    name = f"{head.title()} {tail}"
    text = template.format(colour=colour, noun=noun, rel=rel, Rel=rel.capitalize(), name=name)
    p = parse(text, [name])
    assert [m.name for m in p.mentions] == [name], text
    assert p.target_class == _NOUNS[noun], text
    assert p.target_colours == (colour,), text


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.text(max_size=80), st.lists(st.text(max_size=20), max_size=3))
def test_parse_any_text_gives_a_valid_parse(text, names):
    p = parse(text, names)
    assert isinstance(p, Parse)
    assert all(m.name in names and m.relation in RELATIONS for m in p.mentions)
    assert p.ordinal is None or (isinstance(p.ordinal, Ordinal) and p.ordinal.k >= 1)


@pytest.mark.parametrize(
    ("text", "context"),
    [
        ("a house with a red car parked in front of it", [("Car", "in_front_of", ("red",), True)]),
        (
            "There is a grey car behind it. It is a white house.",
            [("Car", "behind", ("grey",), True)],
        ),
        ("a car parked behind a white van", [("Car", "behind", ("white",), False)]),
        ("a car outside a building with a grey roof", [("Building", "next_to", ("grey",), False)]),
        ("a car park with a black car parked in it", [("Car", "in", ("black",), True)]),
        ("In a parking area: the yellow automobile.", [("Parking", "in", (), False)]),
        ("the white car next to Mill Lane", []),
    ],
)
def test_context_objects_their_colours_and_direction(text, context):
    got = [(c.cls, c.relation, c.colours, c.reverse) for c in context_objects(text, N)]
    assert got == context
    assert not set(parse(text, N).target_colours) & {c for x in context for c in x[2]}


@pytest.mark.parametrize(
    ("text", "regions"),
    [
        ("a car at the top of the map", ("top",)),
        ("the house in the bottom left corner of the map, next to Mill Lane", ("bottom left",)),
        ("a van near the left edge of the map", ("left",)),
        ("on the far right of the map there is a car park", ("right",)),
        ("the second house from the top of the map", ()),
        ("the car to the left of Mill Lane", ()),
    ],
)
def test_map_regions(text, regions):
    assert map_regions(text, N) == regions


def test_parse_counted_group_is_a_count_not_an_ordinal():
    p = parse("Look at the three houses just south of Elm Tower. I mean the tallest one, which has "
              "grey walls and a brown-roofed shed just behind it.", N)  # fmt: skip
    assert (p.target_class, p.target_colours, p.sizes) == ("Building", ("grey",), ("tallest",))
    assert p.ordinal is None and [(c.n, c.noun) for c in p.counts] == [(3, "house")]
    p = parse("There are 3 housses just north of Elm Tower. I mean the smallest one.", N)
    assert (p.target_class, p.ordinal, p.sizes) == ("Building", None, ("smallest",))
    assert parse("4 houses to the left of Elm Tower", N).ordinal == Ordinal(k=4, from_="Elm Tower")


def test_parse_reads_a_description_at_the_limit_within_a_second():
    """Clauses of phrases with no comma were the slowest reading found (quadratic in length)."""
    text = ("a red car in a parking lot " * 100)[:MAX_DESCRIPTION_CHARS]
    t0 = time.perf_counter()
    assert parse(text, ["Mill Lane"]).target_class == "Car"
    assert time.perf_counter() - t0 < 1.0


@pytest.mark.parametrize("read", [parse, context_objects, map_regions])
def test_parse_a_description_past_the_limit_or_not_utf8_is_a_description_error(read):
    with pytest.raises(DescriptionError, match="description: 99,999 characters"):
        read("a red car " * 10_000)
    with pytest.raises(DescriptionError, match="not UTF-8"):
        read("the red car\udcff")
    assert read(" " * 5000 + "a red car" + " " * 5000) is not None  # white space not counted
