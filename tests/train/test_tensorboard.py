"""TensorBoard scalars: event files with the trainer's tags, a resumed run without repeats, the
move into the checkpoint's runs/ folder."""

from __future__ import annotations

import pytest

pytest.importorskip("tensorboard")

from tests.fixtures.tensorboard import scalars


def test_scalar_log_writes_the_trainer_s_tags(tmp_path):
    from urbex.train.tensorboard import ScalarLog

    log = ScalarLog("tensorboard", tmp_path / "runs" / "sft")
    for step in (1, 2, 3):
        log.add(step, loss=1.0 / step, learning_rate=1e-3)
    log.close()
    got = scalars(tmp_path / "runs" / "sft")
    assert sorted(got) == ["train/learning_rate", "train/loss"]
    assert [s for s, _ in got["train/loss"]] == [1, 2, 3]
    assert got["train/loss"][-1][1] == pytest.approx(1 / 3)


def test_scalar_log_resumed_drops_the_steps_after_its_start(tmp_path):
    from urbex.train.tensorboard import ScalarLog

    folder = tmp_path / "sft"
    first = ScalarLog("tensorboard", folder)
    for step in (1, 2, 3):  # saved at step 2, killed after step 3
        first.add(step, loss=float(step))
    first.close()
    again = ScalarLog("tensorboard", folder, start_step=2)
    for step in (3, 4):
        again.add(step, loss=10.0 * step)
    again.close()
    assert scalars(folder)["train/loss"] == [(1, 1.0), (2, 2.0), (3, 30.0), (4, 40.0)]


def test_scalar_log_resumed_is_right_whatever_order_the_earlier_files_sort_in(tmp_path):
    # Two writers started in the same second name their files by a counter compared as text
    # (….10 sorts before ….9): the resumed log must not depend on the names' order.
    from urbex.train.tensorboard import ScalarLog

    folder = tmp_path / "sft"
    first = ScalarLog("tensorboard", folder)
    for step in (1, 2, 3):
        first.add(step, loss=float(step))
    first.close()
    (written,) = folder.iterdir()
    written.rename(folder / "events.out.tfevents.9999999999.host.1.9")  # sorts after any new file
    again = ScalarLog("tensorboard", folder, start_step=2)
    for step in (3, 4):
        again.add(step, loss=10.0 * step)
    again.close()
    assert len(list(folder.iterdir())) == 1
    assert scalars(folder)["train/loss"] == [(1, 1.0), (2, 2.0), (3, 30.0), (4, 40.0)]
    third = ScalarLog("tensorboard", folder, start_step=3)
    third.add(4, loss=400.0)
    third.close()
    assert scalars(folder)["train/loss"] == [(1, 1.0), (2, 2.0), (3, 30.0), (4, 400.0)]


def test_scalar_log_none_writes_nothing_and_bad_value_raises(tmp_path):
    from urbex.train.tensorboard import ScalarLog

    log = ScalarLog("none", tmp_path / "runs")
    log.add(1, loss=1.0)
    log.close()
    assert not (tmp_path / "runs").exists()
    with pytest.raises(ValueError, match="report_to: expected 'tensorboard' or 'none', got 'x'"):
        ScalarLog("x", tmp_path)


def test_move_runs_merges_into_the_checkpoint(tmp_path):
    from urbex.train.tensorboard import move_runs

    (tmp_path / "staging" / "runs" / "a").mkdir(parents=True)
    (tmp_path / "staging" / "runs" / "a" / "events").write_text("new")
    (tmp_path / "ckpt" / "runs" / "a").mkdir(parents=True)
    (tmp_path / "ckpt" / "runs" / "b").mkdir(parents=True)
    assert move_runs(tmp_path / "staging", tmp_path / "ckpt") == tmp_path / "ckpt" / "runs"
    assert (tmp_path / "ckpt" / "runs" / "a" / "events").read_text() == "new"
    assert (tmp_path / "ckpt" / "runs" / "b").is_dir()
    assert not (tmp_path / "staging" / "runs").exists()
    assert move_runs(tmp_path / "staging", tmp_path / "ckpt") is None
