import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from urbex.annotations.splits import SPLITS
from urbex.config import SPLIT_NAMES, Params, load_params
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


# ---------------------------------------------------------------- strict numbers and switches

#: A valid value of each numeric field whose default is None (the walk below needs one).
_NONE_DEFAULT_EXAMPLES: dict[str, Any] = {
    "eval.limit": 3,
    "train.limit": 3,
    "sft.limit": 3,
    "sft.max_length": 4096,
    "stpls3d_refer.offset": (0.0, 0.0, 0.0),
    "policy.class_sizes": {"Car": (4.0, 2.0)},
    "reader.spread_from": 2,
    "reader.max_steps": 5000,
}


def _numeric_fields() -> list[tuple[str, Any]]:
    """``(section.field, a valid value)`` for every field of Params holding an int or a float."""
    out = []
    for section, f in Params.model_fields.items():
        model = f.annotation
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            continue
        for name, ff in model.model_fields.items():
            if re.search(r"\b(int|float)\b", str(ff.annotation)) is None:
                continue
            key = f"{section}.{name}"
            value = ff.default if ff.default is not None else _NONE_DEFAULT_EXAMPLES[key]
            out.append((key, value))
    return out


def _with_a_bool(value: Any) -> Any:
    """``value`` with its (first) number replaced by ``True``."""
    if isinstance(value, dict):
        return {k: _with_a_bool(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [True, *value[1:]]
    return True


def _set(key: str, value: Any) -> dict[str, dict[str, Any]]:
    section, name = key.split(".")
    return {section: {name: value}}


def test_params_numeric_fields_are_found():
    keys = {k for k, _ in _numeric_fields()}
    assert {"env.max_turns", "scene.resolution", "eval.limit", "env.zoom_size"} <= keys
    assert "synth.las_copy" not in keys and len(keys) > 60


@pytest.mark.parametrize(("key", "value"), _numeric_fields(), ids=lambda v: str(v))
def test_params_bool_in_a_numeric_field_is_an_error(key, value):
    Params(**_set(key, value))  # the example itself is valid
    with pytest.raises(ValidationError, match=re.escape(key)) as exc:
        Params(**_set(key, _with_a_bool(value)))
    assert "valid integer" in str(exc.value) or "valid number" in str(exc.value)


def test_load_params_max_turns_true_is_an_error_naming_the_field(tmp_path):
    """YAML ``true`` for the turn budget was read as 1 (oracle Hit@1 1.0 → 0.0, exit 0)."""
    f = tmp_path / "params.yaml"
    f.write_text("env:\n  max_turns: true\n")
    with pytest.raises(ConfigError, match=r"env\.max_turns: Input should be a valid integer"):
        load_params(f)


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("env:\n  max_turns: '8'\n", "env.max_turns"),
        ("env:\n  max_turns: 8.0\n", "env.max_turns"),
        ("scene:\n  resolution: '0.1'\n", "scene.resolution"),
        ("synth:\n  las_copy: 1\n", "synth.las_copy"),
        ("eval:\n  point_metrics: 'yes'\n", "eval.point_metrics"),
        ("env:\n  zoom_size: [512.0, 512]\n", "env.zoom_size"),
    ],
)
def test_load_params_numbers_and_switches_are_not_coerced(tmp_path, text, field):
    f = tmp_path / "params.yaml"
    f.write_text(text)
    with pytest.raises(ConfigError, match=re.escape(field)):
        load_params(f)


@pytest.mark.parametrize(
    ("text", "field", "want"),
    [
        ("scene:\n  resolution: 1\n", "scene.resolution", 1.0),
        ("synth:\n  density: 20\n", "synth.density", 20.0),
        ("eval:\n  episode_timeout_s: 600\n", "eval.episode_timeout_s", 600.0),
        ("diagnose:\n  distance_bins_m: [50, 100]\n", "diagnose.distance_bins_m", [50.0, 100.0]),
        ("stpls3d_refer:\n  vehicle_length_m: [2, 14]\n", "stpls3d_refer.vehicle_length_m",
         (2.0, 14.0)),
    ],
)  # fmt: skip
def test_load_params_yaml_int_is_accepted_where_a_float_is_expected(tmp_path, text, field, want):
    f = tmp_path / "params.yaml"
    f.write_text(text)
    section, name = field.split(".")
    got = getattr(getattr(load_params(f), section), name)
    assert got == want
    assert all(isinstance(x, float) for x in (got if isinstance(got, list | tuple) else [got]))


