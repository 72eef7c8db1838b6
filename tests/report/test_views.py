"""The warehouse's table list (urbex/report/views.py): timings joins that can be built."""

from __future__ import annotations

from urbex.eval.episodes import shard_schema, timing_schema
from urbex.report.views import TABLES


def test_every_timed_view_joins_a_timings_table_defined_before_it_on_shared_keys():
    names = list(TABLES)
    timed = [t for t in TABLES.values() if t.timings is not None]
    assert {t.name for t in timed} == {"training_log", "runs", "episodes", "steps", "metrics"}
    for spec in timed:
        timings = TABLES[spec.timings]
        assert names.index(timings.name) < names.index(spec.name), spec.name
        assert timings.unique and timings.keys == spec.keys, spec.name
        cols = {c for c, _ in spec.columns}
        assert set(spec.keys) <= cols and set(timings.keys) <= {c for c, _ in timings.columns}
        assert set(timings.measured) <= cols  # the view keeps its documented columns


def test_a_shard_and_its_timings_are_the_documented_columns():
    for kind in ("episodes", "steps"):
        documented = [c for c, _ in TABLES[kind].columns]
        versioned, timed = shard_schema(kind).names, timing_schema(kind).names
        assert sorted({*versioned, *timed}) == sorted(documented), kind
        assert not set(versioned) & set(TABLES[f"{kind[:-1]}_timings"].measured)
