"""The one finder of landmark names in a text."""

from __future__ import annotations

from urbex.landmarks.mentions import mention_spans
from urbex.landmarks.names import normalize_name


def _spans(text: str, names: list[str]) -> list[tuple[str, str]]:
    words = normalize_name(text).split()
    norm = [normalize_name(n) for n in names]
    return [(" ".join(words[s.start : s.end]), names[s.which]) for s in mention_spans(words, norm)]


def test_mention_spans_misspellings_and_abbreviations():
    names = ["Walsall Road", "Cliveden Court", "St Mary's Church"]
    got = _spans("the car on Walsell Rd near clivden court, west of st. marys church", names)
    assert got == [("walsell road", "Walsall Road"), ("clivden court", "Cliveden Court"),
                   ("saint marys church", "St Mary's Church")]  # fmt: skip


def test_mention_spans_every_occurrence_longest_name_wins():
    names = ["Mill Lane", "Mill Lane Car Park"]
    got = _spans("in Mill Lane Car Park, across Mill Lane from it", names)
    assert got == [("mill lane car park", "Mill Lane Car Park"), ("mill lane", "Mill Lane")]
    assert _spans("Green Park ... and Green Park again", ["Green Park"]) == [
        ("green park", "Green Park"), ("green park", "Green Park")]  # fmt: skip


def test_mention_spans_generic_words_alone_do_not_match():
    assert _spans("the big grey building next to the car park", ["Merton Hall"]) == []
    assert _spans("the hall", ["Merton Hall"]) == []
