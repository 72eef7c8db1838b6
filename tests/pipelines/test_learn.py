"""``make learn``: the full CPU recipe through the same Dagster assets as the demo."""

from __future__ import annotations

from typing import Any

import dagster as dg

from pipelines import demo, learn


def test_learn_trains_the_recipe_then_evaluates_and_reports(tmp_path, monkeypatch, capsys):
    """The recipe's params (params-cpu.yaml, not smoke), the training assets in order with tqdm
    bars, both test splits free and fixed, the report, then ``dvc commit training/dvc.yaml``;
    the expected duration is printed first. A project with splits does not rerun the demo."""
    calls: list[tuple[Any, ...]] = []

    def run(instance, selection, partition_key=None, *, echo=True, resources=None, ops=None):  # type: ignore[no-untyped-def]
        calls.append(("run", tuple(selection), ops))
        assert resources is learn.LEARN_RESOURCES
        return 0.0

    def run_partitions(instance, asset, keys, what, resources=None):  # type: ignore[no-untyped-def]
        calls.append(("partitions", asset, tuple(k.keys_by_dimension["split"] for k in keys)))
        assert {k.keys_by_dimension["checkpoint"] for k in keys} == {"grpo"}

    class Instance:
        def get_latest_materialization_event(self, key: dg.AssetKey) -> object:
            return object()  # splits exist

    report = tmp_path / "report.md"
    report.write_text("# Evaluation report\n\n| method |\n\n## Table 11\n")
    monkeypatch.setattr(demo, "_run", run)
    monkeypatch.setattr(demo, "_run_partitions", run_partitions)
    monkeypatch.setattr(demo, "record_with_dvc", lambda repo, f: calls.append(("dvc", f)))
    monkeypatch.setattr(demo, "main", lambda argv: calls.append(("demo",)))
    monkeypatch.setattr(dg.DagsterInstance, "get", staticmethod(lambda: Instance()))
    params = learn.LEARN_RESOURCES["training_params"].load()
    assert params.recipe.name == "cpu" and not params.recipe.smoke
    monkeypatch.setattr(type(params.layout), "report_md", property(lambda self: report))
    assert learn.main([]) == 0
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert f"reader {params.reader.steps} + SFT {params.sft.steps}" in first
    assert learn.EXPECTED in first
    assert calls == [
        ("run", ("base_model",), None),
        *(("run", (a,), {a: {"config": {"progress": True}}}) for a in learn.TRAINING[1:]),
        ("partitions", "checkpoint_evaluation", ("test_nd", "test_no")),
        ("partitions", "checkpoint_workflow_evaluation", ("test_nd", "test_no")),
        ("run", ("warehouse", "evaluation_report", "diagnostics"), None),
        ("dvc", "training/dvc.yaml"),
    ]
    assert "| method |" in out and "Table 11" not in out
