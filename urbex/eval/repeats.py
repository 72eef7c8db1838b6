"""Repeated decoding (the paper's Table 8): the same episodes played again with other seeds.

A repeat is a run whose :class:`~urbex.eval.runspec.RunSpec` has ``repeat_seed`` set: it plays
with ``eval.seed = repeat_seed`` (every episode seed changes, so a sampled policy decodes
anew; :func:`urbex.env.play.episode_seed`). ``urbex evaluate --repeats N`` plays the seeds
``eval.seed, …, eval.seed + N − 1`` (:func:`repeat_specs`). :func:`repeated_decoding` turns the
repeats' metrics into the mean and the Student-t 95 % interval per method × split.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from urbex.eval.runspec import RunSpec

if TYPE_CHECKING:
    pass

__all__ = ["REPEAT_METRICS", "group_repeats", "repeat_specs", "repeated_decoding", "t_interval"]

#: The metrics :func:`repeated_decoding` summarises.
REPEAT_METRICS: tuple[str, ...] = ("hit1", "hit3", "iou_bev")


def t_interval(
    values: Sequence[float | None], *, level: float = 0.95
) -> tuple[float, float, float]:
    """``(mean, lo, hi)``: the mean and its two-sided Student-t interval (``n − 1`` degrees of
    freedom). With fewer than two values the bounds are NaN.

    >>> m, lo, hi = t_interval([0.25, 0.26, 0.27])
    >>> round(m, 4), round(lo, 4), round(hi, 4)
    (0.26, 0.2352, 0.2848)
    >>> t_interval([0.5])[1] != t_interval([0.5])[1]  # NaN
    True
    """
    from scipy import stats

    a = np.asarray([v for v in values if v is not None and not math.isnan(v)], dtype=np.float64)
    if a.size == 0:
        return (math.nan, math.nan, math.nan)
    m = float(a.mean())
    if a.size < 2:
        return (m, math.nan, math.nan)
    half = float(stats.t.ppf(0.5 + level / 2, a.size - 1) * a.std(ddof=1) / math.sqrt(a.size))
    return (m, m - half, m + half)


def repeat_specs(base: RunSpec, *, seed: int, repeats: int) -> list[RunSpec]:
    """The specs of ``repeats`` repeats of the run ``base``: seeds ``seed + k`` (``seed``:
    ``eval.seed``).

    >>> base = RunSpec(policy="vlm", split="test_no")
    >>> [s.run_id for s in repeat_specs(base, seed=0, repeats=2)]
    ['vlm-test_no-rep0', 'vlm-test_no-rep1']
    """
    if not isinstance(repeats, int) or isinstance(repeats, bool) or repeats < 1:
        raise ValueError(f"repeats: expected an int >= 1, got {repeats!r}")
    return [replace(base, repeat_seed=seed + k) for k in range(repeats)]


def repeated_decoding(metrics: pl.DataFrame) -> pl.DataFrame:
    """Mean and Student-t 95 % interval of :data:`REPEAT_METRICS` over the repeats of each
    method × split.

    Parameters
    ----------
    metrics
        Metrics rows (``run_id``, ``policy``, ``split``, the metrics, and the spec columns of
        :data:`urbex.eval.runspec.SPEC_COLUMNS`); rows without a ``repeat_seed`` are ignored.

    Returns
    -------
    polars.DataFrame
        ``run_id`` (the repeats' spec without its seed, as a run id), ``policy``, ``split``,
        ``method``, ``n_repeats``, ``seeds``, then ``<metric>_mean``, ``_lo``, ``_hi``.

    Examples
    --------
    >>> from urbex.eval.runspec import RunSpec
    >>> rows = [{**RunSpec(policy="vlm", split="test_no", repeat_seed=s).columns(),
    ...          "run_id": f"r{s}", "hit1": h, "hit3": h, "iou_bev": h}
    ...         for s, h in ((0, 0.25), (1, 0.26), (2, 0.27))]
    >>> t = repeated_decoding(pl.DataFrame(rows))
    >>> t.select("run_id", "n_repeats", "seeds").row(0)
    ('vlm-test_no', 3, '0,1,2')
    >>> round(t["hit1_lo"][0], 4), round(t["hit1_hi"][0], 4)
    (0.2352, 0.2848)
    """
    schema: dict[str, Any] = {
        "run_id": pl.String,
        "policy": pl.String,
        "split": pl.String,
        "method": pl.String,
        "n_repeats": pl.Int64,
        "seeds": pl.String,
        **{f"{m}_{s}": pl.Float64 for m in REPEAT_METRICS for s in ("mean", "lo", "hi")},
    }
    groups = group_repeats(
        metrics.filter(pl.col("repeat_seed").is_not_null()).iter_rows(named=True)
        if "repeat_seed" in metrics.columns
        else []
    )
    out = []
    for spec, rows in sorted(groups.items(), key=lambda kv: kv[0].run_id):
        rec: dict[str, Any] = {
            "run_id": spec.run_id,
            "policy": spec.policy,
            "split": spec.split,
            "method": spec.method,
            "n_repeats": len(rows),
            "seeds": ",".join(str(r["repeat_seed"]) for r in sorted(rows, key=_seed)),
        }
        for m in REPEAT_METRICS:
            rec[f"{m}_mean"], rec[f"{m}_lo"], rec[f"{m}_hi"] = t_interval([r.get(m) for r in rows])
        out.append(rec)
    return pl.DataFrame(out, schema=schema)


def group_repeats(
    rows: Iterable[Mapping[str, Any]], specs: Mapping[str, RunSpec | None] | None = None
) -> dict[RunSpec, list[dict[str, Any]]]:
    """Metrics rows of repeats grouped by their spec without the seed, **one per seed**: when
    two runs are the same repeat (``--run-id``), the one under the default id wins (else the
    smallest run id). ``specs`` maps run ids to specs (default: from the rows' spec columns)."""
    best: dict[tuple[RunSpec, int], dict[str, Any]] = {}
    for row in rows:
        spec = specs.get(row["run_id"]) if specs is not None else RunSpec.from_columns(row)
        if spec is None or spec.repeat_seed is None:
            continue
        key = (replace(spec, repeat_seed=None), spec.repeat_seed)
        old = best.get(key)
        rank = (row["run_id"] != spec.run_id, str(row["run_id"]))
        if old is None or rank < (old["run_id"] != spec.run_id, str(old["run_id"])):
            best[key] = dict(row)
    out: dict[RunSpec, list[dict[str, Any]]] = {}
    for (base, _), row in sorted(best.items(), key=lambda kv: (kv[0][0].run_id, kv[0][1])):
        out.setdefault(base, []).append(row)
    return out


def _seed(row: dict[str, Any]) -> int:
    return int(row["repeat_seed"])
