import time
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


# ---------------------------------------------------------------- hostile files (issue 36)


def _alias_bomb(levels: int = 9, width: int = 9) -> str:
    """A 4.8 KB file whose aliases expand to ``width ** levels`` values."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]")
    return "\n".join(lines) + f"\nenv:\n  tools: *a{levels}\n"


def test_read_params_files_alias_bomb_is_an_error_within_a_second(tmp_path: Path):
    path = tmp_path / "bomb.yaml"
    path.write_text(_alias_bomb())
    t0 = time.perf_counter()
    with pytest.raises(ConfigError, match=r"bomb\.yaml: .*line \d+.*more than 100,000 values"):
        read_params_files([path], Params)
    assert time.perf_counter() - t0 < 1.0


def test_read_params_files_recursive_alias_is_an_error(tmp_path: Path):
    path = tmp_path / "loop.yaml"
    path.write_text("env: &e\n  tools: [*e]\n")
    with pytest.raises(ConfigError, match="refers to a value that holds it"):
        read_params_files([path], Params)


@pytest.mark.parametrize(
    "text",
    ["env: " + "[" * 10_000 + "]" * 10_000, "env: " + "{a: " * 10_000 + "1" + "}" * 10_000],
    ids=["lists", "mappings"],
)
def test_read_params_files_10000_deep_nesting_is_an_error_not_a_recursion_error(
    tmp_path: Path, text: str
):
    path = tmp_path / "deep.yaml"
    path.write_text(text + "\n")
    with pytest.raises(ConfigError, match=r"deep\.yaml: not valid YAML at line 1.*deeper than 32"):
        read_params_files([path], Params)


def test_read_params_files_aliases_and_merge_keys_still_load(tmp_path: Path):
    path = tmp_path / "ok.yaml"
    path.write_text(
        "scene: &s\n  resolution: 0.2\n  cell_size: 8.0\n"
        "env:\n  zoom_size: &z [64, 64]\n  oblique_size: *z\n"
        "landmarks:\n  <<: {threshold: 0.8, limit: 3}\n  limit: 4\n"
    )
    got = read_params_files([path], Params).data
    assert got["env"] == {"zoom_size": [64, 64], "oblique_size": [64, 64]}
    assert got["landmarks"] == {"threshold": 0.8, "limit": 4}  # the key beside << wins


@pytest.mark.parametrize(
    ("text", "key", "lines"),
    [
        (
            "env:\n  max_turns: 4\nscene:\n  resolution: 0.2\nenv:\n  zoom_size: [64, 64]\n",
            "env",
            (1, 5),
        ),
        ("env:\n  max_turns: 4\n  tools: []\n  max_turns: 6\n", "max_turns", (2, 4)),
    ],
    ids=["section", "field"],
)
def test_read_params_files_duplicate_key_names_the_key_and_both_lines(
    tmp_path: Path, text: str, key: str, lines: tuple[int, int]
):
    path = tmp_path / "dup.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as exc:
        read_params_files([path], Params)
    msg = str(exc.value)
    assert str(path) in msg and f"duplicate key {key!r} (lines {lines[0]} and {lines[1]})" in msg
    assert len(msg.splitlines()) == 1
