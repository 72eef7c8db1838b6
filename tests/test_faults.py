"""Faults a new user runs into (issue 25): each case failed on the main it was found on.

Grouped with the fault-injection (:mod:`tests.test_fault_injection`) and debris
(:mod:`tests.test_debris`) suites. The chat-template case lives beside the code it guards
(``tests/language/test_chat.py``, ``tests/agents/test_vlm.py``, ``tests/env/test_tools.py``).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import unicodedata
from pathlib import Path

import duckdb
import pytest

from tests.fixtures.small_project import REPO_ROOT, write_small_project
from urbex.cli import main
from urbex.layout import safe_name
from urbex.report import warehouse

# ---------------------------------------------------------------- overwriting a user's files


def test_synth_refuses_to_write_over_a_users_data_set(tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "CityRefer_train.json").write_text('[{"mine": 1}]')
    argv = ["-q", "synth", str(out), "--scenes", "1", "--size", "50", "--density", "3"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "CityRefer_train.json" in err and "--force" in err and "Traceback" not in err
    assert json.loads((out / "CityRefer_train.json").read_text()) == [{"mine": 1}]
    assert sorted(p.name for p in out.iterdir()) == ["CityRefer_train.json"]
    assert main([*argv, "--force"]) == 0
    assert (out / "box3d" / "synthville_block_0_bbox.json").is_file()


def test_synth_into_an_empty_folder_needs_no_force(tmp_path):
    out = tmp_path / "empty"
    out.mkdir()
    assert main(["-q", "synth", str(out), "--scenes", "1", "--size", "50", "--density", "3"]) == 0


def test_make_tiny_model_refuses_to_write_over_a_checkpoint(tmp_path, capsys):
    pytest.importorskip("transformers")
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "config.json").write_text('{"mine": true}')
    (ckpt / "model.safetensors").write_bytes(b"weights")
    assert main(["-q", "make-tiny-model", str(ckpt)]) == 2
    err = capsys.readouterr().err
    assert "config.json" in err and "model.safetensors" in err and "--force" in err
    assert (ckpt / "model.safetensors").read_bytes() == b"weights"
    assert json.loads((ckpt / "config.json").read_text()) == {"mine": True}
    assert main(["-q", "make-tiny-model", str(ckpt), "--force"]) == 0
    assert "model_type" in json.loads((ckpt / "config.json").read_text())


# ---------------------------------------------------------------- flags with a params twin


@pytest.mark.parametrize("value", ["", " ", ",", " , "])
def test_empty_tools_flag_is_an_error_not_the_no_tool_ablation(value, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["evaluate", "--policy", "oracle", "--tools", value])
    assert exc.value.code == 2
    assert "--tools" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["0", "1", "-3", "two"])
def test_repeats_below_two_is_a_one_line_error(value, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["evaluate", "--policy", "oracle", "--repeats", value])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--repeats" in err and "Traceback" not in err and "nan" not in err


# ---------------------------------------------------------------- names


def test_a_long_run_id_gets_the_safe_name_message(capsys):
    assert main(["evaluate", "--policy", "oracle", "--run-id", "r" * 300]) == 2
    err = capsys.readouterr().err
    assert "at most 128 characters" in err and "File name too long" not in err


def test_composed_and_decomposed_names_are_one_name_and_fullwidth_is_refused():
    nfd = unicodedata.normalize("NFD", "über-run")
    assert nfd != "über-run" and safe_name(nfd, what="--run-id") == "über-run"
    with pytest.raises(ValueError, match="compatibility"):
        safe_name("run\uff11", what="--run-id")  # full-width digit one


# ---------------------------------------------------------------- the warehouse and its readers


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A built 2-scene project with one oracle run, in a folder whose name holds glob characters
    (``proj[1]``); returns its params.yaml."""
    root = tmp_path_factory.mktemp("faults") / "proj[1]"
    params = write_small_project(
        root, env={"global_view_size": [64, 64], "zoom_size": [64, 64], "oblique_size": [64, 64]}
    )
    for cmd in ("synth", "cache", "landmarks", "splits"):
        assert main(["--params", str(params), "-q", cmd]) == 0, cmd
    argv = ["--params", str(params), "-q", "evaluate", "--policy", "oracle", "--limit", "6"]
    assert main([*argv, "--run-id", "good"]) == 0
    assert main([*argv, "--run-id", "broken", "--split", "test_no"]) == 0
    return params


