"""Paraphrase families, what they show, and the held-out families of the synthetic generator."""

from __future__ import annotations

import re

import numpy as np
import polars as pl
import pytest

from urbex.landmarks import LandmarkIndex
from urbex.synth.block import generate_block
from urbex.synth.expressions import (
    AcrossRoad,
    Expression,
    Extreme,
    HasColour,
    NearLandmark,
    OnRoad,
    Ordinal,
    SceneFacts,
    satisfying,
)
from urbex.synth.phrasing import (
    FAMILIES,
    HELD_OUT_FAMILIES,
    HELD_OUT_FAMILY,
    NOISE_KINDS,
    PHENOMENA,
    TRAIN_FAMILIES,
    WORD_RANGE,
    Phrasing,
    applicable_families,
    describe,
    family_weights,
    names_in,
    phenomena,
    phrase,
)
from urbex.synth.predicates import Context, Counted, FacingSide, HasShape, HasWalls, MapRelation
from urbex.synth.queries import dedup_key, scene_queries

EXPRESSIONS = (
    Expression(object_name="Car", filters=(HasColour("red"), OnRoad("Mill Lane"))),
    Expression(object_name="Car", filters=(HasColour("red"),), selector=Ordinal(2, "Mill Lane", "east")),
    Expression(object_name="Building", filters=(NearLandmark("Merton Hall", "north"),),
               selector=Extreme("largest")),
    Expression(object_name="Building", filters=(HasColour("grey"), AcrossRoad("Mill Lane", "Merton Hall"))),
    Expression(object_name="Parking", filters=(NearLandmark("The Soho Tower", "next to"),)),
    Expression(object_name="Car", filters=(OnRoad("Mill Lane"), Counted(3), HasColour("red"))),
    Expression(object_name="Building", filters=(FacingSide("Merton Hall", "back"),),
               also=(HasWalls("white"), HasShape("L-shaped"), Context("Car", "red", "in front of"))),
    Expression(object_name="Car", filters=(HasColour("red"), MapRelation("Merton Hall", "left"))),
)  # fmt: skip


@pytest.fixture(scope="module", params=[0, 5])
def block(request):
    return generate_block(request.param, size=120.0, density=2.0)


@pytest.mark.parametrize("expression", EXPRESSIONS, ids=lambda e: e.object_name)
def test_describe_every_applicable_family_keeps_names_and_words(expression):
    rng = np.random.default_rng(0)
    for family in applicable_families(expression):
        for _ in range(5):
            text = describe(expression, rng=rng, family=family)
            for name in names_in(expression):
                assert name in text, (family, text)
            if any(isinstance(f, HasColour) for f in expression.filters):
                assert re.search(r"\b(red|grey|reddish|greyish)\b", text), (family, text)
            if isinstance(expression.selector, Extreme):
                assert "largest" in text, (family, text)


def test_describe_refuses_a_family_that_cannot_word_the_expression():
    big = EXPRESSIONS[2]  # a selector: "the only largest ..." says nothing
    assert "only" not in applicable_families(big)
    with pytest.raises(ValueError, match="cannot word"):
        describe(big, family="only")
    with pytest.raises(ValueError, match="family"):
        describe(big, family="poetry")


def _index(block) -> LandmarkIndex:
    rows = [
        {"scene_id": block.scene_id, "name": lm.name, "x": 0.0, "y": 0.0} for lm in block.landmarks
    ]
    return LandmarkIndex(pl.DataFrame(rows))


def test_scene_queries_truthful_in_every_family_and_noise(block):
    facts = SceneFacts.from_block(block)
    qs = scene_queries(block, seed=4, families=family_weights(held_out_scene=True))
    index = _index(block)
    fams = {q.phrasing.family for q in qs}
    assert fams >= {*HELD_OUT_FAMILIES, "detailed"} and len(fams) >= 5, fams
    assert {"no_articles", "typo"} <= {n for q in qs for n in q.phrasing.noise} <= set(NOISE_KINDS)
    for q in qs:
        assert satisfying(q.expression, facts).tolist() == [
            int(q.object_id)
        ]  # independent re-check
        assert q.phrasing.family in applicable_families(q.expression)
        found = index.mentions(q.description, block.scene_id)
        for name in names_in(q.expression):
            if "misspelled_name" in q.phrasing.noise:
                assert name in found, q  # the real lookup still finds it
            else:
                assert name in q.description, q  # verbatim
        assert len(q.description.split()) >= 3
        assert set(q.phrasing.phenomena) <= set(PHENOMENA)
    assert len({dedup_key(q.description) for q in qs}) == len(qs)