@pytest.mark.parametrize("key", ["eval.split", "train.split"])
def test_params_split_must_be_a_split_name(key):
    with pytest.raises(ValidationError, match=re.escape(key)):
        Params(**_set(key, "tset_no"))
    # the --split choices: the splits the splits stage writes + a zero-shot benchmark's one
    from urbex.benchmarks import ZERO_SHOT_SPLIT

    assert SPLIT_NAMES == (*SPLITS, ZERO_SHOT_SPLIT)


def test_params_with_updates_keeps_strictness():
    with pytest.raises(ConfigError, match=r"env\.max_turns"):
        Params().with_updates(env={"max_turns": True})


# --- params files: overlays (base:), stacks, unknown keys (urbex.params_files) ---------------


def _leaves(d: Any, key: str = "") -> dict[str, Any]:
    if not isinstance(d, dict):
        return {key: d}
    out: dict[str, Any] = {}
    for k, v in d.items():
        out.update(_leaves(v, f"{key}.{k}" if key else k))
    return out


#: What the marks recipe (issue 22) changed in the CPU recipe since the full copy was replaced.
MARKS_RECIPE = {
    "env.marks.enabled": True,
    "env.marks.describe": "attributes",
    "env.marks.max_listed": 8,
    # the description right before the answer (in the texts that list marks), ids the episode
    # numbers, relation words
    "env.marks.remind": "listings",
    "env.marks.numbering": "episode",
    "env.marks.relate": True,
    "sft.anchor_rate": 1.0,
    # the reader recipe: listings with the id last, reading drills before SFT
    "env.marks.layout": "id_last",
    "reader.checkpoint": "assets/checkpoints/tiny",
    "sft.checkpoint": "assets/checkpoints/reader",
    "reader.steps": 2500,
    "reader.mix.mark_lookup": 0.6,
    "reader.mix.whole_turn": 0.1,
    # look-up listings of 2..8 marks mixed from the start (docs/reader.md)
    "reader.levels": [8, 16, 32],
    "reader.spread_from": 2,
    # the gate moves on at 0.5, so the long listings are trained (docs/reader.md)
    "reader.advance_at": 0.5,
    # half the renamed names in the name-copy drills generated, not train names (docs/reader.md)
    "reader.fresh_names": 0.5,
    # SFT keeps the reading: drills beside the conversations, landmarks renamed (docs/reader.md)
    "sft.drills": 8,
    "sft.rename_rate": 0.5,
    # the recipe's name, recorded with each checkpoint (the demo's rows are marked smoke)
    "recipe.name": "cpu",
}


def test_params_cpu_overlay_equals_the_full_file_it_replaced(repo_root):
    """params-cpu.yaml (an overlay of params.yaml) merges to the full copy it replaced, leaf for
    leaf, but for the marks recipe's keys (:data:`MARKS_RECIPE`, which the copy predates); the
    copy had lost eval.benchmark, whose default equals params.yaml's value."""
    before = load_params(repo_root / "tests/data/params-cpu-full-before-overlay.yaml")
    overlay = load_params(repo_root / "params-cpu.yaml")
    now = _leaves(overlay.model_dump(mode="json"))
    assert {k: now[k] for k in MARKS_RECIPE} == MARKS_RECIPE
    expected = _leaves(before.model_dump(mode="json")) | MARKS_RECIPE
    assert now == expected
    assert overlay.base_dir == repo_root
    stacked = load_params([repo_root / "params.yaml", repo_root / "params-cpu.yaml"])
    assert stacked.model_dump() == overlay.model_dump()
    # the overlay states only what it changes (plus the two run names training/dvc.yaml reads)
    base = _leaves(load_params(repo_root / "params.yaml").model_dump(mode="json"))
    changed = {k for k, v in _leaves(overlay.model_dump(mode="json")).items() if base[k] != v}
    import yaml

    raw = yaml.safe_load((repo_root / "params-cpu.yaml").read_text())
    assert raw.pop("base") == "params.yaml"
    # (and the whole reader.mix: the overlay names every family's share)
    named = {"train.run_name", "sft.run_name", "reader.run_name", "reader.mix.name_copy"}
    assert set(_leaves(raw)) == changed | named | {"reader.mix.box_copy"}
    assert (
        len(changed) == 21 + 3 + 9 + 1 + 2 + 3
    )  # + the marks recipe's env.marks keys (anchor_rate was already set), the reader's nine, recipe.name, SFT's drills and renaming, remind / numbering / relate
    lines = (repo_root / "params-cpu.yaml").read_text().splitlines()
    assert (
        len([ln for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]) <= 49
    )  # 40 + the four reader keys (look-up curriculum, fresh names) + SFT's drills and renaming
    # + the three marks keys


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_load_params_overlay_deep_merges_and_lists_replace(tmp_path):
    _write(tmp_path / "base.yaml", "env:\n  tools: [zoom_in, oblique_render]\n  max_turns: 5\n"
           "scene:\n  resolution: 0.2\n")  # fmt: skip
    mid = _write(tmp_path / "mid.yaml", "base: base.yaml\nenv:\n  max_turns: 6\n")
    top = _write(tmp_path / "sub" / "top.yaml", "base: ../mid.yaml\nenv:\n  tools: [zoom_in]\n")
    p = load_params(top)
    assert p.env.tools == ["zoom_in"] and p.env.max_turns == 6 and p.scene.resolution == 0.2
    assert p.base_dir == (tmp_path / "sub").resolve()  # relative paths: the file named
    assert load_params(mid).env.tools == ["zoom_in", "oblique_render"]


