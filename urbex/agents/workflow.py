"""The ``workflow`` and ``no_tools`` policies: a fixed action order imposed on a model policy.

The paper's fixed workflow (appendix D.2) is Landmark Query → Zoom-in → Oblique Render → Answer.
:class:`WorkflowPolicy` wraps any model policy (``vlm``, ``openai``); the model still fills in
every argument (which landmark, where to zoom, what to render, the box). The order is enforced
two ways:

1. **by the prompt**: the system message states the workflow and each turn's last user message
   says which step is due;
2. **by rejection**: if the model produces another action, it is re-asked up to ``redirects``
   times with a correction (inside the same turn); if it still disobeys, the turn is rejected —
   the wrapper returns a text without an action, which the environment counts as an invalid
   turn (a turn and a penalty), and the same step is due again next turn.

A step is done when its action was accepted (the next tool response does not start with
``Invalid action``). When only one turn is left, the answer is due whatever the step.
``no_tools`` is the same wrapper with the single step ``answer``: answer from the global view.

The wrapper is stateless: the due step is derived from the conversation each turn.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from urbex.env.policy import PolicyBase
from urbex.tool_vocabulary import ENV_TOOLS, ToolName

if TYPE_CHECKING:
    from PIL import Image

    from urbex.env.policy import Policy

__all__ = ["PAPER_WORKFLOW", "WorkflowPolicy", "action_name", "due_step"]

#: The paper's order (appendix D.2).
PAPER_WORKFLOW: tuple[str, ...] = (*ENV_TOOLS, ToolName.ANSWER)

_STEPS = set(ToolName)
_CALL_RE = re.compile(r"<tool_call>(.*?)</tool_call>", re.S)
_HINTS: dict[str, str] = {
    ToolName.LANDMARK_QUERY: 'call landmark_query with the landmark the query names, on view "global"',
    ToolName.ZOOM_IN: "call zoom_in on the region where the target should be",
    ToolName.OBLIQUE_RENDER: "call oblique_render on the candidate in your latest zoom view",
    ToolName.ANSWER: "give the final <answer> with a box in a global or zoom view",
}
#: The answer step's hint with numbered marks on (``env.marks``).
_MARK_ANSWER_HINT = (
    'give the final <answer>: a mark shown so far ({"mark": N}) or a box in a global or zoom view'
)


def action_name(text: str) -> str | None:
    """The action a model turn holds: a tool name, ``"answer"``, or None (none/unparseable).

    Only classifies; the environment validates.

    >>> action_name('<think>x</think><tool_call>{"name": "zoom_in", "arguments": {}}</tool_call>')
    'zoom_in'
    >>> action_name('<answer>{"view_id": "global", "bbox_2d": [1, 2, 3, 4]}</answer>')
    'answer'
    >>> action_name("no idea") is None
    True
    """
    body = re.sub(r"<think>.*?</think>", "", text, flags=re.S)
    if "<answer>" in body and "<tool_call>" not in body:
        return ToolName.ANSWER
    m = _CALL_RE.search(body)
    if not m:
        return None
    try:
        obj = json.loads(m.group(1))
    except ValueError:
        return None
    name = obj.get("name") if isinstance(obj, dict) else None
    return name if isinstance(name, str) else None


def _text(message: dict[str, Any]) -> str:
    c = message.get("content")
    if isinstance(c, str):
        return c
    return "".join(p.get("text", "") for p in c or [] if isinstance(p, dict))


def due_step(messages: Sequence[dict[str, Any]], steps: Sequence[str], *, max_turns: int) -> str:
    """The step due on this turn, from the conversation so far.

    >>> ok = {"role": "tool", "name": "landmark_query", "content": "found"}
    >>> bad = {"role": "tool", "name": "invalid", "content": "Invalid action: x"}
    >>> lq = {"role": "assistant", "content": '<tool_call>{"name": "landmark_query"}</tool_call>'}
    >>> due_step([lq, ok], PAPER_WORKFLOW, max_turns=8)
    'zoom_in'
    >>> due_step([lq, bad], PAPER_WORKFLOW, max_turns=8)
    'landmark_query'
    >>> due_step([lq, bad], PAPER_WORKFLOW, max_turns=2)  # last turn: answer
    'answer'
    """
    done = 0
    used = 0
    msgs = list(messages)
    for i, m in enumerate(msgs):
        if m.get("role") != "assistant":
            continue
        used += 1
        name = action_name(_text(m))
        nxt = _text(msgs[i + 1]) if i + 1 < len(msgs) else ""
        accepted = (
            not nxt.lstrip().removeprefix("<tool_response>").lstrip().startswith("Invalid action")
        )
        if done < len(steps) and name == steps[done] and accepted:
            done += 1
    if max_turns - used <= 1 or done >= len(steps):
        return ToolName.ANSWER
    return steps[done]


class WorkflowPolicy(PolicyBase):
    """Impose a fixed step order on a model policy (see the module docstring).

    Parameters
    ----------
    inner
        The model policy (``act(messages, images) -> str``).
    steps
        The order; must end with ``"answer"``. Default: :data:`PAPER_WORKFLOW`.
    max_turns
        The environment's turn budget (``params.env.max_turns``).
    redirects
        Re-asks with a correction before a disobeying turn is rejected.
    marks
        Numbered marks are on (``env.marks``): the answer step's hint offers a mark.
    """

    def __init__(
        self,
        inner: Policy,
        *,
        steps: Sequence[str] = PAPER_WORKFLOW,
        max_turns: int = 8,
        redirects: int = 1,
        marks: bool = False,
    ) -> None:
        steps = tuple(steps)
        if not steps or steps[-1] != ToolName.ANSWER or not set(steps) <= _STEPS:
            raise ValueError(
                f"steps: expected tool names ending with {ToolName.ANSWER!r}, got {steps}"
            )
        if max_turns < 1 or redirects < 0:
            raise ValueError(
                f"max_turns >= 1 and redirects >= 0 expected, got {max_turns}, {redirects}"
            )
        self.inner = inner
        self.steps = steps
        self.max_turns = int(max_turns)
        self.redirects = int(redirects)
        self.marks = bool(marks)
        self.n_redirects = 0
        self.n_rejected = 0
        self._lock = threading.Lock()  # the counters, when threads share this wrapper

    @property
    def template_lists_tools(self) -> bool:  # type: ignore[override]
        """As the wrapped policy's template."""
        return self.inner.template_lists_tools

    @property
    def max_concurrency(self) -> int:  # type: ignore[override]
        """As the wrapped policy (the wrapper itself keeps no episode state)."""
        return self.inner.max_concurrency

    def _count(self, name: str) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + 1)

    def begin_episode(self, *, seed: int, deadline: float | None = None) -> None:
        """Forward the episode seed and deadline to the wrapped policy."""
        self.inner.begin_episode(seed=seed, deadline=deadline)

    def _system_note(self) -> str:
        if self.steps == (ToolName.ANSWER,):
            return "\n\nIn this run no tools are available: give your <answer> on the first turn, from the global view."
        order = " -> ".join(self.steps)
        return f"\n\nThis run follows a fixed workflow, one step per turn: {order}."

    def _with_instruction(
        self, messages: list[dict[str, Any]], step: str, n: int
    ) -> list[dict[str, Any]]:
        out = [dict(m) for m in messages]
        if out and out[0].get("role") == "system" and isinstance(out[0].get("content"), str):
            out[0]["content"] = out[0]["content"] + self._system_note()
        hint = _MARK_ANSWER_HINT if step == ToolName.ANSWER and self.marks else _HINTS[step]
        note = f"\nWorkflow step {n}/{len(self.steps)}: {hint}."
        for m in reversed(out):
            if m.get("role") in ("user", "tool"):
                c = m.get("content")
                if isinstance(c, str):
                    m["content"] = c + note
                else:
                    m["content"] = [*(c or []), {"type": "text", "text": note}]
                break
        return out

    def act(self, messages: list[dict[str, Any]], images: list[Image.Image]) -> str:
        """One turn of the wrapped model, redirected/rejected when off the workflow."""
        step = due_step(messages, self.steps, max_turns=self.max_turns)
        n = self.steps.index(step) + 1
        msgs = self._with_instruction(messages, step, n)
        text = self.inner.act(msgs, images)
        for _ in range(self.redirects):
            got = action_name(text)
            if got == step:
                return text
            self._count("n_redirects")
            msgs = [
                *msgs,
                {"role": "assistant", "content": text},
                {
                    "role": "user",
                    "content": f"Rejected: the workflow requires {step} now, but you produced "
                    f"{got or 'no valid action'}. Output exactly one {step} action.",
                },
            ]
            text = self.inner.act(msgs, images)
        got = action_name(text)
        if got == step:
            return text
        self._count("n_rejected")
        return f"[workflow] turn rejected: {step} was due, the model produced {got or 'no valid action'}."
