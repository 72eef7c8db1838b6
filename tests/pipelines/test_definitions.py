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
    "model_evaluation",
    "warehouse",
    "evaluation_report",
    "diagnostics",
    "grpo_checkpoint",
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
