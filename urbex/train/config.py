"""``params.train`` + ``params.env`` → ``trl.GRPOConfig`` (the one place the mapping lives).

The grouped knobs of :class:`urbex.config.TrainParams` map one-to-one onto ``trl.GRPOConfig``
fields; the environment's turn budget sets ``max_tool_calling_iterations = env.max_turns − 1``
(every tool call is a turn; the last turn is the answer). ``train.trl`` passes any other
``GRPOConfig`` field through; trl validates the values (its ``__post_init__``), and
:func:`check_trl_fields` the names, against the installed trl (``dataclasses.fields``), so a
trl upgrade changes what is accepted without a copy here to update. Device handling:

* ``device: cpu`` → ``use_cpu=True``, ``bf16=False``, activation checkpointing off (fp32 on CPU).
* ``device: cuda`` → ``bf16`` and ``gradient_checkpointing`` as set.
* ``device: auto`` → ``cuda`` when ``torch.cuda.is_available()``, else ``cpu``.

Generation: trl's own ``generate`` by default; ``train.use_vllm`` hands the rollouts to vLLM in
**colocate** mode (``use_vllm=True, vllm_mode="colocate"``: each process runs its own engine on
its GPU, ``train.vllm_gpu_memory_utilization`` of it). Server mode is not offered: trl's
``vllm_mode="server"`` dedupes prompts by ``num_generations`` and mishandles tool loops and tool
images. :func:`check_vllm` fails fast — before anything is loaded or written —
where vLLM cannot run (not installed, or no CUDA).
"""

from __future__ import annotations

import dataclasses
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from urbex.config import TrainParams
from urbex.config_env import EnvParams
from urbex.errors import ConfigError
from urbex.params_files import nearest

if TYPE_CHECKING:
    from trl import GRPOConfig

__all__ = [
    "check_completion_length",
    "check_generation_batch",
    "check_trl_fields",
    "check_vllm",
    "image_tokens",
    "make_grpo_config",
    "resolve_device",
]


def resolve_device(device: str) -> str:
    """``auto`` → ``cuda`` if a CUDA device is visible, else ``cpu``; other values unchanged.

    Examples
    --------
    >>> resolve_device("cpu")
    'cpu'
    """
    if device not in ("auto", "cpu", "cuda"):
        raise ValueError(f"train.device: expected auto, cpu or cuda, got {device!r}")
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def check_generation_batch(
    *,
    per_device_train_batch_size: int,
    gradient_accumulation_steps: int,
    num_generations: int,
    world_size: int = 1,
) -> int:
    """The generation batch (rollouts per generation round); raise unless it holds whole groups.

    ``generation batch = per_device_train_batch_size × world_size × gradient_accumulation_steps``
    must be a multiple of ``num_generations`` (GRPO normalises rewards within a group).

    Raises
    ------
    ValueError
        Not divisible; the message names the fields and values that would fix it.

    Examples
    --------
    >>> check_generation_batch(
    ...     per_device_train_batch_size=4, gradient_accumulation_steps=2, num_generations=8
    ... )
    8
    """
    if num_generations < 2:
        raise ValueError(
            f"train.num_generations: GRPO needs at least 2 rollouts per prompt, got {num_generations}"
        )
    batch = per_device_train_batch_size * world_size * gradient_accumulation_steps
    if batch % num_generations:
        per_step = per_device_train_batch_size * world_size
        need = next(
            g for g in range(1, num_generations + 1) if (per_step * g) % num_generations == 0
        )
        raise ValueError(
            f"generation batch = train.per_device_train_batch_size ({per_device_train_batch_size}) "
            f"× processes ({world_size}) × train.gradient_accumulation_steps "
            f"({gradient_accumulation_steps}) = {batch} is not a multiple of train.num_generations "
            f"({num_generations}); set train.per_device_train_batch_size to a multiple of "
            f"{num_generations}, or train.gradient_accumulation_steps to a multiple of {need}, "
            f"or train.num_generations to a divisor of {batch}"
        )
    return batch


#: Text tokens of the shortest useful turn after a tool image (a tool call or an answer).
MIN_TURN_TOKENS = 32