def test_load_params_overlay_key_the_base_lacks_names_key_and_spelling(tmp_path):
    _write(tmp_path / "base.yaml", "train:\n  max_steps: 3\n  beta: 0.0\n")
    over = _write(tmp_path / "over.yaml", "base: base.yaml\ntrain:\n  max_step: 5\n")
    with pytest.raises(ConfigError, match=r"over\.yaml.*'train\.max_step'.*'train\.max_steps'"):
        load_params(over)
    # a valid field the base does not hold is still refused in an overlay
    _write(over, "base: base.yaml\ntrain:\n  seed: 5\n")
    with pytest.raises(ConfigError, match=r"overlay key 'train\.seed' is not in its base"):
        load_params(over)
    # free-form mappings take new keys
    _write(tmp_path / "base.yaml", "policy:\n  class_sizes: {Car: [4.0, 2.0]}\ntrain:\n  trl: {}\n")
    _write(over, "base: base.yaml\npolicy:\n  class_sizes: {Building: [9.0, 9.0]}\n"
           "train:\n  trl: {max_grad_norm: 0.5}\n")  # fmt: skip
    p = load_params(over)
    assert p.policy.class_sizes == {"Car": (4.0, 2.0), "Building": (9.0, 9.0)}
    assert p.train.trl == {"max_grad_norm": 0.5}


def test_load_params_stacked_file_overlays_the_ones_before(tmp_path):
    a = _write(tmp_path / "a.yaml", "train:\n  max_steps: 3\n  beta: 0.0\n")
    b = _write(tmp_path / "b.yaml", "base: missing-and-ignored.yaml\ntrain:\n  beta: 0.5\n")
    p = load_params([a, b])
    assert (p.train.max_steps, p.train.beta) == (3, 0.5)
    with pytest.raises(ConfigError, match=r"b\.yaml.*'train\.max_steps' is not in its base"):
        _write(b, "train:\n  max_steps: 9\n")
        load_params([_write(a, "train:\n  beta: 0.0\n"), b])


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("base: nope.yaml\n", r"over\.yaml: field 'base': base: 'nope\.yaml' not found"),
        ("base: [a]\n", r"over\.yaml: field 'base': base: expected the path"),
        (
            "base: over.yaml\n",
            r"over\.yaml: base: cycle of params files: .*over\.yaml → .*over\.yaml",
        ),
    ],
)
def test_load_params_bad_base_names_the_file(tmp_path, text, match):
    over = _write(tmp_path / "over.yaml", text)
    with pytest.raises(ConfigError, match=match):
        load_params(over)


def test_load_params_base_cycle_through_two_files(tmp_path):
    _write(tmp_path / "a.yaml", "base: b.yaml\n")
    _write(tmp_path / "b.yaml", "base: a.yaml\n")
    with pytest.raises(
        ConfigError, match=r"cycle of params files: .*a\.yaml → .*b\.yaml → .*a\.yaml"
    ):
        load_params(tmp_path / "a.yaml")


