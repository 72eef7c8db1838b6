"""Policies by name."""

from __future__ import annotations

import pytest

from urbex.agents.registry import (
    POLICY_NAMES,
    make_policy,
    policies,
    policy_info,
    register_policy,
)
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
        "ranking_rules",
        "ranking_proposals",
    }
    for name in ("ranking", "ranking_rules", "ranking_proposals"):
        assert policy_info(name).needs_env and policy_info(name).parallel
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


def test_make_policy_landmark_prior_takes_class_sizes_explicitly(synth_city):
    from urbex.agents.heuristics import CITYREFER_CLASS_SIZES
    from urbex.config import EnvParams
    from urbex.env.episode import GroundingEnv

    cache, index, queries = synth_city
    env = GroundingEnv(EnvParams(), lambda s: cache, index)
    env.reset(query=queries[0], seed=0)
    sizes = {"Car": (1.0, 2.0)}
    pol = make_policy("landmark_prior", Params(), env=env, class_sizes=sizes)
    assert pol.class_sizes == sizes
    box = pol.predict("a car", cache.scene_id)  # no anchor: a Car-sized box at the scene centre
    assert (box[2] - box[0], box[3] - box[1]) == pytest.approx((1.0, 2.0))
    assert make_policy("landmark_prior", Params(), env=env).class_sizes == CITYREFER_CLASS_SIZES
    over = Params().with_updates(policy={"class_sizes": {"Car": [3.0, 3.0]}})
    pol = make_policy("landmark_prior", over, env=env, class_sizes=sizes)
    assert pol.class_sizes == {"Car": (3.0, 3.0)}  # params.policy.class_sizes overrides
    assert policy_info("landmark_prior").uses_class_sizes
    assert not policy_info("oracle").uses_class_sizes
    make_policy("oracle", Params(), env=env, class_sizes=sizes)  # ignored by policies without


@pytest.mark.parametrize(
    ("name", "configured", "backend"),
    [
        ("vlm", "openai", "vlm"),
        ("openai", "vlm", "openai"),
        ("workflow", "vlm", "vlm"),
        ("workflow", "openai", "openai"),
        ("no_tools", "openai", "openai"),
        ("oracle", "vlm", None),
        ("ranking_proposals", "openai", None),
    ],
)
def test_policy_info_backend_follows_policy_backend_only_for_the_wrappers(
    name, configured, backend
):
    info = policy_info(name)
    assert info.backend(configured) == backend
    assert info.takes_checkpoint(configured) == (backend == "vlm")
    assert info.needs_server(configured) == (backend == "openai")
    assert info.model_backed == (backend is not None)


def _builtin(where):
    return tuple(n for n in policies(where) if n in POLICY_NAMES)


def test_policy_info_declares_what_each_policy_needs():
    assert _builtin(lambda i: i.scores_with_ranker) == ("ranking", "ranking_proposals")
    assert _builtin(lambda i: i.candidates == "instances") == ("ranking", "ranking_rules")
    assert _builtin(lambda i: i.candidates == "proposals") == ("ranking_proposals",)
    assert _builtin(lambda i: i.needs_ground_truth) == ("oracle",)
    assert _builtin(lambda i: i.fixed_workflow) == ("workflow",)
    assert _builtin(lambda i: i.model_backed) == ("vlm", "openai", "workflow", "no_tools")


def test_register_policy_with_a_model_is_model_backed():
    register_policy(
        "remote_x", lambda params, *, env, checkpoint: None, model="openai", replace=True
    )
    assert policy_info("remote_x").needs_server("vlm")
    assert "remote_x" in policies(lambda i: i.model_backed)
