"""``pipelines.defs.resources``: which params files the assets read."""

from __future__ import annotations

import ast
from pathlib import Path

import dagster as dg
import pytest

from pipelines.defs import resources
from pipelines.defs.resources import RESOURCES, UrbexParams
from urbex.config import load_params
from urbex.errors import ConfigError


def test_training_params_default_is_params_yaml_overlaid_with_the_cpu_recipe(repo_root: Path):
    res = RESOURCES["training_params"]
    assert Path(res.params_path) == repo_root / "params.yaml"
    assert [Path(p) for p in res.overlays] == [repo_root / "params-cpu.yaml"]
    got = res.load()
    assert got.model_dump() == load_params(repo_root / "params-cpu.yaml").model_dump()
    assert got.env.zoom_size == (64, 64) and got.train.device == "cpu"
    assert RESOURCES["urbex_params"].load().env.zoom_size == (512, 512)


def test_urbex_params_overlays_merge_in_order(tmp_path: Path):
    base = tmp_path / "params.yaml"
    base.write_text("train:\n  max_steps: 3\n  beta: 0.0\n  seed: 1\n")
    (tmp_path / "a.yaml").write_text("train:\n  max_steps: 5\n  beta: 0.1\n")
    (tmp_path / "b.yaml").write_text("train:\n  beta: 0.2\n")
    res = UrbexParams(
        params_path=str(base), overlays=[str(tmp_path / n) for n in ("a.yaml", "b.yaml")]
    )
    t = res.load().train
    assert (t.max_steps, t.beta, t.seed) == (5, 0.2, 1)
    assert UrbexParams(params_path=str(base)).load().train.max_steps == 3


def test_urbex_params_overlay_typo_names_key_and_file(tmp_path: Path):
    base = tmp_path / "params.yaml"
    base.write_text("train:\n  max_steps: 3\n")
    (tmp_path / "a.yaml").write_text("train:\n  max_stepz: 5\n")
    with pytest.raises(ConfigError, match=r"a\.yaml.*'train\.max_stepz'.*'train\.max_steps'"):
        UrbexParams(params_path=str(base), overlays=[str(tmp_path / "a.yaml")]).load()


def test_urbex_params_overlays_are_run_config(tmp_path: Path):
    """The overlays are resource config: a job run sets them without an environment variable."""
    base = tmp_path / "params.yaml"
    base.write_text("train:\n  max_steps: 3\n")
    (tmp_path / "a.yaml").write_text("train:\n  max_steps: 7\n")
    seen: list[int] = []

    @dg.asset
    def steps(training_params: UrbexParams) -> None:
        seen.append(training_params.load().train.max_steps)

    config = {"params_path": str(base), "overlays": [str(tmp_path / "a.yaml")]}
    result = dg.materialize(
        [steps],
        resources={"training_params": UrbexParams.configure_at_launch()},
        run_config={"resources": {"training_params": {"config": config}}},
    )
    assert result.success and seen == [7]


def test_resources_module_reads_no_environment_variable():
    tree = ast.parse(Path(resources.__file__).read_text())
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    attrs = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    assert "os" not in names and not {"environ", "getenv"} & attrs


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("scene:\n  resolutoin: 0.2\n", "'scene.resolutoin'"),
        ("env:\n  max_turns: 2\nenv: {}\n", "'env'"),
    ],
    ids=["unknown_key", "duplicate_key"],
)
def test_materializing_with_a_bad_params_key_fails_with_urbex_s_one_line_error(
    tmp_path: Path, text, key
):
    """The step's failure is urbex's message naming the file and the key, not Dagster's
    traceback through the asset (the caller outside Dagster still gets a ConfigError)."""
    params = tmp_path / "params.yaml"
    params.write_text(text)

    @dg.asset
    def needs_params(urbex_params: UrbexParams) -> None:
        urbex_params.load()

    result = dg.materialize(
        [needs_params],
        resources={"urbex_params": UrbexParams(params_path=str(params))},
        raise_on_error=False,
    )
    assert not result.success
    (failure,) = result.get_step_failure_events()
    data = failure.step_failure_data
    assert data.user_failure_data is not None and data.error is not None
    description = str(data.user_failure_data.description)
    assert description.startswith(f"{params}: ") and key in description
    assert len(description.splitlines()) == 1
    assert data.error.message.strip().endswith(description)
    with pytest.raises(ConfigError, match=key):
        UrbexParams(params_path=str(params)).load()
