"""Teacher conversations and evaluation episodes as Hugging Face ``datasets`` datasets.

``urbex export OUT --split S --what teacher`` writes the teacher's conversations of a split
(:func:`urbex.train.teacher.teacher_trajectories`, what ``urbex sft`` trains on) in the
conversational format trl's ``SFTTrainer`` reads as it is: ``messages`` (``role``, ``name``,
``content`` parts ``{"type": "text" | "image", "text"}``) and ``images`` (``Image`` features, RGB,
each view's fixed size, in placeholder order), plus the episode's ``query_id``, ``scene_id``,
``seed``, ``iou_bev`` and ``turns``. A tool's response is written as the user turn Qwen's chat
template renders it as — its parts between ``<tool_response>\n`` and ``\n</tool_response>``,
``name`` the tool — because trl 1.16's ``SFTTrainer`` puts the ``images`` into user turns only
(the rendered text is the same: one tool response follows each assistant turn). ``--what episodes`` writes the finished episodes of every evaluation run of the split
(``<assets>/eval/runs/*``): one row per (run, query) with the columns of the run's episodes
table (:func:`urbex.eval.episodes.episode_schema`) and its turns as ``steps`` (a list of
:func:`~urbex.eval.episodes.step_schema` rows). Both are written with ``save_to_disk`` into a
staging folder that replaces ``OUT`` only when complete; ``datasets.load_from_disk(OUT)``
reads them back.

Frames: ``pred_*`` / ``region_*_m`` columns are world metres; step ``arguments`` are JSON with
boxes in view units (0–1000).
"""

from __future__ import annotations

import shutil
from collections import defaultdict
from collections.abc import Mapping
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from urbex.atomic import publish_dir, staging_path
from urbex.config import SPLIT_NAMES, Params
from urbex.env.world import World
from urbex.errors import CacheError, ConfigError, OutputExistsError
from urbex.eval.episodes import episode_schema, read_episodes, read_steps, step_schema
from urbex.eval.rundir import read_run
from urbex.layout import AssetLayout
from urbex.train.teacher import teacher_trajectories

if TYPE_CHECKING:
    import datasets

    from urbex.env.trajectory import Trajectory

__all__ = [
    "WHAT",
    "ExportWhat",
    "episode_features",
    "episodes_dataset",
    "export_dataset",
    "teacher_dataset",
    "teacher_features",
]

#: What ``urbex export`` writes.
ExportWhat = Literal["teacher", "episodes"]
WHAT: tuple[str, ...] = get_args(ExportWhat)


def teacher_features() -> datasets.Features:
    """The declared features of a teacher dataset (see the module docstring)."""
    from datasets import Features, Image, List, Value

    part = {"type": Value("string"), "text": Value("string")}
    message = {"role": Value("string"), "name": Value("string"), "content": List(part)}
    return Features(
        {
            "messages": List(message),
            "images": List(Image()),
            "query_id": Value("string"),
            "scene_id": Value("string"),
            "seed": Value("int64"),
            "iou_bev": Value("float64"),
            "turns": Value("int64"),
        }
    )


def episode_features() -> datasets.Features:
    """The declared features of an episodes dataset: the episodes table's columns and ``steps``."""
    from datasets import Features, List

    episode = Features.from_arrow_schema(episode_schema())
    step = Features.from_arrow_schema(step_schema())
    return Features({**episode, "steps": List(dict(step))})


