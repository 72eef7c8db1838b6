"""``ranking``: the **trained** With-GT candidate ranker (CityRefer/CityAnchor's setting).

Where :mod:`urbex.agents.ranking` (``ranking_rules``) scores candidates with hand-written rules,
this ranker *learns* how much each piece of evidence counts, on the data set's own train split
(val for model selection), so it is not tuned by looking at one generator's phrasing. Both read
the description through the one parse (:func:`urbex.agents.ranking.read_description`); the
features of a (description, candidate) pair are :mod:`urbex.agents.ranker_features`'.

The learner is a conditional logit (a softmax over each query's candidates, L2-regularised,
fitted by L-BFGS with :func:`scipy.optimize.minimize`): the standard discrete-choice model,
with the regularisation strength picked by val Hit@1 (:func:`fit_ranker`). The fitted model is
a versioned JSON asset (:attr:`urbex.layout.AssetLayout.ranker_model`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from urbex.agents.ranker_features import FEATURE_NAMES, HASH_DIM, pair_features
from urbex.agents.ranking import RankingPolicy, Reading, read_description
from urbex.agents.ranking_records import Candidates
from urbex.atomic import atomic_write
from urbex.env.world import World
from urbex.errors import ConfigError
from urbex.layout import RANKER_VERSION, TIMINGS_DIR

if TYPE_CHECKING:
    import polars as pl

    from urbex.env.episode import GroundingEnv
    from urbex.layout import AssetLayout

__all__ = [
    "FEATURE_NAMES",
    "HASH_DIM",
    "RANKER_VERSION",
    "TIMING_INFO",
    "RankerModel",
    "RankerPolicy",
    "TrainingQuery",
    "fit_project_ranker",
    "fit_ranker",
    "pair_features",
    "ranker_summary",
    "training_queries",
]

#: The fit's measured seconds in ``info``: saved beside the model, in ``timings/``.
TIMING_INFO: tuple[str, ...] = ("fit_s", "features_s")
#: L2 strengths tried; the best val Hit@1 wins (ties: the stronger regularisation).
L2_GRID: tuple[float, ...] = (1.0, 0.3, 0.1, 0.03, 0.01, 0.003)
#: How the model's numbers are rounded, in memory as in its file: mean and std to
#: :data:`STANDARDISE_DIGITS` significant digits, weights (of standardised features: of order
#: one) to :data:`WEIGHT_DECIMALS` decimals. The fit is run to the optimum, where another CPU's
#: SIMD kernels or another BLAS thread count change only the last bits, far below these, so
#: the model file — a DVC-hashed output — is the same bytes on every machine.
STANDARDISE_DIGITS = 10
WEIGHT_DECIMALS = 6
#: L-BFGS-B runs until its line search can no longer tell two losses apart (a strictly convex
#: problem); Newton steps then take the weights the rest of the way to the optimum.
_LBFGS = {"ftol": 0.0, "gtol": 1e-10, "maxiter": 20_000, "maxfun": 40_000}


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
        return _dot_rows((np.asarray(features) - self.mean) / self.std, self.weights)

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
        """Write the model to ``path`` (JSON, atomically); its measured seconds
        (:data:`TIMING_INFO`) to ``timings/<name>`` beside it (not versioned: the model file
        is a function of the splits and the params only)."""

        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        data = self.to_json()
        data["info"] = {k: v for k, v in self.info.items() if k not in TIMING_INFO}
        with atomic_write(p, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1)
        timing = {k: self.info[k] for k in TIMING_INFO if k in self.info}
        if timing:
            (p.parent / TIMINGS_DIR).mkdir(exist_ok=True)
            with atomic_write(p.parent / TIMINGS_DIR / p.name, "w", encoding="utf-8") as fh:
                json.dump(timing, fh, indent=1)
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


def _dot_rows(x: NDArray[np.float64], w: NDArray[np.float64]) -> NDArray[np.float64]:
    """``x @ w`` summed in numpy's own fixed order: BLAS's order depends on the CPU and on its
    thread count, and so would the fitted model's last bits."""
    return (x * w).sum(axis=1)


def _significant(a: NDArray[np.float64], digits: int) -> NDArray[np.float64]:
    """``a`` rounded to ``digits`` significant digits."""
    return np.array([float(f"{v:.{digits}g}") for v in np.asarray(a, dtype=np.float64)])


def _nll_grad(
    w: NDArray[np.float64], data: Sequence[TrainingQuery], l2: float
) -> tuple[float, NDArray[np.float64]]:
    loss, grad = 0.5 * l2 * float((w * w).sum()), l2 * w
    for q in data:
        s = _dot_rows(q.features, w)
        s = s - s.max()
        p = np.exp(s)
        p /= p.sum()
        loss -= float(np.log(p[q.target] + 1e-300))
        grad = grad + (q.features * p[:, None]).sum(axis=0) - q.features[q.target]
    n = max(len(data), 1)
    return loss / n, grad / n


