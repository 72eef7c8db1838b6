"""Generated queries: unique, verified descriptions per scene; the dedup key."""

import polars as pl
import pytest

from urbex.landmarks import LandmarkIndex
from urbex.synth.block import generate_block
from urbex.synth.expressions import satisfying
from urbex.synth.phrasing import names_in
from urbex.synth.queries import dedup_key, name_check, scene_queries


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


def _written(description: str, name: str) -> str | None:
    """The words of ``description`` that stand for ``name`` with one word misspelled."""
    words = [w.strip(".,:;") for w in description.split()]
    want = name.split()
    for a in range(len(words) - len(want) + 1):
        got = words[a : a + len(want)]
        diff = [(g, w) for g, w in zip(got, want) if g != w]
        if len(diff) == 1 and diff[0][0][:1] == diff[0][1][:1]:
            return " ".join(got)
    return None


def test_misspelled_names_resolve_with_the_real_lookup():
    """About one description in ten misspells a place name; the project's landmark lookup,
    built here from the block's landmarks, finds every name in the description and resolves
    the misspelled one as a landmark query would."""
    total = misspelled = 0
    for seed in (0, 5, 8):
        block = generate_block(seed, size=140.0, density=1.0)
        index = LandmarkIndex(
            pl.DataFrame(
                [{"scene_id": block.scene_id, "name": lm.name, "x": float(lm.geometry[:, 0].mean()),
                  "y": float(lm.geometry[:, 1].mean())} for lm in block.landmarks]
            )
        )  # fmt: skip
        qs = scene_queries(block, seed=seed)
        total += len(qs)
        for q in qs:
            names = names_in(q.expression)
            found = index.mentions(q.description, block.scene_id)
            assert set(names) <= set(found), q
            if "misspelled_name" not in q.phrasing.noise:
                continue
            misspelled += 1
            wrong = [n for n in names if n not in q.description]
            assert len(wrong) == 1, q
            written = _written(q.description, wrong[0])
            assert written is not None, q
            hit = index.lookup(written, scene_id=block.scene_id)
            assert hit.found and hit.best.name == wrong[0], (written, hit)
    assert 0.04 <= misspelled / total <= 0.16, (misspelled, total)


def test_name_check_rejects_a_misspelling_that_names_another_place(block):
    check = name_check(block)
    road = block.roads[0].name
    assert check(f"the car on {road}", road, road)
    other = next(lm.name for lm in block.landmarks if lm.name != road)
    assert not check(f"the car on {other}", road, other)  # found, but as another place


def test_scene_queries_without_misspelling_keeps_every_name_verbatim(block):
    qs = scene_queries(block, seed=1, noise_rates={"misspelled_name": 0.0})
    for q in qs:
        assert "misspelled_name" not in q.phrasing.noise
        assert all(n in q.description for n in names_in(q.expression))
    assert qs
