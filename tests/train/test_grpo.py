"""``urbex train``: a real GRPO step on a tiny project and the tiny offline Qwen3-VL."""

from __future__ import annotations

import json

import pytest

from tests.fixtures.small_project import write_small_project
from urbex.cli import main
from urbex.config import load_params
from urbex.errors import ConfigError, PolicyError

#: Tiny tool images (the episode's token budget counts image-pad tokens) and a 3-turn budget.
SMALL_ENV = {
    "global_view_size": [64, 64],
    "zoom_size": [64, 64],
    "oblique_size": [64, 64],
    "max_turns": 3,
}
SMALL_TRAIN = {
    "limit": 2,
    "num_generations": 2,
    "per_device_train_batch_size": 4,
    "max_completion_length": 512,
    "learning_rate": 1e-2,
    "device": "cpu",
}


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A built 2-scene project (synth → cache → landmarks → splits) via the CLI."""
    root = tmp_path_factory.mktemp("project")
    params = write_small_project(root, env=SMALL_ENV, train=SMALL_TRAIN)
    for cmd in ("synth", "cache", "landmarks", "splits"):
        assert main(["--params", str(params), "-q", cmd]) == 0, cmd
    return params


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    pytest.importorskip("trl")
    from urbex.train.tiny import make_tiny_model

    return make_tiny_model(tmp_path_factory.mktemp("tiny") / "tiny", seed=0)


def _scripting_loader(monkeypatch, loaded):
    """Load the real model, then script its ``generate`` (zoom, then a good or bad answer) so the
    rewards of a group differ and the update is non-zero; the product never does this."""
    from tests.fixtures.scripted import scripted_generate
    from urbex.train import grpo

    real = grpo.load_local_vlm

    def load(path, **kw):
        model, processor = real(path, **kw)
        loaded["before"] = {n: p.detach().clone() for n, p in model.named_parameters()}
        loaded["model"] = model
        scripted_generate(model, processor.tokenizer)
        return model, processor

    monkeypatch.setattr(grpo, "load_local_vlm", load)


def test_train_one_step_publishes_a_reloadable_trained_checkpoint(project, tiny, monkeypatch):
    torch = pytest.importorskip("torch")
    import polars as pl
    from transformers import AutoModelForImageTextToText

    from urbex.train.grpo import train

    loaded: dict = {}
    _scripting_loader(monkeypatch, loaded)
    params = load_params(project)
    r = train(params, checkpoint=tiny, run_name="tiny-run", max_steps=1, progress=False)

    assert r.steps == 1 and r.n_queries == 2
    assert r.checkpoint_dir == params.assets / "checkpoints" / "tiny-run"
    assert not (r.checkpoint_dir.parent / ".staging-tiny-run").exists()
    assert r.tool_calls["episodes"] == 4 and r.tool_calls["zoom_in"] == 4
    log = pl.read_parquet(r.log_path)
    assert log.height >= 1 and "reward" in log.columns
    summary = json.loads(r.summary_path.read_text())
    assert summary["steps"] == 1 and summary["reward_mean"][0]["step"] == 1
    assert summary["params"]["train"]["num_generations"] == 2
    # training_log: one row per step, from what the environment saw, and in the warehouse
    from urbex.report.warehouse import connect, refresh_warehouse
    from urbex.train.logs import COMPONENTS, TIMING_COLUMNS, TRAINING_LOG_SCHEMA, read_training_log

    versioned = pl.read_parquet(params.layout.training_log("tiny-run"))  # no measured seconds
    assert list(versioned.columns) == [c for c in TRAINING_LOG_SCHEMA if c not in TIMING_COLUMNS]
    tl = read_training_log(params.layout.checkpoint("tiny-run"))  # timings/ joined back
    assert dict(tl.schema) == TRAINING_LOG_SCHEMA and tl.height == 1
    assert tl["s_per_step"][0] is not None
    row = tl.row(0, named=True)
    assert row["run"] == "tiny-run" and row["step"] == 1 and row["episodes"] == 4
    assert row["calls_zoom_in"] == 1.0 and row["turns_mean"] == 2.0
    assert row["valid_answer_rate"] == 1.0 and row["invalid_rate"] == 0.0
    # the components sum to the return; the scripted good/bad answers differ in IoU
    comp = sum(row[f"reward_{c}_mean"] for c in COMPONENTS)
    assert comp == pytest.approx(row["reward_mean"], abs=1e-9)
    assert row["reward_std"] > 0 and row["reward_terminal_iou_std"] > 0
    assert 0 < row["env_share"] < 1 and row["s_per_step"] > 0
    assert params.layout.train_curves("tiny-run").stat().st_size > 10_000
    # trl's scalars as TensorBoard events in the checkpoint's runs/ (train.report_to)
    from tests.fixtures.tensorboard import scalars

    (events,) = (r.checkpoint_dir / "runs").iterdir()
    tags = set(scalars(events))
    assert {"train/loss", "train/reward", "train/learning_rate"} <= tags, sorted(tags)
    refresh_warehouse(params.assets)
    with connect(params.assets) as con:
        assert con.execute("SELECT count(*), max(step) FROM training_log").fetchone() == (1, 1)

    reloaded = AutoModelForImageTextToText.from_pretrained(r.checkpoint_dir, local_files_only=True)
    before = loaded["before"]
    trained = dict(reloaded.named_parameters())
    assert trained.keys() == before.keys()
    changed = {n for n, p in trained.items() if not torch.equal(p.detach(), before[n])}
    # every language-model parameter gets gradient (the vision tower too, through the image)
    lm = {n for n in before if "language_model" in n or "lm_head" in n}
    assert lm <= changed, sorted(lm - changed)[:5]
    assert any("visual" in n for n in changed)


def test_train_one_step_on_a_grafted_checkpoint(project, tmp_path, monkeypatch):
    """GRPO (trl) on the pretrained student's family: a Qwen2-VL checkpoint from
    ``make_grafted_model``, images through its fresh vision tower, a non-zero update."""
    torch = pytest.importorskip("torch")

    from tests.fixtures.llama import tiny_llama
    from urbex.train.graft import make_grafted_model
    from urbex.train.grpo import train

    tiny_llama(tmp_path / "llama")
    base = make_grafted_model(tmp_path / "graft", tmp_path / "llama")
    loaded: dict = {}
    _scripting_loader(monkeypatch, loaded)
    r = train(load_params(project), checkpoint=base, run_name="graft-run", max_steps=1,
              progress=False)  # fmt: skip
    assert r.steps == 1 and r.tool_calls["episodes"] == 4
    from transformers import AutoModelForImageTextToText

    reloaded = AutoModelForImageTextToText.from_pretrained(r.checkpoint_dir, local_files_only=True)
    assert reloaded.config.model_type == "qwen2_vl"
    before = loaded["before"]
    changed = {n for n, p in reloaded.named_parameters() if not torch.equal(p.detach(), before[n])}
    assert {n for n in before if "language_model" in n} <= changed
    assert any("visual" in n for n in changed)  # the fresh vision tower learns through the image


def test_train_cli_without_checkpoint_names_the_field(project, capsys):
    assert main(["--params", str(project), "-q", "train"]) == 2
    err = capsys.readouterr().err
    assert "train.checkpoint" in err and "--checkpoint" in err


def test_train_missing_checkpoint_dir_is_a_policy_error(project, tmp_path):
    from urbex.train.grpo import train

    with pytest.raises(PolicyError, match=r"config\.json missing"):
        train(load_params(project), checkpoint=tmp_path / "nowhere", max_steps=1)
    assert not (load_params(project).assets / "checkpoints" / ".staging-grpo").exists()


def test_train_missing_landmarks_names_the_command(tmp_path, tiny):
    from urbex.errors import LandmarkError
    from urbex.train.grpo import train

    params = write_small_project(tmp_path, env=SMALL_ENV, train=SMALL_TRAIN)
    for cmd in ("synth", "cache", "landmarks", "splits"):
        assert main(["--params", str(params), "-q", cmd]) == 0
    for f in (tmp_path / "assets" / "landmarks").glob("*.parquet"):
        f.unlink()
    with pytest.raises(LandmarkError, match="urbex landmarks"):
        train(load_params(params), checkpoint=tiny, max_steps=1)


def test_train_bad_run_name_is_a_config_error(project, tiny):
    from urbex.train.grpo import train

    with pytest.raises(ConfigError, match="run_name"):
        train(load_params(project), checkpoint=tiny, run_name="../escape")


def test_train_indivisible_generation_batch_is_a_config_error_before_staging(project, tiny):
    from urbex.train.grpo import train

    params = load_params(project).with_updates(train={"per_device_train_batch_size": 3})
    with pytest.raises(ConfigError, match=r"train\.num_generations"):
        train(params, checkpoint=tiny, run_name="odd-batch", max_steps=1, progress=False)
    assert not (params.assets / "checkpoints" / ".staging-odd-batch").exists()


def test_train_completion_too_short_for_one_image_is_a_config_error(project, tiny):
    from urbex.train.grpo import train

    p = load_params(project).with_updates(
        env={"zoom_size": [512, 512]}, train={"max_completion_length": 200}
    )
    with pytest.raises(ConfigError, match=r"train\.max_completion_length.*at least 288"):
        train(p, checkpoint=tiny, max_steps=1)


def test_prepare_staging_resumes_from_the_last_complete_trainer_checkpoint(tmp_path):
    """A kill between the trainer's files and the training log's rows leaves a checkpoint that
    would resume with steps missing from the log: it is removed, the complete one before it is
    resumed; with none complete the run starts over."""
    import json

    from urbex.train.grpo import _prepare_staging
    from urbex.train.logs import RESUME_LOG_FILE

    staging, fp = tmp_path / ".staging-g", {"a": 1}
    assert _prepare_staging(staging, fp) is False  # fresh
    for step, files in ((2, ("trainer_state.json", RESUME_LOG_FILE)), (4, ("trainer_state.json",))):
        ck = staging / "trainer" / f"checkpoint-{step}"
        ck.mkdir(parents=True)
        for f in files:
            (ck / f).write_text(json.dumps({}))
    assert _prepare_staging(staging, fp) is True
    assert sorted(p.name for p in (staging / "trainer").iterdir()) == ["checkpoint-2"]
    (staging / "trainer" / "checkpoint-2" / RESUME_LOG_FILE).unlink()
    assert _prepare_staging(staging, fp) is False  # nothing complete: start over
    assert not (staging / "trainer").exists()


def test_train_killed_after_its_last_step_reruns_to_the_same_steps(project, tiny, monkeypatch):
    """A run cut off between its last step and publishing leaves no ``checkpoint-<max_steps>``
    (resumed from one, transformers 5.25 trains a step more): the rerun starts over from the
    last earlier save and publishes exactly ``max_steps`` steps, with a log row for each."""
    import polars as pl

    from urbex.train import grpo

    params = load_params(project).with_updates(train={"save_steps": 1})
    staging = params.assets / "checkpoints" / ".staging-cut"

    def cut(*a, **k):
        raise KeyboardInterrupt("killed before publishing")

    monkeypatch.setattr(grpo, "publish_checkpoint", cut)
    with pytest.raises(KeyboardInterrupt):
        grpo.train(params, checkpoint=tiny, run_name="cut", max_steps=2, progress=False)
    saved = sorted(p.name for p in (staging / "trainer").glob("checkpoint-*"))
    assert saved == ["checkpoint-1"]
    monkeypatch.undo()
    r = grpo.train(params, checkpoint=tiny, run_name="cut", max_steps=2, progress=False)
    assert r.steps == 2
    log = pl.read_parquet(r.checkpoint_dir / "training_log.parquet")
    assert log["step"].to_list() == [1, 2]
    assert json.loads((r.checkpoint_dir / "train.json").read_text())["steps"] == 2
    assert not staging.exists()
