"""The zero-shot benchmark's assets: scenes partitioned, landmarks, queries, evaluation."""

import dagster as dg

from pipelines.definitions import defs
from pipelines.defs.benchmarks import BENCHMARK_SCENES
from pipelines.defs.partitions import SCENES
from pipelines.defs.resources import UrbexParams
from tests.fixtures.small_project import write_small_project


def _materialize(instance, params_path, selection, partition_key=None):
    return dg.materialize(
        list(defs.assets or []),
        instance=instance,
        resources={
            "urbex_params": UrbexParams(params_path=str(params_path)),
            "training_params": UrbexParams(params_path=str(params_path)),
        },
        selection=selection,
        partition_key=partition_key,
        raise_on_error=False,
    )


def test_benchmark_assets_then_zero_shot_evaluation_and_report(tmp_path):
    params = write_small_project(tmp_path, synth={"stpls3d_scenes": 1})
    instance = dg.DagsterInstance.ephemeral()
    assert _materialize(instance, params, ["raw_dataset"]).success
    for key in instance.get_dynamic_partitions(SCENES.name):
        assert _materialize(instance, params, ["scene_caches"], key).success
    stages = ["landmark_tables", "clean_annotations", "splits", "stpls3d_refer", "ranker_model"]
    assert _materialize(instance, params, stages).success
    assert _materialize(instance, params, ["benchmark_scenes"]).success
    keys = instance.get_dynamic_partitions(BENCHMARK_SCENES.name)
    assert keys == ["SYNTHUSC"]
    for key in keys:
        assert _materialize(instance, params, ["benchmark_scene_caches"], key).success
    res = _materialize(instance, params, ["benchmark_landmark_tables", "benchmark_queries"])
    assert res.success
    md = res.asset_materializations_for_node("benchmark_queries")[0].metadata
    assert md["n_queries"].value > 0
    key = dg.MultiPartitionKey({"benchmark": "stpls3d_refer", "policy": "oracle"})
    res = _materialize(instance, params, ["zero_shot_evaluation"], key)
    assert res.success
    md = res.asset_materializations_for_node("zero_shot_evaluation")[0].metadata
    assert md["run_id"].value == "oracle-stpls3d_refer-test" and md["hit1"].value >= 0.95
    assert _materialize(instance, params, ["warehouse", "evaluation_report"]).success
    assert "## Table 2" in (tmp_path / "assets" / "eval" / "report.md").read_text()
