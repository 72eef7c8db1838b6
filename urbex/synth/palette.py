"""Colours of the synthetic city: names, draw weights, RGB palettes and shades.

Every coloured object (car body, building roof, building walls) has a *basic* colour — one
of :data:`CAR_COLOURS`, :data:`ROOF_COLOURS` or the style's :data:`WALL_COLOURS` — and a
*shade* of it (:data:`SHADES`): ``""`` is the plain palette colour, the others (``"dark
blue"``, ``"turquoise"``, ``"maroon"``, ``"light grey"``, ...) have their own RGB
(:func:`shaded_rgb`), so a description that says "the turquoise car" is true of the points.
Shades are drawn from their own random stream (:func:`draw_shades`), after the plan, so the
geometry, names and basic colours of a seed do not depend on them.

Frames: none — colours only. RGB values are 0–255 ``int16`` (before per-point noise).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "CAR_COLOURS",
    "CAR_COLOUR_P",
    "PALETTES",
    "ROOF_COLOURS",
    "ROOF_COLOUR_P",
    "SHADES",
    "WALL_COLOURS",
    "draw_shades",
    "shade_word",
    "shaded_rgb",
]

#: Car colour names (index = colour code in ``CityPlan.car_colour``) and draw weights.
CAR_COLOURS: tuple[str, ...] = ("red", "blue", "white", "black", "silver", "yellow", "green")
CAR_COLOUR_P = np.array([0.14, 0.14, 0.24, 0.2, 0.2, 0.04, 0.04])
#: Roof colour names (index = colour code in ``CityPlan.roof_colour``) and draw weights.
ROOF_COLOURS: tuple[str, ...] = ("red", "grey", "brown", "white", "black", "green")
ROOF_COLOUR_P: Mapping[str, NDArray[np.float64]] = {
    "sensaturban": np.array([0.3, 0.3, 0.15, 0.1, 0.1, 0.05]),
    "stpls3d": np.array([0.2, 0.3, 0.1, 0.3, 0.05, 0.05]),
}
#: Wall (facade) colour names per style (index = code in ``CityPlan.wall_colour``), named
#: from the facade palette below: brick ``brown``, ``beige``, off-``white``, ``grey``, ``tan``.
WALL_COLOURS: Mapping[str, tuple[str, ...]] = {
    "sensaturban": ("brown", "beige", "white", "grey"),
    "stpls3d": ("tan", "beige", "brown", "grey"),
}
#: Shades of each basic colour (index = shade code; 0, ``""``, is the plain palette colour).
SHADES: Mapping[str, tuple[str, ...]] = {
    "red": ("", "dark red", "maroon"),
    "blue": ("", "dark blue", "light blue", "turquoise"),
    "green": ("", "dark green", "light green"),
    "grey": ("", "dark grey", "light grey"),
    "brown": ("", "dark brown", "light brown"),
}
#: RGB of the shades that are colours of their own (others darken or lighten the palette's).
_OWN_RGB = {"maroon": (112, 28, 40), "turquoise": (52, 170, 176)}
_PLAIN_P = 0.6  # chance of the plain shade when a colour has others

PALETTES: dict[str, dict[str, NDArray[np.int16]]] = {
    "sensaturban": {
        "ground": np.array(
            [
                [118, 112, 88],
                [86, 124, 62],
                [76, 76, 80],
                [222, 222, 212],
                [168, 162, 150],
                [104, 104, 108],
                [228, 228, 222],
                [56, 80, 94],
                [0, 0, 0],
            ],
            np.int16,
        ),
        "roof": np.array(
            [
                [158, 72, 56],
                [122, 122, 128],
                [116, 86, 62],
                [218, 216, 210],
                [58, 58, 64],
                [92, 124, 98],
            ],
            np.int16,
        ),
        "facade": np.array(
            [[150, 92, 70], [190, 180, 160], [214, 208, 198], [140, 140, 142]], np.int16
        ),
        "window": np.array([62, 72, 86], np.int16),
        "tree": np.array([52, 86, 40], np.int16),
        "car": np.array(
            [
                [172, 32, 30],
                [40, 70, 162],
                [232, 232, 232],
                [26, 26, 30],
                [180, 182, 188],
                [222, 190, 40],
                [40, 120, 60],
            ],
            np.int16,
        ),
        "glass": np.array([40, 46, 56], np.int16),
        "furn": np.array([92, 92, 96], np.int16),
        "fwall": np.array([150, 118, 98], np.int16),
    },
    "stpls3d": {
        "ground": np.array(
            [
                [150, 138, 110],
                [112, 150, 72],
                [96, 93, 90],
                [236, 232, 200],
                [190, 184, 170],
                [110, 108, 104],
                [236, 236, 228],
                [70, 96, 110],
                [0, 0, 0],
            ],
            np.int16,
        ),
        "roof": np.array(
            [
                [176, 98, 72],
                [150, 150, 150],
                [140, 112, 86],
                [232, 228, 216],
                [70, 70, 72],
                [110, 140, 110],
            ],
            np.int16,
        ),
        "facade": np.array(
            [[204, 176, 140], [228, 218, 196], [176, 120, 90], [200, 200, 196]], np.int16
        ),
        "window": np.array([70, 86, 100], np.int16),
        "tree": np.array([70, 100, 48], np.int16),
        "car": np.array(
            [
                [186, 40, 36],
                [50, 86, 176],
                [240, 240, 240],
                [30, 30, 34],
                [190, 192, 196],
                [230, 200, 50],
                [50, 130, 70],
            ],
            np.int16,
        ),
        "glass": np.array([50, 56, 66], np.int16),
        "furn": np.array([110, 110, 112], np.int16),
        "fwall": np.array([200, 196, 190], np.int16),
    },
}
for _pal in PALETTES.values():
    assert len(_pal["car"]) == len(CAR_COLOURS) and len(_pal["roof"]) == len(ROOF_COLOURS)
for _style, _names in WALL_COLOURS.items():
    assert len(PALETTES[_style]["facade"]) == len(_names)


def shade_word(colour: str, shade: int) -> str:
    """The shade's word (``""`` for the plain colour).

    >>> shade_word("blue", 3), shade_word("blue", 0), shade_word("white", 0)
    ('turquoise', '', '')
    """
    return SHADES.get(colour, ("",))[int(shade)]


def draw_shades(
    rng: np.random.Generator, codes: NDArray[np.integer], names: Sequence[str]
) -> NDArray[np.int8]:
    """A shade code per object: 0 (plain) with chance 0.6, else one of its colour's others.

    Parameters
    ----------
    rng
        A stream of its own (the plan's is left alone).
    codes : ndarray, shape (N,), int
        Basic colour code per object, an index into ``names``.
    names
        The colour names of the codes (:data:`CAR_COLOURS`, ...).

    Returns
    -------
    ndarray, shape (N,), int8
        Index into :data:`SHADES` ``[names[code]]`` (0 for colours without shades).
    """
    codes = np.asarray(codes)
    n_shades = np.array([len(SHADES.get(names[int(c)], ("",))) for c in codes], np.int64)
    u = rng.random(len(codes))
    pick = rng.random(len(codes))
    other = 1 + np.floor(pick * np.maximum(n_shades - 1, 1)).astype(np.int64)
    return np.where((n_shades > 1) & (u >= _PLAIN_P), other, 0).astype(np.int8)


def shaded_rgb(
    palette: NDArray[np.int16],
    codes: NDArray[np.integer],
    shades: NDArray[np.integer],
    names: Sequence[str],
) -> NDArray[np.int16]:
    """RGB per object: the palette colour of its code, in its shade.

    ``dark X`` is the palette colour × 0.62, ``light X`` blends it 45 % towards white, and
    ``maroon`` / ``turquoise`` have their own RGB.

    Parameters
    ----------
    palette : ndarray, shape (K, 3), int16
        RGB per colour code.
    codes, shades : ndarray, shape (N,), int
        Colour and shade code per object.
    names
        Colour name per code.

    Returns
    -------
    ndarray, shape (N, 3), int16

    Examples
    --------
    >>> pal = PALETTES["sensaturban"]["car"]
    >>> shaded_rgb(pal, np.array([1, 1, 1]), np.array([0, 1, 3]), CAR_COLOURS).tolist()
    [[40, 70, 162], [25, 43, 100], [52, 170, 176]]
    """
    codes = np.asarray(codes, np.int64)
    out = palette[codes].astype(np.int16)
    for k, (c, s) in enumerate(zip(codes.tolist(), np.asarray(shades).tolist())):
        word = shade_word(names[c], s)
        if not word:
            continue
        if word in _OWN_RGB:
            out[k] = _OWN_RGB[word]
        elif word.startswith("dark "):
            out[k] = np.round(out[k] * 0.62)
        else:  # light
            out[k] = np.round(out[k] + (255 - out[k]) * 0.45)
    return out
