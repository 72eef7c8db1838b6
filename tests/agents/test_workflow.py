"""The fixed-workflow wrapper: prompt per step, redirect, rejection, budget."""

from __future__ import annotations

import json

import pytest

from urbex.agents.workflow import PAPER_WORKFLOW, WorkflowPolicy, action_name, due_step
from urbex.env.policy import PolicyBase
from urbex.env.protocol import Invalid, parse_action


def _call(tool: str, **args) -> str:
    return f"<tool_call>{json.dumps({'name': tool, 'arguments': args})}</tool_call>"


ANSWER = '<answer>{"view_id": "global", "bbox_2d": [1, 2, 30, 40]}</answer>'
OK = {"role": "tool", "name": "landmark_query", "content": [{"type": "text", "text": "fine"}]}
BAD = {"role": "tool", "name": "invalid", "content": "Invalid action: nope"}


class Scripted(PolicyBase):
    """Returns queued texts and records what it was shown."""

    def __init__(self, *texts: str) -> None:
        self.texts = list(texts)
        self.seen: list[list[dict]] = []

    def act(self, messages, images):
        self.seen.append(messages)
        return self.texts.pop(0)


def _start() -> list[dict]:
    return [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Query: x"}]},
    ]


def test_due_step_advances_only_on_accepted_in_order_actions():
    m = _start()
    assert due_step(m, PAPER_WORKFLOW, max_turns=8) == "landmark_query"
    m += [{"role": "assistant", "content": _call("zoom_in")}, OK]  # off-order: no progress
    assert due_step(m, PAPER_WORKFLOW, max_turns=8) == "landmark_query"
    m += [{"role": "assistant", "content": _call("landmark_query")}, BAD]  # rejected by env
    assert due_step(m, PAPER_WORKFLOW, max_turns=8) == "landmark_query"
    m += [{"role": "assistant", "content": _call("landmark_query")}, OK]
    assert due_step(m, PAPER_WORKFLOW, max_turns=8) == "zoom_in"
    assert due_step(m, PAPER_WORKFLOW, max_turns=4) == "answer"  # one turn left


def test_workflow_in_order_action_passes_through_with_step_prompt():
    inner = Scripted(_call("landmark_query", name="Merton Hall", view_id="global"))
    pol = WorkflowPolicy(inner)
    out = pol.act(_start(), [])
    assert action_name(out) == "landmark_query"
    shown = inner.seen[0]
    assert "fixed workflow" in shown[0]["content"]
    assert "Workflow step 1/4" in shown[-1]["content"][-1]["text"]


def test_workflow_redirects_then_accepts():
    inner = Scripted(ANSWER, _call("landmark_query", name="a", view_id="global"))
    pol = WorkflowPolicy(inner, redirects=1)
    assert action_name(pol.act(_start(), [])) == "landmark_query"
    assert (
        pol.n_redirects == 1
        and "Rejected: the workflow requires landmark_query" in inner.seen[1][-1]["content"]
    )


def test_workflow_rejects_persistent_off_order_turn_as_invalid():
    inner = Scripted(ANSWER, ANSWER)
    pol = WorkflowPolicy(inner, redirects=1)
    out = pol.act(_start(), [])
    assert isinstance(parse_action(out, known_views={"global"}), Invalid)
    assert pol.n_rejected == 1


def test_no_tools_is_a_one_step_answer_workflow():
    from urbex.agents.heuristics import no_tools_policy

    inner = Scripted(_call("zoom_in", view_id="global", bbox_2d=[0, 0, 9, 9]), ANSWER)
    pol = no_tools_policy(inner)
    assert action_name(pol.act(_start(), [])) == "answer"
    assert "no tools are available" in inner.seen[0][0]["content"]


def test_workflow_rejects_bad_steps():
    with pytest.raises(ValueError, match="ending with 'answer'"):
        WorkflowPolicy(Scripted(), steps=("zoom_in",))


def test_workflow_forwards_episode_seed_and_deadline():
    class Seeded(Scripted):
        def begin_episode(self, *, seed, deadline=None):
            self.seed, self.deadline = seed, deadline

    inner = Seeded()
    WorkflowPolicy(inner).begin_episode(seed=11)
    assert inner.seed == 11 and inner.deadline is None
    WorkflowPolicy(inner).begin_episode(seed=12, deadline=123.0)
    assert (inner.seed, inner.deadline) == (12, 123.0)


def test_workflow_answer_step_offers_a_mark_with_marks_on():
    """With numbered marks on, the answer step's hint names the mark answer, and a mark answer
    is an answer step."""
    mark = '<answer>{"mark": 7}</answer>'
    assert action_name(mark) == "answer"
    inner = Scripted(mark)
    wf = WorkflowPolicy(inner, steps=("answer",), marks=True)
    assert wf.act(_start(), []) == mark
    shown = inner.seen[0][-1]["content"][-1]["text"]
    assert '{"mark": N}' in shown
    plain = Scripted(mark)
    WorkflowPolicy(plain, steps=("answer",)).act(_start(), [])
    assert '"mark"' not in plain.seen[0][-1]["content"][-1]["text"]
