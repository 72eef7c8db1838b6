"""Repeated decoding: repeats of a seeded stochastic policy, the ``repeated_decoding`` table
(mean, Student-t 95 % interval) and the report's ``mean [lo, hi]`` cells."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.fixtures.city import build_eval_project
from urbex.agents.registry import register_policy
from urbex.config import Params
from urbex.env.policy import PolicyBase
from urbex.eval.repeats import repeat_specs, t_interval
from urbex.eval.runner import evaluate
from urbex.eval.runspec import RunSpec


class CoinPolicy(PolicyBase):
    """Answers the target's box or a random one, by a coin seeded with the episode seed (a
    sampled policy in miniature: its score varies from repeat to repeat, reproducibly)."""

    def __init__(self, env) -> None:
        self.env = env
        self.rng = np.random.default_rng(0)

    def begin_episode(self, *, seed: int, deadline: float | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, messages, images) -> str:
        from urbex.agents.heuristics import _to_units

        g = self.env.views["global"]
        if self.rng.random() < 0.5:
            box = self.env.query.target_box_2d
        else:
            c = self.rng.uniform(g.world_box[:2], g.world_box[2:])
            box = np.r_[c - 2.0, c + 2.0]
        units = _to_units(g, box)
        return f"<answer>{json.dumps({'view_id': 'global', 'bbox_2d': units})}</answer>"


@pytest.fixture(scope="module")
def assets(tmp_path_factory) -> Path:
    register_policy(
        "coin", lambda params, *, env, checkpoint: CoinPolicy(env), needs_env=True, replace=True
    )
    return build_eval_project(tmp_path_factory.mktemp("repeats"))


def _params(assets: Path) -> Params:
    return Params(paths={"assets": assets}, eval={"workers": 1, "chunk_size": 8, "seed": 5})


def _specs(params: Params, split: str, repeats: int) -> list:
    """``repeats`` repeats of ``coin`` on ``split`` (seeds from ``eval.seed``)."""
    base = RunSpec.from_params(params, policy="coin", split=split)
    return repeat_specs(base, seed=params.eval.seed, repeats=repeats)


def test_repeats_are_runs_with_their_own_seeds_and_reproducible(assets):
    params = _params(assets)
    specs = _specs(params, "test_no", 3)
    assert [s.repeat_seed for s in specs] == [5, 6, 7]
    hits = [evaluate(params, spec=s, progress=False).metrics["hit1"][0] for s in specs]
    assert len(set(hits)) > 1  # the repeats decode differently
    again = evaluate(params, spec=specs[0], run_id="again", progress=False)
    assert again.metrics["hit1"][0] == hits[0]  # a repeat is reproducible from its seed
    assert again.metrics["repeat_seed"][0] == 5
    with pytest.raises(ValueError, match="repeats"):
        _specs(params, "test_no", 0)


def test_repeated_decoding_table_and_report_intervals(assets):
    from urbex.report.comparison import report_table
    from urbex.report.diagnose import diagnose
    from urbex.report.publish import report

    params = _params(assets)
    runs = [
        evaluate(params, spec=s, progress=False)
        for split in ("test_nd", "test_no")
        for s in _specs(params, split, 3)
    ]
    diagnose(params)
    import polars as pl

    t = pl.read_parquet(params.layout.diagnostic_table("repeated_decoding"))
    row = t.filter(pl.col("split") == "test_no").row(0, named=True)
    hits = [r.metrics["hit1"][0] for r in runs if r.metrics["split"][0] == "test_no"]
    mean, lo, hi = t_interval(hits)
    assert row["n_repeats"] == 3 and row["seeds"] == "5,6,7" and row["run_id"] == "coin-test_no"
    assert row["hit1_mean"] == pytest.approx(mean) and row["hit1_lo"] == pytest.approx(lo)
    assert lo < mean < hi
    table = report_table(params.layout, params.eval, params.base_dir)
    folded = table.filter(pl.col("method") == "coin (repeats)")
    assert folded.height == 1
    assert folded["test_no_hit1"][0] == pytest.approx(100 * mean)
    assert folded["test_no_hit1_lo"][0] == pytest.approx(100 * lo)
    md = report(params, echo=False).read_text()
    line = next(ln for ln in md.splitlines() if ln.startswith("| coin (repeats)"))
    assert f"{100 * mean:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]" in line
