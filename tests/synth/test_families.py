"""The families' sentences: groups before what they pick, facts of the one picked, no additions."""

from __future__ import annotations

import re

import pytest

from urbex.synth.expressions import Expression, Extreme, HasColour, NearLandmark, OnRoad, Ordinal
from urbex.synth.families import VOCABULARY, render
from urbex.synth.predicates import Context, Counted, HasShape, HasWalls, MapRegion

FIRST = lambda options: options[0]  # noqa: E731
LAST = lambda options: options[-1]  # noqa: E731

LARGEST = Expression(
    object_name="Building",
    filters=(NearLandmark("Merton Hall", "north"), Counted(3)),
    selector=Extreme("largest"),
    also=(HasWalls("beige"), MapRegion("top")),
)
SECOND = Expression(
    object_name="Car",
    filters=(HasColour("red"), OnRoad("Mill Lane"), Counted(4)),
    selector=Ordinal(2, "Mill Lane", "east"),
)
RED_ONE = Expression(object_name="Car", filters=(OnRoad("Mill Lane"), Counted(3), HasColour("red")))


@pytest.mark.parametrize(
    ("expression", "family", "text"),
    [
        (LARGEST, "plain", "the largest of the three buildings north of Merton Hall, which is beige "
                           "and is at the top of the map"),
        (SECOND, "plain", "the second of the four red cars on Mill Lane, counted from the east end"),
        (RED_ONE, "plain", "the red one of the three cars on Mill Lane"),
        (RED_ONE, "relative", "the one of the three cars on Mill Lane that is red"),
        (RED_ONE, "existential", "There are three cars on Mill Lane. The one I mean is the red one."),
        (SECOND, "existential", "There are four red cars on Mill Lane. Counting from the east end, "
                                "I mean the second one."),
        (LARGEST, "two_sentence", "Look at the three buildings north of Merton Hall. I mean the "
                                  "largest one. It is beige and is at the top of the map."),
        (LARGEST, "detailed", "Look at the three buildings north of Merton Hall. I mean the largest "
                              "one, which is beige and is at the top of the map."),
    ],
)  # fmt: skip
def test_render_says_the_group_then_what_it_picks(expression, family, text):
    assert render(expression, family, FIRST) == text


def test_render_an_ordinal_keeps_its_also_facts_out_of_the_ranked_group():
    e = Expression(object_name="Car", selector=Ordinal(2, "Mill Lane", "east"),
                   also=(HasColour("blue", shade="turquoise"),))  # fmt: skip
    text = render(e, "plain", FIRST)
    assert text.startswith("the second car from the east end of Mill Lane, which is turquoise")


@pytest.mark.parametrize("family", ["plain", "two_sentence", "relative", "detailed"])
@pytest.mark.parametrize("pick", [FIRST, LAST])
def test_render_says_every_fact_and_adds_none(family, pick):
    e = Expression(
        object_name="Building",
        filters=(OnRoad("Mill Lane"),),
        also=(HasShape("L-shaped"), HasColour("red"), Context("Car", "white", "behind")),
    )
    text = render(e, family, pick)
    for word in ("Mill Lane", "L-shaped", "red", "white"):
        assert word in text, (family, text)
    colours = set(
        re.findall(r"\b(red|white|blue|black|grey|green|brown|silver|yellow)(?:dish)?\b", text)
    )
    assert colours == {"red", "white"}, text


def test_vocabulary_covers_the_family_templates():
    assert {"look", "mean", "there", "counting", "consider", "appears"} <= VOCABULARY
