"""Human-like noise on a worded description: dropped articles, a typo, a misspelled place name.

:func:`add_noise` roughens a description the way people write. ``no_articles`` and ``typo``
never touch a place name, so the landmark matcher still finds it verbatim;
``misspelled_name`` misspells exactly one place name by one letter — as people write
"Walsell Road" or "Clivden" — and only in a way the caller's ``findable`` check accepts (the
generator asks the project's own fuzzy landmark lookup, :mod:`urbex.landmarks`, to still
resolve it to the same place).

Frames: none — text only.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from urbex.landmarks.names import GENERIC_WORDS, normalize_name
from urbex.synth.wording import VOCABULARY

__all__ = ["NOISE_KINDS", "NOISE_RATES", "Findable", "add_noise", "misspell"]

#: Kinds of noise :func:`add_noise` applies, in this order.
NOISE_KINDS: tuple[str, ...] = ("no_articles", "typo", "misspelled_name")
#: Default chance of each noise kind per description (independent draws).
NOISE_RATES: Mapping[str, float] = {"no_articles": 0.25, "typo": 0.2, "misspelled_name": 0.1}
#: ``findable(text, name, written)``: is ``name``, written ``written`` in ``text``, still found?
Findable = Callable[[str, str, str], bool]

_ARTICLES = frozenset({"the", "a", "an"})
_WORD = re.compile(r"[A-Za-z]+")
_VOWELS = "aeiou"


def _protected(text: str, names: Sequence[str]) -> np.ndarray:
    """Boolean mask over ``text``'s characters: inside one of ``names``."""
    mask = np.zeros(len(text), bool)
    for name in names:
        start = text.find(name)
        while name and start >= 0:
            mask[start : start + len(name)] = True
            start = text.find(name, start + 1)
    return mask


def _drop_articles(text: str, names: Sequence[str]) -> str:
    keep = _protected(text, names)
    cut = [
        (m.start(), m.end())
        for m in _WORD.finditer(text)
        if m.group().lower() in _ARTICLES and not keep[m.start()]
    ]
    capital = text[:1].isupper()
    for a, b in reversed(cut):
        b += 1 if b < len(text) and text[b] == " " else 0
        text = text[:a] + text[b:]
    text = text.strip()
    text = re.sub(r"([.!?] )([a-z])", lambda m: m.group(1) + m.group(2).upper(), text)
    return text[:1].upper() + text[1:] if capital else text


def _edit(w: str, rng: np.random.Generator) -> str:
    """One interior letter of ``w`` swapped with its neighbour, dropped, doubled or (a vowel)
    replaced by another vowel; first and last letters stay."""
    i = 1 + int(rng.integers(len(w) - 2))
    op = int(rng.integers(4))
    if op == 0 and w[i] != w[i + 1] and i + 1 < len(w) - 1:
        return w[:i] + w[i + 1] + w[i] + w[i + 2 :]
    if op == 1:
        return w[:i] + w[i + 1 :]
    if op == 3 and w[i].lower() in _VOWELS:
        other = [v for v in _VOWELS if v != w[i].lower()]
        return w[:i] + other[int(rng.integers(len(other)))] + w[i + 1 :]
    return w[: i + 1] + w[i] + w[i + 1 :]


def _typo(
    text: str, names: Sequence[str], rng: np.random.Generator, vocabulary: frozenset[str]
) -> str | None:
    keep = _protected(text, names)
    words = [m for m in _WORD.finditer(text) if len(m.group()) >= 5 and not keep[m.start()]]
    if not words:
        return None
    for k in rng.permutation(len(words)).tolist():
        w = words[k].group()
        new = _edit(w, rng)
        if new.lower() not in vocabulary and new != w:
            a, b = words[k].span()
            return text[:a] + new + text[b:]
    return None


