"""Local VLM checkpoints: one resolver and one loader for every consumer.

urbex never downloads weights: a checkpoint is a local directory holding a transformers model
(``config.json`` + weights) and its processor (tokenizer + image processor), e.g. a Qwen3-VL
snapshot or one written by ``urbex make-tiny-model PATH``. :func:`resolve_checkpoint` turns a
configured path (relative ones against the params file's directory) into such a directory or
a clear error; :func:`load_local_vlm` loads model and processor from it. The ``vlm`` policy,
SFT and GRPO all go through both. Publishing trained checkpoints is
:func:`urbex.train.publish.publish_checkpoint`'s.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from urbex.config import RecipeParams
from urbex.errors import ConfigError, PolicyError
from urbex.layout import GRPO_SUMMARY_FILE, READER_SUMMARY_FILE, SFT_SUMMARY_FILE

__all__ = [
    "STAGE_SUMMARY_FILES",
    "check_checkpoint",
    "check_vocabulary",
    "load_local_vlm",
    "read_recipe",
    "recipe_record",
    "resolve_checkpoint",
]

#: The summary JSON each training stage writes beside its model (stage → file name).
STAGE_SUMMARY_FILES = {
    "reader": READER_SUMMARY_FILE,
    "sft": SFT_SUMMARY_FILE,
    "grpo": GRPO_SUMMARY_FILE,
}

_OFFLINE_HINT = (
    "urbex never downloads weights — pass a directory, e.g. one written by "
    "`urbex make-tiny-model PATH`"
)


def resolve_checkpoint(
    base_dir: Path | None, checkpoint: str | Path | None, *, field: str, flag: str = "--checkpoint"
) -> Path:
    """The local checkpoint directory ``checkpoint`` names.

    Parameters
    ----------
    base_dir
        Relative paths are resolved against it (``params.base_dir``: the params file's
        directory); None: against the working directory.
    checkpoint
        The path given (the command-line flag, else the params key ``field``).
    field
        The params key that sets it (``vlm.checkpoint``, ``sft.checkpoint``,
        ``train.checkpoint``), named in the errors.

    Raises
    ------
    ConfigError
        ``checkpoint`` is None.
    PolicyError
        The path is not a directory with a ``config.json``.
    """
    if checkpoint is None:
        raise ConfigError(
            f"needs a LOCAL checkpoint directory (e.g. a Qwen3-VL-4B-Instruct snapshot): pass "
            f"{flag} PATH or set {field} (`urbex make-tiny-model PATH` builds one offline)",
            field=field,
        )
    path = Path(checkpoint)
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    if not path.is_dir() or not (path / "config.json").is_file():
        raise PolicyError(
            f"not a local checkpoint directory (config.json missing); {_OFFLINE_HINT}",
            path=path,
            field=field,
        )
    check_checkpoint(path, field=field)
    return path


#: ``config.json`` sizes (top level, ``text_config``, ``vision_config``) that must be whole
#: numbers > 0 where present: a string or a float there fails deep inside transformers.
_SIZE_FIELDS = (
    "hidden_size",
    "intermediate_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "vocab_size",
    "depth",
    "num_heads",
    "out_hidden_size",
)


def _is_count(v: Any) -> bool:
    """A whole number >= 0 (JSON ``true`` is not one)."""
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _safetensors_tensors(f: Path) -> dict[str, Any]:
    """The tensor table of the safetensors file ``f`` (``{name: {dtype, shape, data_offsets}}``),
    read from its header only: 8 bytes of length, then a JSON object of tensors and their byte
    ranges. Raises ValueError saying what is wrong (truncated, not a table, bad offsets)."""
    size = f.stat().st_size
    with open(f, "rb") as fh:
        n = int.from_bytes(fh.read(8), "little")
        if size < 8 or n <= 0 or 8 + n > size:
            raise ValueError(f"header length {n} does not fit a {size}-byte file (truncated?)")
        try:
            header = json.loads(fh.read(n))
        except RecursionError:
            raise ValueError("header nested too deeply to be a table of tensors") from None
    if not isinstance(header, dict):
        raise ValueError(f"header is a JSON {type(header).__name__}, not an object of tensors")
    tensors = {k: v for k, v in header.items() if k != "__metadata__"}
    for name, t in tensors.items():
        offsets = t.get("data_offsets") if isinstance(t, dict) else None
        shape = t.get("shape") if isinstance(t, dict) else None
        if not (
            isinstance(offsets, list)
            and len(offsets) == 2
            and all(_is_count(o) for o in offsets)
            and offsets[0] <= offsets[1]
        ):
            raise ValueError(f"tensor {name!r}: data_offsets {offsets!r} is not [begin, end]")
        if not (isinstance(shape, list) and all(_is_count(d) for d in shape)):
            raise ValueError(f"tensor {name!r}: shape {shape!r} is not a list of sizes")
    need = 8 + n + max((t["data_offsets"][1] for t in tensors.values()), default=0)
    if need > size:
        raise ValueError(f"{size} bytes where the tensors need {need} (truncated copy?)")
    return tensors


def _config_problem(config: Any, tensors: dict[str, Any]) -> str | None:
    """What is wrong with the parsed ``config.json`` (a size that is not a whole number, weights
    of another width than ``hidden_size``), or None."""
    if not isinstance(config, dict):
        return f"a JSON {type(config).__name__}, not an object of settings"
    for section in ("", "text_config", "vision_config"):
        sub = config.get(section, {}) if section else config
        if not isinstance(sub, dict):
            return f"{section}: expected an object of settings, got {sub!r}"
        for key in _SIZE_FIELDS:
            v = sub.get(key)
            if v is not None and not (_is_count(v) and v > 0):
                where = f"{section}.{key}" if section else key
                return f"{where}: expected a whole number > 0, got {v!r}"
    text = config.get("text_config") or config
    hidden = text.get("hidden_size")
    for name, t in sorted(tensors.items()):
        if hidden and name.endswith(("embed_tokens.weight", "lm_head.weight")) and t["shape"]:
            if t["shape"][-1] != hidden:
                return (
                    f"hidden_size {hidden} but the weights are {t['shape'][-1]} wide ({name} "
                    f"{t['shape']}): config and weights are of different models"
                )
    return None


def check_checkpoint(path: Path, *, field: str | None = None) -> None:
    """Refuse, before any episode or training step, a checkpoint that cannot load: weights
    missing, truncated or of another width than the config, a damaged config, no tokenizer, no
    image processor. Reads ``config.json`` and file headers only (no torch).

    Raises
    ------
    PolicyError
        Naming the file and what is wrong, on one line.
    """
    index = path / "model.safetensors.index.json"
    if index.is_file():
        try:
            weight_map = json.loads(index.read_text())["weight_map"]
            shards = sorted(set(weight_map.values()))
        except (OSError, ValueError, KeyError, AttributeError, TypeError, RecursionError) as exc:
            raise PolicyError(f"unreadable weight index ({exc})", path=index, field=field) from exc
        if not all(isinstance(s, str) and s for s in shards):
            bad = next(s for s in shards if not (isinstance(s, str) and s))
            raise PolicyError(
                f"weight_map values must be shard file names, got {bad!r}", path=index, field=field
            )
        files = [path / s for s in shards]
    else:
        files = sorted(path.glob("*.safetensors"))
    if not files and not any(path.glob("pytorch_model*.bin")):
        raise PolicyError(
            "the checkpoint holds no weights (model.safetensors or an index of shards)",
            path=path,
            field=field,
        )
    tensors: dict[str, Any] = {}
    for f in files:
        if not f.is_file():
            raise PolicyError(
                f"unloadable weights: {f.name}: missing (named by the index)", path=f, field=field
            )
        try:
            tensors.update(_safetensors_tensors(f))
        except (OSError, ValueError) as exc:
            raise PolicyError(f"unloadable weights: {f.name}: {exc}", path=f, field=field) from exc
    config = path / "config.json"
    try:
        why = _config_problem(json.loads(config.read_text(encoding="utf-8")), tensors)
    except (OSError, ValueError, RecursionError) as exc:
        why = f"unreadable ({_one_line(exc)})"
    if why is not None:
        raise PolicyError(why, path=config, field=field)
    tokenizer = ("tokenizer.json", "tokenizer.model", "vocab.json")
    if not any((path / t).is_file() for t in tokenizer):
        raise PolicyError(
            f"the checkpoint has no tokenizer files (one of {', '.join(tokenizer)}); save the "
            "processor beside the weights (processor.save_pretrained)",
            path=path,
            field=field,
        )
    images = ("preprocessor_config.json", "processor_config.json")
    if not any((path / t).is_file() for t in images):
        raise PolicyError(
            f"the checkpoint has no image processor ({' or '.join(images)}); save the "
            "processor beside the weights (processor.save_pretrained)",
            path=path,
            field=field,
        )


def _one_line(exc: BaseException, limit: int = 300) -> str:
    """``exc``'s message on one line, at most ``limit`` characters (transformers' messages run
    to tables and lists of every known class)."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


