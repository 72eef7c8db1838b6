"""Paraphrase families, human-like noise, and the held-out family of the synthetic generator."""

from __future__ import annotations

import re

import numpy as np
import polars as pl
import pytest

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
    HELD_OUT_FAMILY,
    TRAIN_FAMILIES,
    add_noise,
    applicable_families,
    describe,
    family_weights,
    names_in,
    phrase,
)
from urbex.synth.queries import dedup_key, scene_queries

EXPRESSIONS = (
    Expression(object_name="Car", filters=(HasColour("red"), OnRoad("Mill Lane"))),
    Expression(object_name="Car", filters=(HasColour("red"),), selector=Ordinal(2, "Mill Lane", "east")),
    Expression(object_name="Building", filters=(NearLandmark("Merton Hall", "north"),),
               selector=Extreme("largest")),
    Expression(object_name="Building", filters=(HasColour("grey"), AcrossRoad("Mill Lane", "Merton Hall"))),
    Expression(object_name="Parking", filters=(NearLandmark("The Soho Tower", "next to"),)),
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
                assert re.search(r"\b(red|grey)\b", text), (family, text)
            if isinstance(expression.selector, Extreme):
                assert "largest" in text, (family, text)


def test_describe_refuses_a_family_that_cannot_word_the_expression():
    big = EXPRESSIONS[2]  # a selector: "the only largest ..." says nothing
    assert "only" not in applicable_families(big)
    with pytest.raises(ValueError, match="cannot word"):
        describe(big, family="only")
    with pytest.raises(ValueError, match="family"):
        describe(big, family="poetry")


def test_add_noise_leaves_names_alone_and_makes_one_small_typo():
    rng = np.random.default_rng(3)
    text = "the largest parking area next to The Soho Tower and along Mill Lane"
    names = ("The Soho Tower", "Mill Lane")
    for _ in range(50):
        out, applied = add_noise(text, ["no_articles", "typo"], names=names, rng=rng)
        assert applied == ("no_articles", "typo")
        assert all(n in out for n in names), out
        got = out.split()
        want = "largest parking area next to The Soho Tower and along Mill Lane".split()
        diff = [(a, b) for a, b in zip(got, want, strict=True) if a != b]
        assert len(diff) == 1 and abs(len(diff[0][0]) - len(diff[0][1])) <= 1, out
        assert diff[0][0][0] == diff[0][1][0] and diff[0][0][-1] == diff[0][1][-1]


def test_scene_queries_truthful_in_every_family_and_noise(block):
    facts = SceneFacts.from_block(block)
    qs = scene_queries(block, seed=4, families=family_weights(held_out_scene=True))
    assert {q.phrasing.family for q in qs} >= {HELD_OUT_FAMILY, "plain"}
    assert {n for q in qs for n in q.phrasing.noise} == {"no_articles", "typo"}
    for q in qs:
        assert satisfying(q.expression, facts).tolist() == [int(q.object_id)]
        assert q.phrasing.family in applicable_families(q.expression)
        for name in names_in(q.expression):  # verbatim: the landmark matcher finds it
            assert name in q.description, q
        assert len(q.description.split()) >= 3
    assert len({dedup_key(q.description) for q in qs}) == len(qs)


def test_scene_queries_default_never_uses_the_held_out_family(block):
    qs = scene_queries(block, seed=4)
    assert qs and {q.phrasing.family for q in qs} <= set(TRAIN_FAMILIES)
    assert HELD_OUT_FAMILY in FAMILIES and HELD_OUT_FAMILY not in TRAIN_FAMILIES


def test_phrase_is_deterministic_per_seed():
    def run(seed):
        rng = np.random.default_rng(seed)
        w = family_weights(held_out_scene=True)
        return [phrase(e, rng=rng, families=w) for e in EXPRESSIONS * 4]

    assert run(1) == run(1) and run(1) != run(2)


def test_held_out_family_only_in_test_no(tmp_path):
    """Through the real readers, cleaner and splitter: the held-out family never reaches
    train, val or test_nd, and makes up a real share of test_no."""
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
        params=Params(),
    )
    split = make_splits(res.queries, params=Params())
    man = read_manifest(root)
    family = {f"{r.scene_id}:{r.object_id}:{r.ann_id}": r.family for r in man.phrasings}
    assert set(family) == set(split["query_id"].to_list())  # one record per kept row
    per_split: dict[str, list[str]] = {}
    for qid, s in split.select("query_id", "split").iter_rows():
        per_split.setdefault(s, []).append(family[qid])
    assert set(per_split) == {"train", "val", "test_nd", "test_no"}
    for s in ("train", "val", "test_nd"):
        assert HELD_OUT_FAMILY not in per_split[s], s
    no = per_split["test_no"]
    assert no.count(HELD_OUT_FAMILY) >= max(3, len(no) // 4), no
    assert man.params["held_out_family"] == HELD_OUT_FAMILY
