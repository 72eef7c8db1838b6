"""The DVC door: `dvc repro` of the repository's dvc.yaml on a small project, the default remote,
the status after a pull, and a parameter sweep (`dvc exp run -S`, `dvc exp show`).

DVC runs from its own environment (``.venv-dvc``, scripts/setup.sh; :func:`pipelines.demo.
dvc_executable`) with this Python's ``bin`` first on PATH, so the stages call the project's
``urbex``. The expensive `dvc repro` runs once per module; each test works on its own copy.
"""

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipelines.demo import dvc_env, dvc_executable
from tests.fixtures.small_project import REPO_ROOT, write_small_project

DVC = dvc_executable(REPO_ROOT)
#: DVC in an environment of its own (not this Python's): the one whose hydra can parse `-S`.
ISOLATED_DVC = DVC is not None and DVC.parent != Path(sys.executable).parent
GIT_ID = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@t",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@t",
}


def _write_training_params(root, repo_root):
    """``root/params-cpu.yaml``: the repository's training recipe over the small project."""
    import yaml

    from tests.fixtures.small_project import SMALL_PARAMS

    p = yaml.safe_load((repo_root / "params-cpu.yaml").read_text())
    for key, upd in SMALL_PARAMS.items():
        p.setdefault(key, {}).update(upd)
    (root / "params-cpu.yaml").write_text(yaml.safe_dump(p))


#: The evaluation matrices' policy list in the repository's dvc.yaml.
ALL_POLICIES = "policy: [oracle, landmark_prior, ranking_rules, ranking, ranking_proposals]"


def _oracle_only(dvc_yaml: Path) -> str:
    """The repository's dvc.yaml with its two evaluation matrices cut to the oracle.

    Every kind of stage still runs through DVC (an ``evaluate`` per split, an
    ``evaluate_zero_shot``, the report over them); the other policies' twelve runs, each an
    ``urbex evaluate`` process of ~3 s that DVC wires exactly like the oracle's, are left to
    the evaluation tests (their run ids: :func:`test_dvc_evaluate_outs_are_the_run_specs_run_ids`
    on the full file)."""
    text = dvc_yaml.read_text()
    assert text.count(ALL_POLICIES) == 2, "dvc.yaml's matrices changed: update ALL_POLICIES"
    return text.replace(ALL_POLICIES, "policy: [oracle]")


def _run(cmd, cwd, env):
    out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, f"{cmd}: {out.stdout}\n{out.stderr}"
    return out.stdout


def _dvc_or_skip() -> Path:
    if DVC is None or not Path(sys.executable).with_name("urbex").exists():
        pytest.skip("no dvc (scripts/setup.sh installs it in .venv-dvc) or no urbex script here")
    return DVC


@pytest.fixture(scope="module")
def reproduced(tmp_path_factory):
    """A small project (the repository's dvc.yaml with its evaluation matrices cut to the
    oracle, :func:`_oracle_only`; its remote and ignores) after a full `dvc repro`.

    Deliberately without the repository's .gitignore (which ignores all of assets/): DVC then
    writes its own .gitignore files beside its outputs, inside folders other stages depend on
    (assets/scenes, assets/eval/runs), the case .dvcignore must keep out of directory hashes."""
    dvc = _dvc_or_skip()
    root = tmp_path_factory.mktemp("dvc") / "project"
    write_small_project(
        root,
        data={"scenes": ["synthville_block_0", "synthville_block_1"]},
        synth={"stpls3d_scenes": 1},
    )
    (root / "dvc.yaml").write_text(_oracle_only(REPO_ROOT / "dvc.yaml"))
    _write_training_params(root, REPO_ROOT)
    (root / "training").mkdir()
    shutil.copy(REPO_ROOT / "training" / "dvc.yaml", root / "training" / "dvc.yaml")
    env = dvc_env({**os.environ, **GIT_ID})
    _run(["git", "init", "-q"], root, env)
    _run([str(dvc), "init", "-q"], root, env)
    for name in (".dvc/config", ".dvcignore"):  # the repository's remote and ignores
        shutil.copy(REPO_ROOT / name, root / name)
    _run([str(dvc), "repro", "-q"], root, env)
    return root, env, dvc


@pytest.fixture
def dvc_project(reproduced, tmp_path):
    """A copy of :func:`reproduced` of this test's own (outputs, lock, cache, git)."""
    root, env, dvc = reproduced
    copy = tmp_path / "project"
    shutil.copytree(root, copy, symlinks=True)
    return copy, env, dvc