def test_detailed_descriptions_are_2_to_4_sentences_of_20_to_40_words(block):
    qs = scene_queries(block, seed=5, families={"detailed": 1.0}, noise_rates={})
    detailed = [q for q in qs if q.phrasing.family == "detailed"]
    assert len(detailed) >= len(qs) // 2
    lo, hi = WORD_RANGE
    for q in detailed:
        assert lo <= len(q.description.split()) <= hi, q.description
        assert 2 <= len(re.findall(r"[.!?](?:\s|$)", q.description)) <= 4, q.description


def test_scene_queries_default_never_uses_the_held_out_families(block):
    qs = scene_queries(block, seed=4)
    assert qs and {q.phrasing.family for q in qs} <= set(TRAIN_FAMILIES)
    assert HELD_OUT_FAMILY in HELD_OUT_FAMILIES and not set(HELD_OUT_FAMILIES) & set(TRAIN_FAMILIES)
    assert set(FAMILIES) == set(TRAIN_FAMILIES) | set(HELD_OUT_FAMILIES)


def test_phrase_is_deterministic_per_seed():
    def run(seed):
        rng = np.random.default_rng(seed)
        w = family_weights(held_out_scene=True)
        return [phrase(e, rng=rng, families=w)[:2] for e in EXPRESSIONS * 4]

    assert run(1) == run(1) and run(1) != run(2)


def test_held_out_families_only_in_test_no(tmp_path):
    """Through the real readers, cleaner and splitter: the held-out families never reach
    train, val or test_nd, and make up a real share of test_no."""
    from urbex.annotations.clean import annotations_frame, clean_annotations
    from urbex.annotations.splits import make_splits
    from urbex.config import Params
    from urbex.io.cityrefer import read_annotations, read_box3d, read_false_segments
    from urbex.io.datasets import annotation_files
    from urbex.synth.dataset import generate_dataset
    from urbex.synth.manifest import read_manifest

    root = tmp_path / "ds"
    generate_dataset(root, scenes=3, seed=2, size=100, density=2, las_copy=False, progress=False)
    anns = pl.concat(
        [
            annotations_frame(read_annotations(p), file_split=s)
            for s, p in sorted(annotation_files(root).items())
        ]
    )
    inst = [
        {"scene_id": sid, "object_id": b.object_id}
        for f in sorted((root / "box3d").glob("*_bbox.json"))
        for sid, boxes in [read_box3d(f)]
        for b in boxes
    ]
    res = clean_annotations(
        anns,
        instances=pl.DataFrame(inst),
        false_segments=read_false_segments(root / "false_segments"),
        annotation_params=Params().annotations,
    )
    split = make_splits(res.queries, annotation_params=Params().annotations)
    man = read_manifest(root)
    family = {f"{r.scene_id}:{r.object_id}:{r.ann_id}": r.family for r in man.phrasings}
    assert set(family) == set(split["query_id"].to_list())  # one record per kept row
    per_split: dict[str, list[str]] = {}
    for qid, s in split.select("query_id", "split").iter_rows():
        per_split.setdefault(s, []).append(family[qid])
    assert set(per_split) == {"train", "val", "test_nd", "test_no"}
    for s in ("train", "val", "test_nd"):
        assert not set(HELD_OUT_FAMILIES) & set(per_split[s]), s
    no = per_split["test_no"]
    held = [f for f in no if f in HELD_OUT_FAMILIES]
    assert len(held) >= max(3, len(no) // 4) and set(held) == set(HELD_OUT_FAMILIES), no
    assert man.params["held_out_families"] == list(HELD_OUT_FAMILIES)


def test_phenomena_read_the_expression_the_words_and_the_noise():
    e = Expression(object_name="Building", filters=(OnRoad("Mill Lane"), Counted(3), HasColour("red", shade="maroon")),
                   also=(HasWalls("beige"), Context("Car", "red", "behind")))  # fmt: skip
    text = "It looks like a beige house with a maroon roof. It is one of the three houses on Mill Lane. There is a red car behind it."
    assert phenomena(e, text, ("misspelled_name",)) == (
        "context", "front_behind", "parts", "multi_colour", "count", "shade", "hedge",
        "misspelled_name", "multi_sentence",
    )  # fmt: skip
    assert (
        phenomena(
            Expression(object_name="Car", filters=(OnRoad("Mill Lane"),)), "the car on Mill Lane"
        )
        == ()
    )


def test_phrasing_validates_its_fields():
    Phrasing(family="detailed", noise=("misspelled_name",), phenomena=("count",))
    with pytest.raises(ValueError, match="phenomena"):
        Phrasing(family="plain", phenomena=("poetry",))