def load_local_vlm(
    path: Path, *, dtype: str = "float32", field: str | None = None
) -> tuple[Any, Any]:
    """``(model, processor)`` of the checkpoint directory ``path`` (local files only).

    Parameters
    ----------
    path
        A directory from :func:`resolve_checkpoint`.
    dtype
        ``auto``, ``float32``, ``bfloat16`` or ``float16`` (training keeps fp32 master weights).
    field
        The params key of the checkpoint, named in the errors.

    Raises
    ------
    ValueError
        An unknown ``dtype``.
    PolicyError
        The processor (tokenizer + image processor) or the model cannot be loaded: a truncated
        weight file, missing tokenizer files, another architecture.
    """
    if dtype not in ("auto", "float32", "bfloat16", "float16"):
        raise ValueError(f"dtype: expected auto/float32/bfloat16/float16, got {dtype!r}")
    import torch  # heavy: imported when a model is loaded
    from huggingface_hub.errors import StrictDataclassError
    from transformers import AutoModelForImageTextToText, AutoProcessor
    from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES

    # what transformers raises for a config or files it cannot use (a size of the wrong type)
    unusable = (OSError, ValueError, TypeError, KeyError, StrictDataclassError)
    try:
        model_type = json.loads((path / "config.json").read_text(encoding="utf-8"))["model_type"]
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        model_type = None  # transformers says what is missing
    if model_type is not None and model_type not in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES:
        raise PolicyError(
            f"model_type {model_type!r} is not an image-text-to-text model transformers knows "
            "(Qwen3-VL's is 'qwen3_vl'); point the checkpoint at a vision-language model",
            path=path / "config.json",
            field=field,
        )
    try:
        processor = AutoProcessor.from_pretrained(path, local_files_only=True)
    except unusable as exc:
        raise PolicyError(
            f"the checkpoint has no loadable processor/tokenizer ({_one_line(exc)}); save the "
            "processor beside the weights (processor.save_pretrained)",
            path=path,
            field=field,
        ) from exc
    if (
        getattr(processor, "tokenizer", None) is None
        or getattr(processor, "image_processor", None) is None
    ):
        raise PolicyError(
            "the checkpoint's processor has no tokenizer or image processor; a Qwen3-VL "
            "processor (tokenizer + image processor) is needed",
            path=path,
            field=field,
        )
    try:
        model = AutoModelForImageTextToText.from_pretrained(
            path, local_files_only=True, dtype="auto" if dtype == "auto" else getattr(torch, dtype)
        )
    except (*unusable, RuntimeError) as exc:  # RuntimeError: weights that do not fit the model
        raise PolicyError(
            f"cannot load the model: {_one_line(exc)}", path=path, field=field
        ) from exc
    return model, processor


