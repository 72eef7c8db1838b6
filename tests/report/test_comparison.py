"""The Table-1-shaped report from hand-made metrics files."""

from __future__ import annotations

import json

import polars as pl
import pytest

from tests.fixtures.metrics import write_metrics as _metrics
from tests.fixtures.metrics import write_spec_run as _spec_run
from urbex.config import Params
from urbex.eval.perturb import LandmarkPerturbation
from urbex.eval.runspec import RunSpec
from urbex.report.comparison import report_table, to_markdown
from urbex.report.publish import report


def _table(assets, **kw):
    """The report table of the runs under ``assets`` with the default params."""
    p = Params(paths={"assets": assets})
    return report_table(p.layout, p.eval, p.base_dir, **kw)


def test_report_table_rows_runs_columns_split_metric(tmp_path):
    _metrics(tmp_path, "a", "oracle", "test_no", 1.0)
    _metrics(tmp_path, "a", "oracle", "test_nd", 0.9)
    _metrics(tmp_path, "b", "landmark_prior", "test_no", 0.25, n=8)
    t = _table(tmp_path)
    assert t["method"].to_list() == ["b", "a"]  # sorted by policy
    assert t.columns[:4] == ["method", "policy", "test_nd_n", "test_nd_hit1"]
    row = t.filter(pl.col("method") == "a").row(0, named=True)
    assert row["test_no_hit1"] == 100.0 and row["test_nd_hit1"] == pytest.approx(90.0)
    assert row["test_no_n"] == 10 and "test_no_latency_s" not in t.columns  # a timing
    timed = _table(tmp_path, metrics=["n", "latency_s"])
    assert timed.filter(pl.col("method") == "a")["test_no_latency_s"][0] == 0.5  # on request
    assert t.filter(pl.col("method") == "b")["test_nd_hit1"][0] is None


def test_report_runs_of_one_method_share_a_row(tmp_path):
    _spec_run(tmp_path, 1.0, policy="oracle", split="test_no")
    _spec_run(tmp_path, 0.9, policy="oracle", split="test_nd")
    _spec_run(tmp_path, 0.1, policy="vlm", split="test_no", checkpoint="/c/ckpt")
    noise = LandmarkPerturbation(mode="noise", noise_m=10.0, seed=0)
    _spec_run(tmp_path, 0.2, policy="oracle", split="test_no", perturbation=noise)
    t = _table(tmp_path)
    assert t["method"].to_list() == ["oracle", "oracle-lm_noise10", "vlm-ckpt"]
    row = t.row(0, named=True)
    assert row["test_nd_hit1"] == pytest.approx(90.0) and row["test_no_hit1"] == 100.0


def test_report_rows_come_from_the_spec_not_the_run_id(tmp_path):
    """A custom run id of a vlm checkpoint run is the checkpoint's row on both splits."""
    for split, hit1 in (("test_no", 0.5), ("test_nd", 0.25)):
        spec = RunSpec(policy="vlm", split=split, checkpoint="/c/step-3")
        _metrics(tmp_path, f"my-{split}-ablation", "vlm", split, hit1, spec=spec)
    t = _table(tmp_path)
    assert t.select("method", "test_nd_hit1", "test_no_hit1").rows() == [("vlm-step-3", 25.0, 50.0)]


def test_report_custom_run_id_beside_the_default_run_shows_both(tmp_path):
    """``--run-id oracle`` beside ``oracle-test_no`` (same method × split): the default-named
    run keeps the row ``oracle``, the custom one is ``oracle [oracle]``, in any write order."""
    spec = RunSpec(policy="oracle", split="test_no")
    _metrics(tmp_path, "oracle", "oracle", "test_no", 0.5, spec=spec)
    _metrics(tmp_path, "oracle-test_no", "oracle", "test_no", 1.0, spec=spec)
    _spec_run(tmp_path, 0.9, policy="oracle", split="test_nd")
    md = report(Params(paths={"assets": tmp_path}), echo=False).read_text()
    t = _table(tmp_path)
    assert t.select("method", "test_nd_hit1", "test_no_hit1").rows() == [
        ("oracle", 90.0, 100.0),
        ("oracle [oracle]", None, 50.0),
    ]
    assert "| oracle [oracle] | oracle |" in md


def test_report_two_custom_runs_of_one_method_are_both_labelled_by_id(tmp_path):
    spec = RunSpec(policy="oracle", split="test_no")
    _metrics(tmp_path, "b", "oracle", "test_no", 0.5, spec=spec)
    _metrics(tmp_path, "a", "oracle", "test_no", 1.0, spec=spec)
    t = _table(tmp_path)
    assert t["method"].to_list() == ["oracle [a]", "oracle [b]"]