@pytest.mark.parametrize(
    ("text", "key", "hint"),
    [
        ("scene:\n  resolutoin: 0.2\n", "scene.resolutoin", "scene.resolution"),
        ("trian:\n  max_steps: 2\n", "trian", "train"),
        ("env:\n  max_turns: 2\n  lamda_iou: 1\n", "env.lamda_iou", "env.lambda_iou"),
        ("base_dir: /tmp\n", "base_dir", None),
    ],
)
def test_load_params_unknown_key_names_file_key_and_nearest(tmp_path, text, key, hint):
    f = _write(tmp_path / "params.yaml", text)
    with pytest.raises(ConfigError) as exc:
        load_params(f)
    msg = str(exc.value)
    assert msg.startswith(f"{f}: unknown key {key!r}")
    assert (f"did you mean {hint!r}" in msg) if hint else ("did you mean" not in msg)


def test_load_params_value_error_names_the_file_that_set_it(tmp_path):
    _write(tmp_path / "base.yaml", "scene:\n  resolution: -1\n  cell_size: 8.0\n")
    over = _write(tmp_path / "over.yaml", "base: base.yaml\nscene:\n  cell_size: 4.0\n")
    with pytest.raises(ConfigError, match=r"base\.yaml: scene\.resolution"):
        load_params(over)
    _write(over, "base: base.yaml\nscene:\n  resolution: 0.5\n  cell_size: -4.0\n")
    with pytest.raises(ConfigError, match=r"over\.yaml: scene\.cell_size"):
        load_params(over)


def test_params_with_updates_unknown_key_names_nearest(repo_root):
    p = load_params(repo_root / "params.yaml")
    with pytest.raises(
        ConfigError, match=r"unknown key 'train\.max_stepz'; did you mean 'train\.max_steps'"
    ):
        p.with_updates(train={"max_stepz": 1})


# ---------------------------------------------------------------- hostile values (issue 36)


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("diagnose:\n  distance_bins_m: [.nan, 100.0]\n", "diagnose.distance_bins_m.0"),
        ("env:\n  lambda_iou: .inf\n", "env.lambda_iou"),
        ("eval:\n  landmark_noise_m: .inf\n", "eval.landmark_noise_m"),
        ("synth:\n  density: .inf\n", "synth.density"),
        ("policy:\n  class_sizes: {Car: [-.inf, 2.0]}\n", "policy.class_sizes.Car.0"),
        ("stpls3d_refer:\n  offset: [0.0, .NaN, 0.0]\n", "stpls3d_refer.offset.1"),
    ],
)
def test_load_params_non_finite_float_is_an_error_naming_the_field(tmp_path, text, field):
    f = tmp_path / "params.yaml"
    f.write_text(text)
    with pytest.raises(ConfigError, match=rf"{re.escape(field)}: Input should be a finite number"):
        load_params(f)


@pytest.mark.parametrize(
    "field",
    [
        "eval.sample_seed",
        "eval.landmark_perturbation_seed",
        "eval.seed",
        "synth.seed",
        "annotations.seed",
        "train.seed",
        "sft.seed",
    ],
)
def test_load_params_negative_seed_is_an_error(tmp_path, field):
    section, name = field.split(".")
    f = tmp_path / "params.yaml"
    f.write_text(f"{section}:\n  {name}: -1\n")
    with pytest.raises(ConfigError, match=rf"{re.escape(field)}: Input should be greater than or"):
        load_params(f)


@pytest.mark.parametrize(
    ("update", "match"),
    [
        ({"synth": {"size": 1e6}}, "points per block"),
        ({"synth": {"density": 1e4, "size": 1000.0}}, "points per block"),
        ({"eval": {"limit": 10**20}}, r"eval\.limit: Input should be less than or equal to"),
        ({"annotations": {"max_chars": 2001}}, r"annotations\.max_chars"),
    ],
)
def test_params_sizes_past_their_bound_are_errors(update, match):
    with pytest.raises(ConfigError, match=match):
        Params().with_updates(**update)
    assert Params().with_updates(synth={"size": 1000.0, "density": 100.0}).synth.size == 1000.0


def test_env_params_takes_the_env_section_and_refuses_the_whole_params():
    from urbex.config import EnvParams, Params, env_params

    section = EnvParams(max_turns=3)
    assert env_params(section) is section
    assert env_params(None) == EnvParams()
    with pytest.raises(TypeError, match=r"got Params \(pass its \.env section\)"):
        env_params(Params())  # type: ignore[arg-type]
