"""Decorations: more true facts per family, each decorated expression still unique."""

from __future__ import annotations

import numpy as np
import pytest

from urbex.synth.block import generate_block
from urbex.synth.candidates import candidate_expressions
from urbex.synth.enrich import MAX_COUNT, RATES, decorations
from urbex.synth.expressions import Expression, HasColour, Ordinal, SceneFacts, satisfying
from urbex.synth.predicates import Counted


@pytest.fixture(scope="module")
def cores():
    """(facts, [(row, unique core expression)]) of one block, a few per instance."""
    f = SceneFacts.from_block(generate_block(2, size=140.0, density=1.0))
    out = []
    for row in range(len(f.ids)):
        u = [
            e
            for e in candidate_expressions(f, row)
            if satisfying(e, f).tolist() == [int(f.ids[row])]
        ]
        out += [(row, e) for e in u[:: max(1, len(u) // 4)]]
    return f, out


@pytest.mark.parametrize("family", sorted(RATES))
def test_decorations_all_select_exactly_the_target(cores, family):
    f, pairs = cores
    rng = np.random.default_rng(0)
    richer = 0
    for row, core in pairs:
        out = decorations(core, f, row, family, rng)
        assert out
        for e in out:
            assert satisfying(e, f).tolist() == [int(f.ids[row])], (family, e)
            for c in (x for x in e.filters if isinstance(x, Counted)):
                k = e.filters.index(c)
                group = Expression(object_name=e.object_name, filters=e.filters[:k])
                assert len(satisfying(group, f)) == c.n <= MAX_COUNT
        richer += len(out[0].also) > len(core.also)
    assert richer > 0 or family == "fronted"


def test_detailed_tries_richest_first(cores):
    f, pairs = cores
    rng = np.random.default_rng(1)
    for row, core in pairs[:40]:
        out = decorations(core, f, row, "detailed", rng)
        sizes = [len(e.also) + len(e.filters) for e in out]
        assert sizes == sorted(sizes, reverse=True)


def test_an_ordinal_keeps_its_ranked_colour(cores):
    """A shade or a hedge would change the group an ordinal counts in: never applied."""
    f, pairs = cores
    rng = np.random.default_rng(2)
    seen = 0
    for row, core in pairs:
        if not isinstance(core.selector, Ordinal):
            continue
        for e in decorations(core, f, row, "plain", rng):
            colours = [x for x in e.filters if isinstance(x, HasColour)]
            assert all(not c.shade and not c.among for c in colours)
            seen += 1
    assert seen


def test_existential_decorations_count_or_fall_back_to_the_core(cores):
    f, pairs = cores
    rng = np.random.default_rng(3)
    counted = 0
    for row, core in pairs:
        out = decorations(core, f, row, "existential", rng)
        assert out[-1] == core
        counted += any(isinstance(x, Counted) for x in out[0].filters)
    assert counted > 0
