"""RunSpec: ids identical to the old string-packed ones, round trips through run.json and the
metrics columns, invalid fields refused, clean twins."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from urbex.config import EvalParams, Params
from urbex.eval.perturb import LandmarkPerturbation, perturbation_tag
from urbex.eval.rundir import (
    RunRecord,
    read_run,
    read_spec,
    write_run,
)
from urbex.eval.runspec import SPEC_COLUMNS, RunSpec, Sample, clean_twins


def _old_default_run_id(
    policy: str, split: str, checkpoint: Path | None = None, *, perturbation: str = ""
) -> str:
    """``urbex.eval.runner.default_run_id`` as it was before RunSpec (verbatim), the reference."""
    rid = f"{policy}-{split}"
    if checkpoint is not None:
        rid += "-" + "".join(c if c.isalnum() or c in "-_." else "_" for c in Path(checkpoint).name)
    if perturbation:
        rid += f"-lm_{perturbation}"
    return rid


def _old_method_name(run_id: str, split: str) -> str:
    """``urbex.report.comparison.method_name`` before RunSpec (verbatim), the reference."""
    parts = run_id.split("-")
    kept = [p for p in parts if p != split]
    return "-".join(kept) if kept and len(kept) < len(parts) else run_id


_PERTURBATIONS = [
    ("none", {}),
    ("noise", {"landmark_noise_m": 10.0}),
    ("noise", {"landmark_noise_m": 2.5, "landmark_perturbation_seed": 3}),
    ("noise", {"landmark_noise_m": 25.0}),
    ("missing", {}),
    ("wrong", {"landmark_perturbation_seed": 7}),
]
_CHECKPOINTS = [
    None,
    Path("/ck/step-300"),
    Path("assets/checkpoints/grpo/final"),
    Path("/m/Qwen3-VL 2B (tiny)"),
    Path("/m/ü-modell+v2"),
    Path("rel/ck.v1.5"),
    Path("/m/a:b@c#d"),
]


@pytest.mark.parametrize("mode, extra", _PERTURBATIONS)
@pytest.mark.parametrize("checkpoint", _CHECKPOINTS)
@pytest.mark.parametrize(
    "policy, split",
    [
        ("oracle", "test_no"),
        ("landmark_prior", "test_nd"),
        ("vlm", "val"),
        ("no_tools", "train"),
    ],
)
def test_runspec_run_id_and_method_match_the_old_strings(policy, split, checkpoint, mode, extra):
    params = Params(eval={"landmark_perturbation": mode, **extra})
    spec = RunSpec.from_params(params, policy=policy, split=split, checkpoint=checkpoint)
    e = params.eval
    tag = perturbation_tag(e.landmark_perturbation, e.landmark_noise_m)
    old = _old_default_run_id(policy, split, checkpoint, perturbation=tag)
    assert spec.run_id == old
    assert spec.method == _old_method_name(old, split)
    assert spec.perturbation_tag == (tag or "none")
    assert spec.clean().run_id == _old_default_run_id(policy, split, checkpoint)


def test_runspec_sample_is_not_in_the_id_and_repeat_seed_is_a_suffix():
    params = Params(eval={"limit": 5, "sample_seed": 2})
    spec = RunSpec.from_params(params, policy="oracle", split="test_no")
    assert spec.sample == Sample(limit=5, seed=2) and spec.run_id == "oracle-test_no"
    assert RunSpec.from_params(params, policy="oracle", split="test_no", limit=9).sample == (
        Sample(limit=9, seed=2)
    )
    assert RunSpec.from_params(Params(), policy="oracle", split="test_no").sample is None
    rep = RunSpec(policy="oracle", split="test_no", repeat_seed=3)
    assert rep.run_id == "oracle-test_no-rep3" and rep.method == "oracle-rep3"


def test_runspec_perturbation_keeps_only_the_parameters_of_its_mode():
    for mode in ("none", "missing", "wrong", "noise"):
        p = LandmarkPerturbation.from_eval(
            EvalParams(landmark_perturbation=mode, landmark_perturbation_seed=4)
        )
        assert (p.noise_m is not None) == (mode == "noise")
        assert (p.seed is not None) == (mode in ("noise", "wrong"))
    assert LandmarkPerturbation().fingerprint() is None
    assert LandmarkPerturbation(mode="noise", noise_m=10, seed=0).fingerprint() == {
        "mode": "noise",
        "seed": 0,
        "noise_m": 10.0,
    }


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"mode": "fog"}, "expected one of"),
        ({"mode": "noise", "seed": 0}, "noise_m must be a number"),
        ({"mode": "noise", "noise_m": -1.0, "seed": 0}, "noise_m must be > 0"),
        ({"mode": "noise", "noise_m": 1.0}, "seed must be an int"),
        ({"mode": "wrong", "seed": 0, "noise_m": 1.0}, "noise_m must be None"),
        ({"mode": "none", "seed": 0}, "seed must be None"),
        ({"mode": "wrong", "seed": True}, "seed must be an int"),
    ],
)
def test_landmark_perturbation_invalid_raises(kwargs, match):
    with pytest.raises(ValueError, match=match):
        LandmarkPerturbation(**kwargs)


@pytest.mark.parametrize(
    "kwargs, err, match",
    [
        ({"policy": "", "split": "s"}, ValueError, "policy"),
        ({"policy": "a/b", "split": "s"}, ValueError, "policy"),
        ({"policy": "p", "split": "s", "checkpoint": ""}, ValueError, "checkpoint"),
        ({"policy": "p", "split": "s", "repeat_seed": 1.5}, ValueError, "repeat_seed"),
        ({"policy": "p", "split": "s", "perturbation": "noise"}, TypeError, "perturbation"),
        ({"policy": "p", "split": "s", "sample": 5}, TypeError, "sample"),
    ],
)
def test_runspec_invalid_raises(kwargs, err, match):
    with pytest.raises(err, match=match):
        RunSpec(**kwargs)


def test_sample_invalid_raises():
    with pytest.raises(ValueError, match="limit"):
        Sample(limit=0, seed=0)
    with pytest.raises(ValueError, match="seed"):
        Sample(limit=3, seed="0")  # type: ignore[arg-type]


_SPECS = [
    RunSpec(policy="oracle", split="test_no"),
    RunSpec(
        policy="vlm",
        split="test_nd",
        checkpoint="/ck/step 300",
        perturbation=LandmarkPerturbation(mode="noise", noise_m=2.5, seed=1),
        sample=Sample(limit=20, seed=0),
        repeat_seed=4,
    ),
    RunSpec(
        policy="landmark_prior",
        split="val",
        perturbation=LandmarkPerturbation(mode="wrong", seed=0),
        sample=Sample(limit=3),
    ),
    RunSpec(policy="ranking", split="test_no", perturbation=LandmarkPerturbation(mode="missing")),
    RunSpec(policy="vlm", split="test_no", tools=("zoom_in", "landmark_query")),
    RunSpec(policy="vlm", split="test_no", tools=()),
]


@pytest.mark.parametrize("spec", _SPECS, ids=lambda s: s.run_id)
def test_runspec_round_trips_through_run_json_and_metrics_columns(tmp_path, spec):
    record = RunRecord(run_id="x", spec=spec, fingerprint={"seed": 0}, n_queries=3)
    write_run(record, tmp_path / "run.json")
    assert read_run(tmp_path / "run.json") == record and read_spec(tmp_path) == spec
    cols = spec.columns()
    assert list(cols) == [c for c, _ in SPEC_COLUMNS]
    row = pl.DataFrame([cols]).row(0, named=True)  # through a frame, as the warehouse gives it
    assert RunSpec.from_columns(row) == spec


@pytest.mark.parametrize(
    ("tools", "run_id", "column"),
    [
        (None, "vlm-test_no", "all"),
        (("landmark_query", "zoom_in", "oblique_render"), "vlm-test_no", "all"),
        (
            ("oblique_render", "landmark_query"),
            "vlm-test_no-tools_lm+obl",
            "landmark_query,oblique_render",
        ),
        ((), "vlm-test_no-tools_none", ""),
    ],
)
def test_runspec_tools_name_the_ablation_run(tools, run_id, column):
    spec = RunSpec(policy="vlm", split="test_no", tools=tools)
    assert spec.run_id == run_id and spec.columns()["tools"] == column


def test_runspec_from_params_records_env_tools():
    from urbex.config import Params

    p = Params(env={"tools": ["zoom_in"]})
    spec = RunSpec.from_params(p, policy="vlm", split="test_no")
    assert spec.tools == ("zoom_in",) and spec.run_id == "vlm-test_no-tools_zoom"
    assert RunSpec.from_params(Params(), policy="vlm", split="test_no").tools is None


def test_runspec_tools_invalid_raises():
    with pytest.raises(ValueError, match="run spec tools"):
        RunSpec(policy="vlm", split="test_no", tools=("teleport",))


def test_runspec_from_dict_reads_a_spec_without_tools():
    d = _SPECS[0].to_dict()
    d.pop("tools")
    assert RunSpec.from_dict(d) == _SPECS[0]


def test_runspec_from_dict_rejects_unknown_and_missing_keys():
    d = _SPECS[0].to_dict()
    with pytest.raises(ValueError, match="unknown \\['extra'\\]"):
        RunSpec.from_dict({**d, "extra": 1})
    d.pop("sample")
    with pytest.raises(ValueError, match="missing \\['sample'\\]"):
        RunSpec.from_dict(d)


def test_clean_twins_pairs_by_spec_and_prefers_the_default_id():
    wrong = LandmarkPerturbation(mode="wrong", seed=0)
    a = RunSpec(policy="lp", split="test_no")
    a_wrong = RunSpec(policy="lp", split="test_no", perturbation=wrong)
    b_ck = RunSpec(policy="lp", split="test_no", checkpoint="/c/k")
    b_wrong = RunSpec(policy="lp", split="test_no", checkpoint="/c/k", perturbation=wrong)
    nd_wrong = RunSpec(policy="lp", split="test_nd", perturbation=wrong)
    specs = {
        "zz-custom": a,
        "lp-test_no": a,
        "lp-test_no-lm_wrong": a_wrong,
        "mine-ck": b_ck,
        "b2": b_ck,
        "noisy-ck": b_wrong,
        "nd": nd_wrong,  # no clean test_nd run
        "legacy": None,
    }
    assert clean_twins(specs) == {"lp-test_no-lm_wrong": "lp-test_no", "noisy-ck": "b2"}


def test_runspec_benchmark_in_the_run_id_not_the_method_and_round_trips() -> None:
    from urbex.eval.runspec import RunSpec

    s = RunSpec(policy="ranking", split="test", benchmark="stpls3d_refer")
    assert s.run_id == "ranking-stpls3d_refer-test" and s.method == "ranking"
    assert RunSpec.from_dict(s.to_dict()) == s
    assert RunSpec.from_columns(s.columns()) == s
    plain = RunSpec(policy="ranking", split="test_no")
    assert plain.run_id == "ranking-test_no" and plain.columns()["benchmark"] == "cityrefer"
    old = {k: v for k, v in plain.to_dict().items() if k != "benchmark"}  # written before it
    assert RunSpec.from_dict(old) == plain
    assert RunSpec.from_columns({**plain.columns(), "benchmark": None}) == plain


def test_runspec_from_params_takes_the_benchmark() -> None:
    from urbex.config import Params
    from urbex.eval.runspec import RunSpec

    p = Params().with_updates(eval={"benchmark": "stpls3d_refer"})
    assert RunSpec.from_params(p, policy="oracle", split="test").benchmark == "stpls3d_refer"


def test_a_repeat_of_the_local_model_samples_and_other_runs_keep_greedy_decoding():
    from urbex.config import Params
    from urbex.eval.repeats import repeat_specs
    from urbex.eval.runspec import RunSpec

    p = Params()
    assert p.vlm.do_sample is False
    vlm = RunSpec.from_params(p, policy="vlm", split="test_no", checkpoint="ck")
    rep = repeat_specs(vlm, seed=0, repeats=2)[1]
    assert rep.play_params(p).vlm.do_sample is True  # repeats of greedy decoding would agree
    assert vlm.play_params(p).vlm.do_sample is False  # not a repeat
    oracle = repeat_specs(
        RunSpec.from_params(p, policy="oracle", split="test_no"), seed=0, repeats=2
    )
    assert oracle[0].play_params(p).vlm.do_sample is False  # no local model
