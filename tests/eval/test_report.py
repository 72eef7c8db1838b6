"""The Table-1-shaped report from hand-made metrics files."""

from __future__ import annotations

import polars as pl
import pytest

from urbex.config import Params
from urbex.eval.report import report, report_table, to_markdown


def _metrics(assets, run_id, policy, split, hit1, n=10):
    d = assets / "eval" / "runs" / run_id
    d.mkdir(parents=True, exist_ok=True)
    row = {
        "run_id": run_id,
        "policy": policy,
        "split": split,
        "n": n,
        "hit1": hit1,
        "hit3": hit1,
        "hit5": hit1,
        "iou_bev": 0.1,
        "latency_s": 0.5,
    }
    path = d / "metrics.parquet"
    old = pl.read_parquet(path) if path.exists() else None
    df = pl.DataFrame([row])
    (pl.concat([old, df]) if old is not None else df).write_parquet(path)


def test_report_table_rows_runs_columns_split_metric(tmp_path):
    _metrics(tmp_path, "a", "oracle", "test_no", 1.0)
    _metrics(tmp_path, "a", "oracle", "test_nd", 0.9)
    _metrics(tmp_path, "b", "landmark_prior", "test_no", 0.25, n=8)
    t = report_table(Params(paths={"assets": tmp_path}))
    assert t["method"].to_list() == ["b", "a"]  # sorted by policy
    assert t.columns[:4] == ["method", "policy", "test_nd_n", "test_nd_hit1"]
    row = t.filter(pl.col("method") == "a").row(0, named=True)
    assert row["test_no_hit1"] == 100.0 and row["test_nd_hit1"] == pytest.approx(90.0)
    assert row["test_no_latency_s"] == 0.5 and row["test_no_n"] == 10
    assert t.filter(pl.col("method") == "b")["test_nd_hit1"][0] is None


def test_report_default_run_ids_of_one_policy_share_a_row(tmp_path):
    _metrics(tmp_path, "oracle-test_no", "oracle", "test_no", 1.0)
    _metrics(tmp_path, "oracle-test_nd", "oracle", "test_nd", 0.9)
    _metrics(tmp_path, "vlm-test_no-ckpt", "vlm", "test_no", 0.1)
    t = report_table(Params(paths={"assets": tmp_path}))
    assert t["method"].to_list() == ["oracle", "vlm-ckpt"]
    row = t.row(0, named=True)
    assert row["test_nd_hit1"] == pytest.approx(90.0) and row["test_no_hit1"] == 100.0


def test_report_two_runs_for_one_method_and_split_is_an_error(tmp_path):
    _metrics(tmp_path, "oracle-test_no", "oracle", "test_no", 1.0)
    _metrics(tmp_path, "oracle", "oracle", "test_no", 0.5)
    with pytest.raises(ValueError, match="same method"):
        report_table(Params(paths={"assets": tmp_path}))


def test_report_writes_markdown_and_csv(tmp_path, capsys):
    _metrics(tmp_path, "a", "oracle", "test_no", 1.0)
    md = report(Params(paths={"assets": tmp_path}))
    assert md == tmp_path / "eval" / "report.md"
    text = md.read_text()
    assert "| a | oracle | 10 | 100.0 |" in text and "NO Hit@1" in text
    assert pl.read_csv(md.with_suffix(".csv"))["test_no_hit1"][0] == 100.0
    assert "NO Hit@1" in capsys.readouterr().out


def test_report_empty_warehouse_gives_header_only(tmp_path):
    md = to_markdown(report_table(Params(paths={"assets": tmp_path})))
    assert md.splitlines()[0] == "| method | policy |"


def test_report_unknown_metric_raises(tmp_path):
    with pytest.raises(ValueError, match="not columns"):
        report_table(Params(paths={"assets": tmp_path}), metrics=["hit7"])


def test_report_without_runs_is_an_error_and_writes_nothing(tmp_path):
    from urbex.errors import UrbexError

    with pytest.raises(UrbexError, match="urbex evaluate"):
        report(Params(paths={"assets": tmp_path}))
    assert not (tmp_path / "eval" / "report.md").exists()
