import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.small_project import write_small_project


def _write_training_params(root, repo_root):
    """``root/params-cpu.yaml``: the repository's training recipe over the small project."""
    import yaml

    from tests.small_project import SMALL_PARAMS

    p = yaml.safe_load((repo_root / "params-cpu.yaml").read_text())
    for key, upd in SMALL_PARAMS.items():
        p.setdefault(key, {}).update(upd)
    (root / "params-cpu.yaml").write_text(yaml.safe_dump(p))


def _run(cmd, cwd, env):
    out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, f"{cmd}: {out.stdout}\n{out.stderr}"
    return out.stdout


@pytest.fixture
def dvc_project(tmp_path, repo_root):
    bin_dir = Path(sys.executable).parent
    if not (bin_dir / "dvc").exists() or not (bin_dir / "urbex").exists():
        pytest.skip("dvc / urbex console scripts are not installed in this environment")
    write_small_project(
        tmp_path,
        data={"scenes": ["synthville_block_0", "synthville_block_1"]},
        synth={"stpls3d_scenes": 1},
    )
    shutil.copy(repo_root / "dvc.yaml", tmp_path / "dvc.yaml")
    _write_training_params(tmp_path, repo_root)
    (tmp_path / "training").mkdir()
    shutil.copy(repo_root / "training" / "dvc.yaml", tmp_path / "training" / "dvc.yaml")
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.update(
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@t",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@t",
    )
    _run(["git", "init", "-q"], tmp_path, env)
    _run([str(bin_dir / "dvc"), "init", "-q"], tmp_path, env)
    for name in (".dvc/config", ".dvcignore"):  # the repository's remote and ignores
        shutil.copy(repo_root / name, tmp_path / name)
    return tmp_path, env, bin_dir / "dvc"


def test_dvc_repro_runs_the_same_stages_as_the_cli(dvc_project):
    root, env, dvc = dvc_project
    _run([str(dvc), "repro"], root, env)
    for sid in ("synthville_block_0", "synthville_block_1"):
        assert (root / "assets" / "scenes" / sid / "meta.json").exists()
    assert (root / "dvc.lock").exists()
    assert (root / "assets" / "splits" / "queries.parquet").exists()
    assert (root / "assets" / "stpls3d_refer" / "summary.json").exists()
    assert (root / "assets" / "eval" / "runs" / "oracle-test_no" / "metrics.parquet").exists()
    assert "oracle" in (root / "assets" / "eval" / "report.md").read_text()
    assert not (root / "assets" / "checkpoints").exists()  # training is not in the default
    status = _run([str(dvc), "status", "dvc.yaml"], root, env)
    assert "up to date" in status.lower()
    # the default local remote (.dvc/config): push, remove outputs, pull → byte-identical
    _run([str(dvc), "push", "-q"], root, env)
    assert (root / ".dvc-storage" / "files").is_dir()
    kept = ("raw", "scenes", "splits", "models", "eval")
    files = {
        p: p.read_bytes()
        for d in kept
        for p in (root / "assets" / d).rglob("*")
        if p.is_file()
        and p.name not in ("index.html", ".gitignore")  # dvc's own .gitignore: not an output
        and not {"gallery", "curves"} & set(p.parts)
    }  # the results page's files are not versioned (.dvcignore): `urbex report` rewrites them
    for d in kept:
        shutil.rmtree(root / "assets" / d)
    _run([str(dvc), "pull", "-q"], root, env)
    assert {p: p.read_bytes() for p in files} == files
    # Known gap (issue 14): right after this pull `dvc status dvc.yaml` reports the stages whose
    # deps are pulled directories as changed (landmarks: assets/scenes, ...); not yet understood,
    # so not asserted here.
    # the training pipeline is wired (its inputs are built) but only runs when targeted
    status = _run([str(dvc), "status", "training/dvc.yaml"], root, env)
    for stage in ("tiny_model", "sft", "train"):
        assert f"training/dvc.yaml:{stage}" in status, status
    assert "assets/checkpoints/grpo" in status and "assets/checkpoints/sft" in status
    # a changed scene param invalidates exactly the cache stages
    text = (root / "params.yaml").read_text().replace("resolution: 0.25", "resolution: 0.5")
    (root / "params.yaml").write_text(text)
    status = _run([str(dvc), "status", "dvc.yaml"], root, env)
    assert "cache@synthville_block_0" in status and "raw" not in status.split("cache@")[0]


def test_dvc_evaluate_outs_are_the_run_specs_run_ids(repo_root):
    import yaml

    from urbex.eval.runspec import RunSpec

    stage = yaml.safe_load((repo_root / "dvc.yaml").read_text())["stages"]["evaluate"]
    matrix = stage["matrix"]
    assert set(matrix) == {"policy", "split"}, "each matrix item must be a RunSpec's fields"
    (out,) = [next(iter(o)) if isinstance(o, dict) else o for o in stage["outs"]]
    for policy in matrix["policy"]:
        for split in matrix["split"]:
            item = out.replace("${item.policy}", policy).replace("${item.split}", split)
            assert item == f"assets/eval/runs/{RunSpec(policy=policy, split=split).run_id}"
    assert "--run-id" not in stage["cmd"]  # the CLI derives the same id from the same fields


def test_dvc_default_remote_push_pull_is_byte_identical(tmp_path, repo_root):
    """The repository's default remote (.dvc/config: a local directory) on a one-stage project."""
    dvc = Path(sys.executable).with_name("dvc")
    if not dvc.exists():
        pytest.skip("dvc is not installed in this environment")
    env = {**os.environ, "PATH": f"{dvc.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    _run(["git", "init", "-q"], tmp_path, env)
    _run([str(dvc), "init", "-q"], tmp_path, env)
    shutil.copy(repo_root / ".dvc" / "config", tmp_path / ".dvc" / "config")
    code = "import os; os.makedirs('out', exist_ok=True); open('out/f.bin', 'wb').write(bytes(range(256)))"
    (tmp_path / "dvc.yaml").write_text(
        f'stages:\n  a:\n    cmd: {sys.executable} -c "{code}"\n    outs: [out]\n'
    )
    _run([str(dvc), "repro", "-q"], tmp_path, env)
    before = (tmp_path / "out" / "f.bin").read_bytes()
    _run([str(dvc), "push", "-q"], tmp_path, env)
    assert (tmp_path / ".dvc-storage" / "files").is_dir()  # the default remote's directory
    shutil.rmtree(tmp_path / "out")
    _run([str(dvc), "pull", "-q"], tmp_path, env)
    assert (tmp_path / "out" / "f.bin").read_bytes() == before
    assert "up to date" in _run([str(dvc), "status"], tmp_path, env).lower()


def test_dvc_zero_shot_outs_are_the_run_specs_run_ids(repo_root):
    import yaml

    from urbex.eval.runspec import RunSpec

    stages = yaml.safe_load((repo_root / "dvc.yaml").read_text())["stages"]
    stage = stages["evaluate_zero_shot"]
    (out,) = [next(iter(o)) if isinstance(o, dict) else o for o in stage["outs"]]
    for policy in stage["matrix"]["policy"]:
        spec = RunSpec(policy=policy, split="test", benchmark="stpls3d_refer")
        assert out.replace("${item.policy}", policy) == f"assets/eval/runs/{spec.run_id}"
    assert stages["benchmark"]["outs"] == ["assets/benchmarks/stpls3d_refer"]
    assert "assets/stpls3d_refer" in stages["benchmark"]["deps"]
