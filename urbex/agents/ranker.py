"""``ranking``: the **trained** With-GT candidate ranker (CityRefer/CityAnchor's setting).

Where :mod:`urbex.agents.ranking` (``ranking_rules``) scores candidates with hand-written rules,
this ranker *learns* how much each piece of evidence counts, on the data set's own train split
(val for model selection), so it is not tuned by looking at one generator's phrasing.

Features of a (description, candidate) pair (:func:`pair_features`; world metres):

* **class** — the candidate's class (one-hot over :data:`urbex.classes.TARGET_CLASSES`) and
  whether it is the class the description names (:func:`urbex.language.target.class_of_text`);
* **colour** — CIELAB of the candidate's mean colour, and ``log p(word | rgb)`` of the colour
  words (:func:`urbex.colour.colour_log_likelihood`), absolute and relative to the best
  candidate;
* **size** — log BEV area and height, their percentiles within the candidate's class, and these
  percentiles times the size words (big / small / tall);
* **landmarks and roads the description mentions** (:func:`urbex.agents.ranking.anchors_for`) —
  log BEV gap and centre distance to the nearest and the second mentioned one, the rank of that
  gap among same-class candidates, inside its footprint, *is* it (a named landmark), and the
  agreement of the bearing landmark → candidate with the description's compass word;
* **same-class neighbours** within 15 m (log count), and the **ordinal position** among the
  same-class candidates near the first landmark, counted from the end the description names
  ("the second car from the east end");
* a **hashed bag of words** of the description (landmark names masked; unigrams and bigrams,
  :data:`HASH_DIM` buckets) crossed with the candidate's class one-hot (a sentence embedding
  would need a model download; none ships offline in the environment).

The learner is a conditional logit (a softmax over each query's candidates, L2-regularised,
fitted by L-BFGS with :func:`scipy.optimize.minimize`): the standard discrete-choice model,
with the regularisation strength picked by val Hit@1 (:func:`fit_ranker`). The fitted model is
a versioned JSON asset (:attr:`urbex.layout.AssetLayout.ranker_model`).
"""

from __future__ import annotations

import itertools
import json
import re
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from urbex.agents.ranking import Anchor, Candidates, RankingPolicy, anchors_for
from urbex.atomic import atomic_write
from urbex.classes import TARGET_CLASSES
from urbex.colour import (
    _COLOUR_ALIASES,
    PALETTE,
    colour_log_likelihood,
    exposure_gain,
    srgb_to_lab,
)
from urbex.env.world import World
from urbex.errors import ConfigError
from urbex.geometry import gap_2d
from urbex.landmarks.names import mask_names, normalize_name
from urbex.language.target import class_of_text
from urbex.layout import RANKER_VERSION

if TYPE_CHECKING:
    import polars as pl

    from urbex.config import Params
    from urbex.env.episode import GroundingEnv

__all__ = [
    "FEATURE_NAMES",
    "HASH_DIM",
    "RANKER_VERSION",
    "RankerModel",
    "RankerPolicy",
    "TrainingQuery",
    "fit_ranker",
    "fit_ranker_from_params",
    "pair_features",
    "ranker_summary",
    "training_queries",
]

#: Hashed bag-of-words buckets (crossed with the 4 class one-hots).
HASH_DIM = 32
#: L2 strengths tried; the best val Hit@1 wins (ties: the stronger regularisation).
L2_GRID: tuple[float, ...] = (1.0, 0.3, 0.1, 0.03, 0.01, 0.003)

_COLOUR_RE = re.compile(r"\b(" + "|".join([*PALETTE, *_COLOUR_ALIASES]) + r")\b")
_BIG = re.compile(r"\b(largest|biggest|big|large|huge|wide)\b")
_SMALL = re.compile(r"\b(smallest|small|little|tiny)\b")
_TALL = re.compile(r"\b(tallest|highest|tall|high)\b")
_ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "1st": 1, "2nd": 2,
             "3rd": 3, "4th": 4, "5th": 5}  # fmt: skip
