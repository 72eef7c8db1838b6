"""The colour-name model: sRGB → CIELAB, the exposure gain, and log p(word | rgb)."""

from __future__ import annotations

import numpy as np
import pytest

from urbex.colour import PALETTE, colour_log_likelihood, exposure_gain, srgb_to_lab
from urbex.language.vocabulary import COLOUR_NAMES


def test_srgb_to_lab_reference_values_and_leading_shape():
    lab = srgb_to_lab(np.array([[[0, 0, 0], [255, 255, 255]], [[128, 128, 128], [0, 0, 255]]]))
    assert lab.shape == (2, 2, 3) and lab.dtype == np.float64
    np.testing.assert_allclose(lab[0, 0], [0, 0, 0], atol=1e-9)
    np.testing.assert_allclose(lab[0, 1], [100, 0, 0], atol=1e-3)
    np.testing.assert_allclose(lab[1, 0], [53.585, 0, 0], atol=1e-2)  # mid grey: neutral
    np.testing.assert_allclose(lab[1, 1], [32.30, 79.19, -107.86], atol=0.05)  # sRGB blue


@pytest.mark.parametrize(
    ("rgb", "gain"),
    [
        ([[235, 0, 0]], 1.0),  # already at white
        ([[250, 250, 250]], 1.0),  # brighter than white: never darkened
        ([[188, 10, 10]], 1.25),  # 235 / 188
        ([[20, 20, 20]], 1.4),  # clipped at max_gain
        (np.zeros((0, 3)), 1.0),
    ],
)
def test_exposure_gain_maps_the_bright_percentile_to_white(rgb, gain):
    assert exposure_gain(rgb) == pytest.approx(gain)


def test_exposure_gain_ignores_nan_rows():
    assert exposure_gain([[188, 0, 0], [np.nan, np.nan, np.nan]]) == pytest.approx(1.25)


@pytest.mark.parametrize("word", sorted(PALETTE))
def test_every_palette_colour_is_most_likely_its_own_word(word):
    rgb = np.array(list(PALETTE.values()), dtype=np.float64)
    ll = colour_log_likelihood(word, rgb)
    assert ll.shape == (len(PALETTE),) and np.all(ll <= 0)
    assert list(PALETTE)[int(np.argmax(ll))] == word


def test_colour_likelihoods_over_the_palette_sum_to_one():
    rgb = np.random.default_rng(0).integers(0, 256, (5, 3))
    p = np.exp(np.stack([colour_log_likelihood(w, rgb) for w in PALETTE]))
    np.testing.assert_allclose(p.sum(0), 1.0, rtol=1e-9)


def test_colour_palette_is_the_parse_colours_and_nan_row_is_uniform():
    assert set(PALETTE) == set(COLOUR_NAMES)  # shades and aliases are folded by the parse
    rgb = [[120, 120, 120], [np.nan, 0, 0]]
    assert colour_log_likelihood("red", rgb)[1] == pytest.approx(-np.log(len(PALETTE)))
    with pytest.raises(ValueError, match="expected one of"):
        colour_log_likelihood("gray", rgb)


def test_colour_unknown_word_raises():
    with pytest.raises(ValueError, match=r"colour: expected one of .* got 'mauve'"):
        colour_log_likelihood("mauve", [[0, 0, 0]])
