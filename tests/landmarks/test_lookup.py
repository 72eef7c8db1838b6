"""Tests of urbex.landmarks.lookup: LandmarkIndex lookup and mentions."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from urbex.landmarks import LandmarkIndex

NAMES = [
    "Merton Hall",
    "St Mary's Church",
    "King's Parade",
    "Perry Barr Greyhound Stadium",
    "Merton College",
    "Jesus Green",
    "Trinity Street",
]


@pytest.fixture(scope="module")
def index() -> LandmarkIndex:
    n = len(NAMES)
    t = pl.DataFrame(
        {"scene_id": ["s"] * n, "name": NAMES, "x": np.arange(n, dtype=float), "y": np.zeros(n)}
    )
    other = pl.DataFrame({"scene_id": ["t"], "name": ["Merton Hall"], "x": [99.0], "y": [99.0]})
    return LandmarkIndex(pl.concat([t, other]))


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("Mertn Hall", "Merton Hall"),
        ("merton hall", "Merton Hall"),
        ("St. Mary's", "St Mary's Church"),
        ("Saint Marys Church", "St Mary's Church"),
        ("Kings Pde", "King's Parade"),
        ("King's Parade", "King's Parade"),
        ("greyhound stadium", "Perry Barr Greyhound Stadium"),
        ("Perry Bar Stadium", "Perry Barr Greyhound Stadium"),
        ("Trinity St", "Trinity Street"),
    ],
)
def test_lookup_finds_misspelled_and_variant_names(
    index: LandmarkIndex, query: str, expected: str
) -> None:
    r = index.lookup(query, scene_id="s")
    assert r.found, (query, r)
    assert r.best is not None and r.best.name == expected
    assert r.best.scene_id == "s"


def test_lookup_exact_then_normalized_methods(index: LandmarkIndex) -> None:
    assert index.lookup("Merton Hall", scene_id="s").best.method == "exact"
    assert index.lookup("merton hall", scene_id="s").best.method == "normalized"
    assert index.lookup("Mertn Hall", scene_id="s").best.method == "fuzzy"


@pytest.mark.parametrize("query", ["Big Ben", "Hall", "church", "Green"])
def test_lookup_not_found_returns_closest_names(index: LandmarkIndex, query: str) -> None:
    r = index.lookup(query, scene_id="s", limit=3)
    assert not r.found and r.best is None
    assert r.status == "below_threshold"
    assert 1 <= len(r.closest_names) <= 3
    assert set(r.closest_names) <= set(NAMES)


def test_lookup_ambiguous_is_not_found(index: LandmarkIndex) -> None:
    r = index.lookup("Merton", scene_id="s")
    assert not r.found and r.status == "ambiguous"
    assert {"Merton Hall", "Merton College"} <= set(r.closest_names)


def test_lookup_scene_filter_and_empty_scene(index: LandmarkIndex) -> None:
    assert index.lookup("Merton Hall", scene_id="t").best.x == 99.0
    r = index.lookup("Merton Hall", scene_id="nowhere")
    assert not r.found and r.status == "no_landmarks" and r.candidates == ()


def test_lookup_candidates_ranked_and_limited(index: LandmarkIndex) -> None:
    r = index.lookup("Mertn Hall", scene_id="s", limit=3)
    assert len(r.candidates) == 3
    scores = [c.score for c in r.candidates]
    assert scores == sorted(scores, reverse=True)
    assert all(0.0 <= s <= 1.0 for s in scores)


def test_mentions_finds_names_in_order(index: LandmarkIndex) -> None:
    got = index.mentions(
        "The red car on kings pde, just west of saint marys church and near Mertn Hall.", "s"
    )
    assert got == ["King's Parade", "St Mary's Church", "Merton Hall"]


def test_mentions_none_in_plain_text(index: LandmarkIndex) -> None:
    assert index.mentions("the big grey building next to the car park", "s") == []


@pytest.mark.parametrize(
    ("names", "query"),
    [
        (["Merton Hall"], "Merton Hall Road"),
        (["Merton Hall"], "Merton Hall Car Park"),
        (["Kings Parade"], "Kings Parade Car Park"),
        (["Mill Road"], "Mill Road Cemetery"),
        (["Mill Road"], "Mill Road Library"),
    ],
)
def test_lookup_superset_naming_another_place_is_not_found(names: list[str], query: str) -> None:
    # The query is the landmark's name plus a word naming a different kind of place: a
    # different landmark that the table lacks, not the one it has.
    t = pl.DataFrame(
        {
            "scene_id": ["s"] * len(names),
            "name": names,
            "x": [0.0] * len(names),
            "y": [0.0] * len(names),
        }
    )
    r = LandmarkIndex(t).lookup(query)
    assert not r.found and r.best is None
    assert r.closest_names[0] == names[0]


@pytest.mark.parametrize(
    ("name", "query"),
    [
        ("Merton Hall", "merton hall building"),
        ("Jesus Green", "Jesus Green Park"),
        ("Merton Hall", "Merton"),
    ],
)
def test_lookup_superset_with_same_kind_word_still_found(name: str, query: str) -> None:
    t = pl.DataFrame({"scene_id": ["s"], "name": [name], "x": [0.0], "y": [0.0]})
    r = LandmarkIndex(t).lookup(query)
    assert r.found and r.best is not None and r.best.name == name


@pytest.mark.parametrize("query", ["", "   ", "\t\n", "x" * 5000])
def test_lookup_empty_or_garbage_query_not_found(index: LandmarkIndex, query: str) -> None:
    r = index.lookup(query)
    assert not r.found and r.best is None
