"""One writer per run: the flock of a run directory and its holder sidecar."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from urbex.errors import RunLockedError
from urbex.eval.runlock import LOCK_FILE, LOCK_HOLDER_FILE, lock_holder, run_lock


def test_run_lock_records_the_holder_and_removes_it_on_release(tmp_path):
    d = tmp_path / "runs" / "r1"  # created by the lock
    with run_lock(d, run_id="r1") as holder:
        assert holder["pid"] == os.getpid()
        assert set(holder) == {"pid", "host", "started"}
        assert lock_holder(d) == holder
        assert (d / LOCK_FILE).exists()
    assert not (d / LOCK_HOLDER_FILE).exists()
    assert lock_holder(d) is None
    assert (d / LOCK_FILE).exists()  # only the flock matters, the file stays


def test_second_writer_raises_naming_the_holder(tmp_path):
    with run_lock(tmp_path, run_id="r1") as holder:
        with pytest.raises(
            RunLockedError, match=rf"run 'r1' is being written by pid {holder['pid']}"
        ):
            with run_lock(tmp_path, run_id="r1"):
                pass  # pragma: no cover
        assert lock_holder(tmp_path) == holder  # the failed attempt left the sidecar alone
    with run_lock(tmp_path, run_id="r1"):  # free again
        pass


def test_lock_is_released_on_exception(tmp_path):
    with pytest.raises(RuntimeError):
        with run_lock(tmp_path, run_id="r"):
            raise RuntimeError("boom")
    with run_lock(tmp_path, run_id="r") as h:
        assert h["pid"] == os.getpid()


@pytest.mark.parametrize("text", [None, "", "{not json", "[1, 2]"])
def test_lock_holder_without_a_readable_record_is_none(tmp_path, text):
    if text is not None:
        (tmp_path / LOCK_HOLDER_FILE).write_text(text)
    assert lock_holder(tmp_path) is None


def test_lock_of_a_killed_holder_is_free(tmp_path):
    code = textwrap.dedent(
        f"""
        import sys, time
        from urbex.eval.runlock import run_lock
        with run_lock({str(tmp_path)!r}, run_id="r"):
            print("locked", flush=True)
            time.sleep(60)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
        with pytest.raises(RunLockedError, match=f"pid {proc.pid}"):
            with run_lock(tmp_path, run_id="r"):
                pass  # pragma: no cover
    finally:
        proc.kill()
        proc.wait()
    assert json.loads((tmp_path / LOCK_HOLDER_FILE).read_text())["pid"] == proc.pid  # stale
    with run_lock(tmp_path, run_id="r") as h:  # the OS released the flock of the dead holder
        assert h["pid"] == os.getpid()