_ORD_RE = re.compile(r"\b(" + "|".join(_ORDINALS) + r")\b")
_END_RE = re.compile(r"\b(north|south|east|west)(?:ern)?\s+(?:end|side|edge)\b")
_COMPASS_RE = re.compile(
    r"\b(north|south)[\s-]?(east|west)(?:ern)?\b|\b(north|south|east|west)(?:ern|wards?)?\b"
)
_UNIT = {"north": (0.0, 1.0), "south": (0.0, -1.0), "east": (1.0, 0.0), "west": (-1.0, 0.0)}

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
    "is_named",
    "lm_is_it",
    "lm_inside",
    "lm_log_gap",
    "lm_log_dist",
    "lm_gap_rank",
    "lm_mean_log_gap",
    "compass_agree",
    "compass_log_gap",
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
    "compass_agree",
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


def _compass(text: str) -> NDArray[np.float64]:
    m = _COMPASS_RE.search(text)
    if not m:
        return np.zeros(2)
    if m.group(1):
        v = np.add(_UNIT[m.group(1)], _UNIT[m.group(2)])
    else:
        v = np.asarray(_UNIT[m.group(3)], dtype=np.float64)
    return v / np.linalg.norm(v)


def _pct(values: NDArray[np.float64], groups: NDArray[np.str_]) -> NDArray[np.float64]:
    """Percentile rank (0 smallest … 1 largest) of each value within its group."""
    out = np.full(values.shape, 0.5)
    for g in np.unique(groups):
        idx = np.flatnonzero(groups == g)
        if idx.size > 1:
            r = np.argsort(np.argsort(values[idx], kind="stable"), kind="stable")
            out[idx] = r / (idx.size - 1)
    return out


def _hashed_bow(text: str) -> NDArray[np.float64]:
    """Unigram + bigram counts hashed (crc32) into :data:`HASH_DIM` buckets, L2-normalised."""
    words = [w for w in text.split() if not w.startswith("_")]
    v = np.zeros(HASH_DIM)
    for tok in [*words, *(f"{a} {b}" for a, b in itertools.pairwise(words))]:
        v[zlib.crc32(tok.encode()) % HASH_DIM] += 1.0
    n = np.linalg.norm(v)
    return v / n if n else v


def _masked_text(description: str, anchors: Sequence[Anchor]) -> str:
    """Normalised description with each mentioned landmark's name replaced by ``_<i>`` (its
    index in ``anchors``): :func:`urbex.landmarks.names.mask_names`."""
    return mask_names(description, [a.name for a in anchors])


def _compass_before(words: list[str], i: int) -> NDArray[np.float64]:
    """The compass direction written in the 6 words before anchor ``i``'s placeholder."""
    tag = f"_{i}"
    if tag not in words:
        return np.zeros(2)
    at = words.index(tag)
    return _compass(" ".join(words[max(0, at - 6) : at]))


