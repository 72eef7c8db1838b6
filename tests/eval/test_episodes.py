"""Episode/step records and their shards."""

from __future__ import annotations

import math

import pytest

from urbex.errors import CacheError
from urbex.eval.episodes import (
    EpisodeRecord,
    StepRow,
    Written,
    compact_run,
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


def _chunks(d, keep: Written | None) -> None:
    write_chunk(d, [_ep("q3", latency_s=2.5), _ep("q1")], [_step("q3"), _step("q1")], keep=keep)
    write_chunk(d, [_ep("q2", seed=7)], [_step("q2")], keep=keep)


def test_compact_run_from_kept_tables_writes_what_reading_back_writes(tmp_path):
    """The writer's kept tables spare the read-back; the merged files and the episodes
    returned are those of reading the shards from disk."""
    import shutil

    kept: Written = {}
    _chunks(tmp_path / "a", kept)
    assert len(kept) == 2 and set(kept[next(iter(kept))]) == {"episodes", "steps"}
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    from_memory = compact_run(tmp_path / "a", kept)
    from_disk = compact_run(tmp_path / "b")
    assert from_memory.equals(from_disk) and from_memory.equals(read_episodes(tmp_path / "a"))
    assert from_memory["query_id"].to_list() == ["q1", "q2", "q3"]
    assert from_memory["latency_s"].to_list() == [1.0, 1.0, 2.5]  # timings joined back
    assert read_steps(tmp_path / "a").equals(read_steps(tmp_path / "b"))
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*.parquet"))
    assert files == sorted(
        p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*.parquet")
    )
    assert all(
        (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in files
    )


def test_compact_run_reads_the_disk_when_another_process_wrote_shards_too(tmp_path):
    kept: Written = {}
    _chunks(tmp_path, kept)
    write_chunk(tmp_path, [_ep("q9")], [_step("q9")])  # a worker process's shard: not kept
    assert compact_run(tmp_path, kept)["query_id"].to_list() == ["q1", "q2", "q3", "q9"]
    kept_again: Written = {}
    write_chunk(tmp_path, [_ep("q1", seed=99)], [], keep=kept_again)  # beside the merged shard
    again = compact_run(tmp_path, kept_again)  # not all shards kept: read, merged shard first
    assert again["query_id"].to_list() == ["q1", "q2", "q3", "q9"]
    assert again.filter(again["query_id"] == "q1")["seed"].to_list() == [0]


def test_read_episodes_duplicate_query_raises(tmp_path):
    write_chunk(tmp_path, [_ep("q1")], [])
    write_chunk(tmp_path, [_ep("q1")], [])
    with pytest.raises(CacheError, match="evaluated twice"):
        read_episodes(tmp_path)


@pytest.mark.parametrize("kind", ["steps", "episodes", "timings/steps"])
def test_an_empty_shard_of_a_compacted_run_is_a_cache_error_naming_it(tmp_path, kind):
    """A zero-length ``part-run.parquet`` (a full disk, a copy cut short): a resume or a reader
    names the file and what to delete, instead of pyarrow's unnamed ArrowInvalid."""
    _chunks(tmp_path, None)
    compact_run(tmp_path)
    bad = tmp_path / kind / "part-run.parquet"
    bad.write_bytes(b"")
    readers = {
        "steps": [finished_query_ids, read_steps],
        "episodes": [finished_query_ids, read_episodes],
        "timings/steps": [read_steps],
    }[kind]
    for read in readers:
        with pytest.raises(CacheError) as exc:
            read(tmp_path)
        msg = str(exc.value)
        assert msg.startswith(f"{bad}: unreadable ") and "delete it" in msg and "\n" not in msg
    if kind == "steps":
        assert str(tmp_path / "episodes" / "part-run.parquet") in msg


def test_evaluate_resuming_a_run_with_an_empty_steps_shard_exits_2_naming_it(tmp_path, capsys):
    from tests.fixtures.city import build_eval_project
    from urbex.cli import main

    assets = build_eval_project(tmp_path)
    params = tmp_path / "params.yaml"
    params.write_text(f"paths:\n  assets: {assets}\neval:\n  workers: 1\n")
    argv = ["--params", str(params), "-q", "evaluate", "--policy", "oracle", "--split", "test_no"]
    assert main([*argv, "--limit", "3", "--run-id", "r"]) == 0
    bad = assets / "eval" / "runs" / "r" / "steps" / "part-run.parquet"
    bad.write_bytes(b"")
    capsys.readouterr()
    for _ in range(2):  # the same line on a retry, nothing played meanwhile
        assert main([*argv, "--limit", "3", "--run-id", "r"]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"urbex evaluate: error: {bad}: unreadable steps shard")
        assert len(err.splitlines()) == 1 and "Traceback" not in err