def test_report_metrics_without_spec_columns_read_the_run_json(tmp_path):
    """A run finalized before specs: its row comes from run.json's spec; a run.json of an
    older schema leaves its run out of the report (the warehouse warns, naming the file)."""
    from urbex.eval.rundir import RunRecord, write_run

    _metrics(tmp_path, "vlm-test_no-ck", "vlm", "test_no", 0.5)
    legacy = {"policy": "vlm", "split": "test_no", "checkpoint": "/x/ck", "limit": None}
    legacy["fingerprint"] = {"checkpoint": "/x/ck"}
    (tmp_path / "eval" / "runs" / "vlm-test_no-ck" / "run.json").write_text(json.dumps(legacy))
    _metrics(tmp_path, "custom", "oracle", "test_nd", 0.5)
    spec = RunSpec(policy="oracle", split="test_nd")
    record = RunRecord(
        run_id="custom", spec=spec, fingerprint={}, status="complete", n_queries=10, n_episodes=10
    )
    write_run(record, tmp_path / "eval" / "runs" / "custom" / "run.json")
    with pytest.warns(UserWarning, match=r"vlm-test_no-ck/run.json: left out.*schema 1"):
        t = _table(tmp_path)
    assert sorted(t["method"].to_list()) == ["oracle"]


def test_report_empty_warehouse_gives_header_only(tmp_path):
    md = to_markdown(_table(tmp_path))
    assert md.splitlines()[0] == "| method | policy |"


def test_report_unknown_metric_raises(tmp_path):
    with pytest.raises(ValueError, match="not columns"):
        _table(tmp_path, metrics=["hit7"])


def test_report_table11_block_and_warehouse_table(tmp_path):
    """Table 11's shape: method × BEV IoU, 3D IoU, point F1 on test_no (percent)."""
    import duckdb

    from urbex.report.comparison import table11

    for rid, policy, f1 in (("r", "ranking", 0.4), ("p", "ranking_proposals", 0.2)):
        _metrics(tmp_path, rid, policy, "test_no", 0.5)
        path = tmp_path / "eval" / "runs" / rid / "metrics.parquet"
        df = pl.read_parquet(path).with_columns(
            pl.lit(0.3).alias("iou_3d"), pl.lit(f1).alias("point_f1")
        )
        df.write_parquet(path)
    _metrics(tmp_path, "nd", "oracle", "test_nd", 1.0)  # not on test_no: not in Table 11
    params = Params(paths={"assets": tmp_path})
    t = table11(params.layout, params.base_dir)
    assert t["method"].to_list() == ["r", "p"]
    row = t.filter(pl.col("method") == "p").row(0, named=True)
    assert row["iou_bev"] == pytest.approx(10.0) and row["point_f1"] == pytest.approx(20.0)
    text = report(params, echo=False).read_text()
    assert "## Table 11 (test_no)" in text
    assert "| p | ranking_proposals | 10 | 10.0 | 30.0 | 20.0 |" in text
    from urbex.report.warehouse import refresh_warehouse

    refresh_warehouse(tmp_path)
    con = duckdb.connect(str(tmp_path / "warehouse.duckdb"), read_only=True)
    try:
        got = con.execute("SELECT method, point_f1 FROM diagnostics_table11 ORDER BY method")
        assert got.fetchall() == [("p", pytest.approx(20.0)), ("r", pytest.approx(40.0))]
    finally:
        con.close()


def test_report_marks_rows_of_smoke_checkpoints(tmp_path):
    """A checkpoint trained at smoke length (its summary JSON's ``recipe.smoke``) gives rows
    labelled ``(smoke)``, and report.md says what they are; a full-recipe checkpoint does not."""
    import json

    ckpts = tmp_path / "checkpoints"
    for name, smoke in (("demo-grpo", True), ("grpo", False)):
        (ckpts / name).mkdir(parents=True)
        rec = {"name": "demo" if smoke else "cpu", "smoke": smoke, "steps": {"sft": 40, "grpo": 2}}
        (ckpts / name / "train.json").write_text(json.dumps({"recipe": rec}))
        _spec_run(tmp_path, 0.1, policy="vlm", split="test_no", checkpoint=str(ckpts / name))
    params = Params(paths={"assets": tmp_path})
    t = report_table(params.layout, params.eval, params.base_dir)
    assert t["method"].to_list() == ["vlm-demo-grpo (smoke)", "vlm-grpo"]
    md = report(params, echo=False).read_text()
    assert "| vlm-demo-grpo (smoke) | vlm |" in md
    assert "smoke length: `demo-grpo` (recipe `demo`: sft 40 + grpo 2 steps). They" in md
    assert "make learn" in md and "`grpo` (recipe" not in md