def pair_features(
    description: str, candidates: Candidates, anchors: Sequence[Anchor] = ()
) -> NDArray[np.float64]:
    """The feature matrix of one description against a scene's candidates.

    Parameters
    ----------
    description : str
    candidates : Candidates
        K candidates (world-metre BEV boxes).
    anchors : sequence of Anchor
        The landmarks the description mentions (:func:`urbex.agents.ranking.anchors_for`).

    Returns
    -------
    ndarray, shape (K, len(FEATURE_NAMES)), float64

    Examples
    --------
    >>> c = Candidates.build(class_name=["Car", "Building"], box=[[0, 0, 4, 2], [10, 0, 30, 20]],
    ...                      rgb=[[200, 30, 30], [90, 90, 90]], height=[1.5, 12.0])
    >>> f = pair_features("the red car", c)
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
    col = {n: i for i, n in enumerate(_BASE_FEATURES)}
    text = _masked_text(description, anchors)
    cls = candidates.class_name
    onehot = np.stack([(cls == c).astype(np.float64) for c in TARGET_CLASSES], axis=1)
    out[:, : len(TARGET_CLASSES)] = onehot
    want = class_of_text(text)
    if want is not None:
        out[:, col["class_match"]] = cls == want
    rgb = np.nan_to_num(candidates.rgb * exposure_gain(candidates.rgb), nan=128.0)
    lab = srgb_to_lab(rgb)
    out[:, col["lab_l"] : col["lab_b"] + 1] = lab / 100.0
    words = [m.group(1) for m in _COLOUR_RE.finditer(text)]
    if words:
        ll = np.sum([colour_log_likelihood(w, rgb) for w in words], axis=0)
        out[:, col["colour_ll"]] = ll
        out[:, col["colour_ll_rel"]] = ll - ll.max()
    box = candidates.box
    ext = np.maximum(box[:, 2:] - box[:, :2], 0.1)
    area = ext[:, 0] * ext[:, 1]
    height = np.maximum(candidates.height, 0.05)
    out[:, col["log_area"]] = np.log(area)
    out[:, col["log_height"]] = np.log(height)
    apct, hpct = _pct(area, cls), _pct(height, cls)
    out[:, col["area_pct"]] = apct
    out[:, col["height_pct"]] = hpct
    out[:, col["big_x_area"]] = apct * bool(_BIG.search(text))
    out[:, col["small_x_area"]] = (1 - apct) * bool(_SMALL.search(text))
    out[:, col["tall_x_height"]] = hpct * bool(_TALL.search(text))
    out[:, col["is_named"]] = candidates.landmark_name != ""
    centre = (box[:, :2] + box[:, 2:]) / 2
    same = cls[:, None] == cls[None, :]
    d_cc = np.hypot(*(centre[:, None, :] - centre[None, :, :]).transpose(2, 0, 1))
    out[:, col["log_neighbours"]] = np.log1p(((d_cc < 15.0) & same).sum(axis=1) - 1)
    if anchors:
        gaps = np.asarray(gap_2d(box[:, None], np.stack([a.box for a in anchors])))  # (K, A) m
        g0 = gaps.min(axis=1)
        first = anchors[0]
        ac = (first.box[:2] + first.box[2:]) / 2
        out[:, col["lm_log_gap"]] = np.log1p(g0)
        out[:, col["lm_mean_log_gap"]] = np.log1p(gaps).mean(axis=1)
        out[:, col["lm_log_dist"]] = np.log1p(np.hypot(*(centre - ac).T))
        names = {normalize_name(a.name) for a in anchors}
        out[:, col["lm_is_it"]] = [normalize_name(n) in names for n in candidates.landmark_name]
        inside = np.zeros(k, bool)
        for a in anchors:
            inside |= np.all((centre >= a.box[:2]) & (centre <= a.box[2:]), axis=1)
        out[:, col["lm_inside"]] = inside
        rank = np.zeros(k)
        for c in np.unique(cls):
            idx = np.flatnonzero(cls == c)
            rank[idx] = np.argsort(np.argsort(g0[idx], kind="stable"), kind="stable")
        out[:, col["lm_gap_rank"]] = 1.0 / (1.0 + rank)
        tokens = text.split()
        for i, a in enumerate(anchors):  # the compass word in front of the landmark it relates to
            v = _compass_before(tokens, i)
            if v.any():
                d = centre - (a.box[:2] + a.box[2:]) / 2
                n = np.linalg.norm(d, axis=1)
                out[:, col["compass_agree"]] = np.where(n > 0, d @ v / np.maximum(n, 1e-9), 0.0)
                out[:, col["compass_log_gap"]] = np.log1p(gaps[:, i])
                break
        local = g0 <= 40.0
        for c in np.unique(cls):  # size percentiles among the same-class candidates near it
            idx = np.flatnonzero((cls == c) & local)
            if idx.size > 1:
                apct[idx] = _pct(area[idx], cls[idx])
                hpct[idx] = _pct(height[idx], cls[idx])
        out[:, col["big_x_area"]] = apct * bool(_BIG.search(text))
        out[:, col["small_x_area"]] = (1 - apct) * bool(_SMALL.search(text))
        out[:, col["tall_x_height"]] = hpct * bool(_TALL.search(text))
        om, em = _ORD_RE.search(text), _END_RE.search(text)
        if om and em:
            kth = _ORDINALS[om.group(1)]
            axis = np.asarray(_UNIT[em.group(1)])
            pos = np.zeros(k)
            for c in np.unique(cls):
                idx = np.flatnonzero((cls == c) & (g0 <= 40.0))
                order = np.argsort(-(centre[idx] @ axis), kind="stable")
                pos[idx[order]] = np.arange(1, idx.size + 1)
            gap = np.where(pos > 0, np.abs(pos - kth), 5.0)
            out[:, col["ordinal_match"]] = gap == 0
            out[:, col["ordinal_gap"]] = np.minimum(gap, 5.0) / 5.0
    nb, nc = len(_BASE_FEATURES), len(_CROSSED) * len(TARGET_CLASSES)
    base = out[:, [col[f] for f in _CROSSED]]
    out[:, nb : nb + nc] = (onehot[:, :, None] * base[:, None, :]).reshape(k, -1)
    bow = _hashed_bow(text)
    out[:, nb + nc :] = (onehot[:, :, None] * bow[None, None, :]).reshape(k, -1)
    return out


# ---------------------------------------------------------------------------------------------
# the model
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class TrainingQuery:
    """One query's candidate features and the index of its target among them."""

    features: NDArray[np.float64]
    target: int


