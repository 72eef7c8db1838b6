"""The report's blocks as the results page shows them: titled, sortable tables.

``urbex report`` writes ``eval/report.md`` (the comparison, then the Table 11, 9 and 2 blocks)
and ``urbex diagnose`` writes ``eval/diagnostics/diagnostics.md`` (one block per diagnostic
table); :func:`markdown_blocks` reads such a file back into :class:`Block` objects, so the page
shows every block of those files, cell for cell, without a second formatting of its own. A
block is a ``## `` section: its heading is the title, the text before its table the note.

:data:`PLOT_TITLES` names the diagnostic plots (``eval/diagnostics/<stem>-<family>.png``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["PLOT_TITLES", "Block", "Cell", "markdown_blocks", "markdown_table"]

#: The diagnostic plots: file stem → title; one panel per policy family (at most
#: :data:`urbex.report.plots.MAX_SERIES` series each).
PLOT_TITLES: dict[str, str] = {
    "success_vs_distractors": "Local disambiguation vs nearby same-class distractors",
    "area_ratio_hist": "Predicted / target BEV area ratio (valid answers)",
}


@dataclass(frozen=True, slots=True)
class Cell:
    """A table cell: its sort key (``data-v``), its text, right-aligned if numeric."""

    sort: str
    text: str
    numeric: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Block:
    """A titled table: ``key`` (its HTML id), ``title``, ``note`` (plain text), column
    ``heads`` and ``rows`` of :class:`Cell`."""

    key: str
    title: str
    note: str
    heads: list[str]
    rows: list[list[Cell]]


_NUMBER = re.compile(r"^-?\d+(\.\d+)?(e-?\d+)?$")


def _cell(text: str) -> Cell:
    """A Markdown cell: numbers sort by value, ``–`` (missing) sorts first."""
    if _NUMBER.match(text):
        return Cell(sort=text, text=text, numeric=True)
    if text == "–":
        return Cell(sort="", text=text, numeric=True)
    return Cell(sort=text, text=text, numeric=False)


def _row(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def markdown_table(lines: list[str]) -> tuple[list[str], list[list[Cell]]] | None:
    """The heads and cells of a pipe table (its header, ``|---|`` rule and rows), or None.

    >>> heads, rows = markdown_table(["| m | n |", "|---|---:|", "| a | 3 |", "| b | – |"])
    >>> heads, [[c.text for c in r] for r in rows], rows[0][1].numeric
    (['m', 'n'], [['a', '3'], ['b', '–']], True)
    """
    table = [ln for ln in lines if ln.strip().startswith("|")]
    if len(table) < 2 or not set(table[1].replace("|", "").strip()) <= set("-: "):
        return None
    return _row(table[0]), [[_cell(c) for c in _row(ln)] for ln in table[2:]]


def _key(prefix: str, title: str) -> str:
    return prefix + "-" + re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:40]


def markdown_blocks(text: str, *, prefix: str, skip_first: bool = False) -> list[Block]:
    """The ``## `` sections of a Markdown report that hold a table, as blocks.

    ``prefix`` starts each block's key (an HTML id: ``<prefix>-<title words>``); with
    ``skip_first`` the table before the first section (report.md's comparison, which the page
    draws from the warehouse itself) is left out.

    >>> md = "# r\\n\\n| a |\\n|---|\\n| 1 |\\n\\n## Table 9: x\\n\\nnote.\\n\\n| m | n |\\n|---|---|\\n| a | 2 |\\n"
    >>> [(b.key, b.title, b.note, b.heads, len(b.rows)) for b in markdown_blocks(md, prefix="r")]
    [('r-r', 'r', '', ['a'], 1), ('r-table-9-x', 'Table 9: x', 'note.', ['m', 'n'], 1)]
    >>> [b.title for b in markdown_blocks(md, prefix="r", skip_first=True)]
    ['Table 9: x']
    """
    sections: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        m = re.match(r"^(#{1,2}) (.*)$", line)
        if m:
            sections.append((m.group(2).strip(), []))
        elif sections:
            sections[-1][1].append(line)
    if skip_first and sections:
        sections = sections[1:]
    out = []
    for title, lines in sections:
        table = markdown_table(lines)
        if table is None:
            continue
        note_lines = [ln.strip() for ln in lines if ln.strip() and not ln.strip().startswith("|")]
        heads, rows = table
        note = " ".join(note_lines)
        out.append(Block(key=_key(prefix, title), title=title, note=note, heads=heads, rows=rows))
    return out
