"""Tests of urbex.landmarks.names: name normalisation and landmark kinds."""

from __future__ import annotations

import pytest

from urbex.landmarks import landmark_kind, normalize_name


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("St. Mary's Church", "Saint Marys Church"),
        ("King's Parade", "Kings Pde"),
        ("Trinity St", "Trinity Street"),
        ("The Café", "cafe"),
        ("MERTON   HALL", "merton hall"),
        ("Hills Rd.", "Hills Road"),
    ],
)
def test_normalize_name_equivalent_forms(a: str, b: str) -> None:
    assert normalize_name(a) == normalize_name(b)


def test_normalize_name_saint_vs_street_by_position() -> None:
    assert normalize_name("St Andrew's St") == "saint andrews street"


def test_landmark_kind_sources() -> None:
    assert landmark_kind("X", tags={"highway": "residential"}) == "road"
    assert landmark_kind("X", tags={"amenity": "parking"}) == "parking"
    assert landmark_kind("X", object_name="Building") == "building"
    assert landmark_kind("Romsey Car Park") == "parking"
    assert landmark_kind("Nothing") == "other"
