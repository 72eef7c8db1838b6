"""run.json as one typed RunRecord: round trips with its schema and the spec once, invalid
fields refused, a malformed or older run.json refused in one line naming the file (and, for an
older schema, the command that plays the run again), specs resolved from metrics rows."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from urbex.errors import ConfigError
from urbex.eval.perturb import LandmarkPerturbation
from urbex.eval.rundir import (
    RUN_SCHEMA,
    RunRecord,
    read_run,
    read_spec,
    resolve_specs,
    write_run,
)
from urbex.eval.runspec import SPEC_COLUMNS, RunSpec, Sample
from urbex.layout import AssetLayout


def _record(**kw):
    fields = {
        "run_id": "r",
        "spec": RunSpec(policy="landmark_prior", split="test_no"),
        "fingerprint": {"seed": 0, "env": {"max_turns": 5}, "policy": {"backend": "openai"}},
        "n_queries": 4,
    }
    return RunRecord(**(fields | kw))


def test_run_record_round_trips_with_its_schema_and_the_spec_once(tmp_path):
    path = tmp_path / "r" / "run.json"
    for record in (
        _record(),
        _record(status="complete", n_episodes=4),
        _record(status="failed", error="PolicyError: boom", fingerprint={"ck": Path("/a")}),
    ):
        write_run(record, path)
        data = json.loads(path.read_text())
        assert data["schema"] == RUN_SCHEMA == 2 and data["spec"] == record.spec.to_dict()
        assert not {"policy", "split", "checkpoint", "limit", "landmark_perturbation"} & set(data)
        assert read_run(path) == record
    assert read_run(path).fingerprint == {"ck": "/a"}  # as JSON holds it
    assert _record().backend == "openai" and _record(fingerprint={}).backend == "vlm"
    assert _record().settings("env", "vlm") == ({"max_turns": 5}, None)


@pytest.mark.parametrize(
    "bad",
    [{"status": "done"}, {"n_queries": -1}, {"n_episodes": 1.5}, {"run_id": ""}, {"schema": 1}],
)
def test_run_record_refuses_invalid_fields(bad):
    with pytest.raises(ValueError):
        _record(**bad)


def test_read_run_of_a_malformed_run_json_names_the_file(tmp_path):
    path = tmp_path / "run.json"
    good = _record().to_dict()
    for data, match in (
        ({**good, "spec": {"policy": "p"}}, "malformed run record"),
        ({**good, "extra": 1}, r"unknown \['extra'\]"),
        ([1], "holds a list"),
        ({**good, "schema": 3}, "schema 3, newer than this urbex reads"),
    ):
        path.write_text(json.dumps(data))
        with pytest.raises(ConfigError, match=match) as exc:
            read_run(path)
        assert str(exc.value).startswith(f"{path}: ")
    path.write_text("{")
    with pytest.raises(ConfigError, match="not JSON"):
        read_spec(tmp_path)
    assert read_spec(tmp_path / "nowhere") is None


def _schema1_meta(spec: RunSpec) -> dict:
    """A run.json as ``evaluate`` wrote it before RunRecord (no ``"schema"``): the spec's flat
    columns, loose keys and ``"spec"``."""
    return {
        **spec.columns(),
        "run_id": "mine",
        "policy": spec.policy,
        "split": spec.split,
        "checkpoint": spec.checkpoint,
        "fingerprint": {"seed": 0},
        "limit": None if spec.sample is None else spec.sample.limit,
        "landmark_perturbation": spec.perturbation_tag,
        "spec": spec.to_dict(),
        "status": "complete",
        "error": None,
        "n_queries": 3,
        "n_episodes": 3,
    }


def _legacy_meta(**fp_extra):
    """A run.json as ``evaluate`` wrote it before specs (no ``"spec"``)."""
    return {
        "run_id": "r",
        "policy": "landmark_prior",
        "split": "test_no",
        "checkpoint": "/ck/a b",
        "fingerprint": {"seed": 0, "checkpoint": None, **fp_extra},
        "limit": 12,
        "landmark_perturbation": "none",
        "status": "complete",
    }


def test_an_older_run_json_is_one_line_naming_the_file_and_the_command(tmp_path):
    d = tmp_path / "mine"
    d.mkdir()
    noise = LandmarkPerturbation(mode="noise", noise_m=10.0, seed=0)
    spec = RunSpec(
        policy="oracle", split="test_no", perturbation=noise, sample=Sample(limit=2, seed=0)
    )
    cases = (
        (_schema1_meta(spec), "urbex evaluate --policy oracle --split test_no --limit 2 "
         "--landmark-perturbation noise --run-id mine --restart-stale"),
        (_legacy_meta(), "urbex evaluate --policy landmark_prior --split test_no "
         "--checkpoint '/ck/a b' --limit 12 --run-id mine --restart-stale"),
        ({"status": "complete"}, "urbex evaluate --policy P --split S --run-id mine "
         "--restart-stale"),
    )  # fmt: skip
    for meta, command in cases:
        (d / "run.json").write_text(json.dumps(meta))
        with pytest.raises(ConfigError) as exc:
            read_spec(d)
        msg = str(exc.value)
        assert len(msg.splitlines()) == 1 and msg.startswith(f"{d / 'run.json'}: ")
        assert f"run.json of schema 1 (before {RUN_SCHEMA}): rerun `{command}`" in msg
        assert msg.endswith("or delete the run directory")


def test_resolve_specs_prefers_columns_then_run_json(tmp_path):
    spec = RunSpec(policy="oracle", split="test_no")
    b = _record(run_id="b", spec=RunSpec(policy="landmark_prior", split="test_no"))
    write_run(b, tmp_path / "b" / "run.json")
    rows = [
        {"run_id": "a", **spec.columns()},
        {"run_id": "b", "policy": "landmark_prior", "split": "test_no"},
        {"run_id": "c", "policy": "x", "split": "test_no"},
    ]
    assert resolve_specs(rows, tmp_path) == {
        "a": spec,
        "b": RunSpec(policy="landmark_prior", split="test_no"),
        "c": None,
    }


def test_finalize_run_of_a_run_without_run_json_writes_null_spec_columns(tmp_path):
    from urbex.eval.rundir import finalize_run

    d = tmp_path / "eval" / "runs" / "bare"
    (d / "episodes").mkdir(parents=True)
    m = finalize_run(AssetLayout(tmp_path), "bare")
    assert set(m.columns) >= {c for c, _ in SPEC_COLUMNS}
    df = pl.read_parquet(d / "metrics.parquet")
    assert df.schema["landmark_noise_m"] == pl.Float64
    assert df.schema["sample_limit"] == pl.Int64
