"""The geometry of a parse: relation violations and ordinal positions (world metres)."""

from __future__ import annotations

import numpy as np
import pytest

from urbex.agents.ranking_records import Anchor, Candidates
from urbex.agents.relation_terms import ordinal_positions, relation_terms
from urbex.language import context_objects, parse

HALL = Anchor(name="Merton Hall", box=np.array([-5.0, -5.0, 5.0, 5.0]), kind="building")
LANE = Anchor(name="Mill Lane", box=np.array([-50.0, -20.0, 50.0, -20.0]), kind="road")
SOHO = Anchor(name="Soho Road", box=np.array([6.0, -60.0, 6.0, -40.0]), kind="road")
ANCHORS = {a.name: a for a in (HALL, LANE, SOHO)}


def _cars() -> Candidates:
    """Cars north of the hall, east of it, on Mill Lane (south), across Mill Lane, and the hall."""
    return Candidates.build(
        class_name=["Car", "Car", "Car", "Car", "Building"],
        box=[[0, 12, 4, 14], [12, 0, 16, 2], [0, -21, 4, -19], [0, -32, 4, -30], [-5, -5, 5, 5]],
        landmark_name=["", "", "", "", "Merton Hall"],
    )


def _terms(text: str):
    return relation_terms(parse(text, list(ANCHORS)), _cars(), ANCHORS, context_objects(text))


@pytest.mark.parametrize(
    ("text", "kind", "best"),
    [
        ("the car north of Merton Hall", "direction", 0),
        ("the car behind Merton Hall", "direction", 0),
        ("the car to the right of Merton Hall", "direction", 1),
        ("the car on Mill Lane", "road", 2),
        ("the car across Mill Lane from Merton Hall", "across", 3),
        ("the car in between Merton Hall and Mill Lane", "between", 2),
        ("the car at the corner of Mill Lane and Soho Road", "corner", 2),
    ],
)
def test_relation_terms_zero_where_satisfied(text, kind, best):
    t = next(t for t in _terms(text) if t.kind == kind)
    assert t.violation[best] == t.violation[:4].min()
    assert t.violation.shape == (5,) and np.all(t.violation >= 0)


def test_relation_terms_self_and_named():
    t = _terms("the car next to Merton Hall")[0]
    assert t.kind == "next" and t.is_self.tolist() == [False] * 4 + [True]
    named = _terms("the building called Merton Hall")[0]
    assert named.kind == "named" and named.violation.tolist() == [1, 1, 1, 1, 0]


def test_relation_terms_skip_mentions_without_an_anchor():
    assert relation_terms(parse("north of Elm Tower", ["Elm Tower"]), _cars(), ANCHORS) == []


@pytest.mark.parametrize(
    ("text", "order"),
    [
        ("the first car from the east", [2, 1, 3, 4]),
        ("the second car from the left", [1, 4, 2, 3]),
        ("the car at the north end of Mill Lane", [1, 2, 3, 4]),
        ("the third car from Merton Hall", [1, 2, 3, 4]),
    ],
)
def test_ordinal_positions(text, order):
    rows = np.arange(4)
    pos = ordinal_positions(parse(text, list(ANCHORS)), _cars(), ANCHORS, rows)
    assert pos is not None and pos.tolist() == pytest.approx(order)


def test_ordinal_positions_none_without_anything_to_count_from():
    assert ordinal_positions(parse("the red car"), _cars(), ANCHORS, np.arange(4)) is None
    assert ordinal_positions(parse("the second car"), _cars(), ANCHORS, np.arange(4)) is None


def _street() -> tuple[Candidates, tuple[Anchor, ...]]:
    """Two houses facing a road along y = 0 (one north of it, one south), a car parked in
    front of each at the kerb, a car behind each, and the road."""
    c = Candidates.build(
        class_name=["Building", "Building", "Car", "Car", "Car", "Car"],
        box=[[0, 8, 10, 18], [0, -18, 10, -8], [3, 3, 7, 5], [3, -5, 7, -3],
             [3, 22, 7, 24], [3, -24, 7, -22]],
        rgb=[[200, 30, 30], [235, 235, 235], [30, 60, 200], [200, 30, 30],
             [235, 235, 235], [30, 60, 200]],
        landmark_name=["Rose Cottage", "Elm House", "", "", "", ""],
    )  # fmt: skip
    road = Anchor(name="Mill Lane", box=np.array([-50.0, 0.0, 50.0, 0.0]), kind="road")
    return c, (road,)


@pytest.mark.parametrize(
    ("text", "best"),
    [
        ("the car in front of Rose Cottage", 2),  # towards its road: south of the north house
        ("the car behind Rose Cottage", 4),
        ("the car in front of Elm House", 3),  # north of the south house
        ("the car behind Elm House", 5),
    ],
)
def test_front_and_behind_are_meant_from_the_road_a_landmark_faces(text, best):
    c, roads = _street()
    anchors = {n: Anchor(name=n, box=c.box[i]) for i, n in enumerate(["Rose Cottage", "Elm House"])}
    t = next(
        t for t in relation_terms(parse(text, list(anchors)), c, anchors, roads=roads)
        if t.kind == "direction"
    )  # fmt: skip
    assert int(np.argmin(t.violation[2:])) + 2 == best


@pytest.mark.parametrize(
    ("text", "best"),
    [
        ("a house with a blue car parked in front of it", 0),
        ("a house with a red car in front of it", 1),
        ("a house with a white car behind it", 0),
        ("a car parked behind a white house", 5),
        ("a car parked in front of a red house", 2),
    ],
)
def test_context_objects_with_colours_and_either_direction(text, best):
    c, roads = _street()
    ctx = context_objects(text)
    t = next(t for t in relation_terms(parse(text), c, {}, ctx, roads=roads) if t.kind == "context")
    rows = np.flatnonzero(c.class_name == parse(text).target_class)
    assert rows[int(np.argmin(t.violation[rows]))] == best


def test_map_region_band():
    c, _ = _street()
    t = relation_terms(parse("the car"), c, {}, regions=("top",))[0]
    assert t.kind == "region" and t.violation[4] == 0 and t.violation[5] > 2
    t = relation_terms(parse("the car"), c, {}, regions=("bottom left",))[0]
    assert int(np.argmin(t.violation[2:])) + 2 == 5