def image_tokens(size: tuple[int, int], *, patch: int = 16, merge: int = 2) -> int:
    """Tokens one image of ``size`` (w, h px) costs a Qwen3-VL model (patches merged ``merge``²).

    >>> image_tokens((64, 64)), image_tokens((512, 512))
    (4, 256)
    """
    w, h = size
    return max(1, math.ceil(w / patch) * math.ceil(h / patch) // (merge * merge))


def check_completion_length(train: TrainParams, env: EnvParams) -> None:
    """``ValueError`` unless ``train.max_completion_length`` holds one tool image and a turn.

    The completion of a GRPO rollout is the whole episode: every tool image's tokens count
    (trl appends each tool response, images included, to the completion); a budget that cannot hold one zoom or oblique image plus a short turn
    (:data:`MIN_TURN_TOKENS`) can only train on truncated episodes.
    """
    e = env
    need = max(image_tokens(e.zoom_size), image_tokens(e.oblique_size)) + MIN_TURN_TOKENS
    if train.max_completion_length < need:
        raise ValueError(
            f"train.max_completion_length: {train.max_completion_length} tokens cannot "
            f"hold one tool image ({need - MIN_TURN_TOKENS} tokens at env.zoom_size {list(e.zoom_size)} / "
            f"env.oblique_size {list(e.oblique_size)}) and a turn; set it to at least {need}, or "
            "shrink the views"
        )


def check_vllm(train: TrainParams, device: str) -> None:
    """``ConfigError`` unless ``train.use_vllm`` can run: vllm importable and ``device`` cuda.

    A no-op when ``train.use_vllm`` is false. ``device`` is the resolved device
    (:func:`resolve_device`).

    >>> from urbex.config import TrainParams
    >>> check_vllm(TrainParams(), "cpu")  # use_vllm false: nothing to check
    """
    if not train.use_vllm:
        return
    import importlib.util

    if importlib.util.find_spec("vllm") is None:
        raise ConfigError(
            "train.use_vllm: true needs the vllm package, which is not importable here; "
            "install it on a CUDA machine (`pip install vllm`, matching your torch build), or set "
            "train.use_vllm: false to generate with trl's transformers generate",
            field="train.use_vllm",
        )
    if device != "cuda":
        raise ConfigError(
            f"train.use_vllm: true generates on the GPU (vLLM colocate mode), but train.device "
            f"resolves to {device!r}; set train.device: cuda on a GPU machine, or "
            "train.use_vllm: false",
            field="train.use_vllm",
        )


#: GRPOConfig fields urbex sets itself, and the params that own them (``train.trl`` may not).
OWNED_FIELDS: dict[str, str] = {
    "output_dir": "the run's staging folder",
    "run_name": "train.run_name",
    "max_steps": "train.max_steps",
    "learning_rate": "train.learning_rate",
    "lr_scheduler_type": "train.lr_scheduler",
    "num_generations": "train.num_generations",
    "per_device_train_batch_size": "train.per_device_train_batch_size",
    "gradient_accumulation_steps": "train.gradient_accumulation_steps",
    "max_completion_length": "train.max_completion_length",
    "max_tool_calling_iterations": "env.max_turns",
    "temperature": "train.temperature",
    "beta": "train.beta",
    "loss_type": "train.loss_type",
    "seed": "train.seed",
    "save_strategy": "train.save_steps",
    "save_steps": "train.save_steps",
    "logging_steps": "train.logging_steps",
    "use_cpu": "train.device",
    "bf16": "train.bf16",
    "activation_checkpointing": "train.gradient_checkpointing",
    "gradient_checkpointing": "train.gradient_checkpointing",
    "use_vllm": "train.use_vllm",
    "vllm_mode": "train.use_vllm (colocate only)",
    "vllm_gpu_memory_utilization": "train.vllm_gpu_memory_utilization",
    "remove_unused_columns": "urbex (the environment reads the dataset's columns)",
}


def check_trl_fields(names: Any, field_names: Any) -> None:
    """``ConfigError`` unless every ``train.trl`` name is a ``GRPOConfig`` field urbex leaves free.

    ``field_names`` are the installed ``GRPOConfig``'s (``dataclasses.fields``). The message names
    ``train.trl.<name>`` and the nearest field, or the param that owns the field.

    >>> check_trl_fields(["warmup_steps"], ["warmup_steps", "max_steps"])
    >>> check_trl_fields(["max_stepz"], ["warmup_steps", "max_steps"])
    Traceback (most recent call last):
    urbex.errors.ConfigError: field 'train.trl.max_stepz': ...
    """
    valid = [str(f) for f in field_names]
    for name in names:
        if name in OWNED_FIELDS:
            raise ConfigError(
                f"urbex sets GRPOConfig.{name} from {OWNED_FIELDS[name]}; set that instead",
                field=f"train.trl.{name}",
            )
        if name not in valid:
            best = nearest(str(name), [v for v in valid if v not in OWNED_FIELDS])
            hint = f"; nearest GRPOConfig field: {best!r}" if best else ""
            raise ConfigError(
                f"not a field of trl.GRPOConfig (trl validates the names it has){hint}",
                field=f"train.trl.{name}",
            )


def make_grpo_config(
    train: TrainParams, env: EnvParams, output_dir: str | Path, **overrides: Any
) -> GRPOConfig:
    """A ``trl.GRPOConfig`` from the ``train`` and ``env`` sections.

    Parameters
    ----------
    train, env
        The GRPO recipe, and the environment (its turn budget and view sizes).
    output_dir
        The trainer's working directory (intermediate ``checkpoint-N`` folders).
    **overrides
        Any ``GRPOConfig`` field, applied last (e.g. ``save_strategy="no"`` in tests).

    Returns
    -------
    trl.GRPOConfig

    Raises
    ------
    ValueError
        The generation batch is not a multiple of ``num_generations`` (see
        :func:`check_generation_batch`; ``WORLD_SIZE``, set by ``accelerate launch``/``torchrun``,
        counts the processes), ``train.device`` is unknown, or ``train.max_completion_length``
        cannot hold one tool image (:func:`check_completion_length`).
    ConfigError
        ``train.use_vllm`` where vLLM cannot run (:func:`check_vllm`); a ``train.trl`` name
        that is not a free ``GRPOConfig`` field (:func:`check_trl_fields`); or a value
        ``GRPOConfig`` itself rejects (its message, naming ``train``). (``train.loss_type`` is
        typed, :data:`urbex.config.GRPOLossType`: a wrong name is refused when params load.)
    """
    from trl import GRPOConfig  # deferred: trl (and torch) are heavy

    t = train
    check_trl_fields(t.trl, [f.name for f in dataclasses.fields(GRPOConfig)])
    check_completion_length(t, env)
    device = resolve_device(t.device)
    check_vllm(t, device)
    on_cpu = device == "cpu"
    kwargs: dict[str, Any] = {
        "output_dir": str(output_dir),
        "run_name": t.run_name,
        "max_steps": t.max_steps,
        "learning_rate": t.learning_rate,
        "lr_scheduler_type": t.lr_scheduler,
        "num_generations": t.num_generations,
        "per_device_train_batch_size": t.per_device_train_batch_size,
        "gradient_accumulation_steps": t.gradient_accumulation_steps,
        "max_completion_length": t.max_completion_length,
        "max_tool_calling_iterations": env.max_turns - 1,
        "temperature": t.temperature,
        "beta": t.beta,
        "loss_type": t.loss_type,
        "seed": t.seed,
        "save_strategy": "steps",
        "save_steps": t.save_steps,
        "logging_steps": t.logging_steps,
        "use_cpu": on_cpu,
        "bf16": False if on_cpu else t.bf16,
        "activation_checkpointing": False if on_cpu else t.gradient_checkpointing,
        "report_to": t.report_to,  # trl writes <output_dir>/runs/<date>_<host> (grpo.py moves it)
        "dataloader_num_workers": 0,
        "remove_unused_columns": False,
    }
    if t.use_vllm:  # colocate only (see the module docstring)
        kwargs.update(
            use_vllm=True,
            vllm_mode="colocate",
            vllm_gpu_memory_utilization=t.vllm_gpu_memory_utilization,
        )
    kwargs.update(t.trl)
    kwargs.update(overrides)
    if kwargs.get("generation_batch_size") is None and kwargs.get("steps_per_generation") is None:
        check_generation_batch(
            per_device_train_batch_size=int(kwargs["per_device_train_batch_size"]),
            gradient_accumulation_steps=int(kwargs["gradient_accumulation_steps"]),
            num_generations=int(kwargs["num_generations"]),
            world_size=int(os.environ.get("WORLD_SIZE", "1")),
        )
    try:
        return GRPOConfig(**kwargs)
    except (TypeError, ValueError) as exc:  # trl's own validation (__post_init__)
        raise ConfigError(
            f"trl.GRPOConfig rejected the training params: {exc}", field="train"
        ) from exc
