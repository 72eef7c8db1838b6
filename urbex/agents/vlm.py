"""The ``vlm`` policy: a transformers vision-language model from a LOCAL checkpoint (Qwen3-VL family).

Loads ``AutoProcessor`` + ``AutoModelForImageTextToText`` with ``local_files_only=True`` (urbex
never downloads weights: pass a directory, e.g. one made by ``urbex make-tiny-model`` or a
GRPO checkpoint). Each turn renders the conversation with the processor's chat template —
with the tools' JSON schemas (Qwen3's ``<tools>`` block) when ``template_tools`` — feeds the
images the ``{"type": "image"}`` placeholders stand for, and generates greedily or with seeded
sampling. :meth:`VLMPolicy.act_batch` generates several episodes' turns in one left-padded batch.

Seeding: with ``do_sample`` the torch RNG is seeded before each generate call from the episode
seed (:meth:`VLMPolicy.begin_episode`) and the turn number, so a resumed evaluation replays the
same samples.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from urbex.agents.checkpoints import load_local_vlm, resolve_checkpoint
from urbex.env.policy import PolicyBase, check_batch
from urbex.env.trl_adapter import template_tool_schemas
from urbex.errors import PolicyError

if TYPE_CHECKING:
    from PIL import Image

    from urbex.config import VLMParams

__all__ = ["VLMPolicy", "clean_generation"]

_STOP_TOKENS = ("<|im_end|>", "<|endoftext|>")


def clean_generation(text: str, special_tokens: Sequence[str] = ()) -> str:
    """Cut a decoded generation at the first end-of-turn token and drop special tokens.

    Special tokens (``<|image_pad|>``, ``<|vision_start|>``, ...) must not survive into the
    conversation: the next turn's processor would count a stray image placeholder.
    ``<tool_call>``-style *added* tokens are kept.

    >>> clean_generation('<tool_call>{"a": 1}</tool_call><|im_end|>junk')
    '<tool_call>{"a": 1}</tool_call>'
    >>> clean_generation("<|endoftext|>hi<|image_pad|>", ["<|image_pad|>"])
    'hi'
    """
    s = text.replace("<|endoftext|>", "")
    cut = s.find("<|im_end|>")
    s = s if cut < 0 else s[:cut]
    for tok in special_tokens:
        s = s.replace(tok, "")
    return s.strip()


def _check_device(torch: Any, device: str) -> None:
    """Raise :class:`PolicyError` unless ``device`` names a torch device present here.

    Checked before the weights load, so a typo costs no load time and reads as one line.
    """
    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError) as exc:
        raise PolicyError(
            f"not a torch device: {device!r}; expected cpu, cuda, cuda:N, mps, ...",
            field="vlm.device",
        ) from exc
    if dev.type == "cuda":
        n = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if n == 0:
            raise PolicyError(
                f"{device!r} asked for, but no CUDA device is visible here; set vlm.device: cpu",
                field="vlm.device",
            )
        if dev.index is not None and dev.index >= n:
            raise PolicyError(
                f"{device!r} asked for, but only {n} CUDA device(s) are visible "
                f"(cuda:0..cuda:{n - 1})",
                field="vlm.device",
            )


def _turn_seed(seed: int, turn: int) -> int:
    h = hashlib.blake2b(f"{seed}:{turn}".encode(), digest_size=8).digest()
    return int.from_bytes(h, "little") & 0x7FFF_FFFF


class VLMPolicy(PolicyBase):
    """A local transformers VLM acting through the text protocol.

    Parameters
    ----------
    checkpoint
        A local directory in ``save_pretrained`` layout (model + processor).
    device
        ``"cpu"``, ``"cuda"``, ``"cuda:1"``, ...
    dtype
        ``"auto"``, ``"float32"``, ``"bfloat16"`` or ``"float16"``.
    max_new_tokens, do_sample, temperature, top_p
        Generation settings (greedy when ``do_sample`` is False).
    template_tools
        Pass the tool schemas to the chat template (the template then lists them).
    tool_names
        Tools listed to the model (default: all). ``()`` lists none (``no_tools``).
    max_batch
        Episodes generated in lockstep by the evaluation loop (``vlm.batch_size``).

    Raises
    ------
    PolicyError
        ``checkpoint`` is not a loadable local model directory, or ``device`` is unknown or
        not present (checked before the weights load).
    """

    def __init__(
        self,
        checkpoint: str | Path,
        *,
        device: str = "cpu",
        dtype: str = "float32",
        max_new_tokens: int = 256,
        do_sample: bool = False,
        temperature: float = 0.7,
        top_p: float = 0.95,
        template_tools: bool = True,
        tool_names: tuple[str, ...] | None = None,
        max_batch: int = 1,
    ) -> None:
        path = resolve_checkpoint(None, checkpoint, field="vlm.checkpoint")
        if dtype not in ("auto", "float32", "bfloat16", "float16"):
            raise ValueError(f"dtype: expected auto/float32/bfloat16/float16, got {dtype!r}")
        import torch  # heavy: imported when a model is loaded

        _check_device(torch, device)
        self.model, self.processor = load_local_vlm(path, dtype=dtype, field="vlm.checkpoint")
        # transformers decorates PreTrainedModel.to with functools.wraps; typeshed's _Wrapped
        # is not a descriptor, so mypy does not bind ``self`` (stub gap, not a real mismatch).
        self.model.to(device)  # type: ignore[arg-type]
        self.model.eval()
        tok = self.processor.tokenizer
        tok.padding_side = "left"
        self.checkpoint = path
        self.device = device
        self.max_new_tokens = int(max_new_tokens)
        self.do_sample = bool(do_sample)
        self.temperature = float(temperature)
        self.top_p = float(top_p)
        self.template_tools = bool(template_tools)
        self.tool_names = tool_names
        self.template_lists_tools = self.template_tools
        if max_batch < 1:
            raise ValueError(f"max_batch: expected >= 1, got {max_batch}")
        self.max_batch = int(max_batch)
        self.seed = 0
        self._pad_id = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id

    @classmethod
    def from_params(
        cls,
        p: VLMParams,
        *,
        checkpoint: str | Path | None = None,
        base_dir: Path | None = None,
        **overrides: Any,
    ) -> VLMPolicy:
        """From the ``vlm`` params section; ``checkpoint`` overrides ``vlm.checkpoint``, and a
        relative one is read against ``base_dir`` (the params file's folder).

        Raises
        ------
        PolicyError
            No checkpoint given in either place.
        """

        ckpt = resolve_checkpoint(
            base_dir,
            checkpoint if checkpoint is not None else p.checkpoint,
            field="vlm.checkpoint",
        )
        kw: dict[str, Any] = {
            "device": p.device,
            "dtype": p.dtype,
            "max_new_tokens": p.max_new_tokens,
            "do_sample": p.do_sample,
            "temperature": p.temperature,
            "top_p": p.top_p,
            "template_tools": p.template_tools,
            "max_batch": p.batch_size,
        }
        kw.update(overrides)
        return cls(ckpt, **kw)

    def __repr__(self) -> str:
        return f"VLMPolicy(checkpoint={str(self.checkpoint)!r}, device={self.device!r})"

    def begin_episode(self, *, seed: int, deadline: float | None = None) -> None:
        """Set the episode seed used for sampling (local generation ignores the deadline; the
        loop checks the episode budget between turns)."""
        self.seed = int(seed)

    def _tools(self) -> list[dict[str, Any]] | None:
        if not self.template_tools:
            return None

        return template_tool_schemas(self.tool_names) or None

    def prompt_text(self, messages: list[dict[str, Any]]) -> str:
        """The chat-template rendering of ``messages`` (with the generation prompt)."""
        return self.processor.apply_chat_template(
            messages, tools=self._tools(), add_generation_prompt=True, tokenize=False
        )

    def act(self, messages: list[dict[str, Any]], images: list[Image.Image]) -> str:
        """One assistant turn (raw text)."""
        return self.act_batch([messages], [images])[0]

    def act_batch(
        self, batch_messages: list[list[dict[str, Any]]], batch_images: list[list[Image.Image]]
    ) -> list[str]:
        """One assistant turn for each of several episodes, generated as one left-padded batch."""
        import torch

        check_batch(batch_messages, batch_images)
        if not batch_messages:
            return []
        texts = [self.prompt_text(m) for m in batch_messages]
        flat = [im.convert("RGB") for ims in batch_images for im in ims]
        inputs = self.processor(
            text=texts, images=flat or None, return_tensors="pt", padding=True
        ).to(self.device)
        gen: dict[str, Any] = {
            "max_new_tokens": self.max_new_tokens,
            "do_sample": self.do_sample,
            "pad_token_id": self._pad_id,
        }
        if self.do_sample:
            gen.update(temperature=self.temperature, top_p=self.top_p)
            turn = sum(1 for m in batch_messages[0] if m.get("role") == "assistant")
            torch.manual_seed(_turn_seed(self.seed, turn))
        else:
            gen.update(temperature=None, top_p=None, top_k=None)
        with torch.inference_mode():
            out = self.model.generate(**inputs, **gen)
        new = out[:, inputs["input_ids"].shape[1] :]
        decoded = self.processor.batch_decode(new, skip_special_tokens=False)
        specials = self.processor.tokenizer.all_special_tokens
        return [clean_generation(t, specials) for t in decoded]
