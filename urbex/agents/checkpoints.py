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

from urbex.config import Params
from urbex.errors import ConfigError, PolicyError

__all__ = ["check_checkpoint", "load_local_vlm", "resolve_checkpoint"]

_OFFLINE_HINT = (
    "urbex never downloads weights — pass a directory, e.g. one written by "
    "`urbex make-tiny-model PATH`"
)


def resolve_checkpoint(
    params: Params | None, checkpoint: str | Path | None, *, field: str, flag: str = "--checkpoint"
) -> Path:
    """The local checkpoint directory ``checkpoint`` names.

    Parameters
    ----------
    params
        Relative paths are resolved against ``params.base_dir`` (the params file's directory);
        None: against the working directory.
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
    if not path.is_absolute() and params is not None:
        path = params.base_dir / path
    if not path.is_dir() or not (path / "config.json").is_file():
        raise PolicyError(
            f"not a local checkpoint directory (config.json missing); {_OFFLINE_HINT}",
            path=path,
            field=field,
        )
    check_checkpoint(path, field=field)
    return path


def _safetensors_problem(f: Path) -> str | None:
    """Why the safetensors file ``f`` is unreadable (header or truncation), or None; reads only
    its header: 8 bytes of length, the JSON table of tensors and their byte ranges."""
    try:
        size = f.stat().st_size
        with open(f, "rb") as fh:
            n = int.from_bytes(fh.read(8), "little")
            if size < 8 or n <= 0 or 8 + n > size:
                return f"{f.name}: header length {n} does not fit a {size}-byte file (truncated?)"
            header = json.loads(fh.read(n))
    except (OSError, ValueError) as exc:
        return f"{f.name}: unreadable header ({exc})"
    ends = [v["data_offsets"][1] for k, v in header.items() if k != "__metadata__"]
    need = 8 + n + max(ends, default=0)
    if need > size:
        return f"{f.name}: {size} bytes where the tensors need {need} (truncated copy?)"
    return None


def check_checkpoint(path: Path, *, field: str | None = None) -> None:
    """Refuse, before any episode or training step, a checkpoint that cannot load: weights
    missing or truncated, no tokenizer, no image processor. Reads file headers only (no torch).

    Raises
    ------
    PolicyError
        Naming the file and what is wrong.
    """
    index = path / "model.safetensors.index.json"
    if index.is_file():
        try:
            shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        except (OSError, ValueError, KeyError, AttributeError) as exc:
            raise PolicyError(f"unreadable weight index ({exc})", path=index, field=field) from exc
        files = [path / s for s in shards]
    else:
        files = sorted(path.glob("*.safetensors"))
    if not files and not any(path.glob("pytorch_model*.bin")):
        raise PolicyError(
            "the checkpoint holds no weights (model.safetensors or an index of shards)",
            path=path,
            field=field,
        )
    for f in files:
        why = "missing (named by the index)" if not f.is_file() else _safetensors_problem(f)
        if why is not None:
            raise PolicyError(f"unloadable weights: {why}", path=f, field=field)
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
    from transformers import AutoModelForImageTextToText, AutoProcessor

    try:
        processor = AutoProcessor.from_pretrained(path, local_files_only=True)
    except (OSError, ValueError, TypeError) as exc:
        raise PolicyError(
            f"the checkpoint has no loadable processor/tokenizer ({exc}); save the processor "
            "beside the weights (processor.save_pretrained)",
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
    except (OSError, ValueError) as exc:
        raise PolicyError(f"cannot load the model: {exc}", path=path, field=field) from exc
    return model, processor
