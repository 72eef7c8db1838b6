"""Tests of urbex.language.parse: the one parse of a description.

The table below was written for these tests, in the ways people describe objects on a city
map (long and multi-sentence, parts with colours, other objects with their own colours,
counts, shapes, the map frame, hedges, shades, misspelled names, ordinals counted from every
kind of place, every relation); no sentence comes from a data set.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from urbex.language import RELATIONS, Mention, Ordinal, Parse, parse
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
