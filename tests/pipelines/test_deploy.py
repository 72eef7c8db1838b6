"""The graph on a cluster: the executor chosen by configuration, GPU pools, and ``deploy/``.

The Kubernetes configuration is loaded and validated against dagster-k8s's own schemas (the
``k8s`` extra; skipped where it is not installed): the instance's run launcher, the
``k8s_job_executor`` run config, the GPU requests of the model-backed assets, and
``dagster definitions validate`` with ``URBEX_DAGSTER_EXECUTOR=k8s``. No cluster is contacted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest
import yaml

from pipelines.definitions import defs
from pipelines.defs.executors import EXECUTOR_ENV, GPU_OP_TAGS, GPU_POOL, select_executor

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"


def _node(key: str):
    return defs.resolve_asset_graph().get(dg.AssetKey(key))


def test_model_backed_assets_are_in_the_gpu_pool_and_request_a_gpu():
    for key in ("model_evaluation", "grpo_checkpoint"):
        node = _node(key)
        assert node.pools == {GPU_POOL}, key
        tags = defs.resolve_assets_def(key).op.tags
        assert json.loads(tags["dagster-k8s/config"]) == GPU_OP_TAGS["dagster-k8s/config"], key
    assert not _node("evaluation").pools and not _node("scene_caches").pools
    keys = _node("model_evaluation").partitions_def.get_partition_keys()
    policies = {k.split("|")[0] for k in keys}  # "<policy>|<split>"
    assert policies == {"vlm", "openai", "workflow", "no_tools"}
    free = {k.split("|")[0] for k in _node("evaluation").partitions_def.get_partition_keys()}
    assert not free & policies and "oracle" in free


def test_select_executor_by_name():
    assert select_executor(None) is dg.in_process_executor
    assert select_executor("multiprocess") is dg.multiprocess_executor
    with pytest.raises(ValueError, match="in_process"):
        select_executor("ray")


def test_k8s_without_dagster_k8s_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "dagster_k8s", None)
    with pytest.raises(ImportError, match=r"\[k8s\]"):
        select_executor("k8s")


def test_deploy_run_launcher_config_validates_against_dagster_k8s():
    pytest.importorskip("dagster_k8s")
    from dagster._config import process_config
    from dagster_k8s import K8sRunLauncher

    inst = yaml.safe_load((DEPLOY / "dagster.yaml").read_text())
    launcher = inst["run_launcher"]
    assert (launcher["module"], launcher["class"]) == ("dagster_k8s", "K8sRunLauncher")
    res = process_config(K8sRunLauncher.config_type(), launcher["config"])
    assert res.success, res.errors
    assert inst["concurrency"]["pools"]["default_limit"] >= 1


def test_deploy_executor_run_config_and_gpu_tags_validate():
    pytest.importorskip("dagster_k8s")
    from dagster_k8s import k8s_job_executor
    from dagster_k8s.job import get_user_defined_k8s_config

    run_config = yaml.safe_load((DEPLOY / "run_config_k8s.yaml").read_text())
    job = defs.resolve_job_def("evaluation_job").with_executor_def(k8s_job_executor)
    dg.validate_run_config(job, run_config)  # raises DagsterInvalidConfigError when not
    k8s = get_user_defined_k8s_config(defs.resolve_assets_def("model_evaluation").op.tags)
    assert k8s.container_config["resources"]["requests"]["nvidia.com/gpu"] == "1"


def test_definitions_validate_with_the_k8s_executor():
    pytest.importorskip("dagster_k8s")
    dagster = Path(sys.executable).with_name("dagster")
    exe = [str(dagster)] if dagster.exists() else [sys.executable, "-m", "dagster"]
    env = {**os.environ, EXECUTOR_ENV: "k8s"}
    code = (
        "from pipelines.definitions import defs; "
        "print(defs.resolve_job_def('evaluation_job').executor_def.name)"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=180
    )
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    assert loaded.stdout.strip().splitlines()[-1] == "k8s"
    out = subprocess.run(
        [*exe, "definitions", "validate", "-m", "pipelines.definitions"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
