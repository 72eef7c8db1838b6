"""No debris after a crash: the cases of issue 11, each produced by really killing a process.

Each test SIGKILLs a child ``urbex`` at one precise point (a patched function kills its own
process, so the debris is exactly what that code leaves), then checks that the warehouse and the
readers do not see it and that the next run of the stage removes it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import polars as pl
import pytest

from tests.fixtures.small_project import write_small_project
from urbex.cli import main

SCENES = ("synthville_block_0", "synthville_block_1")
EVAL = ["evaluate", "--policy", "oracle", "--split", "test_no", "--run-id", "crash"]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """A built 2-scene project (synth → cache → landmarks → splits); copied by each test."""
    root = tmp_path_factory.mktemp("built")
    params = write_small_project(root, eval={"chunk_size": 2})
    for cmd in ("synth", "cache", "landmarks", "splits"):
        assert main(["--params", str(params), "-q", cmd]) == 0, cmd
    return root


@pytest.fixture
def project(built: Path, tmp_path: Path) -> Path:
    """A private copy of the built project; returns its params.yaml."""
    shutil.copytree(built, tmp_path / "p", symlinks=True)
    return tmp_path / "p" / "params.yaml"


def _killed_run(params: Path, patch: str, argv: list[str]) -> None:
    """Run ``urbex <argv>`` in a fresh interpreter after ``patch``; it must die by SIGKILL."""
    code = (
        "import os, signal\n"
        + textwrap.dedent(patch)
        + textwrap.dedent(f"""
        from urbex.cli import main
        main({["--params", str(params), "-q", *argv]!r})
        raise SystemExit("the kill point was never reached")
    """)
    )
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )
    assert r.returncode == -9, (r.returncode, r.stderr[-2000:])


def _counts(assets: Path) -> dict[str, int]:
    from urbex.report.warehouse import refresh_warehouse

    return refresh_warehouse(assets, con=duckdb.connect(":memory:"))


def _entries(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir())


#: Where a build is killed: right before its staging directory is moved into place (the
#: staging folder then holds a complete instances.parquet), or while the replaced version is
#: being removed (it sits beside the scene, with its instances.parquet and scene.parquet).
KILL_POINTS = {
    "before_publish": """
        import urbex.scene.build as b
        b.publish_dir = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)
    """,
    "removing_the_old_version": """
        import shutil
        shutil.rmtree = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)
    """,
}


@pytest.mark.parametrize("point", sorted(KILL_POINTS))
def test_cache_force_killed_is_invisible_to_the_warehouse_and_removed_by_next_cache(
    project: Path, point: str
) -> None:
    assets = project.parent / "assets"
    before = _counts(assets)
    _killed_run(project, KILL_POINTS[point], ["cache", "--force"])
    debris = [n for n in _entries(assets / "scenes") if n not in SCENES]
    assert debris, "the kill left no staging folder: the test does not reach its point"
    # the warehouse and the readers see exactly the published caches
    after = _counts(assets)
    assert (after["scenes"], after["instances"]) == (before["scenes"], before["instances"])
    from urbex.scene.cache import SceneCache

    for sid in SCENES:
        SceneCache.open(assets / "scenes" / sid)
    # the next run (a plain `urbex cache`, reusing the fresh caches) removes the dead build's debris
    assert main(["--params", str(project), "-q", "cache"]) == 0
    assert _entries(assets / "scenes") == sorted(SCENES)
    assert _counts(assets)["instances"] == before["instances"]


def test_cache_force_killed_then_cache_force_again_leaves_no_staging(project: Path) -> None:
    assets = project.parent / "assets"
    _killed_run(project, KILL_POINTS["before_publish"], ["cache", "--force"])
    assert main(["--params", str(project), "-q", "cache", "--force"]) == 0
    assert _entries(assets / "scenes") == sorted(SCENES)


#: Kill ``evaluate`` while it writes its second episodes shard: the staging file is left with
#: 0 bytes, as a kill in the middle of ``pq.write_table`` leaves it.
SHARD_KILL = """
    import pyarrow.parquet as pq
    real, n = pq.write_table, [0]
    def write(table, where, *a, **k):
        folder = os.path.dirname(str(where))  # the versioned shards, not their timings
        if os.path.basename(folder) == "episodes" and not folder.endswith("timings/episodes"):
            n[0] += 1
            if n[0] == 2:
                open(where, "wb").close()
                os.kill(os.getpid(), signal.SIGKILL)
        return real(table, where, *a, **k)
    pq.write_table = write
"""


def test_evaluate_killed_during_a_shard_write_then_warehouse_and_resume_work(
    project: Path,
) -> None:
    from urbex.eval.episodes import read_episodes, read_steps

    assets = project.parent / "assets"
    run = assets / "eval" / "runs" / "crash"
    _killed_run(project, SHARD_KILL, EVAL)
    partial = [n for n in _entries(run / "episodes") if n.startswith(".")]
    assert partial, "the kill left no partial shard: the test does not reach its point"
    assert main(["--params", str(project), "-q", "warehouse"]) == 0
    # the warehouse reads past the partial shard; the killed run (run.json "running") is listed
    # in `runs` but its one complete shard (chunk_size 2) is not shown until the run completes
    counts = _counts(assets)
    assert counts["episodes"] == 0 and counts["runs"] >= 1
    assert len(read_episodes(run)) == 2  # the shard is there, read directly
    assert main(["--params", str(project), "-q", *EVAL]) == 0
    eps = read_episodes(run)
    queries = pl.read_parquet(assets / "splits" / "queries.parquet").filter(split="test_no")
    assert eps.height == queries.height and eps["query_id"].n_unique() == eps.height
    assert set(read_steps(run)["query_id"]) == set(eps["query_id"])
    for kind in ("episodes", "steps"):
        assert all(n.startswith("part-") for n in _entries(run / kind)), _entries(run / kind)
    assert _counts(assets)["episodes"] == queries.height
