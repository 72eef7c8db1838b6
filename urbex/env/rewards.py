"""Rewards of the grounding environment (paper §3.3). Pure, vectorised, no I/O.

Terminal (one per episode)::

    R_term = λ_iou · IoU(b̂, b*) + λ_dist · exp(−d(b̂, b*) / τ) − λ_step · T / T_max

with ``d`` the BEV centre distance in world metres and ``T`` the assistant turns used. No
answer means IoU 0 and ``d = ∞`` (only the step cost remains). Tool shaping (per call, summed
into the episode return, never shown to the agent):

* zoom: ``clip(scale · (d_prev − d_new) / τ, −cap, cap)`` — ``d_*`` the distance (m) from the
  previous zoom centre (the global view centre for the first zoom) and from the new zoom centre
  to the target centre;
* oblique: ``min(scale · |rendered region ∩ target| / |target|, cap)`` (BEV areas);
* invalid action: ``−penalty``.

All weights come from ``params.env`` (:class:`urbex.config.EnvParams`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray

from urbex.config import EnvParams
from urbex.geometry import area_2d, intersection_2d

__all__ = [
    "TERMINAL_TERMS",
    "RewardFn",
    "invalid_reward",
    "oblique_overlap",
    "oblique_shaping",
    "terminal_reward",
    "terminal_sum",
    "terminal_terms",
    "view_shaping",
    "weights",
    "zoom_shaping",
]


class RewardFn(Protocol):
    """A batch reward function in trl's shape: completions in, one float (or None) each out."""

    def __call__(self, completions: list, **kwargs: object) -> list[float | None]: ...


def _out(x: NDArray[np.float64]) -> NDArray[np.float64] | float:
    return float(x) if x.ndim == 0 else x


#: The terms of the terminal reward, in the order they are summed (:func:`terminal_terms`).
TERMINAL_TERMS: tuple[str, ...] = ("terminal_iou", "terminal_dist", "step_cost")


def terminal_terms(
    iou: ArrayLike,
    center_dist_m: ArrayLike,
    turns: ArrayLike,
    *,
    max_turns: int,
    lambda_iou: float = 1.0,
    lambda_dist: float = 0.5,
    tau_m: float = 20.0,
    lambda_step: float = 0.1,
) -> dict[str, NDArray[np.float64] | float]:
    """The three terms of the terminal reward (keys :data:`TERMINAL_TERMS`), vectorised::

        terminal_iou   λ_iou · IoU
        terminal_dist  λ_dist · exp(−d / τ)
        step_cost      −λ_step · T / T_max

    Their sum, in that order, is :func:`terminal_reward`. Arguments as there.

    Examples
    --------
    >>> {k: round(v, 4) for k, v in terminal_terms(0.5, 20.0, 4, max_turns=8).items()}
    {'terminal_iou': 0.5, 'terminal_dist': 0.1839, 'step_cost': -0.05}
    >>> terminal_terms(0.0, float("inf"), 8, max_turns=8)["terminal_dist"]  # no answer
    0.0
    """
    if max_turns <= 0:
        raise ValueError(f"max_turns: expected > 0, got {max_turns}")
    if not tau_m > 0:
        raise ValueError(f"tau_m: expected > 0 metres, got {tau_m}")
    i = np.nan_to_num(np.asarray(iou, dtype=np.float64), nan=0.0)
    d = np.asarray(center_dist_m, dtype=np.float64)
    d = np.where(np.isnan(d), np.inf, d)
    t = np.asarray(turns, dtype=np.float64)
    with np.errstate(over="ignore"):
        dist = lambda_dist * np.exp(-d / tau_m)
    terms = (lambda_iou * i, dist, -(lambda_step * t / max_turns))
    return {k: _out(np.asarray(v, dtype=np.float64)) for k, v in zip(TERMINAL_TERMS, terms)}


def terminal_sum(terms: Mapping[str, ArrayLike]) -> NDArray[np.float64] | float:
    """The terminal reward from its terms: ``terminal_iou + terminal_dist + step_cost``, summed
    in that order (so the same float as :func:`terminal_reward`).

    >>> terminal_sum({"terminal_iou": 0.5, "terminal_dist": 0.25, "step_cost": -0.125})
    0.625
    """
    a, b, c = (np.asarray(terms[k], dtype=np.float64) for k in TERMINAL_TERMS)
    return _out(np.asarray(a + b + c, dtype=np.float64))


def terminal_reward(
    iou: ArrayLike,
    center_dist_m: ArrayLike,
    turns: ArrayLike,
    *,
    max_turns: int,
    lambda_iou: float = 1.0,
    lambda_dist: float = 0.5,
    tau_m: float = 20.0,
    lambda_step: float = 0.1,
) -> NDArray[np.float64] | float:
    """``λ_iou·IoU + λ_dist·exp(−d/τ) − λ_step·T/T_max``, vectorised: the sum of
    :func:`terminal_terms`.

    Parameters
    ----------
    iou : array_like
        BEV IoU in [0, 1] (NaN counts as 0).
    center_dist_m : array_like
        BEV centre distance, world metres, ≥ 0; ``inf`` (or NaN) when there is no answer.
    turns : array_like
        Assistant turns used, ``1 ≤ T ≤ max_turns``.
    max_turns : int
        ``T_max`` (> 0).

    Examples
    --------
    >>> terminal_reward(1.0, 0.0, 1, max_turns=8)  # perfect answer on turn 1
    1.4875
    >>> terminal_reward(0.0, float("inf"), 8, max_turns=8)  # no answer, budget used
    -0.1
    >>> terminal_reward([0.5, 0.0], [20.0, 40.0], [4, 4], max_turns=8).round(4).tolist()
    [0.6339, 0.0177]
    """
    terms = terminal_terms(
        iou,
        center_dist_m,
        turns,
        max_turns=max_turns,
        lambda_iou=lambda_iou,
        lambda_dist=lambda_dist,
        tau_m=tau_m,
        lambda_step=lambda_step,
    )
    return terminal_sum(terms)


