"""The checkpoint evaluations through Dagster: the free ``vlm`` run and the fixed ``workflow``
run of one partition (checkpoint × split), paired by the report's Table 9 (tiny offline
Qwen3-VL: plumbing only)."""

from __future__ import annotations

import dagster as dg
import pytest

from pipelines.defs.resources import UrbexParams
from pipelines.defs.training import (
    CHECKPOINTS,
    checkpoint_evaluation,
    checkpoint_evaluation_job,
    checkpoint_workflow_evaluation,
)
from tests.fixtures.city import build_toy_project

PARAMS = """\
paths:
  assets: assets
env:
  max_turns: 3
  global_view_size: [128, 128]
  zoom_size: [64, 64]
  oblique_size: [64, 64]
eval:
  workers: 1
  limit: 2
vlm:
  max_new_tokens: 12
policy:
  backend: {backend}
"""


def _resources(tmp_path, backend="vlm"):
    path = tmp_path / "params.yaml"
    path.write_text(PARAMS.format(backend=backend))
    return {"training_params": UrbexParams(params_path=str(path))}


def test_checkpoint_job_evaluates_the_free_and_the_fixed_policy():
    """The sensor and the nightly schedule request this job: both runs of each partition."""
    from pipelines.definitions import defs

    job = defs.resolve_job_def(checkpoint_evaluation_job.name)
    names = {k.to_user_string() for k in job.asset_layer.selected_asset_keys}
    assert names == {"checkpoint_evaluation", "checkpoint_workflow_evaluation"}


def test_checkpoint_workflow_evaluation_sits_beside_the_free_run_in_table9(tmp_path):
    pytest.importorskip("transformers")
    from urbex.report.table9 import table9
    from urbex.train.tiny import make_tiny_model

    assets = build_toy_project(tmp_path)
    make_tiny_model(assets / "checkpoints" / "tiny")
    resources = _resources(tmp_path)
    key = dg.MultiPartitionKey({"checkpoint": "tiny", "split": "test_no"})
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(CHECKPOINTS.name, ["tiny"])
    res = dg.materialize(
        [checkpoint_evaluation, checkpoint_workflow_evaluation],
        instance=instance,
        resources=resources,
        partition_key=key,
    )
    assert res.success
    md = res.asset_materializations_for_node("checkpoint_workflow_evaluation")[0].metadata
    assert md["run_id"].value == "workflow-test_no-tiny" and md["n"].value == 2
    tp = resources["training_params"].load()
    t = table9(tp.layout, tp.base_dir)
    assert t.select("mode", "run_id").rows() == [
        ("free", "vlm-test_no-tiny"),
        ("fixed", "workflow-test_no-tiny"),
    ]


def test_checkpoint_workflow_evaluation_needs_the_vlm_backend(tmp_path):
    (tmp_path / "assets").mkdir()
    resources = _resources(tmp_path, backend="openai")
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(CHECKPOINTS.name, ["tiny"])
    with pytest.raises(dg.Failure, match=r"policy\.backend: vlm"):
        dg.materialize(
            [checkpoint_workflow_evaluation],
            instance=instance,
            resources=resources,
            partition_key=dg.MultiPartitionKey({"checkpoint": "tiny", "split": "test_no"}),
        )
