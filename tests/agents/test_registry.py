"""Policies by name."""

from __future__ import annotations

import pytest

from urbex.agents.registry import POLICY_NAMES, make_policy, policy_info, register_policy
from urbex.config import Params


def test_policy_names_cover_the_architecture():
    assert set(POLICY_NAMES) == {
        "vlm",
        "openai",
        "workflow",
        "no_tools",
        "landmark_prior",
        "oracle",
        "ranking",
    }
    assert policy_info("ranking").needs_env and policy_info("ranking").parallel
    assert policy_info("oracle").parallel and not policy_info("vlm").parallel


def test_make_policy_unknown_name_lists_known():
    with pytest.raises(ValueError, match="expected one of"):
        make_policy("gpt", Params())


def test_make_policy_env_bound_needs_env():
    with pytest.raises(ValueError, match="bound to an environment"):
        make_policy("landmark_prior", Params())


def test_make_policy_openai_and_workflow_build_without_network():
    p = Params().with_updates(policy={"backend": "openai"})
    assert type(make_policy("openai", p)).__name__ == "OpenAIPolicy"
    wf = make_policy("workflow", p)
    assert type(wf).__name__ == "WorkflowPolicy" and wf.steps[0] == "landmark_query"
    nt = make_policy("no_tools", p)
    assert nt.steps == ("answer",) and nt.inner.tool_names == ()


def test_register_policy_refuses_silent_override():
    with pytest.raises(ValueError, match="already registered"):
        register_policy("oracle", lambda params, *, env, checkpoint: None)
