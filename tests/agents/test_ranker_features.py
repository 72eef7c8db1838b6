"""The trained ranker's features, read from the parse."""

from __future__ import annotations

import numpy as np

from urbex.agents.ranker_features import FEATURE_NAMES, HASH_DIM, pair_features
from urbex.agents.ranking_records import Anchor, Candidates
from urbex.language import context_objects, parse

F = {n: i for i, n in enumerate(FEATURE_NAMES)}
HALL = Anchor(name="Merton Hall", box=np.array([-5.0, -5.0, 5.0, 5.0]), kind="building")


def _cars() -> Candidates:
    """Three cars north, east and south of the hall, and the hall itself."""
    return Candidates.build(
        class_name=["Car", "Car", "Car", "Building"],
        box=[[0, 20, 4, 22], [20, 0, 24, 2], [0, -22, 4, -20], [-5, -5, 5, 5]],
        rgb=[[200, 30, 30], [30, 60, 200], [200, 30, 30], [120, 120, 120]],
        height=[1.5, 1.5, 1.5, 10.0],
        landmark_name=["", "", "", "Merton Hall"],
    )


def _features(desc: str, c: Candidates, anchors=()) -> np.ndarray:
    p = parse(desc, [a.name for a in anchors])
    return pair_features(desc, p, c, {a.name: a for a in anchors})


def test_pair_features_compass_relates_to_the_landmark_it_precedes():
    f = _features("the red car south of Merton Hall", _cars(), [HALL])
    agree = f[:, F["dir_agree"]]
    assert int(np.argmax(agree[:3])) == 2 and agree[0] < 0
    assert f[:, F["class_match"]].tolist() == [1, 1, 1, 0]
    assert f[:, F["lm_is_it"]].tolist() == [0, 0, 0, 1]
    assert f[0, F["colour_ll"]] > f[1, F["colour_ll"]]


def test_pair_features_ordinal_counts_from_the_named_end():
    c = Candidates.build(class_name=["Car"] * 3, box=[[0, 0, 4, 2], [10, 0, 14, 2], [20, 0, 24, 2]])
    road = Anchor(name="Soho Street", box=np.array([-5.0, 3.0, 30.0, 3.0]), kind="road")
    f = _features("the second car from the east end of Soho Street", c, [road])
    assert f[:, F["ordinal_match"]].tolist() == [0, 1, 0]
    f = _features("the first of the cars on Soho Street, counted from its west end", c, [road])
    assert f[:, F["ordinal_match"]].tolist() == [1, 0, 0]


def test_pair_features_map_frame_and_relation_violations():
    f = _features("the car to the left of Merton Hall", _cars(), [HALL])
    agree = f[:3, F["dir_agree"]]  # map frame: left is west; no car is west of the hall
    assert int(np.argmin(agree)) == 1 and agree[1] < -0.99 and np.all(agree < 0)
    f = _features("the car next to Merton Hall", _cars(), [HALL])
    assert np.all(f[:3, F["rel_next"]] > 0) and f[3, F["rel_next"]] == 0  # the cars are 15 m off


def test_pair_features_of_no_candidate_is_empty():
    empty = Candidates.build(class_name=[], box=np.zeros((0, 4)))
    assert pair_features("x", parse("x"), empty).shape == (0, len(FEATURE_NAMES))


def test_pair_features_colours_of_the_target_only():
    f = _features("a blue car next to a red house", _cars())
    assert int(np.argmax(f[:3, F["colour_ll"]])) == 1  # the blue one, not the red ones


def test_pair_features_context_object_and_bag_of_words_without_names():
    c = Candidates.build(class_name=["Car", "Car", "Parking"],
                         box=[[0, 0, 4, 2], [50, 50, 54, 52], [45, 45, 70, 70]])  # fmt: skip
    d = "the car in a parking lot"
    f = pair_features(d, parse(d), c, {}, context_objects(d))
    assert f[:, F["rel_context"]].tolist() == [1.0, 0.0, 1.0]
    bow = slice(len(FEATURE_NAMES) - 4 * HASH_DIM, len(FEATURE_NAMES))
    a = _features("the car next to Merton Hall", _cars(), [HALL])[:, bow]
    b = _features("the car next to Zzyzx Hall", _cars(), [HALL])[:, bow]
    assert np.array_equal(a, _features("the car next to", _cars())[:, bow])
    assert not np.array_equal(a, b)  # the unmentioned name's words count
