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

from pathlib import Path
from typing import Any

from urbex.config import Params
from urbex.errors import ConfigError, PolicyError

__all__ = ["load_local_vlm", "resolve_checkpoint"]

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
    return path


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
