"""SFT's resume state: what an interrupted ``urbex sft`` (Ctrl-C, a kill) restarts from.

Every ``sft.save_steps`` optimizer steps :func:`save_state` writes the loop's whole state into
``<assets>/checkpoints/.staging-<run_name>/resume/`` (:meth:`urbex.layout.AssetLayout.
checkpoint_staging`), built in a staging sibling and swapped into place
(:func:`urbex.atomic.publish_dir`), so a kill never leaves half a state::

    resume/
        state.pt        model, optimizer and learning-rate schedule state dicts, torch's RNG state
        state.json      the steps done, the fingerprint of the settings, numpy's RNG state, the
                        rest of the current example order, the log rows and token counts so far,
                        the recovery round's counts and the seconds spent
        recovery/       the recovery round's examples once it has run (examples.json + PNGs):
                        sampled from the model of that moment, they cannot be replayed

:func:`load_state` returns the state when its fingerprint equals the current run's (the same
base checkpoint, ``sft``/``env`` params, steps and teacher examples), else None; the next steps
then equal those of an uninterrupted run (tested bit for bit). ``urbex sft`` removes the staging
directory once the checkpoint is published.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from urbex.atomic import publish_dir, staging_path

__all__ = ["RESUME_DIR", "SFTState", "examples_digest", "load_state", "save_state"]

#: The resume state's folder inside the run's staging directory.
RESUME_DIR = "resume"


@dataclass(slots=True, kw_only=True)
class SFTState:
    """The SFT loop between two steps (everything but the fixed inputs).

    Attributes
    ----------
    step : int
        Optimizer steps done.
    tensors : dict
        ``model``, ``optimizer``, ``schedule`` state dicts and ``torch_rng`` (torch's CPU RNG).
    numpy_rng : dict
        ``numpy.random.Generator.bit_generator.state`` of the example order.
    order : list of int
        The rest of the current permutation of the examples.
    log : list of dict
        The step log rows so far (``sft_log.parquet``).
    n_tok, n_sup : list of int
        Tokens and supervised tokens of every example trained on so far.
    recovery : dict or None
        The recovery round's counts (:class:`urbex.train.teacher.RecoveryStats` fields).
    recovery_examples : list of dict
        The recovery round's rendered examples: ``text``, ``query_id``, ``supervised``,
        ``images`` (PIL images).
    seconds : float
        Wall seconds spent so far (the recovery round included).
    """

    step: int
    tensors: dict[str, Any] = field(repr=False)
    numpy_rng: dict[str, Any]
    order: list[int]
    log: list[dict[str, Any]]
    n_tok: list[int]
    n_sup: list[int]
    recovery: dict[str, Any] | None = None
    recovery_examples: list[dict[str, Any]] = field(default_factory=list, repr=False)
    seconds: float = 0.0


def _canonical(fingerprint: Mapping[str, Any]) -> Any:
    return json.loads(json.dumps(dict(fingerprint), sort_keys=True, default=str))


def save_state(staging: Path, state: SFTState, fingerprint: Mapping[str, Any]) -> Path:
    """Write ``state`` to ``<staging>/resume/`` (whole or not at all); return that folder.

    Parameters
    ----------
    staging
        The run's staging directory (created if missing).
    state
        The loop's state after ``state.step`` steps.
    fingerprint
        The settings a resumed run must share (JSON-able; compared by :func:`load_state`).
    """
    import torch

    final = Path(staging) / RESUME_DIR
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = staging_path(final)
    tmp.mkdir()
    try:
        torch.save(state.tensors, tmp / "state.pt")
        if state.recovery_examples:
            rec = tmp / "recovery"
            rec.mkdir()
            rows = []
            for i, ex in enumerate(state.recovery_examples):
                names = []
                for j, im in enumerate(ex["images"]):
                    name = f"{i:05d}-{j:02d}.png"
                    im.save(rec / name)
                    names.append(name)
                rows.append(
                    {k: ex[k] for k in ("text", "query_id", "supervised")} | {"images": names}
                )
            (rec / "examples.json").write_text(json.dumps(rows))
        meta = {
            "fingerprint": _canonical(fingerprint),
            "step": state.step,
            "numpy_rng": state.numpy_rng,
            "order": state.order,
            "log": state.log,
            "n_tok": state.n_tok,
            "n_sup": state.n_sup,
            "recovery": state.recovery,
            "seconds": state.seconds,
        }
        (tmp / "state.json").write_text(json.dumps(meta))  # last: its presence marks a whole state
        publish_dir(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final


def load_state(staging: Path, fingerprint: Mapping[str, Any]) -> SFTState | None:
    """The state saved in ``<staging>/resume/`` when it was saved under the same
    ``fingerprint``; None when there is none, it is incomplete or its settings differ."""
    import torch
    from PIL import Image

    d = Path(staging) / RESUME_DIR
    try:
        meta = json.loads((d / "state.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or meta.get("fingerprint") != _canonical(fingerprint):
        return None
    examples: list[dict[str, Any]] = []
    rec = d / "recovery" / "examples.json"
    if rec.is_file():
        for row in json.loads(rec.read_text()):
            images = []
            for name in row["images"]:
                with Image.open(d / "recovery" / name) as im:
                    images.append(im.copy())
            examples.append(
                {
                    "text": row["text"],
                    "query_id": row["query_id"],
                    "supervised": tuple(row["supervised"]),
                    "images": tuple(images),
                }
            )
    return SFTState(
        step=int(meta["step"]),
        tensors=torch.load(d / "state.pt", weights_only=True),
        numpy_rng=meta["numpy_rng"],
        order=[int(i) for i in meta["order"]],
        log=list(meta["log"]),
        n_tok=[int(v) for v in meta["n_tok"]],
        n_sup=[int(v) for v in meta["n_sup"]],
        recovery=meta["recovery"],
        recovery_examples=examples,
        seconds=float(meta["seconds"]),
    )


def examples_digest(texts: Sequence[str], supervised: Sequence[Sequence[bool]]) -> str:
    """sha256 of the rendered teacher examples (their texts and supervised turns): a resumed
    run trains on the same data.

    >>> examples_digest(["a"], [[True]]) == examples_digest(["a"], [[True]])
    True
    >>> examples_digest(["a"], [[True]]) == examples_digest(["a"], [[False]])
    False
    """
    import hashlib

    h = hashlib.sha256()
    for text, sup in zip(texts, supervised, strict=True):
        h.update(text.encode())
        h.update(bytes([0, *(1 + int(s) for s in sup), 0]))
    return h.hexdigest()
