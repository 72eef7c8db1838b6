"""The policy extension point and a minimal episode loop.

Messages follow the chat format transformers/trl use: ``{"role": "system"|"user"|"assistant",
"content": str | [{"type": "image"}, {"type": "text", "text": ...}]}``; images are passed
separately, in the order their ``{"type": "image"}`` placeholders appear.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from urbex.env.protocol import system_prompt

if TYPE_CHECKING:
    from PIL import Image

    from urbex.env.episode import GroundingEnv, Query, StepRecord

__all__ = ["BatchPolicy", "Policy", "rollout"]


@runtime_checkable
class Policy(Protocol):
    """A grounding policy: the conversation so far in, one assistant turn (raw text) out."""

    def act(self, messages: list[dict[str, Any]], images: list[Image.Image]) -> str: ...


@runtime_checkable
class BatchPolicy(Policy, Protocol):
    """A :class:`Policy` that can also generate one turn for each of several episodes at once."""

    def act_batch(
        self, batch_messages: list[list[dict[str, Any]]], batch_images: list[list[Image.Image]]
    ) -> list[str]: ...


def _user(text: str, n_images: int) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [*({"type": "image"} for _ in range(n_images)), {"type": "text", "text": text}],
    }


def rollout(
    env: GroundingEnv,
    policy: Policy,
    query: Query,
    *,
    seed: int | None = None,
    options: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], list[StepRecord], list[dict[str, Any]]]:
    """Play one episode of ``policy`` on ``query``.

    Returns
    -------
    info : dict
        The final step's ``info`` (``iou_bev``, ``iou_3d``, ``center_dist_m``, ``pred_box_2d``,
        ``return``, ...; world metres).
    steps : list of StepRecord
    messages : list of dict
        The conversation (tool results come back as user turns wrapped in ``<tool_response>``).
    """
    obs, info = env.reset(query=query, seed=seed, options=options)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system_prompt(env.params, include_tool_schemas=True)},
        _user(obs["text"], len(obs["images"])),
    ]
    images = list(obs["images"])
    while True:
        text = policy.act(messages, images)
        messages.append({"role": "assistant", "content": text})
        obs, _, terminated, truncated, info = env.step(text)
        if terminated or truncated:
            break
        images.extend(obs["images"])
        messages.append(
            _user(f"<tool_response>\n{obs['text']}\n</tool_response>", len(obs["images"]))
        )
    return info, env.log, messages
