"""check_env conformance run on the real environment."""

from __future__ import annotations

import pytest

from urbex.config import EnvParams
from urbex.env.check import EnvCheckError, check_env
from urbex.env.episode import GroundingEnv


def test_check_env_passes_on_grounding_env(env, city):
    report = check_env(env, city[2][0])
    assert report["checks"] == [
        "signatures",
        "reset",
        "tools",
        "budget_truncates",
        "step_after_done_raises",
        "answer_terminates",
        "determinism",
    ]


def test_check_env_catches_missing_truncation(city):
    cache, index, queries = city

    class NeverTruncates(GroundingEnv):
        def step(self, model_text):
            obs, r, term, _trunc, info = super().step(model_text)
            return obs, r, term, False, info

    env = NeverTruncates(EnvParams(max_turns=3, global_view_size=(64, 64)), lambda s: cache, index)
    with pytest.raises(EnvCheckError, match="truncated must be True"):
        check_env(env, queries[0])


def test_step_before_reset_raises(city):
    cache, index, _ = city
    env = GroundingEnv(None, lambda s: cache, index)
    with pytest.raises(RuntimeError, match="reset"):
        env.step("<answer>{}</answer>")
