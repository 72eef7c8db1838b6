"""Where an episode fails, step by step: the skills a marks episode needs, read from a run.

An anchored marks episode reads three things from its context — the described landmark's name
into ``landmark_query``, the printed surroundings box into ``zoom_in``, the described mark's id
from the zoom's listing into the answer. :func:`episode_skills` scores each played episode on
each step from the run's ``episodes`` and ``steps`` tables:

``landmark_named``
    A valid ``landmark_query`` named a landmark the description mentions (null when it mentions
    none).
``zoom_on_target``
    A valid ``zoom_in`` region (world m) holds the target's BEV centre.
``target_mark_shown``
    The target's mark — the proposal overlapping its BEV box best, at BEV IoU ≥ 0.5 (null when
    none does: no mark can hit) — was listed by one of the episode's zooms (the listing's
    own rule, :func:`urbex.env.marks.marks_under_bev`, ``env.marks.max_listed`` per class).
``right_class_given_shown``
    The answer named a mark of the target's class that a zoom listed, among the episodes whose
    zooms listed the target (null otherwise): the class read, right mark or not.
``right_mark_given_shown``
    The answer named the target's mark, among the episodes whose zooms listed it (null
    otherwise): reading the listing, given that the listing held the answer.
``valid_answer``
    The episode ended in a valid answer.

:func:`skill_shares` reduces them to one share each (over the episodes where a skill is
defined), the figures ``bench_learning`` and the diagnostics print for SFT and GRPO.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from urbex.env.marks import marks_under_bev
from urbex.geometry import iou_2d
from urbex.landmarks.names import normalize_name
from urbex.tool_vocabulary import ToolName

__all__ = ["SKILLS", "episode_skills", "skill_shares", "zoom_units"]

#: The skills scored per episode, in the order an anchored episode uses them.
SKILLS: tuple[str, ...] = (
    "landmark_named",
    "zoom_on_target",
    "target_mark_shown",
    "right_class_given_shown",
    "right_mark_given_shown",
    "valid_answer",
)


def zoom_units(region_m: Sequence[float]) -> Callable[[Any], Any]:
    """World BEV boxes (m) → view units 0–1000 of a north-up view of ``region_m`` (x right,
    y down), as a zoom view maps them.

    >>> f = zoom_units([0.0, 0.0, 10.0, 20.0])
    >>> f(np.array([[0.0, 10.0, 5.0, 20.0]])).tolist()
    [[0.0, 0.0, 500.0, 500.0]]
    """
    x1, y1, x2, y2 = (float(v) for v in region_m)
    w, h = max(x2 - x1, 1e-9), max(y2 - y1, 1e-9)

    def f(b: Any) -> Any:
        b = np.asarray(b, dtype=np.float64).reshape(-1, 4)
        return np.stack(
            [
                (b[:, 0] - x1) / w * 1000,
                (y2 - b[:, 3]) / h * 1000,
                (b[:, 2] - x1) / w * 1000,
                (y2 - b[:, 1]) / h * 1000,
            ],
            axis=1,
        )

    return f


def _target_mark(proposals: Any, box: Any) -> int | None:
    if box is None or len(proposals.mark_id) == 0:
        return None
    iou = np.asarray(iou_2d(proposals.box_2d_m, np.asarray(box, dtype=np.float64)[None, :]))
    j = int(np.argmax(iou))
    return int(proposals.mark_id[j]) if float(iou[j]) >= 0.5 else None


def episode_skills(
    episodes: pl.DataFrame,
    steps: pl.DataFrame,
    *,
    targets_m: Mapping[str, Any],
    mentions: Mapping[str, Sequence[str]],
    proposals: Callable[[str], Any],
    max_listed: int,
) -> pl.DataFrame:
    """One row per episode: ``query_id`` and a nullable bool per skill of :data:`SKILLS`.

    Parameters
    ----------
    episodes, steps
        A run's tables (:func:`urbex.eval.episodes.read_episodes` / ``read_steps``).
    targets_m
        ``query_id`` → the target's BEV box ``[x_min, y_min, x_max, y_max]`` (world m).
    mentions
        ``query_id`` → the landmark names its description mentions
        (:meth:`urbex.landmarks.LandmarkIndex.mentions`).
    proposals
        ``scene_id`` → the scene's :class:`~urbex.scene.proposals.ProposalSet`.
    max_listed
        ``env.marks.max_listed``: marks of each class a zoom lists.
    """
    by_query: dict[str, list[dict[str, Any]]] = {}
    for row in steps.filter(pl.col("valid")).iter_rows(named=True):
        by_query.setdefault(str(row["query_id"]), []).append(row)
    rows = []
    for ep in episodes.iter_rows(named=True):
        qid = str(ep["query_id"])
        mine = by_query.get(qid, [])
        named = {normalize_name(n) for n in mentions.get(qid, ())}
        asked = set()
        zooms = []
        for s in mine:
            if s["tool"] == ToolName.LANDMARK_QUERY:
                try:
                    asked.add(normalize_name(str(json.loads(s["arguments"]).get("name", ""))))
                except (ValueError, AttributeError):
                    pass
            elif s["tool"] == ToolName.ZOOM_IN and s["region_x_min_m"] is not None:
                zooms.append(
                    [
                        s["region_x_min_m"],
                        s["region_y_min_m"],
                        s["region_x_max_m"],
                        s["region_y_max_m"],
                    ]
                )
        box = targets_m.get(qid)
        on_target = None
        if box is not None:
            cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
            on_target = any(z[0] <= cx <= z[2] and z[1] <= cy <= z[3] for z in zooms)
        props = proposals(str(ep["scene_id"]))
        target = _target_mark(props, box)
        shown = None
        listed: dict[int, str] = {}  # mark id → class, of every zoom's listing
        if target is not None:
            listed = {
                m.mark_id: m.class_name
                for z in zooms
                for m in marks_under_bev(props, np.asarray(z), zoom_units(z), limit=max_listed)
            }
            shown = target in listed
        right = right_class = None
        if shown and target is not None:
            answer = None if ep["answer_mark"] is None else int(ep["answer_mark"])
            right = answer == target
            right_class = answer is not None and listed.get(answer) == listed[target]
        rows.append(
            {
                "query_id": qid,
                "landmark_named": bool(named & asked) if named else None,
                "zoom_on_target": on_target,
                "target_mark_shown": shown,
                "right_class_given_shown": right_class,
                "right_mark_given_shown": right,
                "valid_answer": bool(ep["valid_answer"]),
            }
        )
    schema = {"query_id": pl.String, **dict.fromkeys(SKILLS, pl.Boolean)}
    return pl.DataFrame(rows, schema=schema)


def skill_shares(skills: pl.DataFrame) -> dict[str, float]:
    """Share of True per skill over the episodes where it is defined (NaN: nowhere).

    >>> skill_shares(pl.DataFrame({"landmark_named": [True, None, False]}))
    {'landmark_named': 0.5}
    """
    out = {}
    for name in (c for c in skills.columns if c != "query_id"):
        col = skills[name].drop_nulls()
        out[name] = float(col.cast(pl.Float64).mean()) if col.len() else float("nan")  # type: ignore[arg-type]
    return out
