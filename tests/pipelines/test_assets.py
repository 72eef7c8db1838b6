import dagster as dg
import duckdb

from pipelines.defs.assets import raw_dataset, scene_caches
from pipelines.defs.partitions import SCENES
from pipelines.defs.resources import UrbexParams
from tests.fixtures.small_project import write_small_project


def test_raw_then_scene_caches_materialize_per_partition(tmp_path):
    params = write_small_project(tmp_path)
    resources = {"urbex_params": UrbexParams(params_path=str(params))}
    instance = dg.DagsterInstance.ephemeral()
    res = dg.materialize([raw_dataset], instance=instance, resources=resources)
    assert res.success
    assert instance.get_dynamic_partitions(SCENES.name) == [
        "synthville_block_0",
        "synthville_block_1",
    ]
    md = res.asset_materializations_for_node("raw_dataset")[0].metadata
    assert md["n_scenes"].value == 2
    res2 = dg.materialize(
        [scene_caches], instance=instance, resources=resources, partition_key="synthville_block_1"
    )
    assert res2.success
    mat = res2.asset_materializations_for_node("scene_caches")[0]
    assert mat.partition == "synthville_block_1"
    assert mat.metadata["n_points"].value > 1000
    assert "data:image/png;base64," in mat.metadata["preview"].value
    con = duckdb.connect(str(tmp_path / "assets" / "warehouse.duckdb"), read_only=True)
    assert con.execute("SELECT scene_id FROM scenes").fetchall() == [("synthville_block_1",)]


def test_raw_dataset_drops_scene_partitions_no_longer_in_the_data_set(tmp_path):
    # a stale partition would make `make demo` (which loops over every partition) build a
    # scene that is not in the data set any more
    params = write_small_project(tmp_path)
    instance = dg.DagsterInstance.ephemeral()
    resources = {"urbex_params": UrbexParams(params_path=str(params))}
    assert dg.materialize([raw_dataset], instance=instance, resources=resources).success
    assert len(instance.get_dynamic_partitions(SCENES.name)) == 2
    write_small_project(tmp_path, data={"scenes": ["synthville_block_1"]})
    res = dg.materialize([raw_dataset], instance=instance, resources=resources)
    assert res.success
    assert instance.get_dynamic_partitions(SCENES.name) == ["synthville_block_1"]
    md = res.asset_materializations_for_node("raw_dataset")[0].metadata
    assert md["dropped_partitions"].value == "synthville_block_0"
