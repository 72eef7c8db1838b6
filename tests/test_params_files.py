from pathlib import Path

import pytest

from urbex.config import EnvParams, Params, PolicyParams
from urbex.errors import ConfigError
from urbex.params_files import deep_merge, nearest, read_params_files, section_model


def test_deep_merge_overlay_wins_lists_and_scalars_replace():
    base = {"a": {"x": 1, "y": [1, 2], "z": {"k": 1}}, "b": None}
    got = deep_merge(base, {"a": {"y": [3], "z": {"j": 2}}, "b": {"c": 1}})
    assert got == {"a": {"x": 1, "y": [3], "z": {"k": 1, "j": 2}}, "b": {"c": 1}}
    assert base == {"a": {"x": 1, "y": [1, 2], "z": {"k": 1}}, "b": None}  # not mutated


def test_nearest_is_none_when_nothing_is_close():
    assert nearest("resolutoin", ["resolution", "cell_size"]) == "resolution"
    assert nearest("qqqq", ["resolution"]) is None


def test_section_model_unwraps_optional_and_skips_free_form_maps():
    assert section_model(Params, "env") is EnvParams
    assert section_model(Params, "policy") is PolicyParams
    assert section_model(PolicyParams, "class_sizes") is None
    assert section_model(Params, "nope") is None


def test_read_params_files_records_origins_and_files(tmp_path: Path):
    (tmp_path / "a.yaml").write_text("scene:\n  resolution: 0.2\n  cell_size: 8.0\n")
    (tmp_path / "b.yaml").write_text("base: a.yaml\nscene:\n  cell_size: 4.0\n")
    (tmp_path / "c.yaml").write_text("scene:\n  resolution: 0.3\n")
    got = read_params_files([tmp_path / "b.yaml", tmp_path / "c.yaml"], Params)
    assert got.data == {"scene": {"resolution": 0.3, "cell_size": 4.0}}
    assert got.files == (tmp_path / "a.yaml", tmp_path / "b.yaml", tmp_path / "c.yaml")
    assert got.origin(["scene", "cell_size"]) == tmp_path / "b.yaml"
    assert got.origin(["scene", "resolution"]) == tmp_path / "c.yaml"
    assert got.origin(["env", "max_turns"]) is None


def test_read_params_files_empty_file_is_an_empty_mapping(tmp_path: Path):
    (tmp_path / "e.yaml").write_text("")
    assert read_params_files([tmp_path / "e.yaml"], Params).data == {}
    with pytest.raises(ValueError, match="at least one"):
        read_params_files([], Params)
    with pytest.raises(ConfigError, match="file not found"):
        read_params_files([tmp_path / "nope.yaml"], Params)
