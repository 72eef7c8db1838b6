from pathlib import Path

import pytest

from urbex.config import SPLIT_NAMES, Params
from urbex.layout import AssetLayout, plain_name, safe_name


def test_layout_from_params_is_rooted_at_assets(tmp_path):
    params = Params(paths={"assets": tmp_path / "a"})
    assert params.layout == AssetLayout(tmp_path / "a", benchmark=params.eval.benchmark)
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
        lay.ranker_model: "models/ranker-v1.json",
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
    with pytest.raises(ValueError, match=r"(plain|safe) name"):
        getattr(AssetLayout(tmp_path), method)(name)


def test_plain_name_names_the_argument():
    with pytest.raises(ValueError, match="run_id"):
        plain_name("a/b", what="run_id")


def test_layout_is_frozen(tmp_path):
    from dataclasses import FrozenInstanceError

    with pytest.raises(FrozenInstanceError):
        AssetLayout(tmp_path).root = Path("/")  # type: ignore[misc]


# ---------------------------------------------------------------- the safe-name rule

_UNSAFE = ["", ".", "..", "a/b", "a\\b", ".hidden", "-flag", "_x", "a b", "a:b", "run\n", "a*"]
_SAFE = ["oracle-test_no", "vlm-test_no-step_300", "a.b_c-1", "R2", "0", "ü-modell_v2"]


@pytest.mark.parametrize("name", _UNSAFE)
@pytest.mark.parametrize("method", ["run", "run_json", "run_metrics", "checkpoint"])
def test_layout_run_and_checkpoint_names_follow_the_safe_name_rule(tmp_path, method, name):
    with pytest.raises(ValueError, match="safe name"):
        getattr(AssetLayout(tmp_path), method)(name)


@pytest.mark.parametrize("name", _SAFE)
def test_layout_safe_names_are_accepted(tmp_path, name):
    assert AssetLayout(tmp_path).run(name) == tmp_path / "eval" / "runs" / name
    assert safe_name(name, what="run_id") == name


@pytest.mark.parametrize("name", _UNSAFE + _SAFE)
def test_safe_name_is_the_rule_of_train_run_name(name):
    """``train.run_name`` (a checkpoint name) takes exactly the names the layout takes."""
    try:
        safe_name(name, what="run_name")
        ok = True
    except ValueError:
        ok = False
    try:
        Params(train={"run_name": name})
        ok_params = True
    except ValueError:  # pydantic's ValidationError is a ValueError
        ok_params = False
    assert ok == ok_params == (name in _SAFE)


def test_layout_run_glob_only_in_the_relative_layout(tmp_path):
    assert AssetLayout.relative().run("*").as_posix() == "eval/runs/*"
    with pytest.raises(ValueError, match="safe name"):
        AssetLayout(tmp_path).run("*")


def test_safe_name_error_names_the_argument():
    with pytest.raises(ValueError, match=r"^--run-id: .*got '\.\.'$"):
        safe_name("..", what="--run-id")


_CHECKPOINTS = [None, "/ck/step 300", "/ck/modèle+ü", "ck/..", ".", "/", "a\\b", "x:y*", "-x"]


@pytest.mark.parametrize("checkpoint", _CHECKPOINTS)
def test_layout_takes_every_derived_run_id(tmp_path, checkpoint):
    """The runner's default run ids (:class:`RunSpec`) are safe names whatever the checkpoint."""
    from urbex.agents.registry import POLICY_NAMES
    from urbex.eval.perturb import LandmarkPerturbation
    from urbex.eval.runspec import RunSpec

    perturbations = [
        LandmarkPerturbation(),
        LandmarkPerturbation(mode="noise", noise_m=2.5, seed=0),
        LandmarkPerturbation(mode="missing"),
        LandmarkPerturbation(mode="wrong", seed=1),
    ]
    lay = AssetLayout(tmp_path)
    for policy in POLICY_NAMES:
        for split in SPLIT_NAMES:
            for pert in perturbations:
                for repeat_seed in (None, 3):
                    spec = RunSpec(
                        policy=policy,
                        split=split,
                        checkpoint=checkpoint,
                        perturbation=pert,
                        repeat_seed=repeat_seed,
                    )
                    assert lay.run(spec.run_id).name == spec.run_id


@pytest.mark.parametrize("name", [".hidden", ".block_0.tmp-12-ab"])
@pytest.mark.parametrize("method", ["scene", "run", "checkpoint"])
def test_layout_rejects_names_starting_with_a_dot_reserved_for_staging(tmp_path, name, method):
    # scene ids (plain names) say why; run ids and checkpoint names fail the safe-name rule first
    with pytest.raises(ValueError, match=r"reserved for staging|safe name"):
        getattr(AssetLayout(tmp_path), method)(name)


def test_layout_of_a_benchmark_moves_its_data_and_shares_the_rest(tmp_path):
    lay = AssetLayout(tmp_path, benchmark="stpls3d_refer")
    base = tmp_path / "benchmarks" / "stpls3d_refer"
    assert lay.scene("S") == base / "scenes" / "S"
    assert lay.landmark_table("S") == base / "landmarks" / "S.parquet"
    assert lay.queries == base / "splits" / "queries.parquet"
    assert lay.quality_report("q") == base / "quality" / "q.json"
    plain = AssetLayout(tmp_path)
    for name in ("class_sizes", "ranker_model", "runs", "checkpoints", "report_md", "warehouse"):
        assert getattr(lay, name) == getattr(plain, name), name
    assert plain.scenes == tmp_path / "scenes"
    with pytest.raises(ValueError, match="benchmark"):
        AssetLayout(tmp_path, benchmark="../x")
