"""The parse's records: validation, bearings in the map frame, naming, JSON."""

from __future__ import annotations

import math

import pytest

from urbex.language import RELATIONS, ContextObject, Count, Mention, Ordinal, Parse


@pytest.mark.parametrize(
    ("relation", "text", "bearing"),
    [
        ("north_of", "north of", (0.0, 1.0)),
        ("south_of", "on the south-west side of", (-math.sqrt(0.5), -math.sqrt(0.5))),
        ("east_of", "to the east of", (1.0, 0.0)),
        ("behind", "behind", (0.0, 1.0)),  # up the map
        ("in_front_of", "in front of", (0.0, -1.0)),  # down the map, towards the reader
        ("left_of", "to the left of", (-1.0, 0.0)),
        ("right_of", "on the right hand side of", (1.0, 0.0)),
        ("next_to", "next to", None),
        ("at_end_of", "at the north end of", (0.0, 1.0)),  # towards the end it names
        ("at_end_of", "at the far end of", None),
    ],
)
def test_mention_bearing_map_frame(relation, text, bearing):
    got = Mention(name="X", relation=relation, text=text).bearing
    assert got == (None if bearing is None else pytest.approx(bearing, abs=1e-6))


@pytest.mark.parametrize(
    ("relation", "text", "names"),
    [("other", "called", True), ("other", "known as", True), ("other", ",", True),
     ("other", "is", True), ("other", "across", False), ("near", "", False),
     ("next_to", "called", False)],
)  # fmt: skip
def test_mention_names_target(relation, text, names):
    assert Mention(name="X", relation=relation, text=text).names_target is names


def test_records_reject_bad_values():
    with pytest.raises(ValueError, match="relation"):
        Mention(name="X", relation="under")
    with pytest.raises(ValueError, match="k"):
        Ordinal(k=0, from_="east")
    with pytest.raises(ValueError, match="target_class"):
        Parse(target_class="Tree")
    with pytest.raises(ValueError, match="target_colours"):
        Parse(target_class="Car", target_colours=("gray",))
    with pytest.raises(ValueError, match="ContextObject"):
        ContextObject(cls="Tree", relation="in")


def test_ordinal_bearing_and_json():
    assert Ordinal(k=3, from_="bottom").bearing == (0.0, -1.0)
    assert Ordinal(k=3, from_="corner").bearing is None
    assert Ordinal(k=3, from_="Mill Lane").to_json() == {"k": 3, "from": "Mill Lane"}


def test_parse_json_round_of_every_field():
    p = Parse(
        target_class="Car",
        target_colours=("red", "white"),
        sizes=("small",),
        shape="rectangular",
        counts=(Count(n=2, noun="car"),),
        ordinal=Ordinal(k=2, from_="east"),
        mentions=(Mention(name="Mill Lane", relation="on", text="on"),),
    )
    assert p.to_json() == {
        "target_class": "Car", "target_colours": ["red", "white"], "sizes": ["small"],
        "shape": "rectangular", "counts": [{"n": 2, "noun": "car"}],
        "ordinal": {"k": 2, "from": "east"},
        "mentions": [{"name": "Mill Lane", "relation": "on", "text": "on"}],
    }  # fmt: skip
    assert len(RELATIONS) == 19


@pytest.mark.parametrize(
    ("text", "names"),
    [("This is", True), ("I mean", True), ("it's", True), ("Find", False), ("near", False)],
)
def test_mention_names_target_after_a_target_cue(text, names):
    assert Mention(name="X", relation="other", text=text).names_target is names
