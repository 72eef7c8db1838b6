"""Human-like noise: articles, typos, and misspelled place names the real lookup still finds."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from urbex.landmarks import LandmarkIndex
from urbex.synth.noise import NOISE_KINDS, add_noise, misspell


def test_add_noise_leaves_names_alone_and_makes_one_small_typo():
    rng = np.random.default_rng(3)
    text = "the largest parking area next to The Soho Tower and along Mill Lane"
    names = ("The Soho Tower", "Mill Lane")
    for _ in range(50):
        out, applied = add_noise(text, ["no_articles", "typo"], names=names, rng=rng)
        assert applied == ("no_articles", "typo")
        assert all(n in out for n in names), out
        got = out.split()
        want = "largest parking area next to The Soho Tower and along Mill Lane".split()
        diff = [(a, b) for a, b in zip(got, want, strict=True) if a != b]
        assert len(diff) == 1 and abs(len(diff[0][0]) - len(diff[0][1])) <= 1, out
        assert diff[0][0][0] == diff[0][1][0] and diff[0][0][-1] == diff[0][1][-1]


def test_drop_articles_capitalises_each_sentence():
    out, _ = add_noise(
        "It is on Mill Lane. The car is red.", ["no_articles"], rng=np.random.default_rng(0)
    )
    assert out == "It is on Mill Lane. Car is red."


def test_misspell_changes_one_letter_of_a_distinctive_word():
    rng = np.random.default_rng(0)
    for _ in range(100):
        out = misspell("Walsall Road", rng)
        assert out is not None and out.endswith(" Road") and out != "Walsall Road"
        assert abs(len(out) - len("Walsall Road")) <= 1 and out[0] == "W"
    assert misspell("Mill Road", rng) is None  # "Mill" is short, "Road" names a kind of place


@pytest.fixture(scope="module")
def index():
    names = ["Walsall Road", "Cliveden Library", "Trumpington Park", "Mill Lane", "Soho Car Park"]
    return LandmarkIndex(
        pl.DataFrame({"scene_id": ["s"] * 5, "name": names, "x": [0.0] * 5, "y": [0.0] * 5})
    )


def test_misspelled_names_still_resolve_with_the_real_lookup(index):
    """With the project's own fuzzy lookup as the check, every misspelling that passes is
    found in the description and resolves as a landmark query."""

    def findable(text, name, written):
        return (
            name in index.mentions(text, "s")
            and index.lookup(written, scene_id="s").best.name == name
        )

    rng = np.random.default_rng(5)
    text = "the car park next to Cliveden Library at the end of Walsall Road"
    names = ("Cliveden Library", "Walsall Road")
    done = 0
    for _ in range(60):
        out, applied = add_noise(text, ["misspelled_name"], names=names, rng=rng, findable=findable)
        if not applied:
            continue
        done += 1
        assert out != text and index.mentions(out, "s") == ["Cliveden Library", "Walsall Road"]
        wrong = next(w for w in out.split() if w not in text.split())
        assert any(
            index.lookup(w, scene_id="s").found
            for w in (wrong, f"{wrong} Road", f"{wrong} Library")
        )
    assert done >= 50


def test_misspelled_name_needs_a_check():
    rng = np.random.default_rng(0)
    assert add_noise(
        "the car on Walsall Road", ["misspelled_name"], names=["Walsall Road"], rng=rng
    ) == (
        "the car on Walsall Road",
        (),
    )
    assert NOISE_KINDS == ("no_articles", "typo", "misspelled_name")
    with pytest.raises(ValueError, match="kinds"):
        add_noise("x y z", ["shout"], rng=rng)
