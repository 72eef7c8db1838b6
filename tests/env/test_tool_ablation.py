"""Tool ablation (``env.tools``): what is offered is all that exists for the agent — schemas,
system prompt, validator, environment and trl class."""

from __future__ import annotations

import inspect

import pytest

from urbex.config import EnvParams, Params
from urbex.env.episode import GroundingEnv
from urbex.env.prompts import system_prompt
from urbex.env.protocol import ToolCall, parse_action, validate_tool_call
from urbex.env.tools import openai_tool_schemas
from urbex.env.trl_adapter import grpo_rows, make_environment_class

SMALL = {"global_view_size": (64, 64), "zoom_size": (64, 64), "oblique_size": (64, 64)}
ZOOM = '<tool_call>{"name": "zoom_in", "arguments": {"view_id": "global", "bbox_2d": [0, 0, 500, 500]}}</tool_call>'
LM = '<tool_call>{"name": "landmark_query", "arguments": {"name": "Merton Hall", "view_id": "global"}}</tool_call>'


def test_env_tools_default_is_every_tool_and_is_strict():
    assert EnvParams().tools == ["landmark_query", "zoom_in", "oblique_render"]
    with pytest.raises(ValueError, match="tools"):
        EnvParams(tools=["teleport"])
    with pytest.raises(ValueError, match="at most once"):
        EnvParams(tools=["zoom_in", "zoom_in"])


@pytest.mark.parametrize(
    "tools", [[], ["landmark_query"], ["zoom_in", "oblique_render"], ["oblique_render"]]
)
def test_system_prompt_and_schemas_list_only_the_offered_tools(tools):
    p = EnvParams(tools=tools)
    text = system_prompt(p, include_tool_schemas=True)
    for name in ("landmark_query", "zoom_in", "oblique_render"):
        assert (f"{name}(" in text) == (name in tools), name
        assert (f'"name": "{name}"' in text) == (name in tools), name
    assert [s["function"]["name"] for s in openai_tool_schemas(tools=tools)] == [
        t for t in ("landmark_query", "zoom_in", "oblique_render") if t in tools
    ]
    assert ("<tool_call>" in text) == bool(tools)


def test_validator_rejects_a_tool_not_offered():
    bad = validate_tool_call(
        "zoom_in", {"view_id": "global", "bbox_2d": [0, 0, 5, 5]}, known_views={"global"},
        offered=["landmark_query"],
    )  # fmt: skip
    assert "not offered" in bad.reason and bad.tool == "zoom_in"
    none = parse_action(ZOOM, known_views={"global"}, offered_tools=[])
    assert "no tools are offered" in none.reason
    ok = parse_action(ZOOM, known_views={"global"}, offered_tools=["zoom_in"])
    assert isinstance(ok, ToolCall)


def test_env_counts_a_call_to_a_tool_not_offered_as_invalid(city):
    cache, index, queries = city
    env = GroundingEnv(EnvParams(tools=["landmark_query"], **SMALL), lambda s: cache, index)
    env.reset(query=queries[0], seed=0)
    obs, reward, *_, info = env.step(ZOOM)
    assert not info["step"].valid and "not offered" in obs["text"] and reward < 0
    obs, _, *_, info = env.step(LM)
    assert info["step"].valid and "Merton Hall" in obs["text"]
    # an action parsed elsewhere (the trl adapter hands them over) is checked as well
    call = ToolCall(
        name="zoom_in", arguments={"view_id": "global", "bbox_2d": (0.0, 0.0, 5.0, 5.0)}
    )
    _, _, *_, info = env.step_action(call)
    assert not info["step"].valid and "not offered" in info["step"].error


@pytest.mark.parametrize("tools", [[], ["zoom_in"], ["landmark_query", "oblique_render"]])
def test_trl_environment_class_exposes_only_the_offered_tools(city, tools):
    cache, index, queries = city
    p = EnvParams(tools=tools, max_turns=3, **SMALL)
    cls = make_environment_class(p, lambda sid: cache, index)
    names = {
        n for n, _ in inspect.getmembers(cls, predicate=inspect.isfunction) if not n.startswith("_")
    }
    assert names == {"reset", "get_reward", *tools}
    env = cls()
    env.reset(**grpo_rows(queries[:1], lambda sid: cache, p)[0])
    if "zoom_in" in tools:
        assert env.zoom_in(view_id="global", bbox_2d=[0, 0, 500, 500])[0]["type"] == "image"
    else:  # the shared machinery refuses it too
        assert "not offered" in env._run("zoom_in", {"view_id": "global", "bbox_2d": [0, 0, 5, 5]})


def test_model_policies_get_the_offered_schemas():
    from urbex.agents.registry import make_policy

    p = Params(env={"tools": ["landmark_query"]}, openai={"base_url": "http://127.0.0.1:9/v1"})
    pol = make_policy("openai", p)
    assert [t["function"]["name"] for t in pol._tools()] == ["landmark_query", "answer"]
    wf = make_policy("workflow", p.with_updates(policy={"backend": "openai"}))
    assert wf.steps == ("landmark_query", "answer")
