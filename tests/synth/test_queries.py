"""Generated queries: unique, verified descriptions per scene; the dedup key."""

import pytest

from urbex.synth.block import generate_block
from urbex.synth.expressions import satisfying
from urbex.synth.queries import dedup_key, scene_queries


@pytest.fixture(scope="module", params=[0, 5])
def block(request):
    return generate_block(request.param, size=100.0, density=3.0)


def test_scene_queries_every_expression_selects_only_its_target(block):
    qs = scene_queries(block, seed=1)
    assert len(qs) >= 5
    for q in qs:
        assert satisfying(q.expression, block).tolist() == [int(q.object_id)]
        assert q.expression.object_name == q.object_name
        assert len(q.description.split()) >= 2


def test_scene_queries_descriptions_unique_and_deterministic(block):
    a, b = scene_queries(block, seed=2), scene_queries(block, seed=2)
    assert [q.description for q in a] == [q.description for q in b]
    assert len({q.description for q in a}) == len(a)


def test_scene_queries_exclude_is_respected(block):
    qs = scene_queries(block, seed=1)
    ex = frozenset(int(q.object_id) for q in qs[:3])
    assert not {int(q.object_id) for q in scene_queries(block, seed=1, exclude=ex)} & ex


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("The red car, on Mill Lane.", "red car on mill lane"),
        ("A building  near an oak", "building near oak"),
        ("the car's roof", "THE CAR'S ROOF"),
    ],
)
def test_dedup_key_ignores_case_articles_and_punctuation(a, b):
    assert dedup_key(a) == dedup_key(b)


def test_dedup_key_keeps_words_that_matter():
    assert dedup_key("the red car") != dedup_key("the blue car")
    assert dedup_key("the theatre") == "theatre"  # only whole articles go


def test_scene_queries_descriptions_unique_by_dedup_key(block):
    qs = scene_queries(block, seed=3)
    keys = [dedup_key(q.description) for q in qs]
    assert len(set(keys)) == len(keys)
    assert {q.object_name for q in qs} <= {"Building", "Car", "Parking", "Ground"}


def test_scene_queries_caps_targets_per_class_and_expressions_per_target(block):
    qs = scene_queries(block, seed=1, max_targets_per_class=2, max_per_target=1)
    per_class: dict[str, set[str]] = {}
    for q in qs:
        per_class.setdefault(q.object_name, set()).add(q.object_id)
    assert all(len(ids) <= 2 for ids in per_class.values())
    assert len({q.object_id for q in qs}) == len(qs)  # one expression per target
