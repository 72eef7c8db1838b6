"""Where a text mentions place names: fuzzy n-gram matching over normalised words.

:func:`mention_spans` is the one finder of landmark names in a description: the landmark index
(:meth:`urbex.landmarks.LandmarkIndex.mentions`) and the parse of a description
(:func:`urbex.language.parse`) both call it. It works on normalised words
(:func:`urbex.landmarks.names.words_of` / :func:`~urbex.landmarks.names.normalize_name`), so
case, accents, punctuation and abbreviations do not matter, and it tolerates misspellings
("Walsell Road" for "Walsall Road") through rapidfuzz's ratio.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from urbex.landmarks.names import distinctive_tokens

__all__ = ["Span", "mention_spans"]


class Span(NamedTuple):
    """A mention: ``words[start:end]`` names ``names[which]``, with a 0–1 score."""

    start: int
    end: int
    which: int
    score: float


def mention_spans(
    words: Sequence[str], names: Sequence[str], *, threshold: float = 0.9
) -> list[Span]:
    """Every mention of ``names`` in ``words``, in order of position, none overlapping.

    Every n-gram of ``words`` whose length is within one word of a name's is compared with it
    (rapidfuzz ratio, 0–1); a score of at least ``threshold`` is a mention. A name is only
    compared where one of its distinctive words (not a generic word such as "road", see
    :func:`~urbex.landmarks.names.distinctive_tokens`) is, fuzzily, among the words. Where
    mentions overlap, the best-scoring (then the longest, then the earliest) wins; a name
    mentioned twice gives two spans.

    Parameters
    ----------
    words
        Normalised words of the text (:func:`~urbex.landmarks.names.normalize_name` split).
    names
        Normalised names (an empty one is never found).
    threshold
        Smallest score of a mention (``landmarks.mention_threshold``).

    Examples
    --------
    >>> w = "red car on kings parade west of saint marys church by kings parade".split()
    >>> [(s.start, s.end, s.which) for s in mention_spans(w, ["saint marys church", "kings parade"])]
    [(3, 5, 1), (7, 10, 0), (11, 13, 1)]
    >>> mention_spans("the wallsall road".split(), ["walsall road"])[0].score > 0.9
    True
    >>> mention_spans([], ["x"]), mention_spans(["x"], [""])
    ([], [])
    """
    from rapidfuzz import fuzz, process

    tokens = [n.split() for n in names]
    live = [j for j, t in enumerate(tokens) if t]
    if not words or not live:
        return []
    # Prefilter: a name qualifies if one of its distinctive words is (fuzzily) there.
    vocab = sorted({t for j in live for t in distinctive_tokens(tokens[j])})
    present = process.cdist(vocab, sorted(set(words)), scorer=fuzz.ratio).max(axis=1) >= 80
    have = {t for t, p in zip(vocab, present) if p}
    live = [j for j in live if have.intersection(distinctive_tokens(tokens[j]))]
    if not live:
        return []
    sizes = sorted(
        {n for j in live for n in range(len(tokens[j]) - 1, len(tokens[j]) + 2)
         if 1 <= n <= len(words)}
    )  # fmt: skip
    grams = [(a, n) for n in sizes for a in range(len(words) - n + 1)]
    if not grams:
        return []
    texts = [" ".join(words[a : a + n]) for a, n in grams]
    scores = process.cdist(texts, [" ".join(tokens[j]) for j in live], scorer=fuzz.ratio) / 100.0
    glen = np.array([n for _, n in grams])
    hits: list[tuple[float, int, int, int]] = []  # (score, n, start, name)
    for c, j in enumerate(live):
        col = np.where(np.abs(glen - len(tokens[j])) <= 1, scores[:, c], 0.0)
        for g in np.flatnonzero(col >= threshold).tolist():
            hits.append((float(col[g]), grams[g][1], grams[g][0], j))
    taken = np.zeros(len(words), dtype=bool)
    kept: list[Span] = []
    for s, n, a, j in sorted(hits, key=lambda h: (-h[0], -h[1], h[2], h[3])):
        if taken[a : a + n].any():
            continue
        taken[a : a + n] = True
        kept.append(Span(a, a + n, j, round(s, 4)))
    return sorted(kept)
