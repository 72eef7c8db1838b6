"""Noun phrases, their roles, the target's phrase and what is said of it."""

from __future__ import annotations

import pytest

from urbex.language.phrases import assign_roles, phrases_of, said_of_target, target_phrase
from urbex.language.tokens import tokenize


def _read(text: str):
    toks = tokenize(text, ("Mill Lane",), 0.9)
    ps = phrases_of(toks)
    assign_roles(toks, ps)
    return toks, ps


def _roles(text: str) -> list[tuple[str, str]]:
    toks, ps = _read(text)
    return [(" ".join(t.norm for t in toks[p.a : p.b]), p.role) for p in ps]


@pytest.mark.parametrize(
    ("text", "roles"),
    [
        ("a house with a red car in front of it",
         [("a house", "main"), ("a red car", "context")]),
        ("the largest of the buildings on Mill Lane",
         [("the largest", "main"), ("the building", "partitive"), ("<m0>", "context")]),
        ("next to the church there is a small green",
         [("the church", "context"), ("a small green", "predicate")]),
        ("I mean the white van", [("the white van", "predicate")]),
        ("between the school and the field",
         [("the school", "context"), ("the field", "context")]),
    ],
)  # fmt: skip
def test_phrase_roles(text, roles):
    assert _roles(text) == roles


@pytest.mark.parametrize(
    ("text", "target", "said"),
    [
        ("a house with a red car in front of it", "a house", ["a house"]),
        ("Next to the church, this is the grey car.", "the grey car", ["the grey car"]),
        ("The car next to the house is white", "the car", ["the car", "white"]),
        ("a shed whose roof is dark blue", "a shed", ["a shed", "roof", "dark blue"]),
        ("the tallest one of the three houses", "the three house",
         ["the three house", "the tallest one"]),
    ],
)  # fmt: skip
def test_target_phrase_and_what_is_said_of_it(text, target, said):
    toks, ps = _read(text)
    t = target_phrase(ps)
    assert t is not None and " ".join(x.norm for x in toks[t.a : t.b]) == target
    got = [" ".join(x.norm for x in toks[p.a : p.b]) for p in said_of_target(toks, ps, t)]
    assert got == said
