"""The trained ranker's features: a (description, candidate) pair as numbers, read from the parse.

:func:`pair_features` turns a description's reading (:func:`urbex.agents.ranking.read_description`:
its parse, context objects and located landmarks) and a scene's candidates into one row per
candidate (world metres):

* **class** — the candidate's class (one-hot over :data:`urbex.classes.TARGET_CLASSES`) and
  whether it is the parse's target class;
* **colour** — CIELAB of the candidate's mean colour, and the best ``log p(colour | rgb)`` of
  the target's colours (:func:`urbex.colour.colour_log_likelihood`), absolute and
  relative to the best candidate;
* **size** — log BEV area and height, their percentiles within the candidate's class (among
  those near the landmarks when there are some), and these percentiles times the target's size
  words (large / small / tall / low);
* **landmarks** — log BEV gap and centre distance to the nearest and the first mentioned one,
  the rank of that gap among same-class candidates, inside a footprint, *is* it (a named
  landmark);
* **relations** — each kind of relation the parse states, as the violation
  :func:`urbex.agents.relation_terms.relation_terms` measures (direction — compass and map frame —,
  next to, near, on a road, in, between, corner, across, end, "called X", context objects, map
  regions), and
  the agreement of the bearing landmark → candidate with the first direction;
* **same-class neighbours** within 15 m (log count), and the **ordinal position**
  (:func:`urbex.agents.relation_terms.ordinal_positions`) among the same-class candidates near the
  landmarks, against the parse's k;
* a **hashed bag of words** of the description (the mentioned names' words left out; unigrams
  and bigrams, :data:`HASH_DIM` buckets) crossed with the candidate's class one-hot (a sentence
  embedding would need a model download; none ships offline in the environment).
"""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from urbex.agents.ranking_records import Anchor, Candidates
from urbex.agents.relation_terms import ordinal_positions, relation_terms
from urbex.classes import TARGET_CLASSES
from urbex.colour import colour_log_likelihood, exposure_gain, srgb_to_lab
from urbex.geometry import gap_2d
from urbex.landmarks.names import normalize_name, words_of
from urbex.language import ContextObject, Parse

__all__ = ["FEATURE_NAMES", "HASH_DIM", "pair_features"]

#: Hashed bag-of-words buckets (crossed with the 4 class one-hots).
HASH_DIM = 32
#: Relation kinds of :class:`urbex.agents.relation_terms.Term` with a violation feature each.
_RELATION_KINDS = (
    "direction", "next", "near", "road", "in", "between", "corner", "across", "end", "named",
    "context", "region",
)  # fmt: skip
_BASE_FEATURES: tuple[str, ...] = (
    *(f"is_{c}" for c in TARGET_CLASSES),
    "class_match",
    "lab_l",
    "lab_a",
    "lab_b",
    "colour_ll",
    "colour_ll_rel",
    "log_area",
    "log_height",
    "area_pct",
    "height_pct",
    "big_x_area",
    "small_x_area",
    "tall_x_height",
    "low_x_height",
    "is_named",
    "lm_is_it",
    "lm_inside",
    "lm_log_gap",
    "lm_log_dist",
    "lm_gap_rank",
    "lm_mean_log_gap",
    "dir_agree",
    "dir_log_gap",
    *(f"rel_{k}" for k in _RELATION_KINDS),
    "log_neighbours",
    "ordinal_match",
    "ordinal_gap",
)
#: Base features also crossed with the candidate's class one-hot (a weight per class: a car is
#: "on" a road at 0 m, a building at several metres).
_CROSSED: tuple[str, ...] = (
    "lm_log_gap",
    "lm_mean_log_gap",
    "lm_log_dist",
    "dir_agree",
    "log_area",
    "log_height",
    "class_match",
)
#: Every feature, in column order.
FEATURE_NAMES: tuple[str, ...] = (
    *_BASE_FEATURES,
    *(f"{f}_x_{c}" for c in TARGET_CLASSES for f in _CROSSED),
    *(f"bow{h}_x_{c}" for c in TARGET_CLASSES for h in range(HASH_DIM)),
)
_BIG, _SMALL = frozenset({"large", "largest", "wide"}), frozenset({"small", "smallest", "narrow"})
_TALL, _LOW = frozenset({"tall", "tallest"}), frozenset({"low", "lowest"})