@dataclass(frozen=True, slots=True, kw_only=True)
class RankerModel:
    """A fitted conditional-logit ranker: ``score = ((x − mean) / std) · weights``.

    Attributes
    ----------
    weights, mean, std : ndarray, shape (F,), float64
        One entry per :data:`FEATURE_NAMES` column.
    l2 : float
        The regularisation strength selected on val.
    info : dict
        Fit facts (queries, Hit@1 per split and per ``l2``, fit seconds), for the record.
    """

    weights: NDArray[np.float64]
    mean: NDArray[np.float64]
    std: NDArray[np.float64]
    l2: float
    info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        f = len(FEATURE_NAMES)
        for name in ("weights", "mean", "std"):
            a = np.asarray(getattr(self, name), dtype=np.float64)
            if a.shape != (f,) or not np.all(np.isfinite(a)):
                raise ValueError(f"RankerModel.{name}: expected {f} finite numbers, got {a.shape}")
            object.__setattr__(self, name, a)

    def score(self, features: NDArray[np.float64]) -> NDArray[np.float64]:
        """Scores of the rows of ``features`` (shape (K, F)); higher is better."""
        return ((np.asarray(features) - self.mean) / self.std) @ self.weights

    def to_json(self) -> dict[str, Any]:
        return {
            "format": "urbex.ranker",
            "version": RANKER_VERSION,
            "features": list(FEATURE_NAMES),
            "hash_dim": HASH_DIM,
            "weights": self.weights.tolist(),
            "mean": self.mean.tolist(),
            "std": self.std.tolist(),
            "l2": self.l2,
            "info": self.info,
        }

    def save(self, path: str | Path) -> Path:
        """Write the model to ``path`` (JSON, atomically)."""

        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(p, "w", encoding="utf-8") as fh:
            json.dump(self.to_json(), fh, indent=1)
        return p

    @classmethod
    def load(cls, path: str | Path) -> RankerModel:
        """Read a saved model.

        Raises
        ------
        ConfigError
            Missing file (run ``urbex fit-ranker``), another format version, or features that
            differ from this code's :data:`FEATURE_NAMES` (refit).
        """
        p = Path(path)
        if not p.is_file():
            raise ConfigError(
                "no fitted ranker; run `urbex fit-ranker` (the `ranking` policy needs it)", path=p
            )
        try:
            d = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ConfigError(f"ranker model is not readable JSON ({exc})", path=p) from exc
        if d.get("format") != "urbex.ranker" or d.get("version") != RANKER_VERSION:
            raise ConfigError(
                f"ranker model: expected format urbex.ranker version {RANKER_VERSION}, got "
                f"{d.get('format')!r} version {d.get('version')!r}; rerun `urbex fit-ranker`",
                path=p,
            )
        if d.get("features") != list(FEATURE_NAMES):
            raise ConfigError(
                "ranker model: its features differ from this version's; rerun `urbex fit-ranker`",
                path=p,
            )
        return cls(
            weights=np.asarray(d["weights"]),
            mean=np.asarray(d["mean"]),
            std=np.asarray(d["std"]),
            l2=float(d["l2"]),
            info=dict(d.get("info") or {}),
        )


