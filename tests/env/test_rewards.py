"""Reward functions: formulas, vectorisation, edge cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from urbex.config import EnvParams
from urbex.env import rewards as R


def test_terminal_reward_matches_formula():
    p = EnvParams(lambda_iou=2.0, lambda_dist=0.3, tau_m=10.0, lambda_step=0.2, max_turns=8)
    got = R.terminal_reward(0.4, 5.0, 3, **R.weights(p))
    assert got == pytest.approx(2.0 * 0.4 + 0.3 * math.exp(-0.5) - 0.2 * 3 / 8)


def test_terminal_reward_no_answer_is_step_cost_only():
    assert R.terminal_reward(0.0, float("inf"), 8, max_turns=8) == pytest.approx(-0.1)
    assert R.terminal_reward(float("nan"), float("nan"), 4, max_turns=8) == pytest.approx(-0.05)


def test_terminal_reward_vectorised_and_monotone():
    iou = np.linspace(0, 1, 5)
    r = R.terminal_reward(iou, np.zeros(5), np.ones(5), max_turns=8)
    assert r.shape == (5,) and np.all(np.diff(r) > 0)
    d = R.terminal_reward(0.0, np.array([0.0, 10.0, 100.0]), 1, max_turns=8)
    assert np.all(np.diff(d) < 0)


def test_terminal_terms_sum_to_the_old_closed_form_bit_for_bit():
    """The terms, summed in order, are the float the one-expression formula gave before."""
    rng = np.random.default_rng(0)
    iou, d, t = rng.random(200), rng.exponential(30.0, 200), rng.integers(1, 9, 200)
    d[::7] = np.inf  # no answer
    w = {"lambda_iou": 1.3, "lambda_dist": 0.7, "tau_m": 15.0, "lambda_step": 0.11}
    old = (
        w["lambda_iou"] * iou
        + w["lambda_dist"] * np.exp(-d / w["tau_m"])
        - (w["lambda_step"] * t / 8)
    )
    terms = R.terminal_terms(iou, d, t, max_turns=8, **w)
    assert tuple(terms) == R.TERMINAL_TERMS
    np.testing.assert_array_equal(R.terminal_sum(terms), old)
    np.testing.assert_array_equal(R.terminal_reward(iou, d, t, max_turns=8, **w), old)
    np.testing.assert_array_equal(terms["step_cost"], -(w["lambda_step"] * t / 8))
    assert np.all(terms["terminal_dist"][::7] == 0.0)
    one = R.terminal_terms(0.25, 10.0, 2, max_turns=8)
    assert all(isinstance(v, float) for v in one.values())
    assert R.terminal_sum(one) == R.terminal_reward(0.25, 10.0, 2, max_turns=8)


@pytest.mark.parametrize("bad", [{"max_turns": 0}, {"max_turns": 8, "tau_m": 0.0}])
def test_terminal_reward_rejects_bad_weights(bad):
    with pytest.raises(ValueError):
        R.terminal_reward(0.5, 1.0, 1, **bad)


def test_zoom_shaping_sign_and_cap():
    assert R.zoom_shaping(50.0, 10.0, tau_m=20, scale=0.05, cap=0.1) == pytest.approx(0.1)
    assert R.zoom_shaping(50.0, 45.0, tau_m=20, scale=0.05, cap=0.1) == pytest.approx(0.0125)
    assert R.zoom_shaping(10.0, 50.0, tau_m=20, scale=0.05, cap=0.1) == pytest.approx(-0.1)
    assert R.zoom_shaping(7.0, 7.0) == 0.0


def test_oblique_overlap_and_shaping():
    assert R.oblique_overlap([0, 0, 10, 10], [0, 0, 10, 10]) == 1.0
    assert R.oblique_overlap([20, 20, 30, 30], [0, 0, 10, 10]) == 0.0
    assert R.oblique_overlap([0, 0, 5, 10], [0, 0, 10, 10]) == pytest.approx(0.5)
    assert R.oblique_shaping(0.5, scale=0.1, cap=0.04) == pytest.approx(0.04)
    assert R.oblique_shaping(float("nan")) == 0.0


def test_invalid_reward_is_negative():
    assert R.invalid_reward(3, penalty=0.2) == pytest.approx(-0.6)