def check_vocabulary(model: Any, processor: Any, path: Path, *, field: str) -> None:
    """Refuse a checkpoint whose tokenizer has ids its model has no embedding for (a model and
    a tokenizer of different checkpoints, e.g. a reader of another tokenizer or size copied
    beside another's processor).

    Raises
    ------
    PolicyError
        ``len(tokenizer)`` exceeds the model's vocabulary (both named, on one line).
    """
    n_tok = len(processor.tokenizer)
    n_emb = int(model.get_input_embeddings().weight.shape[0])
    if n_tok > n_emb:
        raise PolicyError(
            f"{path}: tokenizer of {n_tok} tokens but a model of {n_emb} embeddings ({field}); "
            "the model and the tokenizer come from different checkpoints — rebuild it from one"
        )


def read_recipe(checkpoint_dir: Path) -> dict[str, Any] | None:
    """The ``recipe`` record of a trained checkpoint (``{"name", "smoke", "steps": {stage:
    steps}}``, written by :func:`recipe_record` into the stage's summary JSON), or None for a
    directory no training stage of urbex wrote (a real Qwen3-VL snapshot, a tiny base model) or
    one written before recipes were recorded. An unreadable summary is None too: the record
    labels report rows, it never stops one."""
    for name in STAGE_SUMMARY_FILES.values():
        f = Path(checkpoint_dir) / name
        if not f.is_file():
            continue
        try:
            rec = json.loads(f.read_text()).get("recipe")
        except (OSError, ValueError, AttributeError):
            return None
        return rec if isinstance(rec, dict) else None
    return None


def recipe_record(recipe: RecipeParams, stage: str, steps: int, base: Path) -> dict[str, Any]:
    """The ``recipe`` record a training stage writes into its summary JSON: the recipe's name,
    whether it is a smoke run (``recipe``), and the optimizer steps of every stage behind
    the checkpoint (the base checkpoint's own record, then ``stage``'s ``steps``). A smoke base
    makes the result smoke too: a long GRPO from a smoke SFT checkpoint is still no result of
    the method."""
    if stage not in STAGE_SUMMARY_FILES:
        raise ValueError(f"stage {stage!r}: expected one of {sorted(STAGE_SUMMARY_FILES)}")
    behind = read_recipe(base) or {}
    stage_steps = dict(behind.get("steps") or {})
    stage_steps[stage] = int(steps)
    return {
        "name": recipe.name,
        "smoke": bool(recipe.smoke or behind.get("smoke", False)),
        "steps": stage_steps,
    }
