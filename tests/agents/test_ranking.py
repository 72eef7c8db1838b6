"""The With-GT candidate-ranking baseline: pure scoring on hand-built candidates, the policy's
blindness to the target, and an end-to-end evaluation against landmark_prior."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pytest

from tests.fixtures.city import build_eval_project
from urbex.agents.ranking import RankingPolicy, colour_log_likelihood, score_candidates
from urbex.agents.ranking_records import Anchor, Candidates
from urbex.config import EnvParams, Params
from urbex.env.episode import GroundingEnv
from urbex.errors import PolicyError
from urbex.eval.runspec import RunSpec
from urbex.language import context_objects, parse
from urbex.query import Query


def _score(desc: str, c: Candidates, anchors=()) -> np.ndarray:
    names = [a.name for a in anchors]
    return score_candidates(parse(desc, names), c, {a.name: a for a in anchors},
                            context_objects(desc, names))  # fmt: skip


def _best(desc: str, c: Candidates, anchors=()) -> int:
    return int(np.argmax(_score(desc, c, anchors)))


@pytest.fixture()
def street() -> tuple[Candidates, list[Anchor]]:
    """A hall at the origin, a road along y = -30 (x 0..100), a road along x = 100, cars around."""
    c = Candidates.build(
        class_name=["Car", "Car", "Car", "Car", "Building", "Building", "Parking", "Ground"],
        box=[
            [-2, 12, 2, 14],  # 0 red car north of the hall
            [-2, -14, 2, -12],  # 1 white car south of the hall
            [20, -31, 24, -29],  # 2 red car on Mill Lane (x 22)
            [60, -31, 64, -29],  # 3 blue car on Mill Lane (x 62)
            [-5, -5, 5, 5],  # 4 the hall itself (landmark)
            [30, 30, 60, 60],  # 5 a big grey building
            [70, 0, 90, 20],  # 6 a parking lot
            [-60, -60, -20, -20],  # 7 a field
        ],
        rgb=[
            [200, 30, 30],
            [235, 235, 235],
            [190, 40, 35],
            [30, 60, 200],
            [150, 120, 100],
            [128, 128, 128],
            [90, 90, 90],
            [70, 140, 60],
        ],
        height=[1.5, 1.5, 1.5, 1.5, 12.0, 20.0, 0.2, 0.1],
        landmark_name=["", "", "", "", "Merton Hall", "", "", ""],
    )
    anchors = [
        Anchor(name="Merton Hall", box=np.array([-5.0, -5.0, 5.0, 5.0]), kind="building"),
        Anchor(name="Mill Lane", box=np.array([0.0, -30.0, 100.0, -30.0]), kind="road"),
        Anchor(name="Hill Road", box=np.array([100.0, -50.0, 100.0, 50.0]), kind="road"),
    ]
    return c, anchors


def test_score_candidates_class_words_pick_the_class(street):
    c, _ = street
    assert c.class_name[_best("the car park", c)] == "Parking"
    assert c.class_name[_best("the open green space", c)] == "Ground"
    assert c.class_name[_best("the big structure", c)] == "Building"
    assert c.class_name[_best("the green vehicle", c)] == "Car"


def test_score_candidates_colour_words_pick_the_colour(street):
    c, _ = street
    assert _best("the blue car", c) == 3
    assert _best("the white vehicle", c) == 1
    assert _best("the house with a grey roof", c) == 5


def test_score_candidates_landmark_direction_picks_the_side(street):
    c, a = street
    assert _best("the car north of Merton Hall", c, a[:1]) == 0
    assert _best("the car on the south side of Merton Hall", c, a[:1]) == 1
    assert _best("the building called Merton Hall", c, a[:1]) == 4
    # "next to" never answers the landmark itself
    assert _best("the building next to Merton Hall", c, a[:1]) != 4


def test_score_candidates_road_ordinal_and_colour(street):
    c, a = street
    assert _best("the blue car on Mill Lane", c, a[1:2]) == 3
    assert _best("the first car from the east end of Mill Lane", c, a[1:2]) == 3
    assert _best("the second car from the east end of Mill Lane", c, a[1:2]) == 2
    assert _best("the first car from the west end of Mill Lane", c, a[1:2]) == 2


def test_score_candidates_corner_and_superlatives(street):
    c, a = street
    assert _best("the car at the corner of Mill Lane and Hill Road", c, a[1:]) == 3
    assert _best("the largest building", c) == 5
    assert _best("the tallest building", c) == 5
    assert _best("the smallest building", c) == 4


def test_score_candidates_is_vectorised_and_empty_safe(street):
    c, a = street
    s = _score("the red car north of Merton Hall", c, a)
    assert s.shape == (len(c),) and s.dtype == np.float64 and np.all(np.isfinite(s))
    empty = Candidates.build(class_name=[], box=np.zeros((0, 4)))
    assert score_candidates(parse("the red car"), empty).shape == (0,)


def test_score_candidates_map_frame_relations(street):
    c, a = street
    assert _best("the car behind Merton Hall", c, a[:1]) == 0  # up the map: north
    assert _best("the car in front of Merton Hall", c, a[:1]) == 1
    assert _best("the car to the right of the red car on Mill Lane", c, a[1:2]) in (2, 3)
    assert _best("the car on Mill Lane, to the left of Hill Road", c, a[1:]) == 3


def test_score_candidates_between_and_end_of_a_road(street):
    c, a = street
    # the white car lies between the hall and Mill Lane; the red one north of the hall does not
    assert _best("the car between Merton Hall and Mill Lane", c, a[:2]) == 1
    assert _best("the car at the east end of Mill Lane", c, a[1:2]) == 3
    assert _best("the car at the west end of Mill Lane", c, a[1:2]) == 2


def test_score_candidates_colours_of_context_objects_do_not_count(street):
    c, _ = street
    # the car's colours are "white"; the red belongs to the house
    assert _best("a white car parked next to a red house", c) == 1
    assert _best("the car, dark grey or white", c) == 1


def test_score_candidates_context_object_in_a_parking_lot():
    c = Candidates.build(
        class_name=["Car", "Car", "Parking"],
        box=[[0, 0, 4, 2], [50, 50, 54, 52], [45, 45, 70, 70]],
        rgb=[[200, 200, 40]] * 2 + [[90, 90, 90]],
    )
    assert _best("In a parking area: the yellow automobile.", c) == 1
    assert _best("the yellow car", c) == 0


def test_colour_log_likelihood_unknown_word_and_nan_colour():
    with pytest.raises(ValueError, match="expected one of"):
        colour_log_likelihood("mauve", [[1, 2, 3]])
    ll = colour_log_likelihood("grey", [[np.nan, np.nan, np.nan], [128, 128, 128]])
    assert ll[1] > ll[0]


# -------------------------------------------------------------------------------- the policy


def _answer(text: str) -> dict:
    m = re.fullmatch(r"<answer>(.*)</answer>", text)
    assert m, text
    return json.loads(m.group(1))


def test_ranking_policy_never_reads_the_target(synth_city):
    from urbex.agents.registry import make_policy
    from urbex.env.scenes import CachedSceneProvider

    cache, index, queries = synth_city
    env = GroundingEnv(EnvParams(), CachedSceneProvider(cache.path.parent), index)
    policy = make_policy("ranking_rules", Params(), env=env)
    assert isinstance(policy, RankingPolicy)
    hits = 0
    for q in queries[:8]:
        env.reset(query=q, seed=0)
        real = policy.act([], [])
        dummy = dataclasses.replace(
            q,
            object_id="424242",
            class_name="Nope",
            target_box_2d=np.array([0.0, 0.0, 1.0, 1.0]),
            target_box_3d=np.array([0.0, 0.0, 0.0, 1.0, 1.0, 1.0]),
        )
        env.reset(query=dummy, seed=0)
        assert policy.act([], []) == real
        free = Query(query_id="free", scene_id=q.scene_id, description=q.description)
        env.reset(query=free, seed=0)
        assert policy.act([], []) == real
        a = _answer(real)
        assert a["view_id"] == "global" and len(a["bbox_2d"]) == 4
        hits += q.object_id == str(
            policy.candidates(q.scene_id).object_id[
                int(np.argmax(policy.scores(q.description, q.scene_id)))
            ]
        )
    # measured 1 of 8 with the generator's people-like phrasing (GENERATOR_VERSION 3: context
    # objects, map frame, counts; the rules do not read them yet), 4 with the paraphrase families
    # and noise, 5 before
    assert hits >= 1


def test_ranking_policy_empty_candidate_set_is_a_clear_error(synth_city):
    cache, index, queries = synth_city
    env = GroundingEnv(EnvParams(), lambda s: cache, index)
    policy = RankingPolicy(env, instances=lambda s: cache.instances, candidate_classes=["Tree"])
    env.reset(query=queries[0], seed=0)
    with pytest.raises(PolicyError, match="no candidate instances of classes"):
        policy.act([], [])


# -------------------------------------------------------------------------------- end to end


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """assets/ of two synthetic blocks (seeds 3, 4): scene 3 → test_no, 4 → train/test_nd."""
    return build_eval_project(tmp_path_factory.mktemp("rank_project"))


def test_evaluate_ranking_beats_landmark_prior_deterministically(project):
    from urbex.eval.episodes import read_episodes
    from urbex.eval.runner import evaluate

    p = Params(paths={"assets": project}, eval={"workers": 1, "chunk_size": 8})
    for split in ("test_no", "test_nd"):
        rk = evaluate(
            p,
            RunSpec.from_params(p, policy="ranking_rules", split=split),
            run_id=f"rk-{split}",
            progress=False,
        )
        again = evaluate(
            p,
            RunSpec.from_params(p, policy="ranking_rules", split=split),
            run_id=f"rk2-{split}",
            progress=False,
        )
        lp = evaluate(
            p,
            RunSpec.from_params(p, policy="landmark_prior", split=split),
            run_id=f"lp-{split}",
            progress=False,
        )
        h_rk = rk.metrics.row(0, named=True)["hit1"]
        h_lp = lp.metrics.row(0, named=True)["hit1"]
        print(f"{split}: n={rk.n_queries} hit1 ranking={h_rk:.3f} landmark_prior={h_lp:.3f}")
        # measured with the generator's paraphrase families and noise (the held-out family on
        # test_no): ranking_rules 0.42 / 0.48, landmark_prior 0.00 / 0.32 (test_nd / test_no)
        assert h_rk >= 0.4 and h_rk >= h_lp + 0.1
        cols = ["query_id", "pred_x_min", "pred_y_min", "pred_x_max", "pred_y_max", "hit1"]
        a = read_episodes(rk.run_dir).select(cols).sort("query_id")
        b = read_episodes(again.run_dir).select(cols).sort("query_id")
        assert a.equals(b)