def _parts(content: Any) -> list[dict[str, Any]]:
    """A message's content as a list of ``{"type", "text"}`` parts (text → one text part)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [{"type": str(p["type"]), "text": p.get("text")} for p in content or ()]


def _message(m: Mapping[str, Any]) -> dict[str, Any]:
    """One chat message as a row: a tool's response becomes the user turn that Qwen's chat
    template renders it as (``<tool_response>`` … ``</tool_response>``), named by its tool."""
    parts = _parts(m.get("content"))
    if m["role"] != "tool":
        return {"role": str(m["role"]), "name": m.get("name"), "content": parts}
    wrapped = [_text("<tool_response>\n"), *parts, _text("\n</tool_response>")]
    return {"role": "user", "name": m.get("name"), "content": wrapped}


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _teacher_row(t: Trajectory) -> dict[str, Any]:
    roles = [m["role"] for m in t.messages]
    if any(a == b == "tool" for a, b in pairwise(roles)):
        raise ValueError(f"trajectory {t.query.query_id}: two tool turns in a row")
    o = t.outcome
    return {
        "messages": [_message(m) for m in t.messages],
        "images": [im.convert("RGB") for im in t.images],
        "query_id": t.query.query_id,
        "scene_id": t.query.scene_id,
        "seed": int(t.seed),
        "iou_bev": float(o.iou_bev),
        "turns": int(o.turns),
    }


def teacher_dataset(
    params: Params, split: str, *, limit: int | None = None, progress: bool = False
) -> datasets.Dataset:
    """The teacher's conversations of ``split`` (``sft.per_query`` seeded paths per query).

    Raises
    ------
    AnnotationError
        The split has no queries, or no teacher path ended in a valid answer.
    """
    from datasets import Dataset

    world = World.from_params(params)
    trajs = teacher_trajectories(
        world, params.layout, params.sft, params.vlm, split=split, limit=limit, progress=progress
    )
    return Dataset.from_list([_teacher_row(t) for t in trajs], features=teacher_features())


def _runs_of(lay: AssetLayout, split: str) -> list[Path]:
    """The run folders whose ``run.json`` names ``split``, sorted by run id."""
    runs = lay.runs
    out = []
    for path in sorted(runs.glob("[!.]*/run.json")) if runs.is_dir() else []:
        if read_run(path).spec.split == split:
            out.append(path.parent)
    return out


def episodes_dataset(lay: AssetLayout, split: str) -> datasets.Dataset:
    """The finished episodes of every evaluation run of ``split``, with their steps.

    Raises
    ------
    CacheError
        No evaluation run of ``split`` (the message names ``urbex evaluate``), or a run's files
        cannot be read.
    ConfigError
        A run's ``run.json`` is corrupt or of an older schema (the message names the file and
        the command that plays the run again: :func:`urbex.eval.rundir.read_run`).
    """
    from datasets import Dataset

    rows: list[dict[str, Any]] = []
    for run in _runs_of(lay, split):
        steps: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for s in read_steps(run).iter_rows(named=True):
            steps[s["query_id"]].append(s)
        for e in read_episodes(run).iter_rows(named=True):
            rows.append({**e, "steps": steps.get(e["query_id"], [])})
    if not rows:
        raise CacheError(
            f"no evaluated episode of split {split!r}: stage `evaluate` is not built for it; "
            f"run `urbex evaluate --split {split}` first",
            path=lay.runs,
        )
    return Dataset.from_list(rows, features=episode_features())


def export_dataset(
    params: Params,
    out: str | Path,
    *,
    split: str,
    what: str = "teacher",
    force: bool = False,
    limit: int | None = None,
    progress: bool = False,
) -> Path:
    """Write the ``what`` dataset of ``split`` to ``out`` (``save_to_disk``); return ``out``.

    Parameters
    ----------
    what : {"teacher", "episodes"}
        The teacher's conversations, or the evaluation runs' episodes.
    force
        Replace what ``out`` holds (refused otherwise when ``out`` exists and is not empty).
    limit
        ``teacher``: at most this many queries (a seeded sample, ``sft.limit`` when None).

    Raises
    ------
    ConfigError
        An unknown split or ``what`` (the message lists the known ones).
    OutputExistsError
        ``out`` exists, is not empty, and ``force`` is off.
    AnnotationError, CacheError
        What the dataset is made from is not built (the message names the command).
    """
    if split not in SPLIT_NAMES:
        raise ConfigError(f"unknown split {split!r}; splits: {', '.join(SPLIT_NAMES)}")
    if what not in WHAT:
        raise ConfigError(f"unknown dataset {what!r}; --what: {', '.join(WHAT)}")
    final = Path(out)
    _refuse_existing(final, force=force)
    if what == "teacher":
        ds = teacher_dataset(params, split, limit=limit, progress=progress)
    else:
        ds = episodes_dataset(params.layout, split)
    tmp = staging_path(final)
    try:
        ds.save_to_disk(str(tmp))
        return publish_dir(tmp, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _refuse_existing(path: Path, *, force: bool) -> None:
    if force or not path.exists() or (path.is_dir() and not any(path.iterdir())):
        return
    raise OutputExistsError(
        "already exists; pass --force to replace it with the exported dataset, or choose "
        "another folder",
        path=path,
    )
