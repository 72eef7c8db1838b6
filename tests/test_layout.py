from pathlib import Path

import pytest

from urbex.config import Params
from urbex.layout import AssetLayout, plain_name


def test_layout_from_params_is_rooted_at_assets(tmp_path):
    params = Params(paths={"assets": tmp_path / "a"})
    assert AssetLayout.from_params(params) == params.layout
    assert params.layout.root == params.assets


def test_layout_names_every_published_path(tmp_path):
    lay = AssetLayout(tmp_path)
    expected = {
        lay.raw_synthetic: "raw/synthetic",
        lay.raw_registered: "raw/registered.json",
        lay.scene("b0"): "scenes/b0",
        lay.scene_meta("b0"): "scenes/b0/meta.json",
        lay.instances("b0"): "scenes/b0/instances.parquet",
        lay.scene_row("b0"): "scenes/b0/scene.parquet",
        lay.global_view("b0"): "scenes/b0/global_view.png",
        lay.landmark_table("b0"): "landmarks/b0.parquet",
        lay.clean_queries: "splits/clean_queries.parquet",
        lay.annotation_drops: "splits/annotation_drops.parquet",
        lay.queries: "splits/queries.parquet",
        lay.split_counts: "splits/split_counts.csv",
        lay.class_sizes: "splits/class_sizes.json",
        lay.quality_report("splits"): "quality/splits.json",
        lay.stpls3d_refer: "stpls3d_refer",
        lay.checkpoint("grpo"): "checkpoints/grpo",
        lay.run("r1"): "eval/runs/r1",
        lay.run_json("r1"): "eval/runs/r1/run.json",
        lay.run_episodes("r1"): "eval/runs/r1/episodes",
        lay.run_steps("r1"): "eval/runs/r1/steps",
        lay.run_metrics("r1"): "eval/runs/r1/metrics.parquet",
        lay.diagnostic_table("tool_use"): "eval/diagnostics/tool_use.parquet",
        lay.report_md: "eval/report.md",
        lay.report_csv: "eval/report.csv",
        lay.ground: "ground",
        lay.warehouse: "warehouse.duckdb",
    }
    for path, rel in expected.items():
        assert path == tmp_path / rel


def test_layout_relative_paths_are_globs_under_the_root():
    rel = AssetLayout.relative()
    assert rel.scene_row("*").as_posix() == "scenes/*/scene.parquet"
    assert (rel.run_steps("*") / "*.parquet").as_posix() == "eval/runs/*/steps/*.parquet"


def test_layout_accepts_a_string_root():
    assert AssetLayout("x").root == Path("x")  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["", ".", "..", "../x", "a/b", "a\\b"])
@pytest.mark.parametrize(
    "method", ["scene", "landmark_table", "run", "checkpoint", "quality_report"]
)
def test_layout_rejects_names_that_are_not_one_path_component(tmp_path, name, method):
    with pytest.raises(ValueError, match="plain name"):
        getattr(AssetLayout(tmp_path), method)(name)


def test_plain_name_names_the_argument():
    with pytest.raises(ValueError, match="run_id"):
        plain_name("a/b", what="run_id")


def test_layout_is_frozen(tmp_path):
    from dataclasses import FrozenInstanceError

    with pytest.raises(FrozenInstanceError):
        AssetLayout(tmp_path).root = Path("/")  # type: ignore[misc]


@pytest.mark.parametrize("name", [".hidden", ".block_0.tmp-12-ab"])
@pytest.mark.parametrize("method", ["scene", "run", "checkpoint"])
def test_layout_rejects_names_starting_with_a_dot_reserved_for_staging(tmp_path, name, method):
    with pytest.raises(ValueError, match="reserved for staging"):
        getattr(AssetLayout(tmp_path), method)(name)
