"""Words of each predicate: what is said is what the predicate checks."""

from __future__ import annotations

import pytest

from urbex.synth.expressions import HasColour, NearLandmark, OnRoad
from urbex.synth.predicates import (
    AtRoadEnd,
    Between,
    Context,
    FacingSide,
    HasShape,
    HasWalls,
    MapRegion,
    MapRelation,
    OffRoad,
)
from urbex.synth.wording import HEDGES, VOCABULARY, count_word, phrase_filter

FIRST = lambda options: options[0]  # noqa: E731


@pytest.mark.parametrize(
    ("f", "cls", "field", "text"),
    [
        (HasColour("blue", shade="turquoise"), "Car", "adj", "turquoise"),
        (HasColour("black", among=HEDGES["black"][1]), "Car", "adj", "dark grey or black"),
        (HasColour("grey"), "Building", "with_", "a grey roof"),
        (HasWalls("beige"), "Building", "adj", "beige"),
        (HasShape("L-shaped"), "Building", "adj", "L-shaped"),
        (MapRegion("bottom left"), "Car", "rel", "in the bottom left corner of the map"),
        (MapRegion("right"), "Car", "rel", "on the right side of the map"),
        (MapRelation("Merton Hall", "left"), "Car", "rel", "to the left of Merton Hall"),
        (FacingSide("Merton Hall", "front"), "Car", "rel", "in front of Merton Hall"),
        (FacingSide("Merton Hall", "back"), "Parking", "rel", "behind Merton Hall"),
        (Between("Merton Hall", "Soho Park"), "Car", "rel", "between Merton Hall and Soho Park"),
        (OffRoad("Mill Lane"), "Parking", "rel", "off Mill Lane"),
        (AtRoadEnd("Mill Lane"), "Building", "rel", "at the end of Mill Lane"),
        (Context("Car", "red", "in front of"), "Building", "with_", "a red car in front of it"),
        (Context("Building", "grey", "behind", target_first=True), "Car", "rel",
         "behind a building with a grey roof"),
        (NearLandmark("Merton Hall", "north"), "Car", "rel", "north of Merton Hall"),
        (OnRoad("Mill Lane"), "Ground", "rel", "beside Mill Lane"),
    ],
)  # fmt: skip
def test_phrase_filter_canonical_wording(f, cls, field, text):
    w = phrase_filter(f, cls, FIRST)
    assert getattr(w, field) == text
    assert w.sentence.endswith(".") and w.sentence[0].isupper()


def test_hedges_name_the_true_colour_and_accept_it():
    for colour, (words, among) in HEDGES.items():
        assert among[0] == colour and colour in words.split()


def test_count_word_mixes_words_and_digits():
    assert {count_word(3, lambda o, k=k: o[k]) for k in range(3)} == {"three", "3"}
    assert count_word(14, FIRST) == "14"


def test_vocabulary_holds_the_template_words():
    assert {"behind", "map", "corner", "between", "parked", "roof", "dark", "grey"} <= VOCABULARY
    assert "Merton" not in VOCABULARY and "merton" not in VOCABULARY
