"""The paper's Table 9: the free policy against the fixed workflow over the same backend.

The ``workflow`` policy imposes Landmark Query → Zoom-in → Oblique Render → Answer on the model
named by ``policy.backend`` (:mod:`urbex.agents.workflow`); the free policy is that backend
itself (``vlm`` or ``openai``), choosing its own tools. A **pair** is a complete ``workflow``
run and a complete run of its backend such that

* the free run's :class:`~urbex.eval.runspec.RunSpec` is the workflow's with only the policy
  swapped (same split, checkpoint, sample, tools offered, landmark map, repeat seed, benchmark);
* both played with the same environment and model settings (their run fingerprints' ``env``
  and backend section — ``vlm`` or ``openai`` — are equal), the workflow's backend being read
  from its fingerprint's ``policy.backend``.

Rows, per pair (``free`` then ``fixed``): the run's accuracy from its ``metrics.parquet``
(``n``, Hit@1, Hit@3, BEV IoU: :func:`urbex.eval.metrics.aggregate`, written once by the
runner) and its tool use (:func:`urbex.report.diagnostics.tool_use`: mean calls per episode per
tool, invalid-turn rate, mean turns, share of L→Z→O→A episodes). A split without a pair has no
row; with no pair at all the table is empty (and the report has no Table-9 block).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

if TYPE_CHECKING:
    from urbex.eval.rundir import RunRecord
    from urbex.eval.runspec import RunSpec
    from urbex.layout import AssetLayout

from urbex.agents.registry import policies
from urbex.env.trajectory import TOOL_NAMES
from urbex.errors import ConfigError
from urbex.eval.episodes import read_episodes, read_steps
from urbex.eval.rundir import read_run
from urbex.report.comparison import method_labels, smoke_recipes
from urbex.report.diagnostics import tool_use
from urbex.report.warehouse import TABLE9_ACCURACY, TABLE9_TOOL_USE, readable_runs

__all__ = ["pair_workflow_runs", "table9", "table9_markdown"]

_SPLIT_ORDER = {"train": 0, "val": 1, "test_nd": 2, "test_no": 3}


def _schema() -> dict[str, Any]:
    return {
        "split": pl.String, "pair": pl.Int64, "mode": pl.String, "method": pl.String,
        "policy": pl.String, "run_id": pl.String, "backend": pl.String, "n": pl.Int64,
        **{c: pl.Float64 for c in (*TABLE9_ACCURACY[1:], *TABLE9_TOOL_USE)},
    }  # fmt: skip


def _complete_runs(runs: Path) -> dict[str, RunRecord]:
    """``run_id → record`` of every complete run.

    Only the runs the warehouse can read (:func:`readable_runs`): a ``run.json`` that is corrupt
    or of an older schema is left out (the warehouse's refresh warns about it, naming the file,
    and lists the run as failed).
    """

    out: dict[str, RunRecord] = {}
    for d in readable_runs(runs.parent.parent):
        path = d / "run.json"
        if not path.is_file():
            continue
        try:
            record = read_run(path)
        except ConfigError:  # changed since readable_runs read it
            continue
        if record.status == "complete":
            out[d.name] = record
    return out


def pair_workflow_runs(runs: Path) -> list[tuple[str, str, str]]:
    """The ``(free run id, fixed run id, backend)`` pairs under a runs directory (see the module
    docstring), ordered by split then run id. A workflow run without a matching free run, or
    with one played under other settings, is left out."""
    return _pairs(_complete_runs(runs))


def _pairs(found: dict[str, RunRecord]) -> list[tuple[str, str, str]]:
    by_spec: dict[RunSpec, list[str]] = {}
    for rid, record in found.items():
        by_spec.setdefault(record.spec, []).append(rid)
    fixed = set(policies(lambda i: i.fixed_workflow))
    pairs = []
    for rid, record in found.items():
        if record.spec.policy not in fixed:
            continue
        backend = record.backend
        for free in sorted(by_spec.get(replace(record.spec, policy=backend), [])):
            if found[free].settings("env", backend) == record.settings("env", backend):
                pairs.append((free, rid, backend))
    return sorted(pairs, key=lambda p: (_SPLIT_ORDER.get(found[p[1]].spec.split, 9), p[1], p[0]))


def table9(lay: AssetLayout, base_dir: Path) -> pl.DataFrame:
    """Table 9 as a frame: per pair, a ``free`` and a ``fixed`` row.

    Columns: ``split``, ``pair`` (0, 1, ... in order), ``mode``, ``method`` (the report's row
    label), ``policy``, ``run_id``, ``backend``, ``n``, ``hit1``, ``hit3``, ``iou_bev``
    (fractions), ``landmark_query``, ``zoom_in``, ``oblique_render`` (mean calls per episode),
    ``invalid_rate`` (invalid turns / turns), ``turns`` (mean), ``lzoa_share`` (fraction).
    Empty (same columns) when no pair exists. Checkpoint paths in the specs are relative to
    ``base_dir`` (the params file's folder).
    """

    runs = lay.runs
    found = _complete_runs(runs)  # every run.json read once
    pairs = _pairs(found)
    if not pairs:
        return pl.DataFrame(schema=_schema())
    ids = sorted({r for free, fixed, _ in pairs for r in (free, fixed)})
    specs = {r: found[r].spec for r in ids}
    smoke = smoke_recipes(dict(specs), base_dir)
    labels = method_labels([(r, specs[r].split) for r in ids], dict(specs), smoke=smoke)
    rows = []
    for i, (free, fixed, backend) in enumerate(pairs):
        for mode, rid in (("free", free), ("fixed", fixed)):
            d = lay.run(rid)
            acc = pl.read_parquet(lay.run_metrics(rid), glob=False).row(0, named=True)
            use = tool_use(read_episodes(d), read_steps(d)).row(0, named=True)
            rows.append(
                {
                    "split": specs[rid].split, "pair": i, "mode": mode,
                    "method": labels[(rid, specs[rid].split)], "policy": specs[rid].policy,
                    "run_id": rid, "backend": backend,
                    **{c: acc.get(c) for c in TABLE9_ACCURACY},
                    **{c: use.get(c) for c in TABLE9_TOOL_USE},
                }
            )  # fmt: skip
    return pl.DataFrame(rows, schema=_schema())


def table9_markdown(t: pl.DataFrame) -> str:
    """Markdown of :func:`table9`: one line per run, free above fixed (percent; calls and turns
    per episode).

    >>> t = pl.DataFrame({"split": ["test_no"] * 2, "mode": ["free", "fixed"],
    ...     "method": ["vlm-g", "workflow-g"], "n": [10, 10], "hit1": [0.3, 0.2],
    ...     "hit3": [0.5, 0.4], "iou_bev": [0.25, 0.2], "landmark_query": [0.5, 1.0],
    ...     "zoom_in": [1.5, 1.0], "oblique_render": [0.0, 1.0], "invalid_rate": [0.1, 0.3],
    ...     "turns": [3.0, 4.5], "lzoa_share": [0.0, 0.9]})
    >>> print(table9_markdown(t))
    | split | method | mode | n | Hit@1 | Hit@3 | IoU | landmark_query | zoom_in | oblique_render | Invalid | Turns | L→Z→O→A |
    |---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
    | test_no | vlm-g | free | 10 | 30.0 | 50.0 | 25.0 | 0.50 | 1.50 | 0.00 | 10.0 | 3.00 | 0.0 |
    | test_no | workflow-g | fixed | 10 | 20.0 | 40.0 | 20.0 | 1.00 | 1.00 | 1.00 | 30.0 | 4.50 | 90.0 |
    """
    heads = ["split", "method", "mode", "n", "Hit@1", "Hit@3", "IoU", *TOOL_NAMES,
             "Invalid", "Turns", "L→Z→O→A"]  # fmt: skip
    lines = ["| " + " | ".join(heads) + " |", "|---|---|---|" + "---:|" * (len(heads) - 3)]
    percent = {"hit1", "hit3", "iou_bev", "invalid_rate", "lzoa_share"}
    for r in t.iter_rows(named=True):
        cells = [str(r["split"]), str(r["method"]), str(r["mode"])]
        for c in (*TABLE9_ACCURACY, *TABLE9_TOOL_USE):
            v = r[c]
            if v is None or v != v:
                cells.append("–")
            elif c == "n":
                cells.append(f"{int(v)}")
            elif c in percent:
                cells.append(f"{100.0 * v:.1f}")
            else:
                cells.append(f"{v:.2f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
