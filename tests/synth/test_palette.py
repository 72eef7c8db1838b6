"""Colours of the synthetic city: shades are drawn apart from the plan and painted as named."""

from __future__ import annotations

import numpy as np

from urbex.synth.block import generate_block
from urbex.synth.palette import (
    CAR_COLOURS,
    PALETTES,
    SHADES,
    draw_shades,
    shade_word,
    shaded_rgb,
)


def test_draw_shades_is_seeded_and_mostly_plain():
    codes = np.arange(5000) % len(CAR_COLOURS)
    a = draw_shades(np.random.default_rng(1), codes, CAR_COLOURS)
    b = draw_shades(np.random.default_rng(1), codes, CAR_COLOURS)
    np.testing.assert_array_equal(a, b)
    shaded = np.array([len(SHADES.get(CAR_COLOURS[c], ("",))) > 1 for c in codes])
    assert (a[~shaded] == 0).all()  # white, black, silver, yellow have no shades
    share = (a[shaded] > 0).mean()
    assert 0.35 < share < 0.45
    for c, s in zip(codes.tolist(), a.tolist()):
        assert 0 <= s < len(SHADES.get(CAR_COLOURS[c], ("",)))


def test_shaded_rgb_dark_is_darker_light_is_lighter():
    pal = PALETTES["sensaturban"]["car"]
    red = CAR_COLOURS.index("red")
    plain, dark, maroon = shaded_rgb(pal, np.array([red] * 3), np.array([0, 1, 2]), CAR_COLOURS)
    assert (dark < plain).all() and tuple(maroon) == (112, 28, 40)
    assert shade_word("red", 1) == "dark red" and shade_word("red", 0) == ""


def test_a_shaded_car_is_painted_its_shade():
    """The word is true of the points: a turquoise car's body points are turquoise, not the
    palette's blue."""
    b = generate_block(0, size=160.0, density=4.0)
    o = b.objects
    turquoise = [i for i, s in zip(o.instance_id, o.shade) if s == "turquoise"]
    blue = [i for i, n, c, s in zip(o.instance_id, o.object_name, o.colour, o.shade)
            if n == "Car" and c == "blue" and s == ""]  # fmt: skip
    assert turquoise and blue
    inst, rgb = b.cloud.instance, b.cloud.rgb.astype(float)

    def body(i: int) -> np.ndarray:
        pts = rgb[inst == i]
        return np.median(pts[pts.sum(1) > 200], axis=0)  # glass is dark

    for i in turquoise:
        assert np.abs(body(i) - [52, 170, 176]).max() < 20, body(i)
    for i in blue:
        assert np.abs(body(i) - PALETTES["sensaturban"]["car"][1]).max() < 20, body(i)
