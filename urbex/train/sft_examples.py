"""SFT's examples: teacher conversations rendered with the chat template, and the labels that
supervise their assistant turns only (:mod:`urbex.train.sft` trains on them; the reader stage's
whole-turn drills are the same examples)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from urbex.env.trl_adapter import template_tool_schemas
from urbex.errors import ConfigError

if TYPE_CHECKING:
    from urbex.config import VLMParams
    from urbex.config_env import EnvParams
    from urbex.env.trajectory import Trajectory

__all__ = ["SFTExample", "assistant_labels", "example_batch", "render_examples"]


# ---------------------------------------------------------------------------------------------
# rendering and masking
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class SFTExample:
    """One rendered conversation: its chat-template text and its images (placeholder order)."""

    text: str
    images: tuple[Any, ...] = field(repr=False)
    query_id: str
    #: Per assistant turn: supervised (a valid action) or not (a teacher's deliberate mistake).
    supervised: tuple[bool, ...] = ()


def _tools(env: EnvParams, vlm: VLMParams) -> list[dict[str, Any]] | None:
    """The tool schemas the chat template lists (None when the ``vlm`` policy's does not)."""
    return template_tool_schemas(env.tools) if vlm.template_tools else None


def render_examples(
    trajectories: Sequence[Trajectory], processor: Any, env: EnvParams, vlm: VLMParams
) -> list[SFTExample]:
    """Each trajectory's conversation rendered with the processor's chat template (with the
    tools of ``env.tools`` when ``vlm.template_tools``)."""
    tools = _tools(env, vlm)
    out = []
    for t in trajectories:
        text = processor.apply_chat_template(
            list(t.messages), tools=tools, add_generation_prompt=False, tokenize=False
        )
        out.append(
            SFTExample(
                text=text,
                images=t.images,
                query_id=t.query.query_id,
                supervised=tuple(s.valid for s in t.steps),
            )
        )
    return out


def assistant_labels(
    input_ids: Any,
    tokenizer: Any,
    attention_mask: Any = None,
    supervised: Sequence[Sequence[bool]] | None = None,
) -> Any:
    """Labels for the assistant turns only: ``input_ids`` where a token belongs to an assistant
    turn's content or its closing ``<|im_end|>``, ``-100`` elsewhere (and on padding).

    Parameters
    ----------
    input_ids : torch.LongTensor, shape (B, T)
    tokenizer
        The processor's tokenizer (``<|im_start|>``, ``<|im_end|>`` and ``assistant\\n`` ids).
    attention_mask : torch.LongTensor, shape (B, T), optional
        Padding (0) is never supervised, even after an unterminated assistant turn.
    supervised : sequence of sequence of bool, optional
        Per row, per assistant turn (in order): False leaves that turn unsupervised (a mistake
        the conversation recovers from). Turns past the end of a row's list are supervised.
    """
    import torch

    start = tokenizer.convert_tokens_to_ids("<|im_start|>")
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    head = tokenizer.encode("assistant\n", add_special_tokens=False)
    labels = torch.full_like(input_ids, -100)
    ids = input_ids.tolist()
    for b, row in enumerate(ids):
        keep = list(supervised[b]) if supervised is not None else []
        i, n, turn = 0, len(row), 0
        while i < n:
            if row[i] == start and row[i + 1 : i + 1 + len(head)] == head:
                j = i + 1 + len(head)
                k = j
                while k < n and row[k] != end:
                    k += 1
                if turn >= len(keep) or keep[turn]:
                    labels[b, j : min(k + 1, n)] = input_ids[b, j : min(k + 1, n)]
                turn += 1
                i = k
            i += 1
    if attention_mask is not None:
        labels[attention_mask == 0] = -100
    return labels


def example_batch(
    processor: Any, examples: Sequence[SFTExample], max_length: int | None
) -> dict[str, Any]:
    """The processor's tensors of ``examples`` (padded; images in placeholder order) with
    :func:`assistant_labels` as ``labels``; a ConfigError when one is over ``max_length``."""
    texts = [e.text for e in examples]
    images = [im.convert("RGB") for e in examples for im in e.images]
    inputs = processor(text=texts, images=images or None, return_tensors="pt", padding=True)
    if max_length is not None and inputs["input_ids"].shape[1] > max_length:
        raise ConfigError(
            f"an SFT example is {inputs['input_ids'].shape[1]} tokens, over "
            f"sft.max_length={max_length}; raise sft.max_length or shrink the images "
            "(env.global_view_size / zoom_size / oblique_size)",
            field="sft.max_length",
        )
    inputs["labels"] = assistant_labels(
        inputs["input_ids"],
        processor.tokenizer,
        inputs["attention_mask"],
        [e.supervised for e in examples],
    )
    return dict(inputs)