def misspell(name: str, rng: np.random.Generator) -> str | None:
    """``name`` with one letter of one of its distinctive words (5+ letters, not a word such as
    "Road" or "Park" that names a kind of place) misspelled; ``None`` if it has none.

    >>> misspell("Walsall Road", np.random.default_rng(1)) not in (None, "Walsall Road")
    True
    >>> misspell("Mill Road", np.random.default_rng(1)) is None
    True
    """
    spans = [
        m.span()
        for m in _WORD.finditer(name)
        if len(m.group()) >= 5 and normalize_name(m.group()) not in GENERIC_WORDS
    ]
    if not spans:
        return None
    a, b = spans[int(rng.integers(len(spans)))]
    new = _edit(name[a:b], rng)
    return None if new == name[a:b] else name[:a] + new + name[b:]


def _misspell_one(
    text: str, names: Sequence[str], rng: np.random.Generator, findable: Findable
) -> str | None:
    present = [n for n in names if n in text]
    for k in rng.permutation(len(present)).tolist() if present else []:
        name = present[k]
        for _ in range(4):
            wrong = misspell(name, rng)
            if wrong is None:
                break
            new = text.replace(name, wrong, 1)
            if findable(new, name, wrong):
                return new
    return None


def add_noise(
    text: str,
    kinds: Sequence[str],
    *,
    names: Sequence[str] = (),
    rng: np.random.Generator,
    min_words: int = 3,
    vocabulary: frozenset[str] = VOCABULARY,
    findable: Findable | None = None,
) -> tuple[str, tuple[str, ...]]:
    """Roughen a description as people write: drop its articles, make one typo, misspell one
    place name.

    ``no_articles`` and ``typo`` never touch a place name (``names``, e.g.
    :func:`urbex.synth.phrasing.names_in`); a typo changes one interior letter of one word of
    five or more letters (swap, drop, double, or another vowel) and never yields a word of
    ``vocabulary``. ``misspelled_name`` changes one letter of one name's distinctive word, only
    when ``findable`` accepts the result (without ``findable`` it is never applied).

    Parameters
    ----------
    text
        The worded description.
    kinds
        Subset of :data:`NOISE_KINDS`, applied in :data:`NOISE_KINDS` order.
    names
        Place names in ``text``.
    rng
        Chooses the typo's and the misspelling's word, position and kind.
    min_words
        Articles are kept when dropping them would leave fewer words (the annotation cleaner
        drops descriptions under ``annotations.min_words``, 3 by default).
    vocabulary
        Words a typo must not produce (the templates' own words).
    findable
        ``findable(text, name, written)``: whether the misspelled ``written`` in ``text`` still
        resolves to ``name``.

    Returns
    -------
    text, applied
        The noisy text, and the kinds that changed it (a kind with nothing to change is left
        out: no article to drop, no eligible word or name).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> add_noise("the red car next to The Elm Tower", ["no_articles"], names=["The Elm Tower"],
    ...           rng=rng)
    ('red car next to The Elm Tower', ('no_articles',))
    >>> add_noise("a car", ["typo"], rng=rng)
    ('a car', ())
    >>> add_noise("the red car", ["no_articles"], rng=rng)
    ('the red car', ())
    >>> add_noise("the car on Walsall Road", ["misspelled_name"], names=["Walsall Road"], rng=rng,
    ...           findable=lambda text, name, written: True)[1]
    ('misspelled_name',)
    """
    bad = [k for k in kinds if k not in NOISE_KINDS]
    if bad:
        raise ValueError(f"kinds: expected a subset of {NOISE_KINDS}, got {bad}")
    applied: list[str] = []
    if "no_articles" in kinds:
        new = _drop_articles(text, names)
        if new != text and len(new.split()) >= min_words:
            text, applied = new, [*applied, "no_articles"]
    if "typo" in kinds:
        typo = _typo(text, names, rng, vocabulary)
        if typo is not None:
            text, applied = typo, [*applied, "typo"]
    if "misspelled_name" in kinds and findable is not None:
        wrong = _misspell_one(text, names, rng, findable)
        if wrong is not None:
            text, applied = wrong, [*applied, "misspelled_name"]
    return text, tuple(applied)
