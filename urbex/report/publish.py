"""``urbex report``: the comparison and the paper's tables, written and printed.

``<assets>/eval/report.md`` (the Table-1-shaped comparison of :mod:`urbex.report.comparison`,
then the Table-11, Table-9 and Table-2 blocks when their runs exist), ``report.csv``, each
table's Parquet under ``<assets>/eval/diagnostics/``, and the static results page
(:mod:`urbex.report.page`). Everything is written atomically.
"""

from __future__ import annotations

from pathlib import Path

from urbex.atomic import atomic_path, atomic_write
from urbex.config import Params
from urbex.errors import UrbexError
from urbex.report.comparison import (
    report_table,
    smoke_note,
    table11,
    table11_markdown,
    to_markdown,
)
from urbex.report.page import write_results_page
from urbex.report.table2 import table2, table2_markdown
from urbex.report.table9 import table9, table9_markdown

__all__ = ["report"]


def report(params: Params, *, echo: bool = True, page: bool = True) -> Path:
    """Build the comparison, print it (``echo``), write ``report.md`` + ``report.csv`` and
    (``page``) the static results page ``<assets>/eval/index.html`` (:mod:`urbex.report.page`).

    Returns
    -------
    Path
        ``<assets>/eval/report.md`` (``report.csv`` sits next to it).

    Raises
    ------
    UrbexError
        There is no evaluation run yet (nothing is written).
    """
    table = report_table(params.layout, params.eval, params.base_dir)
    t2 = table2(params.layout)
    if table.height == 0 and t2.height == 0:
        raise UrbexError(
            "no evaluation runs to report; run `urbex evaluate` first",
            path=params.layout.runs,
        )
    md = to_markdown(table)
    t11 = table11(params.layout, params.base_dir)
    t9 = table9(params.layout, params.base_dir)
    out = params.layout.report_md
    with atomic_write(out, "w") as fh:
        fh.write(
            "# Evaluation report\n\nRows: methods (a policy, + its checkpoint); columns: split × "
            "metric (percent, except n and any timing). Latency, measured where the runs were "
            "played, is on the results page (index.html), not in this versioned file.\n\n"
            + md
            + "\n"
        )
        note = smoke_note(params.layout, table["method"].to_list() if table.height else [])
        if note:
            fh.write("\n" + note + "\n")
        if t11.height:
            fh.write(
                "\n## Table 11 (test_no): box and point quality\n\nWith-GT ranking (`ranking`, "
                "`ranking_rules`), Without-GT (`ranking_proposals`) and the agents; percent.\n\n"
                + table11_markdown(t11)
                + "\n"
            )
        if t9.height:
            fh.write(
                "\n## Table 9: free policy vs fixed workflow\n\nThe same backend free (choosing "
                "its tools) and under the fixed Landmark Query → Zoom-in → Oblique Render → "
                "Answer order (`workflow`); accuracy in percent; tool calls and turns per "
                "episode; Invalid = invalid turns / turns; L→Z→O→A = share of episodes that "
                "followed exactly that order.\n\n" + table9_markdown(t9) + "\n"
            )
        if t2.height:
            fh.write(
                "\n## Table 2: zero-shot on a second benchmark\n\nTrained on CityRefer only, "
                "nothing fitted on the benchmark; all expressions and the landmark-free ones (no "
                "landmark name mentioned); percent.\n\n" + table2_markdown(t2) + "\n"
            )
    params.layout.diagnostics.mkdir(parents=True, exist_ok=True)
    with atomic_path(params.layout.diagnostic_table("table11")) as tmp:
        t11.write_parquet(tmp)
    with atomic_path(params.layout.diagnostic_table("table2")) as tmp:
        t2.write_parquet(tmp)
    with atomic_path(params.layout.diagnostic_table("table9")) as tmp:
        t9.write_parquet(tmp)
    with atomic_path(params.layout.report_csv) as tmp:
        table.write_csv(tmp)
    if page:
        write_results_page(params)
    if echo:
        print(md)
        if t9.height:
            print("\nTable 9: free policy vs fixed workflow\n" + table9_markdown(t9))
    return out