def _pct(values: NDArray[np.float64], groups: NDArray[np.str_]) -> NDArray[np.float64]:
    """Percentile rank (0 smallest … 1 largest) of each value within its group."""
    out = np.full(values.shape, 0.5)
    for g in np.unique(groups):
        idx = np.flatnonzero(groups == g)
        if idx.size > 1:
            r = np.argsort(np.argsort(values[idx], kind="stable"), kind="stable")
            out[idx] = r / (idx.size - 1)
    return out


def _hashed_bow(description: str, names: Sequence[str]) -> NDArray[np.float64]:
    """Unigram + bigram counts of the description's words (the mentioned names' words left
    out) hashed (crc32) into :data:`HASH_DIM` buckets, L2-normalised."""
    drop = {w for n in names for w in normalize_name(n).split()}
    words = [w.norm for w in words_of(description) if w.norm not in drop and w.norm != "the"]
    v = np.zeros(HASH_DIM)
    for tok in [*words, *(f"{a} {b}" for a, b in itertools.pairwise(words))]:
        v[zlib.crc32(tok.encode()) % HASH_DIM] += 1.0
    n = np.linalg.norm(v)
    return v / n if n else v


def pair_features(
    description: str,
    parse: Parse,
    candidates: Candidates,
    anchors: Mapping[str, Anchor] | None = None,
    context: Sequence[ContextObject] = (),
    *,
    roads: Sequence[Anchor] = (),
    regions: Sequence[str] = (),
) -> NDArray[np.float64]:
    """The feature matrix of one description against a scene's candidates.

    Parameters
    ----------
    description : str
        The description (for its bag of words).
    parse : Parse
        Its parse (:func:`urbex.language.parse`).
    candidates : Candidates
        K candidates (world-metre BEV boxes).
    anchors : mapping of str to Anchor
        The mentioned landmarks, located (:func:`urbex.agents.ranking.anchors_for`).
    context : sequence of ContextObject
        Its unnamed context objects (:func:`urbex.language.context_objects`).
    roads : sequence of Anchor
        The scene's roads (what "in front of" an object is measured from).
    regions : sequence of str
        The parts of the map it names (:func:`urbex.language.map_regions`).

    Returns
    -------
    ndarray, shape (K, len(FEATURE_NAMES)), float64

    Examples
    --------
    >>> from urbex.language import parse
    >>> c = Candidates.build(class_name=["Car", "Building"], box=[[0, 0, 4, 2], [10, 0, 30, 20]],
    ...                      rgb=[[200, 30, 30], [90, 90, 90]], height=[1.5, 12.0])
    >>> f = pair_features("the red car", parse("the red car"), c)
    >>> f.shape == (2, len(FEATURE_NAMES))
    True
    >>> f[:, FEATURE_NAMES.index("class_match")].tolist()
    [1.0, 0.0]
    >>> bool(f[0, FEATURE_NAMES.index("colour_ll")] > f[1, FEATURE_NAMES.index("colour_ll")])
    True
    """
    k = len(candidates)
    out = np.zeros((k, len(FEATURE_NAMES)))
    if k == 0:
        return out
    anchors = dict(anchors or {})
    col = {n: i for i, n in enumerate(_BASE_FEATURES)}
    cls = candidates.class_name
    onehot = np.stack([(cls == c).astype(np.float64) for c in TARGET_CLASSES], axis=1)
    out[:, : len(TARGET_CLASSES)] = onehot
    if parse.target_class is not None:
        out[:, col["class_match"]] = cls == parse.target_class
    rgb = np.nan_to_num(candidates.rgb * exposure_gain(candidates.rgb), nan=128.0)
    out[:, col["lab_l"] : col["lab_b"] + 1] = srgb_to_lab(rgb) / 100.0
    if parse.target_colours:
        ll = np.max([colour_log_likelihood(c, rgb) for c in parse.target_colours], axis=0)
        out[:, col["colour_ll"]] = ll
        out[:, col["colour_ll_rel"]] = ll - ll.max()
    box = candidates.box
    ext = np.maximum(box[:, 2:] - box[:, :2], 0.1)
    area = ext[:, 0] * ext[:, 1]
    height = np.maximum(candidates.height, 0.05)
    out[:, col["log_area"]] = np.log(area)
    out[:, col["log_height"]] = np.log(height)
    out[:, col["area_pct"]] = _pct(area, cls)
    out[:, col["height_pct"]] = _pct(height, cls)
    out[:, col["is_named"]] = candidates.landmark_name != ""
    centre = (box[:, :2] + box[:, 2:]) / 2
    same = cls[:, None] == cls[None, :]
    d_cc = np.hypot(*(centre[:, None, :] - centre[None, :, :]).transpose(2, 0, 1))
    out[:, col["log_neighbours"]] = np.log1p(((d_cc < 15.0) & same).sum(axis=1) - 1)
    local = np.ones(k, dtype=bool)
    located = [anchors[m.name] for m in parse.mentions if m.name in anchors]
    if located:
        uniq = list({a.name: a for a in located}.values())
        gaps = np.asarray(gap_2d(box[:, None], np.stack([a.box for a in uniq])))  # (K, A) m
        g0 = gaps.min(axis=1)
        ac = (uniq[0].box[:2] + uniq[0].box[2:]) / 2
        out[:, col["lm_log_gap"]] = np.log1p(g0)
        out[:, col["lm_mean_log_gap"]] = np.log1p(gaps).mean(axis=1)
        out[:, col["lm_log_dist"]] = np.log1p(np.hypot(*(centre - ac).T))
        names = {normalize_name(a.name) for a in uniq}
        out[:, col["lm_is_it"]] = [normalize_name(n) in names for n in candidates.landmark_name]
        inside = np.zeros(k, bool)
        for a in uniq:
            inside |= np.all((centre >= a.box[:2]) & (centre <= a.box[2:]), axis=1)
        out[:, col["lm_inside"]] = inside
        rank = np.zeros(k)
        for c in np.unique(cls):
            idx = np.flatnonzero(cls == c)
            rank[idx] = np.argsort(np.argsort(g0[idx], kind="stable"), kind="stable")
        out[:, col["lm_gap_rank"]] = 1.0 / (1.0 + rank)
        local = g0 <= 40.0
    apct, hpct = out[:, col["area_pct"]].copy(), out[:, col["height_pct"]].copy()
    for c in np.unique(cls):  # size percentiles among the same-class candidates near them
        idx = np.flatnonzero((cls == c) & local)
        if idx.size > 1 and located:
            apct[idx] = _pct(area[idx], cls[idx])
            hpct[idx] = _pct(height[idx], cls[idx])
    sizes = set(parse.sizes)
    out[:, col["big_x_area"]] = apct * bool(sizes & _BIG)
    out[:, col["small_x_area"]] = (1 - apct) * bool(sizes & _SMALL)
    out[:, col["tall_x_height"]] = hpct * bool(sizes & _TALL)
    out[:, col["low_x_height"]] = (1 - hpct) * bool(sizes & _LOW)
    direction = False
    for t in relation_terms(parse, candidates, anchors, context, roads=roads, regions=regions):
        out[:, col[f"rel_{t.kind}"]] += np.minimum(t.violation, 5.0)
        if t.agreement is not None and not direction:
            out[:, col["dir_agree"]] = t.agreement
            out[:, col["dir_log_gap"]] = np.log1p(t.gap_m)
            direction = True
    if parse.ordinal is not None or any(m.relation == "at_end_of" for m in parse.mentions):
        kth = parse.ordinal.k if parse.ordinal is not None else 1
        pos = np.zeros(k)
        found = False
        for c in np.unique(cls):
            idx = np.flatnonzero((cls == c) & local)
            p = ordinal_positions(parse, candidates, anchors, idx) if idx.size else None
            if p is not None:
                pos[idx], found = p, True
        if found:
            gap = np.where(pos > 0, np.abs(pos - kth), 5.0)
            out[:, col["ordinal_match"]] = gap == 0
            out[:, col["ordinal_gap"]] = np.minimum(gap, 5.0) / 5.0
    nb, nc = len(_BASE_FEATURES), len(_CROSSED) * len(TARGET_CLASSES)
    base = out[:, [col[f] for f in _CROSSED]]
    out[:, nb : nb + nc] = (onehot[:, :, None] * base[:, None, :]).reshape(k, -1)
    bow = _hashed_bow(description, [m.name for m in parse.mentions])
    out[:, nb + nc :] = (onehot[:, :, None] * bow[None, None, :]).reshape(k, -1)
    return out
