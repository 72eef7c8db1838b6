"""A tiny Qwen3-VL checkpoint built fully offline (no download): plumbing tests and CPU learning.

The model is randomly initialised. Recipe: a byte-level BPE
tokenizer with Qwen's special tokens; ``Qwen2VLImageProcessor`` (patch 16, temporal patch 2,
merge 2) + ``Qwen3VLVideoProcessor`` in a ``Qwen3VLProcessor`` with trl's Qwen3-VL chat template
(trl recognises templates by exact string); a small ``Qwen3VLConfig``.

Two tokenizers:

* no ``corpus``: the 256 byte tokens and no merges — every string encodes, nothing is learned
  (plumbing tests; a tool call is hundreds of tokens);
* a ``corpus`` (the protocol's text: system prompt, tool schemas, tool calls and answers, tool
  responses, the train split's descriptions — :func:`urbex.train.corpus.protocol_corpus`): BPE
  merges trained offline with ``tokenizers`` (digits of a number one per token, a digit inside an
  identifier kept with it; merges may span words but not a capitalised word, so a landmark's name
  is the same tokens wherever it stands; optionally one token per view unit 0–1000), so a tool
  call is tens of tokens and a small model can learn the protocol on 2 cores.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from urbex.env.world import World
from urbex.train.corpus import protocol_corpus
from urbex.train.teacher import teacher_trajectories

if TYPE_CHECKING:
    from urbex.config import Params

__all__ = [
    "ADDED_TOKENS",
    "SPECIAL_TOKENS",
    "WORD_SPLITS",
    "TinyModelSpec",
    "WordSplit",
    "make_tiny_model",
    "student_image_processor",
]

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
#: Which words a BPE merge may not cross (``make-tiny-model --words``). ``merge``: none — a merge
#: may span words, so "Harborne Car Park." and '"name": "Harborne' become tokens of their own, and
#: a landmark's name is other tokens in a description than in the ``landmark_query`` call that
#: copies it (on the bench city 39 % of the val names the teacher queries). ``names``: every
#: capitalised word is a piece of its own (with the space before a next capitalised word), so a
#: name is the same tokens wherever it stands — in a description, a call, a tool text — and
#: copying it is repeating tokens (the texts grow ~20 %). ``words``: as ``names``, and every
#: lowercase word (an identifier such as ``bbox_2d`` counts as one) is a piece of its own with
#: the space before it, so a listing's ``] green small car = 9`` and a query's ``the small green
#: car`` share the tokens `` green``, `` small``, `` car`` — with ``names`` a merge may join them
#: to their neighbours (``] green``, ``small car ``), and matching a description to a listed
#: mark is then learning which merged tokens hold which words rather than repeating tokens.
#: Measured (docs/reader.md): no earlier look-up in 1,500 reader steps, twice the seconds a
#: step (texts up to 2.4x longer), so the CPU recipe stays on ``names``.
WordSplit = Literal["merge", "names", "words"]
WORD_SPLITS: tuple[str, ...] = get_args(WordSplit)
_CAPITALISED = r"[A-Z][A-Za-z'’]*(?: (?=[A-Z]))?"
_LOWERCASE = r" ?(?<![A-Za-z0-9_'’])[a-z][a-z0-9_'’]*"  # not the tail of "Merton", "x1"


def _tokenizer(  # type: ignore[no-untyped-def]
    corpus: Iterable[str] | None = None,
    vocab_size: int = 1024,
    *,
    number_tokens: bool = False,
    words: WordSplit = "names",
):
    """The byte-level tokenizer: no merges without ``corpus``; BPE merges trained on it else
    (``words``: which words a merge may not cross, :data:`WORD_SPLITS`)."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    if corpus is None:
        vocab = {ch: i for i, ch in enumerate(sorted(alphabet))}
        tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    else:
        tok = Tokenizer(models.BPE())
        # digits of a number one per token (numbers stay compositional), but a digit inside an
        # identifier stays with it ("bbox_2d", "zoom_1": split, the model once wrote "bbox_2, 7");
        # merges may cross word boundaries, so the protocol's fixed phrases ('", "bbox_2d": [')
        # become single tokens — but not a capitalised word's (``words="names"``) nor, with
        # ``words="words"``, any word's
        tok.pre_tokenizer = pre_tokenizers.Sequence(
            [
                pre_tokenizers.Split("\n", behavior="isolated"),
                pre_tokenizers.Split(Regex(r"(?<![A-Za-z_])[0-9]"), behavior="isolated"),
                *(
                    [pre_tokenizers.Split(Regex(_CAPITALISED), behavior="isolated")]
                    if words in ("names", "words")
                    else []
                ),
                *(
                    [pre_tokenizers.Split(Regex(_LOWERCASE), behavior="isolated")]
                    if words == "words"
                    else []
                ),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
            ]
        )
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size,
            min_frequency=2,
            initial_alphabet=sorted(alphabet),
            special_tokens=[*SPECIAL_TOKENS, *ADDED_TOKENS],
            max_token_length=48,
            show_progress=False,
        )
        tok.train_from_iterator(corpus, trainer=trainer)
    tok.decoder = decoders.ByteLevel()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=list(SPECIAL_TOKENS[1:]),
    )
    fast.add_special_tokens({"additional_special_tokens": list(SPECIAL_TOKENS[1:])})
    fast.add_tokens(list(ADDED_TOKENS))
    if corpus is not None and number_tokens:
        # every view unit 0-1000 one token: a box is 4 tokens, so its shape (4 numbers, each
        # within 0..1000) is not a digit count the model must learn; "zoom_1", "x2", "2150" are
        # not matched (single_word), the last one falls back to digits. Off in the CPU recipe:
        # measured (seed 2) SFT validity rose 0.45 -> 0.77 but GRPO then degenerated into
        # endless number lists (0.55 valid).
        fast.add_tokens(
            [AddedToken(str(i), single_word=True, normalized=False) for i in range(1001)]
        )
    fast.padding_side = "left"
    return fast


