"""``diagnose`` end to end: evaluated runs in, the diagnostic tables, plots and warehouse views out.

(The tables themselves, on hand-computed frames: test_diagnostics.py.)
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import polars as pl
import pytest
from PIL import Image

from tests.fixtures.city import build_eval_project
from urbex.config import Params
from urbex.eval.runner import evaluate
from urbex.eval.runspec import RunSpec
from urbex.report.diagnose import diagnose
from urbex.report.diagnostics import DIAGNOSTIC_TABLES
from urbex.report.plots import PLOT_SIZE


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    return build_eval_project(tmp_path_factory.mktemp("diag"))


def _params(assets: Path, **eval_kw) -> Params:
    return Params(paths={"assets": assets}, eval={"workers": 1, "chunk_size": 8, **eval_kw})


def test_diagnose_end_to_end_with_oracle_landmark_prior_and_noise_run(project):
    for policy in ("oracle", "landmark_prior"):
        evaluate(
            _params(project),
            RunSpec.from_params(_params(project), policy=policy, split="test_no"),
            progress=False,
        )
    r = evaluate(
        _params(project, landmark_perturbation="noise"),
        RunSpec.from_params(
            _params(project, landmark_perturbation="noise"),
            policy="landmark_prior",
            split="test_no",
        ),
        progress=False,
    )
    assert r.run_id == "landmark_prior-test_no-lm_noise10"
    meta = json.loads((r.run_dir / "run.json").read_text())
    assert RunSpec.from_dict(meta["spec"]).perturbation_tag == "noise10"
    assert meta["fingerprint"]["landmark_perturbation"] == {
        "mode": "noise",
        "seed": 0,
        "noise_m": 10.0,
    }
    assert r.metrics["landmark_perturbation"].to_list() == ["noise10"]
    assert r.spec == RunSpec.from_dict(meta["spec"]) and r.spec.clean().run_id == (
        "landmark_prior-test_no"
    )
    assert r.metrics.select("landmark_perturbation_mode", "landmark_noise_m").row(0) == (
        "noise",
        10.0,
    )

    paths = diagnose(_params(project))
    out = project / "eval" / "diagnostics"
    panels = {f"{stem}-{family}.png" for stem in ("success_vs_distractors", "area_ratio_hist")
              for family in ("landmark_prior", "oracle")}  # fmt: skip
    assert {p.name for p in paths} == {
        *(f"{n}.parquet" for n in DIAGNOSTIC_TABLES),
        "diagnostics.md",
        *panels,  # small multiples: one panel per policy family
    }
    for png in panels:
        with Image.open(out / png) as im:
            assert im.size == PLOT_SIZE and im.mode == "RGB"

    con = duckdb.connect(str(project / "warehouse.duckdb"), read_only=True)
    try:
        for n in DIAGNOSTIC_TABLES:
            if n == "repeated_decoding":  # no repeats here: tests/eval/test_repeats.py
                continue
            assert con.sql(f"SELECT count(*) FROM diagnostics_{n}").fetchall()[0][0] > 0
        dis = pl.from_arrow(
            con.sql(
                "SELECT * FROM diagnostics_disambiguation WHERE run_id = 'oracle-test_no'"
            ).to_arrow_table()
        )
        la = pl.from_arrow(
            con.sql("SELECT * FROM diagnostics_landmark_availability").to_arrow_table()
        )
        steps = con.sql(
            "SELECT count(*) FROM steps WHERE tool = 'zoom_in' AND region_x_min_m IS NOT NULL"
        ).fetchall()[0][0]
    finally:
        con.close()
    assert steps > 0  # zoom regions recorded in world metres
    # the oracle zooms onto the target: every episode is a regional and a local success
    dd = dis.filter(pl.col("factor") == "distractors", pl.col("n") > 0)
    assert dd["regional_success"].to_list() == [1.0] * dd.height
    assert dd["local_success"].to_list() == [1.0] * dd.height
    noise = la.filter(pl.col("run_id") == "landmark_prior-test_no-lm_noise10")
    assert set(noise["clean_run_id"].to_list()) == {"landmark_prior-test_no"}
    assert set(noise["subset"].to_list()) == {"all", "with landmark", "without landmark"}
    text = (out / "diagnostics.md").read_text()
    assert "## disambiguation" in text and "landmark_prior-test_no-lm_noise10" in text


def test_diagnose_refuses_a_run_with_duplicate_queries(project):
    import shutil

    from urbex.errors import UrbexError

    r = evaluate(_params(project), RunSpec.from_params(_params(project), policy="oracle", split="test_no", limit=3), run_id="dup", progress=False)  # fmt: skip
    copies = []
    for sub in ("episodes", "steps"):  # what a second writer of the same run left
        (shard,) = sorted((r.run_dir / sub).glob("part-*.parquet"))
        copies.append(shutil.copy(shard, shard.with_name("part-second-writer.parquet")))
    try:
        with pytest.raises(UrbexError, match=r"run 'dup' holds 3 queries") as e:
            diagnose(_params(project), refresh=False)
        assert type(e.value).__name__ == "DuplicateEpisodesError"
        ids = sorted(pl.read_parquet(r.run_dir / "episodes")["query_id"].unique().to_list())
        assert str(ids[:3]) in str(e.value) and "\n" not in str(e.value)
    finally:
        for c in copies:
            Path(c).unlink()
    diagnose(_params(project), refresh=False)  # one episode per query again: accepted


def test_diagnose_step_skills_of_a_marks_run_follow_the_oracle_step_by_step(project):
    """The oracle with numbered marks zooms on the target and answers its mark: every episode
    whose zooms listed the target's mark named it."""
    p = _params(project).with_updates(
        env={"marks": {"enabled": True, "describe": "attributes", "layout": "id_last"}}
    )
    r = evaluate(p, RunSpec.from_params(p, policy="oracle", split="test_no"), progress=False)
    assert r.run_id.endswith("-marks")
    paths = diagnose(p)
    t = pl.read_parquet(next(x for x in paths if x.name == "step_skills.parquet"))
    row = t.filter(pl.col("run_id") == r.run_id).row(0, named=True)
    assert row["n"] == r.n_queries and row["zoom_on_target"] == 100.0
    assert row["target_mark_shown"] > 50.0 and row["right_mark_given_shown"] == 100.0
    assert row["valid_answer"] == 100.0
    assert "## step_skills" in (project / "eval" / "diagnostics" / "diagnostics.md").read_text()
