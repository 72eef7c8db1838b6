"""Tokens of a description: mentions as one token, breaks, merged class nouns, spelling."""

from __future__ import annotations

import pytest

from urbex.language.tokens import tokenize


def _toks(text: str, names: tuple[str, ...] = ()) -> list[tuple[str, str, str]]:
    return [(t.norm, t.kind, t.brk) for t in tokenize(text, names, 0.9)]


def test_tokenize_mentions_breaks_and_merged_nouns():
    got = _toks("The car park, next to Walsell Rd. It's big.", ("Walsall Road",))
    assert got == [
        ("the", "det", "."), ("car park", "class", ""), ("next", "prep", ","),
        ("to", "prep", ""), ("<m0>", "m", ""), ("its", "det", "."), ("big", "size", ""),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("word", "norm"),
    [("besidde", "beside"), ("frist", "first"), ("builing", "building"), ("parrking", "parking"),
     ("housing", "housing"), ("horse", "horse"), ("parked", "parked"), ("cars", "car")],
)  # fmt: skip
def test_tokenize_corrects_one_edit_misspellings_of_known_words(word, norm):
    # (a class noun is also made singular: "cars" is the class noun "car")
    assert tokenize(word, (), 0.9)[0].norm == norm


def test_tokenize_kinds_in_context():
    kinds = {
        t.norm: t.kind for t in tokenize("this dark grey car, a light pole and a dark one", (), 0.9)
    }
    assert kinds["this"] == "det" and kinds["grey"] == "colour" and kinds["one"] == "one"
    assert [t.kind for t in tokenize("a dark car", (), 0.9)][1] == "colour"  # dark alone: black
    assert [t.kind for t in tokenize("a lot of cars", (), 0.9)][1] == "w"  # not a parking lot
    assert [t.kind for t in tokenize("an L shaped house", (), 0.9)][1] == "shape"