def _newton(
    w: NDArray[np.float64], data: Sequence[TrainingQuery], l2: float, *, steps: int = 30
) -> NDArray[np.float64]:
    """``w`` moved to the optimum by Newton steps, from near it (L-BFGS-B's result).

    The Hessian is formed once, at ``w`` (it barely changes that close to the optimum; each
    step then costs one gradient). It only sets the steps: they stop where the gradient —
    summed in a fixed order (:func:`_nll_grad`) — vanishes, the same point on any machine.
    """
    from scipy.linalg import cho_factor, cho_solve

    hess = np.eye(w.size) * l2
    for q in data:
        s = _dot_rows(q.features, w)
        p = np.exp(s - s.max())
        p /= p.sum()
        xp = q.features.T @ p
        hess += (q.features * p[:, None]).T @ q.features - np.outer(xp, xp)
    factor = cho_factor(hess / max(len(data), 1))
    for _ in range(steps):
        step = cho_solve(factor, _nll_grad(w, data, l2)[1])
        w = w - step
        if np.abs(step).max() <= 1e-12 * max(1.0, float(np.abs(w).max())):
            break
    return w


def _hit1(w: NDArray[np.float64], data: Sequence[TrainingQuery]) -> float:
    if not data:
        return float("nan")
    return float(np.mean([int(np.argmax(_dot_rows(q.features, w))) == q.target for q in data]))


def fit_ranker(
    train: Sequence[TrainingQuery],
    val: Sequence[TrainingQuery] = (),
    *,
    l2_grid: Sequence[float] = L2_GRID,
) -> RankerModel:
    """Fit the conditional logit on ``train``, picking the L2 strength by Hit@1 on ``val``.

    Features are standardised by the train rows' mean and std. Without val queries, the
    middle of the grid is used. The model's numbers are rounded (:data:`STANDARDISE_DIGITS`,
    :data:`WEIGHT_DECIMALS`; the standardisation before the fit, the weights after it): the
    same data give the same model, bit for bit, on any machine and thread count.

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
    mean = _significant(rows.mean(axis=0), STANDARDISE_DIGITS)
    std = rows.std(axis=0)
    std = _significant(np.where(std > 1e-9, std, 1.0), STANDARDISE_DIGITS)

    def z(data: Sequence[TrainingQuery]) -> list[TrainingQuery]:
        return [TrainingQuery(features=(q.features - mean) / std, target=q.target) for q in data]

    ztrain, zval = z(train), z(val)
    grid = list(l2_grid) if val else [sorted(l2_grid)[len(l2_grid) // 2]]
    best: tuple[float, float, float, NDArray[np.float64]] | None = None
    per_l2: dict[str, dict[str, float]] = {}
    w0 = np.zeros(rows.shape[1])
    for l2 in grid:
        res = minimize(
            _nll_grad, w0, args=(ztrain, l2), jac=True, method="L-BFGS-B", options=_LBFGS
        )
        w = np.round(_newton(np.asarray(res.x), ztrain, l2), WEIGHT_DECIMALS) + 0.0  # no -0.0
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
        d = str(r["description"])
        f = reading_features(d, read_description(d, str(r["scene_id"]), landmarks), c)
        out.append(TrainingQuery(features=f, target=int(hit[0])))
    return out


def fit_project_ranker(
    world: World, layout: AssetLayout, *, candidate_classes: Sequence[str] | None
) -> tuple[RankerModel, Path]:
    """Fit on the train split (select on val) of the project's splits; save it; return both.

    Candidates are the instances of ``world``'s scenes of ``candidate_classes`` (all when None;
    ``eval.candidate_classes``); landmarks are ``world``'s. The model goes to
    :attr:`urbex.layout.AssetLayout.ranker_model`; its ``info`` records the fit time, the query
    counts and the train/val Hit@1.
    """
    import polars as pl

    path = layout.queries
    if not path.is_file():
        raise ConfigError("no splits; run `urbex splits` first", path=path)
    queries = pl.read_parquet(path, glob=False)
    provider = world.scenes
    classes = candidate_classes
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
    return model, model.save(layout.ranker_model)


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
        rd = read_description(description, scene_id, self.env.landmarks)
        return self.model.score(reading_features(description, rd, self.candidates(scene_id)))


def reading_features(
    description: str, reading: Reading, candidates: Candidates
) -> NDArray[np.float64]:
    """:func:`~urbex.agents.ranker_features.pair_features` of a :class:`Reading`."""
    return pair_features(description, reading.parse, candidates, reading.anchors, reading.context,
                         roads=reading.roads, regions=reading.regions)  # fmt: skip


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
