"""Relation phrases before and after a mention."""

from __future__ import annotations

import pytest

from urbex.language.relation_phrases import INVERSE, relation_after, relation_before


@pytest.mark.parametrize(
    ("before", "relation", "said"),
    [
        ("the red car on", "on", "on"),
        ("a van just off", "off", "just off"),
        ("the house at the corner of", "corner", "at the corner of"),
        ("the green in between", "between", "in between"),
        ("the car across the road from the", "across_from", "across the road from"),
        ("the shop opposite", "across_from", "opposite"),
        ("the church on the other side of the road from", "across_from",
         "on the other side of the road from"),
        ("the car right next to the", "next_to", "right next to"),
        ("the car parked outside", "next_to", "outside"),
        ("a bus not far from", "near", "not far from"),
        ("the lorry behind", "behind", "behind"),
        ("the lorry at the back of", "behind", "at the back of"),
        ("the taxi in front of", "in_front_of", "in front of"),
        ("the car to the left of the", "left_of", "to the left of"),
        ("the house on the right hand side of", "right_of", "on the right hand side of"),
        ("the car north east of", "north_of", "north east of"),
        ("the field on the southern side of", "south_of", "on the southern side of"),
        ("a car to the east of", "east_of", "to the east of"),
        ("the shed west of the old", "west_of", "west of"),
        ("a car in the parking lot of", "in", "in the parking lot of"),
        ("the house at the far end of", "at_end_of", "at the far end of"),
        ("the second car from the west end of", "at_end_of", "from the west end of"),
        ("the office facing", "facing", "facing"),
        ("the building called", "other", "called"),
        ("the car", None, None),
    ],
)  # fmt: skip
def test_relation_before(before, relation, said):
    words = before.split()
    got = relation_before(words)
    if relation is None:
        assert got is None
    else:
        assert got is not None and got[0] == relation
        assert " ".join(words[got[1] : got[2]]) == said


@pytest.mark.parametrize(
    ("after", "relation", "n"),
    [
        ("is to the north of it", "south_of", 6),
        ("lies just west of the car", "east_of", 6),
        ("is behind it and", "in_front_of", 3),
        ("to its left", "right_of", 3),
        ("is next to it", "next_to", 4),
        ("on the north side", None, 0),  # the target is on its north side: not turned round
        ("is a big hall", None, 0),
    ],
)
def test_relation_after_turns_the_relation_round(after, relation, n):
    got = relation_after(after.split())
    assert got == (None if relation is None else (relation, n))


def test_inverse_is_an_involution():
    assert all(INVERSE[INVERSE[r]] == r for r in INVERSE)
