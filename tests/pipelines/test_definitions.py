import subprocess
import sys

import dagster as dg

from pipelines.definitions import defs

#: Every asset key the code location defines. A change here is a change to the graph: update
#: this snapshot deliberately.
EXPECTED_ASSET_KEYS = {
    "raw_dataset",
    "scene_caches",
    "landmark_tables",
    "clean_annotations",
    "splits",
    "stpls3d_refer",
    "evaluation",
    "ranker_model",
    "model_evaluation",
    "warehouse",
    "evaluation_report",
    "diagnostics",
    "base_model",
    "reader_model",
    "sft_checkpoint",
    "grpo_checkpoint",
    "checkpoint_evaluation",
    "checkpoint_workflow_evaluation",
    "benchmark_scenes",
    "benchmark_scene_caches",
    "benchmark_landmark_tables",
    "benchmark_queries",
    "zero_shot_evaluation",
}


def test_definitions_asset_key_snapshot():
    keys = {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}
    assert keys == EXPECTED_ASSET_KEYS


def test_definitions_validate_cli(repo_root):
    dagster = repo_root / ".venv" / "bin" / "dagster"
    exe = [str(dagster)] if dagster.exists() else [sys.executable, "-m", "dagster"]
    out = subprocess.run(
        [*exe, "definitions", "validate", "-m", "pipelines.definitions"],
        cwd=repo_root,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_scene_caches_is_partitioned_by_scene():
    graph = defs.resolve_asset_graph()
    node = graph.get(dg.AssetKey("scene_caches"))
    assert isinstance(node.partitions_def, dg.DynamicPartitionsDefinition)
    assert node.partitions_def.name == "scenes"


def test_model_assets_share_the_gpu_pool():
    graph = defs.resolve_asset_graph()
    for key in (
        "reader_model",
        "sft_checkpoint",
        "grpo_checkpoint",
        "checkpoint_evaluation",
        "checkpoint_workflow_evaluation",
    ):
        assert graph.get(dg.AssetKey(key)).pools == {"gpu"}, key
    assert graph.get(dg.AssetKey("evaluation")).pools in (set(), None, {None})


def test_new_checkpoints_sensor_requests_each_published_checkpoint_once(tmp_path):
    from pipelines.defs.resources import UrbexParams
    from pipelines.defs.training import CHECKPOINTS, new_checkpoints

    params = tmp_path / "params.yaml"
    params.write_text("paths:\n  assets: assets\n")
    ckpts = tmp_path / "assets" / "checkpoints"
    for name in ("sft", "grpo"):
        (ckpts / name).mkdir(parents=True)
        (ckpts / name / "config.json").write_text("{}")
    (ckpts / ".staging-grpo2").mkdir()  # a training in progress: not a checkpoint yet
    (ckpts / ".staging-grpo2" / "config.json").write_text("{}")
    (ckpts / "empty").mkdir()  # no model in it
    with dg.instance_for_test() as instance:
        ctx = dg.build_sensor_context(
            instance=instance, resources={"training_params": UrbexParams(params_path=str(params))}
        )
        result = new_checkpoints(ctx)
        keys = sorted(str(r.partition_key) for r in result.run_requests)
        assert keys == ["grpo|test_nd", "grpo|test_no", "sft|test_nd", "sft|test_no"]
        (add,) = result.dynamic_partitions_requests
        assert sorted(add.partition_keys) == ["grpo", "sft"]
        instance.add_dynamic_partitions(CHECKPOINTS.name, list(add.partition_keys))
        again = new_checkpoints(ctx)
        assert again.run_requests == [] and again.dynamic_partitions_requests == []


def test_nightly_schedule_evaluates_the_latest_checkpoint(tmp_path):
    import os
    import time

    from pipelines.defs.resources import UrbexParams
    from pipelines.defs.training import nightly_checkpoint_evaluation

    params = tmp_path / "params.yaml"
    params.write_text("paths:\n  assets: assets\n")
    ckpts = tmp_path / "assets" / "checkpoints"
    res = {"training_params": UrbexParams(params_path=str(params))}
    with dg.instance_for_test() as instance:
        import datetime as dt

        when = dt.datetime(2026, 12, 1, 3, tzinfo=dt.UTC)
        # closed at the end: ctx.instance opens an instance into the context's exit stack (and
        # sets dagster's current defs-state storage); left open, every later materialize() in
        # this process fails on that instance's dead weakref
        with dg.build_schedule_context(
            instance=instance, resources=res, scheduled_execution_time=when
        ) as ctx:
            assert isinstance(nightly_checkpoint_evaluation(ctx), dg.SkipReason)
            now = time.time()
            for age, name in ((100, "old"), (10, "newest"), (50, "middle")):
                (ckpts / name).mkdir(parents=True)
                cfg = ckpts / name / "config.json"
                cfg.write_text("{}")
                os.utime(cfg, (now - age, now - age))
            runs = nightly_checkpoint_evaluation(ctx)
        assert sorted(str(r.partition_key) for r in runs) == ["newest|test_nd", "newest|test_no"]
        assert all(r.run_key.startswith("20261201-newest-") for r in runs)


def test_base_model_keeps_an_existing_checkpoint_and_names_a_missing_one(tmp_path):
    import pytest

    from pipelines.defs.resources import UrbexParams
    from pipelines.defs.training import base_model

    ckpt = tmp_path / "assets" / "checkpoints" / "real"
    ckpt.mkdir(parents=True)
    (ckpt / "config.json").write_text("{}")
    params = tmp_path / "params.yaml"
    params.write_text("paths:\n  assets: assets\nsft:\n  checkpoint: assets/checkpoints/real\n")
    res = UrbexParams(params_path=str(params))
    out = base_model(dg.build_asset_context(), training_params=res)
    assert out.metadata["built"] is False  # never rebuilt, never downloaded
    params.write_text("paths:\n  assets: assets\ntrain:\n  checkpoint: /nowhere/model\n")
    with pytest.raises(dg.Failure, match="/nowhere/model"):
        base_model(dg.build_asset_context(), training_params=res)
