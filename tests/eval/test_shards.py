"""The background shard writer (urbex.eval.shards)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.eval.test_episodes import _ep, _step
from urbex.eval.episodes import read_episodes, read_steps
from urbex.eval.shards import ShardWriter


def _shards(d: Path, kind: str = "episodes") -> list[Path]:
    return sorted((d / kind).glob("part-*.parquet"))


def test_shard_writer_publishes_each_slow_chunk_as_it_comes(tmp_path):
    with ShardWriter(tmp_path, every_s=0.05) as w:
        for k in range(3):
            w.put([_ep(f"q{k}")], [_step(f"q{k}")])
            deadline = time.monotonic() + 10
            while len(_shards(tmp_path)) < k + 1 and time.monotonic() < deadline:
                time.sleep(0.01)  # published without waiting for the next chunk or close
            assert len(_shards(tmp_path)) == k + 1
    assert [p.name for p in _shards(tmp_path)] == [p.name for p in _shards(tmp_path, "steps")]
    assert sorted(read_episodes(tmp_path)["query_id"]) == ["q0", "q1", "q2"]


def test_shard_writer_writes_fast_chunks_together(tmp_path):
    with ShardWriter(tmp_path, every_s=30.0) as w:  # nothing written before close
        for k in range(5):
            w.put([_ep(f"q{k}a"), _ep(f"q{k}b")], [_step(f"q{k}a")])
            w.put([], [])  # an empty chunk: nothing
        assert _shards(tmp_path) == []
    assert len(_shards(tmp_path)) == 1
    df = read_episodes(tmp_path)
    assert df.height == 10 and read_steps(tmp_path).height == 5


def test_shard_writer_error_fails_the_next_put_and_close(tmp_path):
    blocker = tmp_path / "run"
    blocker.write_text("a file where the run directory must be")
    w = ShardWriter(blocker, every_s=0.0)
    w.put([_ep("q1")], [_step("q1")])
    deadline = time.monotonic() + 10
    while w._error is None and time.monotonic() < deadline:
        time.sleep(0.01)
    with pytest.raises(OSError):
        w.put([_ep("q2")], [_step("q2")])
    with pytest.raises(OSError):
        w.close()


def test_shard_writer_leaving_on_an_error_still_publishes_and_notes_a_write_error(tmp_path):
    with pytest.raises(KeyError, match="boom"), ShardWriter(tmp_path, every_s=30.0) as w:
        w.put([_ep("q1")], [_step("q1")])
        raise KeyError("boom")  # the chunk handed over before is still published
    assert read_episodes(tmp_path)["query_id"].to_list() == ["q1"]
    blocker = tmp_path / "f"
    blocker.write_text("")
    with pytest.raises(KeyError) as e, ShardWriter(blocker, every_s=30.0) as w:
        w.put([_ep("q1")], [_step("q1")])
        raise KeyError("boom")
    assert any("writing a shard also failed" in n for n in e.value.__notes__)
