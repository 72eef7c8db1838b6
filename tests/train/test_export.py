"""``urbex export``: teacher conversations and evaluated episodes as ``datasets`` datasets that
``load_from_disk`` reads back and trl's ``SFTTrainer`` trains on as they are."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures.city import build_eval_project
from urbex.config import Params
from urbex.errors import CacheError, ConfigError

datasets = pytest.importorskip("datasets")

ENV = {"global_view_size": [64, 64], "zoom_size": [64, 64], "oblique_size": [64, 64]}


@pytest.fixture(scope="module")
def assets(tmp_path_factory) -> Path:
    return build_eval_project(tmp_path_factory.mktemp("export"))


def _params(assets: Path) -> Params:
    return Params(paths={"assets": assets}, env=ENV, sft={"per_query": 1})


@pytest.fixture(scope="module")
def teacher(assets, tmp_path_factory) -> Path:
    from urbex.train.export import export_dataset

    out = tmp_path_factory.mktemp("ds") / "teacher"
    return export_dataset(_params(assets), out, split="train", limit=3)


def test_export_teacher_reads_back_with_its_declared_features(teacher):
    from PIL import Image

    from urbex.train.export import teacher_features

    ds = datasets.load_from_disk(str(teacher))
    assert ds.features == teacher_features() and len(ds) >= 1
    row = ds[0]
    assert [m["role"] for m in row["messages"][:3]] == ["system", "user", "assistant"]
    placeholders = sum(p["type"] == "image" for m in row["messages"] for p in m["content"])
    assert placeholders == len(row["images"]) >= 1
    assert all(isinstance(im, Image.Image) and im.size == (64, 64) for im in row["images"])
    assert row["messages"][-1]["content"][0]["text"].startswith("<answer>")
    tools = [m for m in row["messages"] if m["name"] is not None]
    assert tools and {m["name"] for m in tools} <= {"zoom_in", "oblique_render", "landmark_query"}
    for m in tools:  # a tool's response: the user turn Qwen's template renders it as
        assert m["role"] == "user" and m["content"][0]["text"] == "<tool_response>\n"
        assert m["content"][-1]["text"] == "\n</tool_response>"


def test_export_teacher_renders_as_the_trajectory_does(assets, teacher):
    """The exported conversation, rendered by the tiny model's chat template (trl's Qwen3-VL
    one), is the text the trajectory's own messages render to."""
    from transformers import AutoProcessor

    from tests.fixtures.teacher import teacher_of
    from urbex.train.tiny import make_tiny_model

    processor = AutoProcessor.from_pretrained(make_tiny_model(teacher.parent / "tpl"))
    ds = datasets.load_from_disk(str(teacher))
    trajs = teacher_of(_params(assets), split="train", limit=3)
    assert [t.query.query_id for t in trajs] == ds["query_id"]
    for t, row in zip(trajs, ds):
        messages = [{k: v for k, v in m.items() if v is not None} for m in row["messages"]]
        for m in messages:
            m["content"] = [{k: v for k, v in p.items() if v is not None} for p in m["content"]]
        exported = processor.apply_chat_template(messages, tokenize=False)
        assert exported == processor.apply_chat_template(list(t.messages), tokenize=False)


def test_export_teacher_trains_one_sft_trainer_step_as_it_is(teacher, tmp_path):
    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor
    from trl import SFTConfig, SFTTrainer

    from urbex.train.tiny import make_tiny_model

    tiny = make_tiny_model(tmp_path / "tiny", seed=0)
    model = AutoModelForImageTextToText.from_pretrained(tiny, local_files_only=True)
    processor = AutoProcessor.from_pretrained(tiny, local_files_only=True)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    config = SFTConfig(
        output_dir=str(tmp_path / "out"), max_steps=1, per_device_train_batch_size=1,
        learning_rate=1e-2, max_length=None, report_to="none", use_cpu=True, save_strategy="no",
        logging_steps=1, dataloader_num_workers=0,
    )  # fmt: skip
    ds = datasets.load_from_disk(str(teacher))
    trainer = SFTTrainer(model=model, args=config, train_dataset=ds, processing_class=processor)
    result = trainer.train()
    assert result.global_step == 1 and torch.isfinite(torch.tensor(result.training_loss))
    changed = [n for n, p in model.named_parameters() if not torch.equal(before[n], p)]
    assert changed, "no parameter changed after one step"


def test_export_episodes_holds_every_run_s_episodes_and_steps(assets, tmp_path):
    from urbex.eval.runner import evaluate
    from urbex.eval.runspec import RunSpec
    from urbex.train.export import episode_features, export_dataset

    p = _params(assets)
    with pytest.raises(CacheError, match=r"run `urbex evaluate --split test_no` first"):
        export_dataset(p, tmp_path / "none", split="test_no", what="episodes")
    r = evaluate(p, RunSpec.from_params(p, policy="oracle", split="test_no"), progress=False)
    out = export_dataset(p, tmp_path / "episodes", split="test_no", what="episodes")
    ds = datasets.load_from_disk(str(out))
    assert ds.features == episode_features() and len(ds) == r.n_played
    row = ds[0]
    assert [s["turn"] for s in row["steps"]] == list(range(1, len(row["steps"]) + 1))
    assert {s["query_id"] for s in row["steps"]} == {row["query_id"]}


def test_export_unknown_split_or_what_is_a_one_line_error(assets, tmp_path):
    from urbex.train.export import export_dataset

    with pytest.raises(ConfigError, match=r"unknown split 'dev'; splits: train, val, test_nd"):
        export_dataset(_params(assets), tmp_path / "x", split="dev")
    with pytest.raises(ConfigError, match=r"--what: teacher, episodes"):
        export_dataset(_params(assets), tmp_path / "x", split="train", what="pictures")
