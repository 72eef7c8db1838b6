"""The committed dvc.lock is the record of the synthetic default (``make demo``'s `dvc commit`).

Guards that keep it from drifting, without a demo: its stages, commands and params are those of
dvc.yaml over params.yaml, and the raw data set regenerated from params.yaml has the hashes it
records (the first stage, and the inputs of every scene cache).
"""

import re
from typing import Any

import pytest
import yaml

from tests.fixtures.small_project import REPO_ROOT
from urbex.config import load_params
from urbex.raw import materialize_raw
from urbex.versioning import content_hash

LOCK = yaml.safe_load((REPO_ROOT / "dvc.lock").read_text())["stages"]
STAGES = yaml.safe_load((REPO_ROOT / "dvc.yaml").read_text())["stages"]
PARAMS = yaml.safe_load((REPO_ROOT / "params.yaml").read_text())


def _lookup(dotted: str) -> Any:
    node: Any = PARAMS
    for key in dotted.split("."):
        node = node[key]
    return node


def _expanded() -> dict[str, str]:
    """dvc.yaml's stages as DVC names them (``foreach`` → ``name@item``, ``matrix`` →
    ``name@v1-v2``) → their commands, ``${item...}`` filled in."""
    out: dict[str, str] = {}
    for name, stage in STAGES.items():
        if "foreach" in stage:
            items = _lookup(re.fullmatch(r"\$\{(.+)\}", stage["foreach"]).group(1))
            for item in items:
                out[f"{name}@{item}"] = stage["do"]["cmd"].replace("${item}", str(item))
        elif "matrix" in stage:
            combos: list[dict[str, str]] = [{}]
            for key, values in stage["matrix"].items():
                combos = [{**c, key: v} for c in combos for v in values]
            for c in combos:
                cmd = stage["cmd"]
                for key, v in c.items():
                    cmd = cmd.replace(f"${{item.{key}}}", v)
                out[f"{name}@{'-'.join(c.values())}"] = cmd
        else:
            out[name] = stage["cmd"]
    return out


def test_lock_has_every_stage_of_dvc_yaml_with_its_command():
    expanded = _expanded()
    assert sorted(LOCK) == sorted(expanded)
    for name, cmd in expanded.items():
        assert LOCK[name]["cmd"] == cmd, name


def test_lock_params_are_the_params_yaml_values():
    for name, stage in LOCK.items():
        recorded = stage.get("params", {}).get("params.yaml", {})
        assert recorded, f"{name}: no params recorded"
        for key, value in recorded.items():
            assert value == _lookup(key), f"{name}: {key} in dvc.lock differs from params.yaml"


@pytest.fixture(scope="module")
def default_raw(tmp_path_factory):
    """The raw data set of the repository's params.yaml, regenerated (the synthetic default)."""
    root = tmp_path_factory.mktemp("default")
    (root / "params.yaml").write_text((REPO_ROOT / "params.yaml").read_text())
    params = load_params(root / "params.yaml")
    assert params.data.source == "synthetic"
    materialize_raw(params, progress=False)
    return root, params


def _md5(entries: list[dict[str, Any]], path: str) -> str:
    (md5,) = [e["md5"] for e in entries if e["path"] == path]
    return md5


def test_lock_raw_out_is_the_regenerated_synthetic_default(default_raw):
    _, params = default_raw
    recorded = _md5(LOCK["raw"]["outs"], "assets/raw/synthetic")
    assert content_hash(params.layout.raw_synthetic, ignore=params.layout.unversioned) == recorded


def test_lock_cache_inputs_are_the_regenerated_raw_files(default_raw):
    root, params = default_raw
    for name, stage in LOCK.items():
        if name.startswith("cache@"):
            for dep in stage["deps"]:
                got = content_hash(root / dep["path"], ignore=params.layout.unversioned)
                assert got == dep["md5"], f"{name}: {dep['path']}"
