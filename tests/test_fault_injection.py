"""Fault injection: SIGKILL ``urbex cache``, ``evaluate``, ``splits`` and ``train`` at random points.

For each stage, an uninterrupted run gives the reference; then each trial kills the stage after a
delay drawn from a seeded RNG (uniform over the first three quarters of the reference run) and checks that

* no reader sees partial data: the warehouse refreshes, its counts are consistent, and every
  published file equals the reference (or is absent);
* a rerun of the same command equals the uninterrupted run (timings excluded);
* no staging or temporary file remains after the rerun.

The killed commands run in interpreters that imported urbex beforehand (:mod:`tests.fixtures.warm`), so
that a kill lands in the stage's work rather than in the imports; the reruns run in this
process (:func:`urbex.cli.main`).
``train`` (tens of seconds per step on a CPU) is killed at fewer points, in a chain: each kill
lands on the debris of the previous one, and one rerun follows the last.

Ten random points per stage (twenty until 2026-12-04): the windows where a kill matters most —
between a scene's staging and its publish, while the old version is being removed, inside an
episode shard's write — are each hit exactly by :mod:`tests.test_debris`, so the random trials
sweep the rest of the run rather than hunt for those windows.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest

from tests.fixtures.small_project import write_small_project
from tests.fixtures.warm import WarmProcesses
from urbex.cli import main

SEED = 11
N_KILLS = 10
N_TRAIN_KILLS = 4
SCENES = ("synthville_block_0", "synthville_block_1")
#: What the stages import, imported by each warm process before its command.
MODULES = [
    "urbex.cli",
    "urbex.stages",
    "urbex.scene.build",
    "urbex.io.datasets",
    "urbex.report.warehouse",
    "urbex.eval.runner",
    "urbex.annotations.stages",
    "urbex.agents.registry",
]
#: ``splits`` checks its tables with great-expectations, imported when the check runs (2.8 s
#: after the modules above, most of a tiny project's run): imported beforehand, so that the
#: kills land in the stage's work (without it, ~9 of 10 landed inside that import).
SPLITS_MODULES = [*MODULES, "great_expectations"]
#: ``train`` imports trl's GRPO trainer when it runs (2.8 s after torch and transformers):
#: imported beforehand for the same reason.
TRAIN_MODULES = [
    *MODULES,
    "urbex.train.grpo",
    "torch",
    "transformers",
    "trl",
    "trl.trainer.grpo_trainer",
]
ENV = {"HF_HUB_OFFLINE": "1", "TQDM_DISABLE": "1"}
#: Modules that take half a second or more to import. A command under test that imports one
#: itself (its warm process did not) spends that time where a kill lands in the import rather
#: than in the stage's work: the uninterrupted reference run is checked for them.
HEAVY_IMPORTS = (
    "pandas", "great_expectations", "torch", "transformers", "trl.trainer.grpo_trainer",
    "datasets", "scipy.stats",
)  # fmt: skip
#: Seconds, timestamps and run-local fields that differ between two identical runs.
TIMING = {"build_seconds", "latency_s", "latency_p50_s", "latency_p90_s", "env_s", "policy_s"}
TRAIN_TIMING = {"wall_s", "seconds_per_step", "created", "resumed_from"}


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """A built 2-scene project; returns params.yaml."""
    root = tmp_path_factory.mktemp("faults")
    params = write_small_project(
        root,
        eval={"chunk_size": 2},
        env={"global_view_size": [64, 64], "zoom_size": [64, 64], "oblique_size": [64, 64]},
        train={
            "limit": 2,
            "num_generations": 2,
            "per_device_train_batch_size": 2,
            "max_completion_length": 64,
            "device": "cpu",
        },
    )
    for cmd in ("synth", "cache", "landmarks", "splits"):
        assert main(["--params", str(params), "-q", cmd]) == 0, cmd
    return params


@pytest.fixture(scope="module")
def server():
    with WarmProcesses(MODULES, env=ENV) as s:
        yield s


def _digest(path: Path) -> Any:
    """What must be equal between two runs: the bytes, or the content without timings."""
    if path.suffix == ".json":
        data = json.loads(path.read_text())
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if k not in TIMING | TRAIN_TIMING}
        return data
    if path.suffix == ".parquet" and path.name in ("scene.parquet", "metrics.parquet"):
        df = pl.read_parquet(path)
        return df.drop([c for c in df.columns if c in TIMING]).rows()
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _published(d: Path) -> dict[str, Any]:
    """Every published file under ``d`` (staging names skipped) → its :func:`_digest`."""
    out: dict[str, Any] = {}
    if not d.is_dir():
        return out
    for p in sorted(d.rglob("*")):
        rel = p.relative_to(d)
        if p.is_file() and not any(part.startswith(".") for part in rel.parts):
            # measured seconds (urbex.layout.TIMINGS_DIR); TensorBoard events (wall times, a
            # host name: a checkpoint's runs/, unversioned as timings are)
            if "timings" not in rel.parts and rel.parts[0] != "runs":
                out[rel.as_posix()] = _digest(p)
    return out


def _leftovers(assets: Path) -> list[str]:
    """Staging / temporary names anywhere under ``assets`` (the synth stamp is not one)."""
    return sorted(
        p.relative_to(assets).as_posix()
        for p in assets.rglob(".*")
        if p.name != ".urbex_synth" or p.parent != assets / "raw" / "synthetic"
    )


def _counts(assets: Path) -> dict[str, int]:
    from urbex.report.warehouse import refresh_warehouse

    return refresh_warehouse(assets, con=duckdb.connect(":memory:"))


def _no_heavy_imports(run: dict[str, Any]) -> None:
    late = sorted(set(run["imported"] or ()) & set(HEAVY_IMPORTS))
    assert not late, f"the command imported {late} itself: add them to its warm modules"


def _kill_trials(
    server: WarmProcesses,
    params: Path,
    argv: list[str],
    *,
    n: int,
    seed: int,
    reset: Callable[[], None],
    snapshot: Callable[[], Any],
    readers_ok: Callable[[Any], None],
    rerun_each: bool = True,
) -> dict[str, Any]:
    """Kill ``urbex <argv>`` ``n`` times; see the module docstring. Returns trial statistics."""
    cwd, log = params.parent, params.parent / "child.log"
    full = ["--params", str(params), "-q", *argv]
    reset()
    ref_run = server.run(full, cwd=cwd, log=log)  # the uninterrupted run, and its duration
    assert ref_run["rc"] == 0, log.read_text()[-3000:]
    _no_heavy_imports(ref_run)
    ref = snapshot()
    rng = random.Random(seed)
    killed = 0
    # timings vary run to run (a cold or crowded reference run can take twice as long as the
    # next): draw the kill time within the fastest uninterrupted run seen so far
    fastest = ref_run["elapsed"]
    for i in range(n):
        if rerun_each:
            reset()
        delay = rng.uniform(0.0, 0.75 * fastest)
        r = server.run(full, cwd=cwd, log=log, kill_after=delay)
        assert r["rc"] in (0, -9), (i, delay, log.read_text()[-3000:])
        killed += r["killed"]
        if not r["killed"] and r.get("elapsed"):
            fastest = min(fastest, r["elapsed"])
        readers_ok(ref)
        if rerun_each or i == n - 1:
            assert main(full) == 0, (i, delay)
            assert snapshot() == ref, (i, delay)
            assert _leftovers(params.parent / "assets") == [], (i, delay)
    # most kills must land inside the run, or the trials test nothing
    assert killed >= n // 2, (killed, n, ref_run["elapsed"])
    return {"trials": n, "killed": killed, "reference_s": ref_run["elapsed"]}


def test_cache_force_sigkilled_at_random_points(server: WarmProcesses, project: Path) -> None:
    from urbex.scene.cache import SceneCache

    assets = project.parent / "assets"
    scenes = assets / "scenes"
    counts = _counts(assets)

    def readers_ok(ref: Any) -> None:
        assert _published(scenes) == ref  # every scene is the complete old or new cache
        c = _counts(assets)
        assert (c["scenes"], c["instances"]) == (counts["scenes"], counts["instances"])
        for sid in SCENES:
            SceneCache.open(scenes / sid)

    stats = _kill_trials(
        server,
        project,
        ["cache", "--force"],
        n=N_KILLS,
        seed=SEED,
        reset=lambda: None,
        snapshot=lambda: _published(scenes),
        readers_ok=readers_ok,
    )
    print("cache", stats)


def test_evaluate_sigkilled_at_random_points(server: WarmProcesses, project: Path) -> None:
    from urbex.eval.episodes import read_episodes, read_steps

    assets = project.parent / "assets"
    run = assets / "eval" / "runs" / "faults"
    n_queries = pl.read_parquet(assets / "splits" / "queries.parquet").filter(split="test_no")
    n_queries = n_queries.height

    def rows(df: pl.DataFrame) -> list[tuple[Any, ...]]:
        return df.drop([c for c in df.columns if c in TIMING]).rows()

    def snapshot() -> Any:
        meta = json.loads((run / "run.json").read_text())
        return (
            rows(read_episodes(run)),
            rows(read_steps(run)),
            _digest(run / "metrics.parquet"),
            meta["status"],
        )

    def readers_ok(ref: Any) -> None:
        c = _counts(assets)  # the warehouse refreshes over whatever the kill left
        eps = read_episodes(run) if (run / "episodes").is_dir() else None
        done = rows(eps) if eps is not None else []
        meta = run / "run.json"
        status = json.loads(meta.read_text()).get("status") if meta.is_file() else None
        # the warehouse shows a run's episodes once it is complete (an unfinished one is in runs)
        assert c["episodes"] == (len(done) if status in (None, "complete") else 0)
        assert len(done) <= n_queries
        assert set(done) <= set(ref[0])  # each finished episode is complete and correct
        if (run / "metrics.parquet").exists():
            assert _digest(run / "metrics.parquet") == ref[2]

    stats = _kill_trials(
        server,
        project,
        ["evaluate", "--policy", "oracle", "--split", "test_no", "--run-id", "faults"],
        n=N_KILLS,
        seed=SEED + 1,
        reset=lambda: shutil.rmtree(run, ignore_errors=True),
        snapshot=snapshot,
        readers_ok=readers_ok,
    )
    print("evaluate", stats)


def test_splits_sigkilled_at_random_points(project: Path) -> None:
    assets = project.parent / "assets"
    splits = assets / "splits"

    def readers_ok(ref: Any) -> None:
        now = _published(splits)
        assert all(now[k] == ref[k] for k in now), sorted(k for k in now if now[k] != ref[k])
        c = _counts(assets)
        expected = (
            pl.read_parquet(splits / "queries.parquet").height if "queries.parquet" in now else 0
        )
        assert c["queries"] == expected

    with WarmProcesses(SPLITS_MODULES, env=ENV) as server:
        stats = _kill_trials(
            server,
            project,
            ["splits"],
            n=N_KILLS,
            seed=SEED + 2,
            reset=lambda: shutil.rmtree(splits, ignore_errors=True),
            snapshot=lambda: _published(splits),
            readers_ok=readers_ok,
        )
    print("splits", stats)


def test_train_sigkilled_at_random_points(project: Path) -> None:
    assets = project.parent / "assets"
    final = assets / "checkpoints" / "faults"

    def reset() -> None:
        shutil.rmtree(assets / "checkpoints", ignore_errors=True)

    def snapshot() -> Any:
        return _published(final)  # timings (seconds, paths, when) excluded

    def readers_ok(ref: Any) -> None:
        if final.exists():  # absent, or the complete checkpoint
            assert snapshot() == ref

    from urbex.train.tiny import make_tiny_model

    tiny = make_tiny_model(project.parent / "tiny", seed=0)
    with WarmProcesses(TRAIN_MODULES, env=ENV) as server:
        stats = _kill_trials(
            server,
            project,
            ["train", "--checkpoint", str(tiny), "--run-name", "faults", "--max-steps", "1"],
            n=N_TRAIN_KILLS,
            seed=SEED + 3,
            reset=reset,
            snapshot=snapshot,
            readers_ok=readers_ok,
            rerun_each=False,
        )
    print("train", stats)


def test_concurrent_openai_evaluate_killed_and_resumed_equals_a_sequential_run(
    server: WarmProcesses, project: Path
) -> None:
    """``openai.concurrency`` 4 against the local stub, SIGKILLed at random points and rerun,
    gives the episodes and steps of an uninterrupted one-at-a-time run, episode for episode."""
    import yaml

    from tests.fixtures.openai_server import StubServer
    from urbex.eval.episodes import SHARD_GLOB, read_episodes, read_steps

    assets = project.parent / "assets"
    run = assets / "eval" / "runs" / "faults-openai"

    def rows(df: pl.DataFrame) -> list[tuple[Any, ...]]:
        return df.drop([c for c in df.columns if c in TIMING]).rows()

    def snapshot() -> Any:
        return rows(read_episodes(run)), rows(read_steps(run)), _digest(run / "metrics.parquet")

    # 0.5 s per reply in the runs a kill may interrupt: the episodes take most of the run (the
    # interpreter's start-up is the rest, a larger share on a loaded machine), so most kills
    # land among them; the reference and the resumes get their replies at once
    with StubServer(latency_s=0.5, turns=2, max_lifetime_s=300) as stub:
        doc = yaml.safe_load(project.read_text())
        files = {}
        for n in (1, 4):
            doc["openai"].update(base_url=stub.base_url, api_key_env=None, concurrency=n)
            files[n] = project.with_name(f"params-openai-{n}.yaml")
            files[n].write_text(yaml.safe_dump(doc))
        argv = ["evaluate", "--policy", "openai", "--split", "test_no", "--run-id", run.name]
        sequential = ["--params", str(files[1]), "-q", *argv]
        concurrent = ["--params", str(files[4]), "-q", *argv]
        stub.latency_s = 0.0  # replies do not depend on their latency: only the runs a kill
        assert main(sequential) == 0  # may interrupt wait on it
        ref = snapshot()
        assert len(ref[0]) >= 4
        shutil.rmtree(run)
        log = project.parent / "child.log"
        stub.latency_s = 0.5
        first = server.run(concurrent, cwd=project.parent, log=log)  # uninterrupted, timed
        assert first["rc"] == 0, log.read_text()[-3000:]
        _no_heavy_imports(first)
        assert snapshot() == ref
        rng = random.Random(SEED + 4)
        killed = partial = 0
        for i in range(6):
            shutil.rmtree(run)
            stub.latency_s = 0.5
            if i % 2 == 0:  # at a random instant of the run (start-up and publishing included)
                delay = rng.uniform(0.25 * first["elapsed"], 0.9 * first["elapsed"])
                r = server.run(concurrent, cwd=project.parent, log=log, kill_after=delay)
            else:  # at a random point of its progress: once k of its shards are published
                # (eval.chunk_size 2), whatever the machine's load makes of the timing
                delay = k = rng.randint(1, len(ref[0]) // 2 - 1)
                r = server.run(
                    concurrent, cwd=project.parent, log=log,
                    kill_when=lambda k=k: len(list((run / "episodes").glob(SHARD_GLOB))) >= k,
                )  # fmt: skip
            assert r["rc"] in (0, -9), (i, delay, log.read_text()[-3000:])
            killed += r["killed"]
            if (run / "episodes").is_dir():  # what the kill left is a subset of the reference
                left = set(rows(read_episodes(run)))
                assert left <= set(ref[0]), (i, delay)
                partial += 0 < len(left) < len(ref[0])
            stub.latency_s = 0.0  # the resume
            assert main(concurrent) == 0, (i, delay)
            assert snapshot() == ref, (i, delay)
            assert _leftovers(assets) == [], (i, delay)
        assert stub.peak_in_flight >= 2
    stats = {"trials": 6, "killed": killed, "partial": partial, "reference_s": first["elapsed"]}
    print("openai concurrent", stats)
    assert killed >= 3 and partial >= 1, stats  # some kills left a half-played run