@pytest.fixture
def project(built, tmp_path):
    """A private copy of :func:`built` (same folder name), for a test that damages it."""
    dst = tmp_path / "proj[1]"
    shutil.copytree(built.parent, dst)
    params = dst / "params.yaml"
    return params, dst / "assets"


def _runs(assets) -> dict[str, tuple[str, str | None]]:
    con = duckdb.connect(str(assets / "warehouse.duckdb"), read_only=True)
    try:
        return {
            r: (s, e)
            for r, s, e in con.execute("SELECT run_id, status, error FROM runs").fetchall()
        }
    finally:
        con.close()


def test_a_folder_named_like_a_glob_reads_only_itself(project, capsys):
    params, assets = project
    sibling = assets.parent.parent / "proj1"  # what an unescaped proj[1] matches
    shutil.copytree(assets.parent, sibling)
    shutil.copytree(sibling / "assets/eval/runs/good", sibling / "assets/eval/runs/someone_else")
    assert main(["--params", str(params), "-q", "warehouse"]) == 0
    assert set(_runs(assets)) == {"good", "broken"}
    assert json.loads(capsys.readouterr().out)["runs"] == 2
    assert main(["--params", str(params), "-q", "report"]) == 0


@pytest.mark.parametrize("damage", ["run_json", "episode_shard"])
def test_a_corrupt_run_is_skipped_with_a_warning_and_fails_nothing_else(project, damage, capsys):
    params, assets = project
    runs = assets / "eval" / "runs"
    if damage == "run_json":
        bad = runs / "broken" / "run.json"
        bad.write_text('{"status": "complete", "policy": ')  # cut mid-write by another tool
    else:
        bad = sorted((runs / "broken" / "episodes").glob("part-*.parquet"))[0]
        bad.write_bytes(bad.read_bytes()[:100])
    for cmd in ("warehouse", "report", "diagnose"):
        assert main(["--params", str(params), "-q", cmd]) == 0, cmd
        err = capsys.readouterr().err
        assert f"warning: warehouse: {bad}" in err and "Traceback" not in err, cmd
    status, error = _runs(assets)["broken"]
    assert status == "failed" and bad.name in error
    assert _runs(assets)["good"][0] == "complete"
    con = duckdb.connect(str(assets / "warehouse.duckdb"), read_only=True)
    assert con.execute("SELECT DISTINCT run_id FROM episodes").fetchall() == [("good",)]
    con.close()
    argv = ["--params", str(params), "-q", "evaluate", "--policy", "oracle", "--limit", "2"]
    assert main([*argv, "--run-id", "unrelated"]) == 0
    assert _runs(assets)["unrelated"][0] == "complete"


def test_evaluate_refreshes_while_another_process_reads_the_warehouse(project):
    """The README's promise: a read-only reader may hold the file at any time."""
    params, assets = project
    db = assets / "warehouse.duckdb"
    reader = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import duckdb, sys\n"
            f"con = duckdb.connect({str(db)!r}, read_only=True)\n"
            "print(con.execute('SELECT count(*) FROM runs').fetchone()[0], flush=True)\n"
            "sys.stdin.readline()\n"
            "print(con.execute('SELECT count(*) FROM episodes').fetchone()[0], flush=True)\n",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert reader.stdout.readline().strip() == "2"  # the reader holds the file now
        argv = ["--params", str(params), "-q", "evaluate", "--policy", "oracle", "--limit", "2"]
        assert main([*argv, "--run-id", "while_read"]) == 0
        assert "while_read" in _runs(assets)
        out, _ = reader.communicate("go\n", timeout=60)
        assert int(out.strip()) >= 12  # the reader still reads (both earlier runs, 6 each)
    finally:
        reader.kill()


def test_a_misspelt_assets_folder_is_an_error_and_creates_nothing(tmp_path, capsys):
    params = write_small_project(tmp_path, paths={"assets": "asets"})
    for cmd in ("warehouse", "diagnose", "report"):
        assert main(["--params", str(params), "-q", cmd]) == 2, cmd
        assert "paths.assets" in capsys.readouterr().err
    assert not (tmp_path / "asets").exists()


