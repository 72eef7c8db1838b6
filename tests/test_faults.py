"""Faults a new user runs into (issue 25): each case failed on the main it was found on.

Grouped with the fault-injection (:mod:`tests.test_fault_injection`) and debris
(:mod:`tests.test_debris`) suites. The chat-template case lives beside the code it guards
(``tests/language/test_chat.py``, ``tests/agents/test_vlm.py``, ``tests/env/test_tools.py``).
"""

from __future__ import annotations

import json
import unicodedata

import pytest

from urbex.cli import main
from urbex.layout import safe_name

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
