"""landmark_prior: hand-built inputs, and an episode in the synthetic block (no GT read)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.fixtures.city import play_scored
from urbex.agents.heuristics import LandmarkPriorPolicy, compass_vector, infer_class, prior_box
from urbex.config import EnvParams
from urbex.env.episode import GroundingEnv, Query


@pytest.mark.parametrize(
    ("text", "cls"),
    [
        ("the red car north of Merton Hall", "Car"),
        ("the parking lot next to the church", "Parking"),
        ("the car park beside Mill Lane", "Parking"),
        ("the largest house on Mill Lane", "Building"),
        ("the open green space east of the hall", "Ground"),
    ],
)
def test_infer_class_earliest_noun(text, cls):
    assert infer_class(text) == cls


@pytest.mark.parametrize(
    ("text", "vec"),
    [
        ("south of X", (0.0, -1.0)),
        ("to the west of X", (-1.0, 0.0)),
        ("north west of X", (-1.0, 1.0)),
        ("next to X", (0.0, 0.0)),
    ],
)
def test_compass_vector_words(text, vec):
    assert compass_vector(text) == vec


def test_prior_box_shifts_beside_landmark_and_clips_into_scene():
    # west of a landmark at the scene's west edge: shifted back inside, size kept
    b = prior_box(
        "a car west of Hall",
        anchor_xy=(5, 50),
        anchor_box=(0, 45, 10, 55),
        anchor_name="Hall",
        scene_box=(0, 0, 100, 100),
        class_sizes={"Car": (4, 4)},
    )
    assert b.tolist() == [0.0, 48.0, 4.0, 52.0]


def test_landmark_prior_ignores_ground_truth(synth_city):
    cache, index, queries = synth_city
    env = GroundingEnv(EnvParams(), lambda s: cache, index)
    pol = LandmarkPriorPolicy(env)
    q = queries[0]
    moved = Query(
        query_id=q.query_id,
        scene_id=q.scene_id,
        object_id=q.object_id,
        description=q.description,
        target_box_2d=q.target_box_2d + 30,
        target_box_3d=q.target_box_3d,
        class_name=q.class_name,
    )
    s1 = play_scored(env, pol, q)[0].steps
    s2 = play_scored(env, pol, moved)[0].steps
    assert s1[0].arguments == s2[0].arguments and s1[0].tool == "answer"


def test_landmark_prior_beats_scene_centre_on_synthetic_block(synth_city):
    cache, index, queries = synth_city
    env = GroundingEnv(EnvParams(), lambda s: cache, index)
    with_lm = [play_scored(env, LandmarkPriorPolicy(env), q)[1]["center_dist_m"] for q in queries]
    blind_env = GroundingEnv(EnvParams(), lambda s: cache, None)  # no landmark index: scene centre
    blind = [
        play_scored(blind_env, LandmarkPriorPolicy(blind_env), q)[1]["center_dist_m"]
        for q in queries
    ]
    assert np.median(with_lm) < np.median(blind)