@dataclass(frozen=True, slots=True, kw_only=True)
class TinyModelSpec:
    """Sizes of a tiny Qwen3-VL.

    Attributes
    ----------
    hidden_size, num_layers, num_heads, num_kv_heads, head_dim, intermediate_size
        Text decoder (``hidden_size`` a multiple of 8 in 16..512; ``num_heads`` a multiple of
        ``num_kv_heads``; ``head_dim`` a multiple of 8).
    vision_hidden_size, vision_depth
        Vision tower (``vision_depth`` >= 2: deepstack reads its layer 1).
    vocab_size
        Target BPE vocabulary (with a corpus).
    tie_embeddings
        The output layer shares the input embeddings (a token's logit is read off its own
        embedding, so copying a token from the context needs no separate output row for it).
    """

    hidden_size: int = 32
    num_layers: int = 2
    num_heads: int = 4
    num_kv_heads: int = 2
    head_dim: int = 8
    intermediate_size: int | None = None
    vision_hidden_size: int = 16
    vision_depth: int = 2
    vocab_size: int = 1024
    tie_embeddings: bool = False

    def __post_init__(self) -> None:
        if not 16 <= self.hidden_size <= 512 or self.hidden_size % 8:
            raise ValueError(
                f"hidden_size: expected a multiple of 8 in 16..512, got {self.hidden_size}"
            )
        if self.num_layers < 1 or self.num_heads < 1 or self.num_kv_heads < 1:
            raise ValueError("num_layers, num_heads, num_kv_heads: expected >= 1")
        if self.num_heads % self.num_kv_heads:
            raise ValueError(
                f"num_heads ({self.num_heads}): expected a multiple of num_kv_heads "
                f"({self.num_kv_heads})"
            )
        if self.head_dim < 8 or self.head_dim % 8:
            raise ValueError(f"head_dim: expected a multiple of 8, got {self.head_dim}")
        if self.vision_depth < 2 or self.vision_hidden_size < 8 or self.vision_hidden_size % 8:
            raise ValueError("vision_depth >= 2 and vision_hidden_size a multiple of 8 expected")
        if not 300 <= self.vocab_size <= 65536:
            raise ValueError(f"vocab_size: expected 300..65536, got {self.vocab_size}")

    def mrope_section(self) -> list[int]:
        """Rotary sections (t, h, w) summing to ``head_dim / 2`` (Qwen3-VL's 2:1:1 split)."""
        half = self.head_dim // 2
        h = w = max(half // 4, 1)
        return [half - h - w, h, w]


#: The tiny CPU recipe's model (README, ``params-cpu.yaml``): 3.8 M parameters.
RECIPE_SPEC = TinyModelSpec(
    hidden_size=256,
    num_layers=4,
    num_heads=8,
    num_kv_heads=4,
    head_dim=32,
    vision_hidden_size=64,
    vocab_size=4096,
    tie_embeddings=True,
)


def make_recipe_model(params: Params, path: str | Path, *, seed: int = 0) -> Path:
    """The CPU recipe's tiny model with its protocol BPE (what ``urbex make-tiny-model PATH
    --tokenizer protocol --hidden 256 --layers 4 --heads 8 --kv-heads 4 --head-dim 32
    --vision-hidden 64 --vocab 4096 --number-tokens --tie-embeddings`` builds, ``--words names`` its
    default): the tokenizer is trained on the
    protocol's text and, when the project's splits exist, the train split's teacher
    conversations (one path per query: the tokenizer needs the words, not the variety); every
    number 0–1000 is one token, so a mark id or a box coordinate is copied as one token, and a
    capitalised word is never merged with its neighbours, so a landmark's name is copied token for
    token."""

    trajs: list[Any] = []
    if params.layout.queries.is_file():
        world = World.from_params(params)
        trajs = teacher_trajectories(world, params.layout, params.sft, params.vlm, per_query=1)
    corpus = list(protocol_corpus(params.env, params.vlm, trajs, seed=seed))
    return make_tiny_model(path, seed=seed, spec=RECIPE_SPEC, corpus=corpus, number_tokens=True)


def student_image_processor() -> Any:
    """The image processor of urbex's built students (the tiny Qwen3-VL and the grafted
    Qwen2-VL): patches of 16 px, 2 frames a temporal patch, 2 x 2 patches merged into one token,
    so a 64 px view is 4 image tokens."""
    from transformers import Qwen2VLImageProcessor

    return Qwen2VLImageProcessor(
        patch_size=16,
        temporal_patch_size=2,
        merge_size=2,
        min_pixels=32 * 32,
        max_pixels=1024 * 1024,
    )


def make_tiny_model(
    path: str | Path,
    *,
    seed: int = 0,
    hidden_size: int = 32,
    spec: TinyModelSpec | None = None,
    corpus: Iterable[str] | None = None,
    number_tokens: bool = False,
    words: WordSplit = "names",
) -> Path:
    """Write a tiny random Qwen3-VL model + processor to ``path`` (``save_pretrained`` layout).

    Parameters
    ----------
    path
        Output directory (created; existing files overwritten).
    seed
        Torch seed for the random weights (the global torch RNG is restored afterwards).
    hidden_size
        Text hidden size when no ``spec`` is given (2 layers, 4 heads, 2 KV heads, head_dim 8).
    spec
        All sizes (:class:`TinyModelSpec`); overrides ``hidden_size``.
    corpus
        Texts to train the BPE merges on (see the module docstring); None = byte tokens only.
    number_tokens
        With a corpus: one token per view unit 0–1000 (else numbers are spelt digit by digit).
    words
        With a corpus: which words a merge may not cross (:data:`WORD_SPLITS`).

    Returns
    -------
    Path
        ``path``; load with ``AutoProcessor.from_pretrained(path)`` and
        ``AutoModelForImageTextToText.from_pretrained(path)`` (works with ``HF_HUB_OFFLINE=1``).
    """
    import torch
    from transformers import (
        Qwen3VLConfig,
        Qwen3VLForConditionalGeneration,
        Qwen3VLProcessor,
        Qwen3VLVideoProcessor,
    )
    from trl.chat_template_utils import qwen3_vl_chat_template

    sp = spec if spec is not None else TinyModelSpec(hidden_size=hidden_size)
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = _tokenizer(corpus, sp.vocab_size, number_tokens=number_tokens, words=words)
    image_processor = student_image_processor()
    video_processor = Qwen3VLVideoProcessor(patch_size=16, temporal_patch_size=2, merge_size=2)
    processor = Qwen3VLProcessor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        video_processor=video_processor,
        chat_template=qwen3_vl_chat_template,
    )
    ids = tokenizer.convert_tokens_to_ids
    config = Qwen3VLConfig(
        text_config={
            "vocab_size": len(tokenizer),
            "hidden_size": sp.hidden_size,
            "intermediate_size": sp.intermediate_size or 2 * sp.hidden_size,
            "num_hidden_layers": sp.num_layers,
            "num_attention_heads": sp.num_heads,
            "num_key_value_heads": sp.num_kv_heads,
            "head_dim": sp.head_dim,
            "max_position_embeddings": 32768,
            "rope_parameters": {
                "rope_type": "default",
                "rope_theta": 5_000_000.0,
                "mrope_section": sp.mrope_section(),
                "mrope_interleaved": True,
            },
            "pad_token_id": ids("<|endoftext|>"),
            "bos_token_id": None,
            "eos_token_id": ids("<|im_end|>"),
        },
        vision_config={
            "depth": sp.vision_depth,
            "hidden_size": sp.vision_hidden_size,
            "intermediate_size": 2 * sp.vision_hidden_size,
            "num_heads": 2,
            "patch_size": 16,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
            "out_hidden_size": sp.hidden_size,
            "num_position_embeddings": 64,
            "deepstack_visual_indexes": [1],
        },
        image_token_id=ids("<|image_pad|>"),
        video_token_id=ids("<|video_pad|>"),
        vision_start_token_id=ids("<|vision_start|>"),
        vision_end_token_id=ids("<|vision_end|>"),
        tie_word_embeddings=sp.tie_embeddings,
    )
    with torch.random.fork_rng(devices=[]):  # the caller's RNG state is left as it was
        torch.manual_seed(seed)
        model = Qwen3VLForConditionalGeneration(config)
    model.generation_config.eos_token_id = ids("<|im_end|>")
    model.generation_config.pad_token_id = ids("<|endoftext|>")
    model.save_pretrained(out)
    processor.save_pretrained(out)
    return out
