"""The protocol's text, for training a tiny model's BPE tokenizer offline.

:func:`protocol_corpus` yields what a policy reads and writes: the system prompt (with and
without the tool schemas) rendered with the chat template (and its ``<tools>`` block when
``vlm.template_tools``), seeded tool calls and answers in the exact action format (numbers
0–1000), and — when teacher trajectories are given — their whole conversations rendered the
same way (tool responses included; the descriptions are the split's). Nothing is downloaded.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from urbex.env.prompts import system_prompt
from urbex.env.trl_adapter import template_tool_schemas
from urbex.tool_vocabulary import ToolName

if TYPE_CHECKING:
    from urbex.config import VLMParams
    from urbex.config_env import EnvParams
    from urbex.env.trajectory import Trajectory

__all__ = ["protocol_corpus"]


def protocol_corpus(
    env: EnvParams,
    vlm: VLMParams,
    trajectories: Sequence[Trajectory] = (),
    *,
    n_actions: int = 2000,
    seed: int = 0,
) -> Iterator[str]:
    """Texts of the protocol (see the module docstring), deterministic for a seed.

    >>> from urbex.config import EnvParams, VLMParams
    >>> texts = list(protocol_corpus(EnvParams(), VLMParams(), n_actions=3))
    >>> any(t.startswith("<tool_call>") for t in texts), any("<answer>" in t for t in texts)
    (True, True)
    """
    from transformers.utils.chat_template_utils import render_jinja_template
    from trl.chat_template_utils import qwen3_vl_chat_template

    p = env
    tools = template_tool_schemas(env.tools) if vlm.template_tools else None

    def render(messages: list[dict[str, object]]) -> str:
        out: Any = render_jinja_template(
            conversations=[messages],
            tools=tools,  # type: ignore[arg-type]
            chat_template=qwen3_vl_chat_template,
        )
        return str(out[0][0])

    for schemas in (True, False):
        yield render(
            [{"role": "system", "content": system_prompt(p, include_tool_schemas=schemas)}]
        )
    rng = np.random.default_rng(seed)
    views = ["global", "zoom_1", "zoom_2", "oblique_1"]
    for _ in range(n_actions):
        a, b = np.sort(rng.integers(0, 1001, size=2))
        c, d = np.sort(rng.integers(0, 1001, size=2))
        box = [int(a), int(c), int(max(b, a + 1)), int(max(d, c + 1))]
        view = str(rng.choice(views[:3]))
        kind = int(rng.integers(0, 4))
        if kind == 0:
            args: dict[str, object] = {"view_id": view, "bbox_2d": box}
            yield f"<tool_call>{json.dumps({'name': ToolName.ZOOM_IN, 'arguments': args})}</tool_call>"
        elif kind == 1:
            args = {
                "view_id": view,
                "bbox_2d": box,
                "azimuth_deg": int(rng.choice([0, 90, 180, 270])),
            }
            yield f"<tool_call>{json.dumps({'name': ToolName.OBLIQUE_RENDER, 'arguments': args})}</tool_call>"
        elif kind == 2 and p.marks.enabled and rng.random() < 0.5:
            yield f"<answer>{json.dumps({'mark': int(rng.integers(1, 200))})}</answer>"
        elif kind == 2:
            yield f"<answer>{json.dumps({'view_id': view, 'bbox_2d': box})}</answer>"
        else:
            yield f"\nTurns left: {int(rng.integers(1, p.max_turns))}."
    for t in trajectories:
        yield render(list(t.messages))