def test_an_unwritable_warehouse_is_a_one_line_error(project, monkeypatch, capsys):
    """A read-only assets folder (root, as CI runs, ignores permissions: the write is refused
    the way the kernel refuses it)."""
    params, assets = project

    real = duckdb.connect

    def refused(database=":memory:", *args, **kwargs):
        if str(database) != ":memory:":  # DuckDB's own words for a read-only folder
            raise duckdb.IOException(f'IO Error: Cannot open file "{database}": Permission denied')
        return real(database, *args, **kwargs)

    monkeypatch.setattr(warehouse.duckdb, "connect", refused)
    assert main(["--params", str(params), "-q", "warehouse"]) == 2
    err = capsys.readouterr().err
    assert "cannot write the warehouse" in err and str(assets) in err and "Traceback" not in err
    assert main(["--params", str(params), "-q", "report"]) == 0  # the report reads in memory


# ---------------------------------------------------------------- Ctrl-C


def test_ctrl_c_during_evaluate_is_one_line_exit_130_and_the_rerun_completes(project):
    """Ctrl-C reaches the whole process group (the parent and its pool workers), as a terminal
    sends it; it lands once the pool's workers have written their first episodes."""
    params, assets = project
    argv = ["--params", str(params), "-q", "evaluate", "--policy", "oracle", "--run-id", "ctrlc"]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "HF_HUB_OFFLINE": "1"}
    over = params.parent / "pool.yaml"
    over.write_text("eval:\n  workers: 2\n  chunk_size: 1\n  parallel_min_s: 0\n")
    argv = [*argv[:2], "--params", str(over), *argv[2:]]
    proc = subprocess.Popen(
        [sys.executable, "-m", "urbex.cli", *argv],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    shards = assets / "eval" / "runs" / "ctrlc" / "episodes"
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        if shards.is_dir() and any(shards.glob("part-*.parquet")):  # the workers are playing
            break
        time.sleep(0.005)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert lines == ["urbex evaluate: interrupted"], err
    assert main(argv) == 0
    assert _runs(assets)["ctrlc"][0] == "complete"


# ---------------------------------------------------------------- checkpoints


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    pytest.importorskip("transformers")
    from urbex.train.tiny import make_tiny_model

    return make_tiny_model(tmp_path_factory.mktemp("tiny") / "m")


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        ("truncate", "truncated"),
        ("no_tokenizer", "no tokenizer files"),
        ("no_image_processor", "no image processor"),
        ("no_weights", "holds no weights"),
    ],
)
def test_a_broken_checkpoint_is_refused_before_any_episode(
    built, tiny, tmp_path, damage, message, capsys
):
    ckpt = tmp_path / "ckpt"
    shutil.copytree(tiny, ckpt)
    weights = ckpt / "model.safetensors"
    if damage == "truncate":
        weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    elif damage == "no_tokenizer":
        (ckpt / "tokenizer.json").unlink()
    elif damage == "no_image_processor":
        (ckpt / "processor_config.json").unlink()
    else:
        weights.unlink()
    argv = ["--params", str(built), "-q", "evaluate", "--policy", "vlm", "--checkpoint", str(ckpt)]
    assert main([*argv, "--limit", "2", "--run-id", f"ck_{damage}"]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (built.parent / "assets" / "eval" / "runs" / f"ck_{damage}" / "episodes").exists()


# ---------------------------------------------------------------- annotations


def test_an_annotation_of_an_unknown_scene_is_a_counted_drop(project):
    import polars as pl

    params, assets = project
    meta = assets / "raw" / "synthetic" / "meta_data" / "CityRefer_train.json"
    rows = json.loads(meta.read_text())
    extra = [
        {**rows[0], "scene_id": sid, "ann_id": 900 + i}
        for i, sid in enumerate(("../../x", "synthville_block_99"))
    ]
    meta.write_text(json.dumps([*rows, *extra]))
    assert main(["--params", str(params), "-q", "splits"]) == 0
    drops = pl.read_parquet(assets / "splits" / "annotation_drops.parquet", glob=False)
    unknown = drops.filter(pl.col("reason") == "unknown_scene")
    assert sorted(unknown["scene_id"].to_list()) == ["../../x", "synthville_block_99"]
    kept = pl.read_parquet(assets / "splits" / "queries.parquet", glob=False)
    assert not kept.filter(pl.col("scene_id").is_in(["../../x", "synthville_block_99"])).height


def test_an_ann_id_past_64_bits_is_a_one_line_error_naming_the_file(project, capsys):
    params, assets = project
    meta = assets / "raw" / "synthetic" / "meta_data" / "CityRefer_train.json"
    rows = json.loads(meta.read_text())
    rows[3]["ann_id"] = 2**70
    meta.write_text(json.dumps(rows))
    assert main(["--params", str(params), "-q", "splits"]) == 2
    err = capsys.readouterr().err
    assert "CityRefer_train.json" in err and "record 3" in err and "ann_id" in err
    assert "Traceback" not in err and "ComputeError" not in err


def test_a_self_intersecting_landmark_polygon_is_repaired_with_a_warning(project, capsys):
    params, assets = project
    gj = sorted((assets / "raw" / "synthetic" / "landmarks").glob("*.geojson"))[0]
    data = json.loads(gj.read_text())
    feat = next(f for f in data["features"] if f["geometry"]["type"] == "Polygon")
    (x0, y0), (x1, y1) = (
        feat["geometry"]["coordinates"][0][0],
        feat["geometry"]["coordinates"][0][2],
    )
    feat["geometry"]["coordinates"] = [[[x0, y0], [x1, y1], [x1, y0], [x0, y1], [x0, y0]]]  # bowtie
    gj.write_text(json.dumps(data))
    for cmd in ("landmarks", "splits"):
        assert main(["--params", str(params), "-q", cmd]) == 0, cmd
        err = capsys.readouterr().err
        assert "Traceback" not in err and "TopologyException" not in err
        if cmd == "landmarks":
            assert "repaired with shapely.make_valid" in err and feat["properties"]["name"] in err


def test_a_landmark_with_a_nan_coordinate_is_left_out_with_a_warning(project, capsys):
    params, assets = project
    gj = sorted((assets / "raw" / "synthetic" / "landmarks").glob("*.geojson"))[0]
    data = json.loads(gj.read_text())
    feat = next(f for f in data["features"] if f["geometry"]["type"] == "Polygon")
    feat["geometry"]["coordinates"][0][1][0] = float("nan")  # json writes NaN; GDAL reads it
    gj.write_text(json.dumps(data))
    assert main(["--params", str(params), "-q", "landmarks"]) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and "GEOSException" not in err and "RuntimeWarning" not in err
    assert f"warning: {gj}: 1 feature(s) with a non-finite coordinate left out" in err
    assert repr(feat["properties"]["name"]) in err


def test_splits_refuse_a_cache_built_from_another_box3d(project, capsys):
    params, assets = project
    box = assets / "raw" / "synthetic" / "box3d" / "synthville_block_0_bbox.json"
    data = json.loads(box.read_text())
    box.write_text(json.dumps(data, indent=1))  # any edit: a renamed or re-classed instance
    assert main(["--params", str(params), "-q", "splits"]) == 2
    err = capsys.readouterr().err
    assert "synthville_block_0" in err and "urbex cache --scene synthville_block_0" in err
    assert main(["--params", str(params), "-q", "cache", "--scene", "synthville_block_0"]) == 0
    assert main(["--params", str(params), "-q", "splits"]) == 0


# ---------------------------------------------------------------- make ui


def _processes() -> dict[int, tuple[int, int]]:
    """Every live process (read from /proc): pid → (parent pid, session id)."""
    out = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":  # state, ppid, pgrp, session
            out[int(stat.parent.name)] = (int(fields[1]), int(fields[3]))
    return out


def _session(sid: int) -> list[int]:
    return [pid for pid, (_, s) in _processes().items() if s == sid]


def _children(pid: int) -> list[int]:
    return [c for c, (ppid, _) in _processes().items() if ppid == pid]


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads processes from /proc")
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_make_ui_stops_on_one_signal_within_5_s_without_a_supersession_warning(signum, tmp_path):
    """``make ui``'s command (scripts/ui.py): the Dagster UI answers, one Ctrl-C (SIGINT to the
    terminal's process group) or SIGTERM stops it and every process it started within 5 s."""
    import socket
    import urllib.request

    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "DAGSTER_HOME": str(home)}
    log = tmp_path / "ui.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, str(REPO_ROOT / "scripts" / "ui.py"), "--port", str(port)],
            cwd=REPO_ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # the terminal's foreground group, as make runs it
        )
    dev = None
    try:
        deadline = time.monotonic() + 300  # a loaded 2-core machine starts the UI slowly
        while time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/server_info", timeout=2):
                    break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail(f"the UI did not answer in 300 s: {log.read_text()}")
        (dev,) = _children(proc.pid)  # `dagster dev`, leading a session of its own
        started = _session(dev)
        assert len(started) >= 3, started  # dagster dev, the webserver, the daemon (+ code servers)
        t0 = time.monotonic()
        os.killpg(proc.pid, signum)
        while (proc.poll() is None or _session(dev)) and time.monotonic() - t0 < 30:
            time.sleep(0.05)
        elapsed = time.monotonic() - t0
    finally:  # also when the UI never answered: dagster dev's own session goes too
        devs = [dev] if dev is not None else _children(proc.pid)
        for pid in [proc.pid, *(p for d in devs for p in _session(d))]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    text = log.read_text()
    assert elapsed < 5.0, (elapsed, text)
    assert proc.returncode == 128 + signum
    assert "SupersessionWarning" not in text and "Traceback" not in text, text
    assert text.rstrip().endswith("urbex ui: stopped"), text


