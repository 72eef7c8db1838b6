"""A description's target class from its class nouns."""

from __future__ import annotations

import pytest

from urbex.language.target import CLASS_WORDS, class_of_text


@pytest.mark.parametrize(
    ("text", "cls"),
    [
        ("The white VAN beside the gate", "Car"),
        ("the parking lot behind the church", "Parking"),
        ("the houses along the road", "Building"),  # plural
        ("a green field next to the cars", "Ground"),  # longest alternative at one position
        ("the green next to the tower", "Building"),  # a bare green followed by a noun
        ("the green", "Ground"),
        ("the caravan", None),  # whole words only
        ("", None),
    ],
)
def test_class_of_text_earliest_class_noun(text, cls):
    assert class_of_text(text) == cls


def test_class_of_text_masks_the_place_names_first():
    text = "Beside Merton Hall, the small car park"
    assert class_of_text(text) == "Building"  # "hall" comes first
    assert class_of_text(text, names=["Merton Hall"]) == "Parking"


def test_class_words_map_to_the_four_target_classes():
    from urbex.classes import TARGET_CLASSES

    assert {c for _, c in CLASS_WORDS} == set(TARGET_CLASSES)
    assert all(w == w.lower() for w, _ in CLASS_WORDS)