def zoom_shaping(
    prev_dist_m: ArrayLike,
    new_dist_m: ArrayLike,
    *,
    tau_m: float = 20.0,
    scale: float = 0.05,
    cap: float = 0.1,
) -> NDArray[np.float64] | float:
    """Zoom progress: ``clip(scale·(d_prev − d_new)/τ, −cap, cap)``; + when the new zoom is closer.

    Parameters
    ----------
    prev_dist_m, new_dist_m : array_like
        Distance (world metres) from the previous view centre / the new zoom centre to the
        target centre.

    Examples
    --------
    >>> zoom_shaping(100.0, 20.0)  # 80 m closer = 4 τ → capped
    0.1
    >>> zoom_shaping(20.0, 30.0)  # 10 m farther
    -0.025
    >>> zoom_shaping([5.0, 5.0], [5.0, 1000.0]).tolist()
    [0.0, -0.1]
    """
    if not tau_m > 0:
        raise ValueError(f"tau_m: expected > 0 metres, got {tau_m}")
    p = np.asarray(prev_dist_m, dtype=np.float64)
    n = np.asarray(new_dist_m, dtype=np.float64)
    return _out(np.clip(scale * (p - n) / tau_m, -cap, cap))


def oblique_overlap(region_box: ArrayLike, target_box: ArrayLike) -> NDArray[np.float64] | float:
    """``|region ∩ target| / |target|`` of BEV boxes (world m), in [0, 1]; 0 for a degenerate target.

    >>> oblique_overlap([0, 0, 10, 10], [5, 5, 15, 15])
    0.25
    >>> oblique_overlap([0, 0, 10, 10], [2, 2, 2, 8])  # zero-area target
    0.0
    """
    inter = np.asarray(intersection_2d(region_box, target_box), dtype=np.float64)
    area = np.asarray(area_2d(target_box), dtype=np.float64)
    out = np.zeros(np.broadcast(inter, area).shape)
    np.divide(inter, area, out=out, where=area > 0)
    return _out(np.clip(out, 0.0, 1.0))


def oblique_shaping(
    overlap: ArrayLike, *, scale: float = 0.1, cap: float = 0.1
) -> NDArray[np.float64] | float:
    """Oblique render shaping: ``min(scale · overlap, cap)`` with ``overlap`` in [0, 1].

    >>> oblique_shaping(1.0, scale=0.2, cap=0.1)
    0.1
    >>> oblique_shaping([0.0, 0.5]).tolist()
    [0.0, 0.05]
    """
    o = np.clip(np.nan_to_num(np.asarray(overlap, dtype=np.float64), nan=0.0), 0.0, 1.0)
    return _out(np.minimum(scale * o, cap))


def invalid_reward(
    n_invalid: ArrayLike = 1, *, penalty: float = 0.1
) -> NDArray[np.float64] | float:
    """``−penalty · n_invalid``.

    >>> invalid_reward(2, penalty=0.1)
    -0.2
    """
    return _out(-penalty * np.asarray(n_invalid, dtype=np.float64))


def weights(params: EnvParams) -> dict[str, Any]:
    """The reward keyword arguments of :func:`terminal_reward` from ``params.env``.

    >>> sorted(weights(EnvParams()))
    ['lambda_dist', 'lambda_iou', 'lambda_step', 'max_turns', 'tau_m']
    """
    return {
        "max_turns": params.max_turns,
        "lambda_iou": params.lambda_iou,
        "lambda_dist": params.lambda_dist,
        "tau_m": params.tau_m,
        "lambda_step": params.lambda_step,
    }


def view_shaping(
    view: Any,
    prev_center_m: NDArray[np.float64],
    target_box_2d_m: NDArray[np.float64] | None,
    params: EnvParams,
) -> float:
    """The shaping reward of a new tool view (an :class:`urbex.env.views.EpisodeView`): a
    zoom's progress towards the target's centre from ``prev_center_m`` (world XY, the last
    zoom's or the global view's centre), an oblique view's overlap with the target; 0 for
    other views and for a free-text query (shaping needs ground truth)."""
    p, tgt = params, target_box_2d_m
    if tgt is None:
        return 0.0
    tc = (tgt[:2] + tgt[2:]) / 2
    if view.kind == "zoom":
        d_prev = float(np.hypot(*(prev_center_m - tc)))
        d_new = float(np.hypot(*(view.center_world() - tc)))
        return float(
            zoom_shaping(
                d_prev, d_new, tau_m=p.tau_m, scale=p.zoom_shaping_scale, cap=p.zoom_shaping_cap
            )
        )
    if view.kind == "oblique":
        ov = oblique_overlap(view.world_box, tgt)
        return float(oblique_shaping(ov, scale=p.oblique_shaping_scale, cap=p.oblique_shaping_cap))
    return 0.0
