from pathlib import Path

import pytest

from urbex.config import load_params
from urbex.errors import ConfigError


def test_load_params_repo_file_is_valid(repo_root: Path):
    p = load_params(repo_root / "params.yaml")
    assert p.scene.resolution == 0.1
    assert p.assets == repo_root / "assets"


def test_load_params_defaults_when_absent(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    p = load_params()
    assert p.data.source == "synthetic"


def test_load_params_unknown_key_is_an_error(tmp_path):
    f = tmp_path / "params.yaml"
    f.write_text("scene:\n  resolutoin: 0.2\n")
    with pytest.raises(ConfigError, match=r"scene\.resolutoin"):
        load_params(f)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("scene:\n  resolution: -1\n", r"scene\.resolution"),
        ("data:\n  source: kitti\n", r"data\.source"),
        ("- a\n- b\n", "mapping"),
        ("scene: [1, 2\n", "YAML"),
    ],
)
def test_load_params_bad_values_name_the_field(tmp_path, text, match):
    f = tmp_path / "params.yaml"
    f.write_text(text)
    with pytest.raises(ConfigError, match=match) as exc:
        load_params(f)
    assert str(f) in str(exc.value)


def test_load_params_missing_explicit_file(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_params(tmp_path / "nope.yaml")


def test_params_with_updates_returns_a_new_object(repo_root):
    p = load_params(repo_root / "params.yaml")
    q = p.with_updates(scene={"resolution": 0.2})
    assert q.scene.resolution == 0.2 and p.scene.resolution == 0.1
    assert q.base_dir == p.base_dir
