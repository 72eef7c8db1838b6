"""The reading vocabulary: classes, colours and shades, plurals."""

from __future__ import annotations

import pytest

from urbex.classes import TARGET_CLASSES
from urbex.colour import PALETTE
from urbex.language.vocabulary import (
    CLASS_NOUNS,
    COLOUR_NAMES,
    COLOURS,
    CONTEXT_NOUNS,
    PART_NOUNS,
    colour_of,
    singular,
)


@pytest.mark.parametrize(
    ("words", "cls"),
    [
        ("home", "Building"), ("flat", "Building"), ("apartment block", "Building"),
        ("shed", "Building"), ("garage", "Building"), ("factory", "Building"),
        ("warehouse", "Building"), ("church", "Building"), ("school", "Building"),
        ("office", "Building"), ("van", "Car"), ("truck", "Car"), ("lorry", "Car"),
        ("bus", "Car"), ("suv", "Car"), ("pickup", "Car"), ("car park", "Parking"),
        ("parking lot", "Parking"), ("parking area", "Parking"), ("parking space", "Parking"),
        ("field", "Ground"), ("pitch", "Ground"), ("lawn", "Ground"), ("grass", "Ground"),
        ("green", "Ground"), ("park", "Ground"), ("open space", "Ground"),
    ],
)  # fmt: skip
def test_class_nouns_cover_peoples_words(words, cls):
    assert CLASS_NOUNS[tuple(words.split())] == cls


@pytest.mark.parametrize(
    ("word", "colour"),
    [("gray", "grey"), ("turquoise", "blue"), ("navy", "blue"), ("maroon", "red"),
     ("burgundy", "red"), ("beige", "beige"), ("tan", "tan"), ("cream", "beige"),
     ("golden", "yellow"), ("charcoal", "grey"), ("reddish", "red"), ("bluish", "blue")],
)  # fmt: skip
def test_colours_fold_shades(word, colour):
    assert colour_of(word) == colour


def test_vocabulary_is_consistent():
    assert set(CLASS_NOUNS.values()) == set(TARGET_CLASSES)
    assert set(COLOURS.values()) == set(COLOUR_NAMES) == set(PALETTE)
    assert not PART_NOUNS & CONTEXT_NOUNS
    assert not {w for k in CLASS_NOUNS for w in k if len(k) == 1} & (PART_NOUNS | CONTEXT_NOUNS)


def test_singular_maps_plurals_onto_known_words():
    known = frozenset({"lorry", "bus", "church", "roof", "factory"})
    assert [singular(w, known) for w in ("lorries", "buses", "churches", "roofs", "factories")] == [
        "lorry", "bus", "church", "roof", "factory"]  # fmt: skip
    assert singular("glass", known) == "glass"
