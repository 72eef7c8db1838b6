import dagster as dg
import pytest

from pipelines.definitions import defs
from pipelines.defs.partitions import SCENES
from pipelines.defs.resources import UrbexParams
from tests.fixtures.small_project import write_small_project

STAGES = ["landmark_tables", "clean_annotations", "splits"]


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


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("proj")
    params = write_small_project(root, synth={"scenes": 3, "size": 80.0})
    instance = dg.DagsterInstance.ephemeral()
    assert _materialize(instance, params, ["raw_dataset"]).success
    for key in instance.get_dynamic_partitions(SCENES.name):
        assert _materialize(instance, params, ["scene_caches"], key).success
    return root, params, instance


def test_annotation_assets_pass_their_quality_checks(built, monkeypatch):
    import duckdb

    import urbex.report.warehouse as warehouse

    root, params, instance = built
    calls: list[object] = []
    real = warehouse.refresh_warehouse
    monkeypatch.setattr(
        warehouse, "refresh_warehouse", lambda a, **kw: calls.append(a) or real(a, **kw)
    )
    res = _materialize(instance, params, STAGES)
    assert res.success
    evals = {e.asset_key.to_user_string(): e for e in res.get_asset_check_evaluations()}
    assert set(evals) == set(STAGES)
    assert all(e.passed for e in evals.values())
    assert (root / "assets" / "splits" / "queries.parquet").exists()
    assert len(calls) == len(STAGES)  # one warehouse refresh per asset run
    con = duckdb.connect(str(root / "assets" / "warehouse.duckdb"), read_only=True)
    try:
        for table in ("landmarks", "queries", "annotation_drops"):
            con.execute(f"SELECT count(*) FROM {table}").fetchall()
        assert con.execute("SELECT count(*) FROM queries").fetchall()[0][0] > 0
    finally:
        con.close()


def test_failing_suite_blocks_downstream_and_publishes_nothing(built, tmp_path):
    root, _, instance = built
    splits = root / "assets" / "splits" / "queries.parquet"
    before = splits.read_bytes() if splits.exists() else None
    clean = root / "assets" / "splits" / "clean_queries.parquet"
    clean_before = clean.read_bytes() if clean.exists() else None
    # descriptions must now be ≥ 500 characters: the cleaned-annotation suite fails
    bad = write_small_project(
        tmp_path, synth={"scenes": 3, "size": 80.0}, annotations={"min_chars": 500}
    )
    text = bad.read_text().replace("assets: assets", f"assets: {root / 'assets'}")
    bad.write_text(text)
    res = _materialize(instance, bad, STAGES)
    assert not res.success
    evals = {e.asset_key.to_user_string(): e for e in res.get_asset_check_evaluations()}
    failed = evals["clean_annotations"]
    assert not failed.passed
    listed = failed.metadata["failed_expectations"].value
    assert any("length" in f["expectation"] for f in listed)
    materialized = {m.asset_key.to_user_string() for m in res.get_asset_materialization_events()}
    assert "splits" not in materialized and "clean_annotations" not in materialized
    assert (clean.read_bytes() if clean.exists() else None) == clean_before
    assert (splits.read_bytes() if splits.exists() else None) == before


def test_evaluation_partition_then_warehouse_and_report(built):
    root, params, instance = built
    assert _materialize(instance, params, STAGES).success
    key = dg.MultiPartitionKey({"policy": "oracle", "split": "test_no"})
    res = _materialize(instance, params, ["evaluation"], key)
    assert res.success
    md = res.asset_materializations_for_node("evaluation")[0].metadata
    assert md["n"].value > 0 and md["hit1"].value == 1.0
    assert md["run_id"].value == "oracle-test_no"  # the partition's RunSpec names the run
    assert md["spec"].value["policy"] == "oracle" and md["spec"].value["split"] == "test_no"
    res = _materialize(instance, params, ["warehouse", "evaluation_report"])
    assert res.success
    assert "oracle" in (root / "assets" / "eval" / "report.md").read_text()
