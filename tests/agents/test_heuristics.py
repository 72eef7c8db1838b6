"""landmark_prior: hand-built inputs, and an episode in the synthetic block (no GT read)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.fixtures.city import play_scored
from urbex.agents.heuristics import LandmarkPriorPolicy, prior_box, shift_signs
from urbex.config import EnvParams
from urbex.env.episode import GroundingEnv
from urbex.language import parse
from urbex.query import Query


@pytest.mark.parametrize(
    ("text", "signs"),
    [
        ("south of X", (0.0, -1.0)),
        ("to the west of X", (-1.0, 0.0)),
        ("north west of X", (-1.0, 1.0)),
        ("behind X", (0.0, 1.0)),  # the map frame: behind is up the map
        ("to the right of X", (1.0, 0.0)),
        ("next to X", (0.0, 0.0)),
        # the first mention is the road's east end: the shift points at the end it names
        ("the second car from the east end of Mill Lane, north of X", (1.0, 0.0)),
    ],
)
def test_shift_signs_follow_the_first_mention(text, signs):
    assert shift_signs(parse(text, ["X", "Mill Lane"])) == signs


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("the red car north of Hall", (4.0, 4.0)),
        ("the parking lot north of Hall, next to a white car", (30.0, 30.0)),
        ("On Mill Lane in the car park of Hall this grey van", (4.0, 4.0)),
        ("something north of Hall", (12.0, 12.0)),  # no class noun: the default class
    ],
)
def test_prior_box_size_is_the_parse_target_class(text, size):
    sizes = {"Car": (4.0, 4.0), "Parking": (30.0, 30.0), "Building": (12.0, 12.0)}
    b = prior_box(parse(text, ["Hall", "Mill Lane"]), anchor_xy=(50, 50), anchor_box=(45, 45, 55, 55),
                  scene_box=(0, 0, 200, 200), class_sizes=sizes)  # fmt: skip
    assert (b[2] - b[0], b[3] - b[1]) == size


def test_prior_box_shifts_beside_landmark_and_clips_into_scene():
    # west of a landmark at the scene's west edge: shifted back inside, size kept
    b = prior_box(
        parse("a car west of Hall", ["Hall"]),
        anchor_xy=(5, 50),
        anchor_box=(0, 45, 10, 55),
        scene_box=(0, 0, 100, 100),
        class_sizes={"Car": (4, 4)},
    )
    assert b.tolist() == [0.0, 48.0, 4.0, 52.0]


def test_prior_box_of_a_named_target_is_its_footprint():
    for text in ("the building called Hall", "Hall, the red building", "Hall is a big building"):
        b = prior_box(parse(text, ["Hall"]), anchor_xy=(5, 50), anchor_box=(0, 45, 10, 55),
                      scene_box=(0, 0, 100, 100))  # fmt: skip
        assert b.tolist() == [0.0, 45.0, 10.0, 55.0], text


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
