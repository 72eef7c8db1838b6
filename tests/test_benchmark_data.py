"""A benchmark is a data set: STPLS3D-Refer's caches, landmarks and queries, played zero-shot."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from tests.fixtures.small_project import REPO_ROOT, write_small_project
from urbex.benchmarks import BENCHMARKS, ZERO_SHOT, benchmark_params
from urbex.config import Params, load_params
from urbex.env.world import World
from urbex.errors import ConfigError
from urbex.stages import build_benchmark


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Params:
    """A small synthetic city + one STPLS3D-style scene, CityRefer built, STPLS3D-Refer built."""
    from urbex.agents.ranker import fit_project_ranker
    from urbex.stages import (
        build_scene,
        stage_clean_annotations,
        stage_landmarks,
        stage_raw,
        stage_splits,
        stage_stpls3d_refer,
    )

    root = tmp_path_factory.mktemp("bench")
    params = load_params(write_small_project(root, synth={"stpls3d_scenes": 1}))
    ds = stage_raw(params, progress=False)
    for sid in ds.scene_ids:
        build_scene(params, sid)
    stage_landmarks(params)
    stage_clean_annotations(params)
    stage_splits(params)
    fit_project_ranker(
        World.from_params(params), params.layout, candidate_classes=params.eval.candidate_classes
    )
    stage_stpls3d_refer(params)
    return params


def test_benchmark_names() -> None:
    assert BENCHMARKS[0] == "cityrefer" and ZERO_SHOT == ("stpls3d_refer",)
    with pytest.raises(ValueError, match="expected one of"):
        benchmark_params(Params(), "nope")


def test_build_benchmark_without_its_source_says_what_to_run(tmp_path: Path) -> None:
    params = load_params(write_small_project(tmp_path / "p"))
    with pytest.raises(ConfigError, match="urbex stpls3d-refer"):
        build_benchmark(params, "stpls3d_refer")


def test_build_benchmark_writes_its_own_caches_landmarks_and_queries(project: Params) -> None:
    b = build_benchmark(project, "stpls3d_refer")
    lay = benchmark_params(project, "stpls3d_refer").layout
    assert b.scene_ids == ["SYNTHUSC"]
    assert lay.instances("SYNTHUSC").is_file() and lay.landmark_table("SYNTHUSC").is_file()
    assert lay.scenes.parent == project.assets / "benchmarks" / "stpls3d_refer"
    q = pl.read_parquet(b.queries)
    assert set(q["split"]) == {"test"} and q.height == b.n_queries > 0
    # landmark_free is exactly "no landmark mentioned" (the mentions() of the diagnostics)
    assert q.filter(pl.col("landmark_free"))["landmark_mentions"].list.len().max() in (0, None)
    assert (q.filter(~pl.col("landmark_free"))["landmark_mentions"].list.len() > 0).all()
    # the instance table is the pseudo-instance table: every query's object is in it
    inst = pl.read_parquet(lay.instances("SYNTHUSC"))
    assert set(q["object_id"]) <= set(inst["object_id"])
    # CityRefer's own data are untouched: its caches do not hold the benchmark scene
    assert not project.layout.scene("SYNTHUSC").exists()
    # the landmarks are the OSM/GeoJSON ones registered into the scene frame
    lm = pl.read_parquet(lay.landmark_table("SYNTHUSC"))
    meta = json.loads(lay.scene_meta("SYNTHUSC").read_text())
    assert lm.height >= 3
    x_min, x_max = meta["bounds"][0], meta["bounds"][3]
    assert ((lm["x"] > x_min - 200) & (lm["x"] < x_max + 200)).all()


def test_zero_shot_oracle_and_report_table2_block(project: Params) -> None:
    from urbex.eval.runner import evaluate
    from urbex.eval.runspec import RunSpec
    from urbex.report.comparison import report_table
    from urbex.report.publish import report
    from urbex.report.table2 import table2

    build_benchmark(project, "stpls3d_refer")
    cr = evaluate(
        project, RunSpec.from_params(project, policy="oracle", split="test_no"), progress=False
    )
    assert cr.run_id == "oracle-test_no"  # cityrefer run ids are unchanged
    spec = RunSpec(policy="oracle", split="test", benchmark="stpls3d_refer")
    r = evaluate(project, spec=spec, progress=False)
    assert r.run_id == "oracle-stpls3d_refer-test" and r.metrics["benchmark"][0] == "stpls3d_refer"
    assert r.metrics["hit1"][0] >= 0.95
    lp = evaluate(
        benchmark_params(project, "stpls3d_refer"),
        RunSpec.from_params(
            benchmark_params(project, "stpls3d_refer"), policy="landmark_prior", split="test"
        ),
        progress=False,
    )
    assert lp.spec.benchmark == "stpls3d_refer"
    t = table2(project.layout)
    assert set(t["method"]) == {"oracle", "landmark_prior"}
    assert set(t["subset"]) <= {"all", "landmark_free"} and "all" in set(t["subset"])
    q = pl.read_parquet(benchmark_params(project, "stpls3d_refer").layout.queries)
    row = t.filter((pl.col("method") == "oracle") & (pl.col("subset") == "all")).row(0, named=True)
    assert row["n"] == q.height and row["hit1"] >= 0.95
    if q["landmark_free"].any():
        lf = t.filter((pl.col("method") == "oracle") & (pl.col("subset") == "landmark_free"))
        assert lf["n"][0] == int(q["landmark_free"].sum())
    # the main table keeps the CityRefer runs only; Table 2 is its own block
    main = report_table(project.layout, project.eval, project.base_dir)
    assert "test_no_hit1" in main.columns and "test_hit1" not in main.columns
    md = report(project, echo=False).read_text()
    assert "## Table 2" in md and "| stpls3d_refer | oracle | oracle |" in md


def test_cli_benchmark_then_evaluate_benchmark(project: Params) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "HF_HUB_OFFLINE": "1"}
    params_file = str(project.base_dir / "params.yaml")

    def urbex(*args: str) -> str:
        out = subprocess.run(
            [sys.executable, "-m", "urbex.cli", "--params", params_file, "-q", *args],
            capture_output=True, text=True, env=env, timeout=600,
        )  # fmt: skip
        assert out.returncode == 0, out.stdout + out.stderr
        return out.stdout

    assert "landmark-free" in urbex("benchmark", "stpls3d_refer")
    out = urbex("evaluate", "--benchmark", "stpls3d_refer", "--policy", "ranking_rules")
    assert "ranking_rules-stpls3d_refer-test" in out
    assert (project.layout.run("ranking_rules-stpls3d_refer-test") / "metrics.parquet").is_file()
