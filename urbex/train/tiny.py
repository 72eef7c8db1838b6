"""A tiny Qwen3-VL checkpoint built fully offline (no download), for plumbing tests.

The model is randomly initialised and generates gibberish; it proves that tokenisation, image
processing, the chat template with tools, trl's GRPO loop and our environment fit together.
Recipe (STACK_NOTES "A tiny Qwen3-VL"): a byte-level BPE tokenizer with no merges (every string
encodes) and Qwen's special tokens; ``Qwen2VLImageProcessor`` (patch 16, temporal patch 2,
merge 2) + ``Qwen3VLVideoProcessor`` in a ``Qwen3VLProcessor`` with trl's Qwen3-VL chat template
(trl recognises templates by exact string); a 2-layer ``Qwen3VLConfig``.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["SPECIAL_TOKENS", "make_tiny_model"]

#: Special tokens (in id order after the 256 byte tokens).
SPECIAL_TOKENS: tuple[str, ...] = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
)
#: Added (non-special) tokens the Qwen3 tool-calling format uses.
ADDED_TOKENS: tuple[str, ...] = (
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
)


def _tokenizer():  # type: ignore[no-untyped-def]
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {ch: i for i, ch in enumerate(sorted(alphabet))}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=list(SPECIAL_TOKENS[1:]),
    )
    fast.add_special_tokens({"additional_special_tokens": list(SPECIAL_TOKENS[1:])})
    fast.add_tokens(list(ADDED_TOKENS))
    fast.padding_side = "left"
    return fast


def make_tiny_model(path: str | Path, *, seed: int = 0, hidden_size: int = 32) -> Path:
    """Write a tiny random Qwen3-VL model + processor to ``path`` (``save_pretrained`` layout).

    Parameters
    ----------
    path
        Output directory (created; existing files overwritten).
    seed
        Torch seed for the random weights (the global torch RNG is restored afterwards).
    hidden_size
        Text hidden size (16–64); 2 layers, 4 heads, 2 KV heads, head_dim 8.

    Returns
    -------
    Path
        ``path``; load with ``AutoProcessor.from_pretrained(path)`` and
        ``AutoModelForImageTextToText.from_pretrained(path)`` (works with ``HF_HUB_OFFLINE=1``).
    """
    import torch
    from transformers import (
        Qwen2VLImageProcessor,
        Qwen3VLConfig,
        Qwen3VLForConditionalGeneration,
        Qwen3VLProcessor,
        Qwen3VLVideoProcessor,
    )
    from trl.chat_template_utils import qwen3_vl_chat_template

    if not 16 <= hidden_size <= 256 or hidden_size % 8:
        raise ValueError(f"hidden_size: expected a multiple of 8 in 16..256, got {hidden_size}")
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = _tokenizer()
    image_processor = Qwen2VLImageProcessor(
        patch_size=16,
        temporal_patch_size=2,
        merge_size=2,
        min_pixels=32 * 32,
        max_pixels=1024 * 1024,
    )
    video_processor = Qwen3VLVideoProcessor(patch_size=16, temporal_patch_size=2, merge_size=2)
    processor = Qwen3VLProcessor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        video_processor=video_processor,
        chat_template=qwen3_vl_chat_template,
    )
    ids = tokenizer.convert_tokens_to_ids
    head_dim = 8
    config = Qwen3VLConfig(
        text_config={
            "vocab_size": len(tokenizer),
            "hidden_size": hidden_size,
            "intermediate_size": 2 * hidden_size,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "head_dim": head_dim,
            "max_position_embeddings": 32768,
            "rope_parameters": {
                "rope_type": "default",
                "rope_theta": 5_000_000.0,
                "mrope_section": [2, 1, 1],
                "mrope_interleaved": True,
            },
            "pad_token_id": ids("<|endoftext|>"),
            "bos_token_id": None,
            "eos_token_id": ids("<|im_end|>"),
        },
        vision_config={
            "depth": 2,
            "hidden_size": 16,
            "intermediate_size": 32,
            "num_heads": 2,
            "patch_size": 16,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
            "out_hidden_size": hidden_size,
            "num_position_embeddings": 64,
            "deepstack_visual_indexes": [1],
        },
        image_token_id=ids("<|image_pad|>"),
        video_token_id=ids("<|video_pad|>"),
        vision_start_token_id=ids("<|vision_start|>"),
        vision_end_token_id=ids("<|vision_end|>"),
        tie_word_embeddings=False,
    )
    state = torch.random.get_rng_state()
    try:
        torch.manual_seed(seed)
        model = Qwen3VLForConditionalGeneration(config)
    finally:
        torch.random.set_rng_state(state)
    model.generation_config.eos_token_id = ids("<|im_end|>")
    model.generation_config.pad_token_id = ids("<|endoftext|>")
    model.save_pretrained(out)
    processor.save_pretrained(out)
    return out
