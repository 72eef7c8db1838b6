"""Episode/step records and their shards."""

from __future__ import annotations

import math
import time
from pathlib import Path

import pytest

from urbex.errors import CacheError
from urbex.eval.episodes import (
    EpisodeRecord,
    ShardWriter,
    StepRow,
    finished_query_ids,
    read_episodes,
    read_steps,
    write_chunk,
)


def _ep(qid: str, **kw) -> EpisodeRecord:
    base = dict(
        run_id="r", policy="p", split="test_no", query_id=qid, scene_id="s", object_id="1",
        class_name="Car", seed=0, valid_answer=False, answer_view_id=None, answer_mark=None,
        snapped=False, pred_x_min=None,
        pred_y_min=None, pred_z_min=None, pred_x_max=None, pred_y_max=None, pred_z_max=None,
        iou_bev=0.0, iou_3d=0.0, point_precision=0.0, point_recall=0.0, point_f1=0.0,
        center_dist_m=math.nan, target_rank=0, target_rank_nz=0, target_rank_ciou=0, hit1=False,
        hit3=False, hit5=False, hit1_iou25=False, area_ratio=math.nan, n_candidates=3,
        n_pos_overlap=0, n_iou25=0, turns=8, n_landmark_query=0, n_zoom_in=0,
        n_oblique_render=0, n_invalid=8, latency_s=1.0, env_s=0.5, policy_s=0.5, reward=-0.9,
        terminated=False, truncated=True, timed_out=False, stop_reason="budget",
    )  # fmt: skip
    base.update(kw)
    return EpisodeRecord(**base)


def _step(qid: str) -> StepRow:
    return StepRow(
        run_id="r",
        query_id=qid,
        scene_id="s",
        turn=1,
        tool=None,
        arguments='{"raw": "x"}',
        valid=False,
        error="no action",
        view_id=None,
        reward=-0.1,
        latency_s=0.1,
        env_s=0.05,
        policy_s=0.05,
        model_text="x" * 5000,
    )


def test_episode_record_nan_and_rank_zero_become_null(tmp_path):
    e = _ep("q1")
    assert e.center_dist_m is None and e.target_rank is None and e.area_ratio is None
    write_chunk(tmp_path, [e], [_step("q1")])
    df = read_episodes(tmp_path)
    assert df["center_dist_m"].null_count() == 1 and df["target_rank"].null_count() == 1
    assert read_steps(tmp_path)["model_text"].str.len_chars()[0] == 4000


def test_episode_record_validates():
    with pytest.raises(ValueError, match="stop_reason"):
        _ep("q", stop_reason="crash")
    with pytest.raises(ValueError, match="pred_"):
        _ep("q", valid_answer=True)


def test_finished_query_ids_deletes_orphan_steps(tmp_path):
    write_chunk(tmp_path, [_ep("q1"), _ep("q2")], [_step("q1"), _step("q2")])
    name = write_chunk(tmp_path, [_ep("q3")], [_step("q3")])
    (tmp_path / "episodes" / name).unlink()  # killed between the two writes
    assert finished_query_ids(tmp_path) == {"q1", "q2"}
    assert len(list((tmp_path / "steps").glob("*.parquet"))) == 1


def test_read_episodes_duplicate_query_raises(tmp_path):
    write_chunk(tmp_path, [_ep("q1")], [])
    write_chunk(tmp_path, [_ep("q1")], [])
    with pytest.raises(CacheError, match="evaluated twice"):
        read_episodes(tmp_path)


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
    assert len(_shards(tmp_path)) == 1 and set(w.tables) == {_shards(tmp_path)[0].name}
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
