"""urbex.eval.skills: each per-step skill of a marks episode, on a hand-built scene and run."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import polars as pl
import pytest

from urbex.eval.skills import SKILLS, episode_skills, skill_shares

#: One scene, world metres: two cars and a building inside the zoom [0, 0, 100, 100], one car
#: outside it (never listed). The target is car 1.
PROPOSALS = SimpleNamespace(
    mark_id=np.array([1, 2, 3, 4]),
    class_name=np.array(["Car", "Car", "Building", "Car"]),
    box_2d_m=np.array(
        [[10, 10, 14, 14], [50, 50, 54, 54], [20, 60, 40, 80], [200, 200, 204, 204]], dtype=float
    ),
)
ZOOM = [0.0, 0.0, 100.0, 100.0]
#: query → the episode's answer mark (None: no valid answer) and whether it zoomed.
PLAYED = {
    "right": (1, True),
    "same_class": (2, True),
    "other_class": (3, True),
    "unlisted_car": (4, True),
    "no_answer": (None, True),
    "no_zoom": (2, False),
}


def _run() -> tuple[pl.DataFrame, pl.DataFrame]:
    episodes = pl.DataFrame(
        {
            "query_id": list(PLAYED),
            "scene_id": ["s"] * len(PLAYED),
            "answer_mark": [a for a, _ in PLAYED.values()],
            "valid_answer": [a is not None for a, _ in PLAYED.values()],
        },
        schema_overrides={"answer_mark": pl.Int64},
    )
    rows = [
        {"query_id": "no_zoom", "tool": "landmark_query", "valid": True,
         "arguments": json.dumps({"name": "merton hall"}), "box": [None] * 4},
        {"query_id": "right", "tool": "landmark_query", "valid": True,
         "arguments": json.dumps({"name": "Other Place"}), "box": [None] * 4},
    ]  # fmt: skip
    rows += [
        {"query_id": q, "tool": "zoom_in", "valid": True, "arguments": "{}", "box": ZOOM}
        for q, (_, zoomed) in PLAYED.items()
        if zoomed
    ]
    steps = pl.DataFrame(
        {
            "query_id": [r["query_id"] for r in rows],
            "tool": [r["tool"] for r in rows],
            "valid": [r["valid"] for r in rows],
            "arguments": [r["arguments"] for r in rows],
            **{
                f"region_{k}_m": [r["box"][i] for r in rows]
                for i, k in enumerate(("x_min", "y_min", "x_max", "y_max"))
            },
        },
        schema_overrides={
            f"region_{k}_m": pl.Float64 for k in ("x_min", "y_min", "x_max", "y_max")
        },
    )
    return episodes, steps


def _skills() -> pl.DataFrame:
    episodes, steps = _run()
    return episode_skills(
        episodes,
        steps,
        targets_m={q: (10.0, 10.0, 14.0, 14.0) for q in PLAYED},
        mentions={"no_zoom": ["Merton Hall"], "right": ["Merton Hall"]},
        proposals=lambda scene_id: PROPOSALS,
        max_listed=8,
    )


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("right", {"target_mark_shown": True, "right_class_given_shown": True,
                   "right_mark_given_shown": True, "landmark_named": False}),
        ("same_class", {"right_class_given_shown": True, "right_mark_given_shown": False}),
        ("other_class", {"right_class_given_shown": False, "right_mark_given_shown": False}),
        ("unlisted_car", {"right_class_given_shown": False, "right_mark_given_shown": False}),
        ("no_answer", {"right_class_given_shown": False, "valid_answer": False}),
        ("no_zoom", {"zoom_on_target": False, "target_mark_shown": False,
                     "right_class_given_shown": None, "right_mark_given_shown": None,
                     "landmark_named": True}),
    ],
)  # fmt: skip
def test_episode_skills_per_episode(query, expected):
    """A car answered where the target car was listed reads the class (right mark or not); a
    listed building or a car no zoom listed does not; without a zoom the reading is undefined."""
    row = _skills().filter(pl.col("query_id") == query).row(0, named=True)
    assert {k: row[k] for k in expected} == expected


def test_skill_shares_count_only_where_a_skill_is_defined():
    shares = skill_shares(_skills())
    assert list(shares) == list(SKILLS)
    assert shares["target_mark_shown"] == pytest.approx(5 / 6)
    assert shares["right_class_given_shown"] == pytest.approx(2 / 5)
    assert shares["right_mark_given_shown"] == pytest.approx(1 / 5)
    assert shares["landmark_named"] == pytest.approx(1 / 2)
    assert shares["valid_answer"] == pytest.approx(5 / 6)
