"""A small colour-name model for mean point colours (sRGB → CIELAB, soft nearest palette).

Used by the rankers to score "the red car" against an instance's mean RGB, and by the agent's
marks to name a proposal's colour (:func:`colour_name`). The palette holds one generic
(CSS-like) anchor per basic colour name of the parse
(:data:`urbex.language.vocabulary.COLOUR_NAMES`: shades are folded there), not values fitted to
any data set.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "COLOUR_T",
    "PALETTE",
    "SHADES",
    "colour_log_likelihood",
    "colour_name",
    "exposure_gain",
    "srgb_to_lab",
]

#: Temperature (ΔE76 units) of the colour model.
COLOUR_T = 12.0

#: Colour names → reference sRGB (0–255). Generic (CSS-like) anchors, not fitted to any data.
PALETTE: dict[str, tuple[int, int, int]] = {
    "red": (190, 35, 35),
    "orange": (235, 130, 30),
    "yellow": (230, 205, 40),
    "green": (50, 140, 60),
    "blue": (35, 70, 190),
    "brown": (125, 80, 45),
    "white": (238, 238, 238),
    "silver": (180, 180, 185),
    "grey": (120, 120, 120),
    "black": (25, 25, 28),
    "purple": (120, 50, 150),
    "pink": (235, 150, 180),
    "beige": (220, 205, 165),
    "tan": (200, 160, 110),
}


def srgb_to_lab(rgb: ArrayLike) -> NDArray[np.float64]:
    """sRGB 0–255 → CIELAB (D65 white), any leading shape.

    >>> srgb_to_lab([255, 255, 255]).round(1).tolist()
    [100.0, 0.0, 0.0]
    >>> srgb_to_lab([[0, 0, 0], [255, 0, 0]]).round(0).tolist()
    [[0.0, 0.0, 0.0], [53.0, 80.0, 67.0]]
    """
    c = np.asarray(rgb, dtype=np.float64) / 255.0
    lin = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    m = np.array(
        [[0.4124564, 0.3575761, 0.1804375],
         [0.2126729, 0.7151522, 0.0721750],
         [0.0193339, 0.1191920, 0.9503041]]
    )  # fmt: skip
    xyz = lin @ m.T / np.array([0.95047, 1.0, 1.08883])
    d = 6.0 / 29.0
    f = np.where(xyz > d**3, np.cbrt(xyz), xyz / (3 * d * d) + 4.0 / 29.0)
    lab = np.stack(
        [116 * f[..., 1] - 16, 500 * (f[..., 0] - f[..., 1]), 200 * (f[..., 1] - f[..., 2])], -1
    )
    return np.asarray(lab + 0.0, dtype=np.float64)  # + 0.0: no negative zeros


def exposure_gain(rgb: ArrayLike, *, white: float = 235.0, max_gain: float = 1.4) -> float:
    """Scene exposure correction: the gain that maps the 95th percentile of the candidates'
    brightest channel to ``white`` (clipped to ``[1, max_gain]``; 1 without colours).

    Photogrammetric and lidar colours are darker than nominal paint colours (shading, exposure);
    without it a white car reads as silver. One gain per scene, so colours keep their order.

    >>> exposure_gain([[200, 200, 200], [30, 30, 30]]) > 1.1
    True
    >>> exposure_gain([[np.nan] * 3])
    1.0
    """
    c = np.asarray(rgb, dtype=np.float64).reshape(-1, 3)
    top = c.max(axis=1)
    top = top[np.isfinite(top)]
    if top.size == 0:
        return 1.0
    p = float(np.percentile(top, 95))
    return float(np.clip(white / max(p, 1.0), 1.0, max_gain))


#: Other shades each colour name covers (the parse folds "navy", "turquoise", "maroon", "light
#: grey" ... onto the basic names): generic CSS-like anchors, not fitted to any data. A colour's
#: distance to a name is its distance to the nearest of the name's shades.
SHADES: dict[str, tuple[tuple[int, int, int], ...]] = {
    "red": ((139, 0, 0), (128, 0, 0), (220, 20, 60)),
    "orange": ((255, 140, 0), (204, 85, 0)),
    "yellow": ((255, 215, 0), (240, 230, 140)),
    "green": ((0, 100, 0), (144, 238, 144), (50, 205, 50)),
    "blue": ((0, 0, 128), (0, 0, 139), (173, 216, 230), (135, 206, 235), (64, 224, 208),
             (0, 128, 128)),
    "brown": ((92, 64, 51), (160, 82, 45), (181, 101, 29)),
    "white": ((250, 250, 240),),
    "silver": ((192, 192, 192),),
    "grey": ((64, 64, 64), (90, 90, 95), (169, 169, 169), (211, 211, 211)),
    "black": ((10, 10, 10),),
    "purple": ((75, 0, 130), (238, 130, 238), (128, 0, 128)),
    "pink": ((255, 105, 180), (255, 182, 193)),
    "beige": ((245, 245, 220), (255, 253, 208)),
    "tan": ((210, 180, 140),),
}  # fmt: skip

_PAL_NAMES = tuple(PALETTE)
_ANCHORS = [(n, PALETTE[n]) for n in _PAL_NAMES] + [
    (n, c) for n in _PAL_NAMES for c in SHADES.get(n, ())
]
_ANCHOR_OF = np.array([_PAL_NAMES.index(n) for n, _ in _ANCHORS])
_PAL_LAB = srgb_to_lab(np.array([c for _, c in _ANCHORS], dtype=np.float64))


def colour_log_likelihood(word: str, rgb: ArrayLike, *, t: float = COLOUR_T) -> NDArray[np.float64]:
    """``log p(word | rgb)`` under a soft nearest-palette model in CIELAB: ``p ∝ exp(−ΔE76/t)``,
    ΔE76 to the nearest of the name's shades (:data:`PALETTE`, :data:`SHADES`).

    Parameters
    ----------
    word : str
        A :data:`PALETTE` name (a basic colour of :func:`urbex.language.parse`).
    rgb : array_like, shape (K, 3)
        Mean colours 0–255; a NaN row gets the uninformative ``log(1/len(PALETTE))``.

    Returns
    -------
    ndarray, shape (K,), float64 (≤ 0)

    Examples
    --------
    >>> ll = colour_log_likelihood("red", [[200, 30, 30], [30, 60, 200], [240, 240, 240]])
    >>> int(np.argmax(ll)), bool(ll[0] > -0.5)
    (0, True)
    >>> turquoise, maroon = [64, 224, 208], [120, 10, 20]
    >>> ll = colour_log_likelihood("blue", [turquoise, maroon])
    >>> bool(ll[0] > colour_log_likelihood("green", [turquoise])[0]), bool(ll[1] < -3)
    (True, True)
    """
    w = word
    if w not in PALETTE:
        raise ValueError(f"colour: expected one of {sorted(PALETTE)}, got {word!r}")
    c = np.asarray(rgb, dtype=np.float64).reshape(-1, 3)
    de_all = np.linalg.norm(srgb_to_lab(np.nan_to_num(c))[:, None, :] - _PAL_LAB[None], axis=-1)
    de = np.stack([de_all[:, _ANCHOR_OF == i].min(axis=1) for i in range(len(_PAL_NAMES))], 1)
    logits = -de / t
    lse = np.log(np.exp(logits - logits.max(1, keepdims=True)).sum(1)) + logits.max(1)
    out = logits[:, _PAL_NAMES.index(w)] - lse
    return np.where(np.isnan(c).any(1), -np.log(len(PALETTE)), out)


def colour_name(rgb: ArrayLike, *, gain: float = 1.0) -> list[str]:
    """The :data:`PALETTE` name nearest each mean colour (ΔE76 in CIELAB), after the scene's
    exposure ``gain`` (:func:`exposure_gain`); ``""`` for a NaN colour.

    >>> colour_name([[200, 30, 30], [np.nan, np.nan, np.nan], [236, 236, 236]])
    ['red', '', 'white']
    """
    c = np.asarray(rgb, dtype=np.float64).reshape(-1, 3)
    lab = srgb_to_lab(np.clip(np.nan_to_num(c) * gain, 0, 255))
    de = np.linalg.norm(lab[:, None, :] - _PAL_LAB[None], axis=-1)
    names = [_PAL_NAMES[int(_ANCHOR_OF[k])] for k in de.argmin(1)]  # a shade names its colour
    bad = np.asarray(np.isnan(c).any(axis=1), dtype=bool).tolist()
    return ["" if b else n for n, b in zip(names, bad, strict=True)]
