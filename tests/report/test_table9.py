"""Table 9: the free ``vlm`` policy against the fixed ``workflow`` over the same checkpoint
(the tiny offline Qwen3-VL: plumbing, not accuracy)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from tests.fixtures.city import build_toy_project
from tests.fixtures.metrics import write_spec_run as _spec_run
from urbex.config import Params
from urbex.eval.episodes import read_episodes, read_steps
from urbex.eval.runner import evaluate
from urbex.eval.runspec import RunSpec
from urbex.report.diagnostics import tool_use
from urbex.report.publish import report
from urbex.report.table9 import pair_workflow_runs, table9


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> tuple[Path, Path]:
    """(assets of the toy block, a tiny Qwen3-VL checkpoint under assets/checkpoints/)."""
    pytest.importorskip("transformers")
    from urbex.train.tiny import make_tiny_model

    assets = build_toy_project(tmp_path_factory.mktemp("t9"))
    return assets, make_tiny_model(assets / "checkpoints" / "tiny")


def _params(assets: Path, **vlm) -> Params:
    return Params(
        paths={"assets": assets},
        eval={"workers": 1, "chunk_size": 4, "limit": 2},
        env={"max_turns": 3, "global_view_size": (128, 128), "zoom_size": (64, 64),
             "oblique_size": (64, 64)},
        vlm={"max_new_tokens": 12, **vlm},
    )  # fmt: skip


def _run(params: Params, policy: str, split: str, ckpt: Path, **kw):
    spec = RunSpec.from_params(params, policy=policy, split=split, checkpoint=ckpt, **kw)
    return evaluate(params, spec=spec, progress=False)


def test_table9_pairs_the_free_and_fixed_run_of_a_split_side_by_side(project):
    assets, ckpt = project
    p = _params(assets)
    free = _run(p, "vlm", "test_no", ckpt)
    fixed = _run(p, "workflow", "test_no", ckpt)
    _run(p, "vlm", "test_nd", ckpt)  # no workflow run on test_nd: no Table-9 row there
    t = table9(p.layout, p.base_dir)
    assert t.select("split", "mode", "run_id").rows() == [
        ("test_no", "free", free.run_id),
        ("test_no", "fixed", fixed.run_id),
    ]
    assert t["method"].to_list() == ["vlm-tiny", "workflow-tiny"]
    assert set(t["backend"]) == {"vlm"}
    for r, row in zip((free, fixed), t.iter_rows(named=True), strict=True):
        d = r.run_dir
        use = tool_use(read_episodes(d), read_steps(d)).row(0, named=True)
        m = r.metrics.row(0, named=True)
        assert row["n"] == m["n"] == 2 and row["hit1"] == m["hit1"]
        assert row["iou_bev"] == m["iou_bev"] and row["turns"] == use["turns"]
        for c in ("landmark_query", "zoom_in", "oblique_render", "invalid_rate", "lzoa_share"):
            assert row[c] == use[c], c
    text = report(p, echo=False, page=False).read_text()
    assert "## Table 9: free policy vs fixed workflow" in text
    block = text.split("## Table 9")[1].split("\n## ")[0]
    assert "| test_no | vlm-tiny | free | 2 |" in block
    assert "| test_no | workflow-tiny | fixed | 2 |" in block and "test_nd" not in block
    saved = pl.read_parquet(p.layout.diagnostic_table("table9"))
    assert saved.select("run_id", "mode").rows() == t.select("run_id", "mode").rows()


def test_table9_leaves_out_a_workflow_run_played_under_other_settings(project):
    assets, ckpt = project
    p = _params(assets)
    _run(p, "vlm", "test_nd", ckpt)
    other = _params(assets, max_new_tokens=6)  # another decoding budget: not the same backend
    spec = RunSpec.from_params(other, policy="workflow", split="test_nd", checkpoint=ckpt)
    evaluate(other, spec=spec, run_id="workflow-short", progress=False)
    spec = RunSpec.from_params(p, policy="workflow", split="test_nd", checkpoint=ckpt, limit=1)
    evaluate(p, spec=spec, run_id="workflow-one", progress=False)  # other sample
    fixed = {fx for _, fx, _ in pair_workflow_runs(p.layout.runs)}
    assert not fixed & {"workflow-short", "workflow-one"}
    assert "test_nd" not in set(table9(p.layout, p.base_dir)["split"])


def test_report_without_a_workflow_run_has_no_table9_block(tmp_path):
    _spec_run(tmp_path, 0.2, policy="vlm", split="test_no", checkpoint="/c/tiny")
    params = Params(paths={"assets": tmp_path})
    assert table9(params.layout, params.base_dir).height == 0
    assert "Table 9" not in report(params, echo=False, page=False).read_text()
    assert pl.read_parquet(params.layout.diagnostic_table("table9")).height == 0