def test_dvc_repro_runs_the_same_stages_as_the_cli(dvc_project):
    root, env, dvc = dvc_project
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
        and not {"gallery", "curves", "timings"} & set(p.parts)
    }  # the results page's files are not versioned (.dvcignore): `urbex report` rewrites them
    assert (root / "assets" / "scenes" / ".gitignore").is_file()  # DVC's, in landmarks' dep
    for d in kept:
        shutil.rmtree(root / "assets" / d)
    _run([str(dvc), "pull", "-q"], root, env)
    assert {p: p.read_bytes() for p in files} == files
    # nothing to do after the pull: the .gitignore files DVC wrote into assets/scenes and
    # assets/eval/runs (folders other stages depend on) are not restored by a pull, and
    # .dvcignore keeps them out of those deps' hashes
    status = _run([str(dvc), "status", "dvc.yaml"], root, env)
    assert "up to date" in status.lower(), status
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


def test_rebuilding_a_scene_or_replaying_a_run_leaves_every_stage_up_to_date(dvc_project):
    """Issue 25, case 19: every file DVC hashes is a function of the inputs and params (seconds,
    timestamps and absolute paths go to unversioned timings/ folders). A scene cache rebuilt from
    the same cloud, in a project moved elsewhere, and an evaluation run replayed from scratch
    change no hash: nothing downstream turns dirty."""
    root, env, dvc = dvc_project  # a copy of the reproduced project, under another path
    lock = (root / "dvc.lock").read_text()
    scene = root / "assets" / "scenes" / "synthville_block_0"
    meta = (scene / "meta.json").read_bytes()
    time.sleep(1.1)  # a new build time, if anything recorded one
    _run([sys.executable, "-m", "urbex.cli", "-q", "cache", "--scene", scene.name, "--force"],
         root, env)  # fmt: skip
    assert (scene / "timings" / "build.json").is_file()
    assert (scene / "meta.json").read_bytes() == meta
    run = root / "assets" / "eval" / "runs" / "oracle-test_no"
    shutil.rmtree(run)
    argv = ["-q", "evaluate", "--policy", "oracle", "--split", "test_no"]
    over = root / "pool.yaml"  # other workers and chunks: the same run files
    over.write_text("eval:\n  workers: 2\n  chunk_size: 1\n  parallel_min_s: 0.0\n")
    _run([sys.executable, "-m", "urbex.cli", "--params", "params.yaml", "--params", str(over),
          *argv], root, env)  # fmt: skip
    assert sorted(p.name for p in (run / "episodes").iterdir()) == ["part-run.parquet"]
    status = _run([str(dvc), "status", "dvc.yaml"], root, env)
    assert "up to date" in status.lower(), status
    _run([str(dvc), "commit", "-f", "-q", "dvc.yaml"], root, env)
    assert (root / "dvc.lock").read_text() == lock  # the record is unchanged


def _experiments(shown: list[dict]) -> list[dict]:
    """The experiments' rows (``data``) of ``dvc exp show --json``, below every baseline."""
    return [
        rev["data"] for base in shown for e in base.get("experiments") or [] for rev in e["revs"]
    ]


@pytest.mark.skipif(
    not ISOLATED_DVC,
    reason="no isolated DVC environment (scripts/setup.sh installs .venv-dvc): a dvc sharing this "
    "environment with dagster fails `dvc exp run -S` (antlr4 4.13 vs hydra's 4.9)",
)
def test_dvc_exp_run_sweep_lists_both_experiments(dvc_project):
    """`dvc exp run -S eval.limit=N` twice (the project's urbex, DVC from its own environment),
    then `dvc exp show` lists both with their params and the evaluation's metrics file."""
    root, env, dvc = dvc_project
    _run(["git", "add", "-A"], root, env)
    _run(["git", "commit", "-q", "-m", "baseline"], root, env)
    stage = "evaluate@oracle-test_no"
    for limit in (2, 3):
        _run([str(dvc), "exp", "run", "-q", "-S", f"eval.limit={limit}", stage], root, env)
    shown = json.loads(_run([str(dvc), "exp", "show", "--json", "--no-pager"], root, env))
    summary = "assets/eval/summaries/oracle-test_no.json"
    rows = {
        d["params"]["params.yaml"]["data"]["eval"]["limit"]: d["metrics"][summary]["data"]
        for d in _experiments(shown)
    }
    assert sorted(rows) == [2, 3], rows
    assert {k: m["n"] for k, m in rows.items()} == {2: 2, 3: 3}  # each played its own sample
    assert all(m["hit1"] == 1.0 for m in rows.values())  # the oracle


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
    dvc = _dvc_or_skip()
    env = dvc_env()
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
