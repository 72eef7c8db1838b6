"""The report's blocks read back from its Markdown (urbex/report/blocks.py)."""

from __future__ import annotations

import re

import polars as pl

from urbex.report.blocks import markdown_blocks, markdown_table
from urbex.report.diagnose import markdown_table as diagnostics_markdown
from urbex.report.table9 import table9_markdown

REPORT = """# Evaluation report

Rows: methods; columns: split × metric.

| method | policy | test_no n | test_no Hit@1 |
|---|---|---:|---:|
| oracle | oracle | 25 | 100.0 |

## Table 9: free policy vs fixed workflow

The same backend free and fixed.
Second line of the note.

{table9}

## A heading without a table

Just text.
"""


def test_every_section_with_a_table_is_a_block_cell_for_cell():
    t9 = pl.DataFrame({
        "split": ["test_no"] * 2, "mode": ["free", "fixed"], "method": ["vlm-g", "workflow-g"],
        "n": [10, 10], "hit1": [0.3, None], "hit3": [0.5, 0.4], "iou_bev": [0.25, 0.2],
        "landmark_query": [0.5, 1.0], "zoom_in": [1.5, 1.0], "oblique_render": [0.0, 1.0],
        "invalid_rate": [0.1, 0.3], "turns": [3.0, 4.5], "lzoa_share": [0.0, 0.9]})  # fmt: skip
    text = REPORT.format(table9=table9_markdown(t9))
    blocks = markdown_blocks(text, prefix="report")
    assert [b.title for b in blocks] == [
        "Evaluation report",
        "Table 9: free policy vs fixed workflow",
    ]
    b9 = blocks[1]
    assert b9.note == "The same backend free and fixed. Second line of the note."
    assert b9.heads[:4] == ["split", "method", "mode", "n"] and len(b9.rows) == 2
    fixed = b9.rows[1]
    assert [c.text for c in fixed[:5]] == ["test_no", "workflow-g", "fixed", "10", "–"]
    assert fixed[3].numeric and fixed[3].sort == "10" and fixed[4].sort == ""  # missing sorts first
    assert not fixed[1].numeric
    assert [b.title for b in markdown_blocks(text, prefix="r", skip_first=True)] == [b9.title]
    assert all(re.fullmatch(r"[a-z0-9-]+", b.key) for b in blocks)


def test_diagnostics_markdown_reads_back():
    df = pl.DataFrame({"run_id": ["r", "s"], "hit1": [0.25, None], "n": [4, 0]})
    heads, rows = markdown_table(diagnostics_markdown(df).splitlines())
    assert heads == ["run_id", "hit1", "n"]
    assert [[c.text for c in r] for r in rows] == [["r", "25.0", "4"], ["s", "–", "0"]]


def test_no_table_is_no_block():
    assert markdown_table(["just text", "| not | a table |"]) is None
    assert markdown_blocks("# Title\n\nNo table here.\n", prefix="x") == []
