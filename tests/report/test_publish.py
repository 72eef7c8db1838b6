"""``urbex report``: what it writes (report.md, report.csv, the tables' Parquet), prints, refuses."""

from __future__ import annotations

import polars as pl
import pytest

from tests.fixtures.metrics import write_metrics as _metrics
from urbex.config import Params
from urbex.errors import UrbexError
from urbex.report.publish import report


def test_report_writes_markdown_and_csv(tmp_path, capsys):
    _metrics(tmp_path, "a", "oracle", "test_no", 1.0)
    md = report(Params(paths={"assets": tmp_path}))
    assert md == tmp_path / "eval" / "report.md"
    text = md.read_text()
    assert "| a | oracle | 10 | 100.0 |" in text and "NO Hit@1" in text
    assert pl.read_csv(md.with_suffix(".csv"))["test_no_hit1"][0] == 100.0
    assert "NO Hit@1" in capsys.readouterr().out


def test_report_without_runs_is_an_error_and_writes_nothing(tmp_path):
    with pytest.raises(UrbexError, match="urbex evaluate"):
        report(Params(paths={"assets": tmp_path}))
    assert not (tmp_path / "eval" / "report.md").exists()


def test_report_writes_the_table_parquets_and_optionally_the_page(tmp_path, capsys):
    _metrics(tmp_path, "a", "oracle", "test_no", 0.5)
    params = Params(paths={"assets": tmp_path})
    report(params, echo=False, page=False)
    assert capsys.readouterr().out == ""
    assert not (tmp_path / "eval" / "index.html").exists()
    t11 = pl.read_parquet(params.layout.diagnostic_table("table11"))
    assert t11["method"].to_list() == ["a"]  # a test_no run
    for name in ("table2", "table9"):  # no benchmark or workflow runs
        assert pl.read_parquet(params.layout.diagnostic_table(name)).height == 0
    report(params, echo=False)
    assert "<html" in (tmp_path / "eval" / "index.html").read_text().lower()
    leftovers = [p.name for p in (tmp_path / "eval").rglob("*") if ".tmp" in p.name]
    assert leftovers == []  # every file written atomically