def _nll_grad(
    w: NDArray[np.float64], data: Sequence[TrainingQuery], l2: float
) -> tuple[float, NDArray[np.float64]]:
    loss, grad = 0.5 * l2 * float(w @ w), l2 * w
    for q in data:
        s = q.features @ w
        s = s - s.max()
        p = np.exp(s)
        p /= p.sum()
        loss -= float(np.log(p[q.target] + 1e-300))
        grad = grad + q.features.T @ p - q.features[q.target]
    n = max(len(data), 1)
    return loss / n, grad / n


def _hit1(w: NDArray[np.float64], data: Sequence[TrainingQuery]) -> float:
    if not data:
        return float("nan")
    return float(np.mean([int(np.argmax(q.features @ w)) == q.target for q in data]))


def fit_ranker(
    train: Sequence[TrainingQuery],
    val: Sequence[TrainingQuery] = (),
    *,
    l2_grid: Sequence[float] = L2_GRID,
) -> RankerModel:
    """Fit the conditional logit on ``train``, picking the L2 strength by Hit@1 on ``val``.

    Features are standardised by the train rows' mean and std. Without val queries, the
    middle of the grid is used.

    Raises
    ------
    ValueError
        No training query.
    """
    from scipy.optimize import minimize

    if not train:
        raise ValueError("fit_ranker: expected training queries (the train split), got none")
    t0 = time.perf_counter()
    rows = np.vstack([q.features for q in train])
    mean = rows.mean(axis=0)
    std = rows.std(axis=0)
    std = np.where(std > 1e-9, std, 1.0)

    def z(data: Sequence[TrainingQuery]) -> list[TrainingQuery]:
        return [TrainingQuery(features=(q.features - mean) / std, target=q.target) for q in data]

    ztrain, zval = z(train), z(val)
    grid = list(l2_grid) if val else [sorted(l2_grid)[len(l2_grid) // 2]]
    best: tuple[float, float, float, NDArray[np.float64]] | None = None
    per_l2: dict[str, dict[str, float]] = {}
    w0 = np.zeros(rows.shape[1])
    for l2 in grid:
        res = minimize(_nll_grad, w0, args=(ztrain, l2), jac=True, method="L-BFGS-B")
        w = np.asarray(res.x)
        h_val = _hit1(w, zval) if zval else float("nan")
        per_l2[repr(l2)] = {"train_hit1": _hit1(w, ztrain), "val_hit1": h_val}
        key = (h_val if zval else 0.0, l2)
        if best is None or key > (best[0], best[1]):
            best = (key[0], l2, float(res.fun), w)
        w0 = w  # warm start down the grid
    assert best is not None
    _, l2, _, w = best
    info = {
        "n_train": len(train),
        "n_val": len(val),
        "train_hit1": _hit1(w, ztrain),
        "val_hit1": _hit1(w, zval) if zval else None,
        "per_l2": per_l2,
        "fit_s": time.perf_counter() - t0,
    }
    return RankerModel(weights=w, mean=mean, std=std, l2=l2, info=info)


# ---------------------------------------------------------------------------------------------
# data and policy
# ---------------------------------------------------------------------------------------------


def training_queries(
    queries: pl.DataFrame,
    candidates_of: Callable[[str], Candidates],
    landmarks: Any,
) -> list[TrainingQuery]:
    """Feature matrices of the queries (``scene_id``, ``object_id``, ``description`` columns)
    whose target is among their scene's candidates (the others are skipped)."""
    out = []
    for r in queries.iter_rows(named=True):
        c = candidates_of(str(r["scene_id"]))
        hit = np.flatnonzero(c.object_id == str(r["object_id"]))
        if hit.size != 1:
            continue
        anchors = anchors_for(str(r["description"]), str(r["scene_id"]), landmarks)
        out.append(
            TrainingQuery(
                features=pair_features(str(r["description"]), c, anchors), target=int(hit[0])
            )
        )
    return out


def fit_ranker_from_params(params: Params) -> tuple[RankerModel, Path]:
    """Fit on the train split (select on val) of ``params``' splits; save it; return both.

    The model goes to :attr:`urbex.layout.AssetLayout.ranker_model`; its ``info`` records the
    fit time, the query counts and the train/val Hit@1.
    """
    import polars as pl

    path = params.layout.queries
    if not path.is_file():
        raise ConfigError("no splits; run `urbex splits` first", path=path)
    queries = pl.read_parquet(path, glob=False)
    world = World.from_params(params)
    provider = world.scenes
    classes = params.eval.candidate_classes
    cache: dict[str, Candidates] = {}

    def cands(scene_id: str) -> Candidates:
        if scene_id not in cache:
            t = provider(scene_id).instances
            if classes is not None:
                t = t.filter(pl.col("class_name").is_in(list(classes)))
            cache[scene_id] = Candidates.from_table(t, scene_id=scene_id)
        return cache[scene_id]

    index = world.landmarks
    t0 = time.perf_counter()
    train = training_queries(queries.filter(pl.col("split") == "train"), cands, index)
    val = training_queries(queries.filter(pl.col("split") == "val"), cands, index)
    feat_s = time.perf_counter() - t0
    model = fit_ranker(train, val)
    model.info["features_s"] = feat_s
    return model, model.save(params.layout.ranker_model)


class RankerPolicy(RankingPolicy):
    """The trained With-GT ranker as a policy: the :class:`RankingPolicy` machinery (GT instance
    table as candidates, answer on turn 1 in the global view) with the learned scorer.

    Reads nothing of the query but its description and scene id (see :class:`RankingPolicy`).
    """

    def __init__(
        self,
        env: GroundingEnv,
        *,
        model: RankerModel,
        instances: Callable[[str], pl.DataFrame],
        candidate_classes: Sequence[str] | None = None,
    ) -> None:
        super().__init__(env, instances=instances, candidate_classes=candidate_classes)
        self.model = model

    def scores(self, description: str, scene_id: str) -> NDArray[np.float64]:
        """Learned scores of the scene's candidates, shape (K,) (features extracted here)."""
        anchors = anchors_for(description, scene_id, self.env.landmarks)
        return self.model.score(pair_features(description, self.candidates(scene_id), anchors))


def ranker_summary(model: RankerModel) -> Mapping[str, Any]:
    """The fit facts printed by ``urbex fit-ranker``."""
    i = model.info
    return {
        "l2": model.l2,
        "n_train": i.get("n_train"),
        "n_val": i.get("n_val"),
        "train_hit1": i.get("train_hit1"),
        "val_hit1": i.get("val_hit1"),
        "fit_s": i.get("fit_s"),
        "features_s": i.get("features_s"),
    }
