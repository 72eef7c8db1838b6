"""Both doors name the same version of a file: an asset's DataVersion is DVC's hash of it."""

import json
import shutil
import subprocess

import dagster as dg
import pytest
import yaml

from pipelines.defs.annotations import clean_annotations, landmark_tables, splits
from pipelines.defs.assets import raw_dataset, scene_caches
from pipelines.defs.resources import UrbexParams
from pipelines.demo import dvc_env, dvc_executable
from tests.fixtures.small_project import REPO_ROOT, write_small_project
from urbex.config import load_params

DVC = dvc_executable(REPO_ROOT)
SCENES = ["synthville_block_0", "synthville_block_1"]
#: The tag a materialization's DataVersion is recorded under (dagster's DATA_VERSION_TAG).
DATA_VERSION_TAG = "dagster/data_version"


def _version(result: dg.ExecuteInProcessResult, node: str, partition: str | None = None) -> str:
    (mat,) = [m for m in result.asset_materializations_for_node(node) if m.partition == partition]
    return mat.tags[DATA_VERSION_TAG]


@pytest.mark.skipif(DVC is None, reason="no dvc (scripts/setup.sh installs it in .venv-dvc)")
def test_data_versions_are_the_hashes_in_dvc_lock(tmp_path):
    """Dagster materializes the data stages; `dvc commit` hashes the same files into dvc.lock:
    a directory asset (a scene cache, the landmark tables, the splits) carries its DVC out's
    ``.dir`` hash, a file asset (the cleaned annotations) its file's md5 in DVC's manifest."""
    assert DVC is not None
    params_path = write_small_project(tmp_path, data={"scenes": SCENES})
    resources = {"urbex_params": UrbexParams(params_path=str(params_path))}
    instance = dg.DagsterInstance.ephemeral()
    assets = [raw_dataset, scene_caches, landmark_tables, clean_annotations, splits]
    assert dg.materialize(assets, instance=instance, resources=resources, selection=["raw_dataset"])
    caches = {
        sid: dg.materialize(
            assets, instance=instance, resources=resources, partition_key=sid,
            selection=["scene_caches"],
        )
        for sid in SCENES
    }  # fmt: skip
    annotations = dg.materialize(
        assets,
        instance=instance,
        resources=resources,
        selection=["landmark_tables", "clean_annotations", "splits"],
    )
    assert annotations.success
    env = dvc_env()
    run = {"cwd": tmp_path, "capture_output": True, "text": True, "check": True, "env": env}
    subprocess.run(["git", "init", "-q"], **run)
    subprocess.run([str(DVC), "init", "-q"], **run)
    shutil.copy(REPO_ROOT / ".dvcignore", tmp_path / ".dvcignore")
    shutil.copy(REPO_ROOT / "dvc.yaml", tmp_path / "dvc.yaml")
    stages = ["raw", *(f"cache@{s}" for s in SCENES), "landmarks", "splits"]
    subprocess.run([str(DVC), "commit", "-f", "-q", *stages], **run)
    lock = yaml.safe_load((tmp_path / "dvc.lock").read_text())["stages"]

    def out_md5(stage: str) -> str:
        (out,) = lock[stage]["outs"]
        return out["md5"]

    for sid, result in caches.items():
        assert _version(result, "scene_caches", sid) == out_md5(f"cache@{sid}")
    assert _version(annotations, "landmark_tables") == out_md5("landmarks")
    assert _version(annotations, "splits") == out_md5("splits")
    # the file asset: its entry in the DVC manifest of the splits folder (.dvc/cache)
    tree = out_md5("splits")
    manifest = tmp_path / ".dvc" / "cache" / "files" / "md5" / tree[:2] / tree[2:]
    by_path = {e["relpath"]: e["md5"] for e in json.loads(manifest.read_text())}
    clean = load_params(params_path).layout.clean_queries
    assert _version(annotations, "clean_annotations") == by_path[clean.name]