# ---------------------------------------------------------------- Ctrl-C during training


@pytest.fixture(scope="module")
def tiny_protocol(built, tmp_path_factory):
    """A tiny model whose BPE was trained on the built project's protocol (short examples)."""
    pytest.importorskip("trl")
    path = tmp_path_factory.mktemp("tiny-protocol") / "m"
    argv = ["--params", str(built), "-q", "make-tiny-model", str(path), "--tokenizer", "protocol"]
    assert main([*argv, "--hidden", "32", "--vocab", "800"]) == 0
    return path


def _training_overlay(params, tiny) -> Path:
    """A short SFT and GRPO recipe over the tiny model, saving often."""
    over = params.parent / "training.yaml"
    over.write_text(
        f"vlm: {{max_new_tokens: 24}}\n"
        f"sft: {{checkpoint: {tiny}, per_query: 1, batch_size: 2, warmup_steps: 1, limit: 3,"
        f" steps: 12, save_steps: 2}}\n"
        f"train: {{checkpoint: {tiny}, limit: 2, num_generations: 2,"
        f" per_device_train_batch_size: 2, max_completion_length: 64, device: cpu,"
        f" max_steps: 3, save_steps: 1}}\n"
    )
    return over


def _interrupt_when(argv, ready, timeout=300) -> tuple[int, str]:
    """Run ``urbex *argv`` in a session of its own, SIGINT its process group (as a terminal's
    Ctrl-C) once ``ready()`` holds; return its exit status and stderr."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "urbex.cli", *argv],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline and not ready():
        time.sleep(0.01)
    assert proc.poll() is None, proc.communicate()
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    return proc.returncode, err


def test_ctrl_c_during_sft_is_one_line_exit_130_and_the_rerun_resumes(project, tiny_protocol):
    import polars as pl

    params, assets = project
    argv = ["--params", str(params), "--params", str(_training_overlay(params, tiny_protocol))]
    state = assets / "checkpoints" / ".staging-sft" / "resume" / "state.json"
    code, err = _interrupt_when([*argv, "-q", "sft"], state.is_file)
    assert code == 130, err
    assert [ln for ln in err.splitlines() if ln.strip()] == ["urbex sft: interrupted"], err
    assert not (assets / "checkpoints" / "sft").exists()  # nothing published half-done
    saved = json.loads(state.read_text())["step"]
    assert saved >= 2
    assert main([*argv, "-q", "sft"]) == 0
    final = assets / "checkpoints" / "sft"
    assert json.loads((final / "timings" / "sft.json").read_text())["resumed_from"] >= saved
    assert pl.read_parquet(final / "sft_log.parquet", glob=False)["step"].to_list() == list(
        range(1, 13)
    )
    assert not (assets / "checkpoints" / ".staging-sft").exists()


def test_ctrl_c_during_train_is_one_line_exit_130_and_the_rerun_resumes(project, tiny_protocol):
    import polars as pl

    params, assets = project
    argv = ["--params", str(params), "--params", str(_training_overlay(params, tiny_protocol))]
    trainer = assets / "checkpoints" / ".staging-grpo" / "trainer"

    def saved() -> bool:
        return any(trainer.glob("checkpoint-*/urbex_training_log.json"))

    code, err = _interrupt_when([*argv, "-q", "train"], saved)
    assert code == 130, err
    assert [ln for ln in err.splitlines() if ln.strip()] == ["urbex train: interrupted"], err
    assert not (assets / "checkpoints" / "grpo").exists()
    assert main([*argv, "-q", "train"]) == 0
    final = assets / "checkpoints" / "grpo"
    assert json.loads((final / "timings" / "train.json").read_text())["resumed_from"] is True
    assert json.loads((final / "train.json").read_text())["steps"] == 3
    log = pl.read_parquet(final / "training_log.parquet", glob=False)
    assert log["step"].to_list() == [1, 2, 3]  # the steps before the restart too
    assert not (assets / "checkpoints" / ".staging-grpo").exists()
