"""Candidate expressions: every location relation listed for an instance is true of it."""

from __future__ import annotations

import numpy as np
import pytest

from urbex.synth.block import generate_block
from urbex.synth.candidates import candidate_expressions, context_facts, location_singles
from urbex.synth.expressions import SceneFacts, satisfying


@pytest.fixture(scope="module")
def facts():
    return SceneFacts.from_block(generate_block(0, size=160.0, density=1.0))


def test_location_singles_are_true_of_their_instance(facts):
    kinds: set[str] = set()
    for row in range(len(facts.ids)):
        one = np.zeros(len(facts.ids), bool)
        one[row] = True
        for f in location_singles(facts, row):
            assert f.mask(facts, one)[row], (row, f)
            kinds.add(type(f).__name__)
    assert {"MapRegion", "MapRelation", "FacingSide", "OffRoad", "AtRoadEnd", "Context"} <= kinds


def test_context_facts_are_true_and_capped(facts):
    for row in range(len(facts.ids)):
        one = np.zeros(len(facts.ids), bool)
        one[row] = True
        got = context_facts(facts, row, limit=2)
        assert len(got) <= 2
        for c in got:
            assert c.mask(facts, one)[row]
            assert c.target_first == (facts.cls[row] == "Car")


def test_candidate_expressions_new_kinds_select_their_target_somewhere(facts):
    unique: set[str] = set()
    for row in range(len(facts.ids)):
        for e in candidate_expressions(facts, row):
            assert e.object_name == facts.cls[row]
            if satisfying(e, facts).tolist() == [int(facts.ids[row])]:
                unique |= {type(f).__name__ for f in e.filters}
    assert {"MapRelation", "FacingSide", "Between", "OffRoad", "Context", "HasWalls"} <= unique
