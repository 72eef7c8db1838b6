"""The evaluation runner end to end on a two-scene synthetic project (scene caches built here)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import duckdb
import polars as pl
import pytest

from tests.fixtures.city import build_eval_project
from urbex.agents.registry import register_policy
from urbex.annotations.splits import load_queries
from urbex.config import Params
from urbex.env.policy import PolicyBase
from urbex.errors import AnnotationError, ConfigError
from urbex.eval.episodes import read_episodes, read_steps
from urbex.eval.perturb import LandmarkPerturbation
from urbex.eval.rundir import RUN_SCHEMA, RunRecord, read_run, read_spec
from urbex.eval.runner import evaluate
from urbex.eval.runspec import RunSpec, Sample

# columns that legitimately differ between two runs of the same episodes
_VOLATILE = ["run_id", "latency_s", "env_s", "policy_s"]


@pytest.fixture(scope="module")
def assets(tmp_path_factory) -> Path:
    """assets/{scenes,landmarks,splits} for two synthetic blocks (scene 3 → test_no, 4 → train/test_nd)."""
    return build_eval_project(tmp_path_factory.mktemp("project"))


def _params(assets: Path, **eval_kw) -> Params:
    return Params(paths={"assets": assets}, eval={"workers": 1, "chunk_size": 3, **eval_kw})


def _stable(df: pl.DataFrame) -> pl.DataFrame:
    return df.drop([c for c in _VOLATILE if c in df.columns]).sort("query_id")


def test_load_queries_joins_target_boxes_and_samples(assets):
    p = _params(assets)
    qs = load_queries(p.layout, "test_no")
    assert len(qs) >= 10 and [q.query_id for q in qs] == sorted(q.query_id for q in qs)
    assert all(q.target_box_2d[2] > q.target_box_2d[0] for q in qs)
    sample = load_queries(p.layout, "test_no", limit=4, sample_seed=1)
    again = load_queries(p.layout, "test_no", limit=4, sample_seed=1)
    assert len(sample) == 4 and [q.query_id for q in sample] == [q.query_id for q in again]


def test_load_queries_unknown_split_names_the_known_ones(assets):
    with pytest.raises(AnnotationError, match="splits present"):
        load_queries(_params(assets).layout, "nope")


def test_evaluate_oracle_hits_every_target_and_fills_the_warehouse(assets):
    from urbex.report.warehouse import refresh_warehouse

    r = evaluate(
        _params(assets),
        RunSpec.from_params(_params(assets), policy="oracle", split="test_no"),
        progress=False,
    )
    refresh_warehouse(assets)  # what the front doors (urbex evaluate, the asset) do after it
    m = r.metrics.row(0, named=True)
    assert r.n_played == r.n_queries == m["n"]
    assert m["hit1"] >= 0.95 and m["iou_bev"] > 0.9 and m["valid_rate"] == 1.0
    assert m["point_f1"] > 0.5
    assert (r.run_dir / "metrics.parquet").is_file()
    assert json.loads((r.run_dir / "run.json").read_text())["status"] == "complete"
    assert list((r.run_dir / "episodes").glob("part-*.parquet"))
    steps = read_steps(r.run_dir)
    assert set(steps["tool"]) >= {"zoom_in", "answer"} and steps["latency_s"].min() >= 0
    con = duckdb.connect(str(assets / "warehouse.duckdb"), read_only=True)
    try:
        n = con.execute("SELECT count(*) FROM episodes WHERE run_id = ?", [r.run_id]).fetchone()[0]
        hit = con.execute("SELECT hit1 FROM metrics WHERE run_id = ?", [r.run_id]).fetchone()[0]
    finally:
        con.close()
    assert n == r.n_queries and hit == m["hit1"]


def test_evaluate_tool_ablation_is_its_own_run(assets):
    """env.tools names the run (-tools_...) and is in its metrics; a tool not offered is invalid."""
    p = _params(assets, limit=3).with_updates(env={"tools": ["landmark_query"]})
    r = evaluate(p, RunSpec.from_params(p, policy="oracle", split="test_no"), progress=False)
    assert r.run_id == "oracle-test_no-tools_lm"
    assert r.metrics["tools"].to_list() == ["landmark_query"]
    steps = read_steps(r.run_dir)
    zooms = steps.filter(pl.col("tool") == "zoom_in")
    assert zooms.height and not zooms["valid"].any()
    assert zooms["error"].str.contains("not offered").all()


def test_evaluate_landmark_prior_is_reproducible_and_nontrivial(assets):
    a = evaluate(
        _params(assets),
        RunSpec.from_params(_params(assets), policy="landmark_prior", split="test_no"),
        run_id="lp-a",
        progress=False,
    )
    b = evaluate(
        _params(assets),
        RunSpec.from_params(_params(assets), policy="landmark_prior", split="test_no"),
        run_id="lp-b",
        progress=False,
    )
    ma = a.metrics.row(0, named=True)
    assert 0 < ma["hit1"] < 1 and ma["iou_bev"] > 0.02
    assert _stable(read_episodes(a.run_dir)).equals(_stable(read_episodes(b.run_dir)))
    assert a.metrics.drop([*_VOLATILE, "latency_p50_s", "latency_p90_s"]).equals(
        b.metrics.drop([*_VOLATILE, "latency_p50_s", "latency_p90_s"])
    )


def test_evaluate_landmark_prior_fingerprints_the_train_class_sizes(assets):
    from urbex.annotations.class_sizes import class_sizes_path, read_class_sizes

    p = _params(assets)
    kw = {"split": "test_no", "limit": 1}
    r = evaluate(
        p, RunSpec.from_params(p, policy="landmark_prior", **kw), run_id="cs", progress=False
    )
    fp = json.loads((r.run_dir / "run.json").read_text())["fingerprint"]
    sizes = read_class_sizes(assets)
    assert fp["class_sizes"] == {c: list(v) for c, v in sorted(sizes.items())}
    o = evaluate(
        p, RunSpec.from_params(p, policy="oracle", **kw), run_id="cs-oracle", progress=False
    )  # takes none: not fingerprinted
    assert "class_sizes" not in json.loads((o.run_dir / "run.json").read_text())["fingerprint"]
    path = class_sizes_path(assets)
    original = path.read_text()
    try:
        doc = json.loads(original)
        doc["classes"]["Car"]["dx_m"] += 1.0
        path.write_text(json.dumps(doc))  # the splits stage reran on other data
        with pytest.raises(ConfigError, match="class_sizes"):
            evaluate(
                p,
                RunSpec.from_params(p, policy="landmark_prior", **kw),
                run_id="cs",
                progress=False,
            )
        path.unlink()
        with pytest.raises(AnnotationError, match="urbex splits"):
            evaluate(
                p,
                RunSpec.from_params(p, policy="landmark_prior", **kw),
                run_id="cs-missing",
                progress=False,
            )
        over = p.with_updates(policy={"class_sizes": {"Car": [4.0, 2.0]}})
        evaluate(
            over,
            RunSpec.from_params(over, policy="landmark_prior", **kw),
            run_id="cs-override",
            progress=False,
        )  # no file needed
    finally:
        path.write_text(original)


class _Flaky(PolicyBase):
    """landmark_prior that raises on its 5th episode while ``armed``."""

    armed = False

    def __init__(self, inner):
        self.inner, self.n = inner, 0

    def begin_episode(self, *, seed: int, deadline: float | None = None) -> None:
        self.n += 1
        if _Flaky.armed and self.n == 5:
            raise RuntimeError("injected failure")

    def act(self, messages, images):
        return self.inner.act(messages, images)


def _flaky_factory(params, *, env, checkpoint):
    from urbex.agents.heuristics import LandmarkPriorPolicy

    return _Flaky(LandmarkPriorPolicy(env))


register_policy("flaky_prior", _flaky_factory, needs_env=True, replace=True)


def test_evaluate_killed_and_resumed_equals_uninterrupted(assets):
    p = _params(assets)  # chunks of 3: the failure hits mid-chunk (episodes 4 done, 5 fails)
    _Flaky.armed = False
    full = evaluate(
        p,
        RunSpec.from_params(p, policy="flaky_prior", split="test_no"),
        run_id="full",
        progress=False,
    )
    _Flaky.armed = True
    with pytest.raises(RuntimeError, match="injected"):
        evaluate(
            p,
            RunSpec.from_params(p, policy="flaky_prior", split="test_no"),
            run_id="resumed",
            progress=False,
        )
    d = full.run_dir.parent / "resumed"
    assert read_episodes(d).height == 4  # the finished chunk + the partial chunk's first episode
    _Flaky.armed = False
    res = evaluate(
        p,
        RunSpec.from_params(p, policy="flaky_prior", split="test_no"),
        run_id="resumed",
        progress=False,
    )
    assert res.n_skipped == 4 and res.n_played == res.n_queries - 4
    assert _stable(read_episodes(res.run_dir)).equals(_stable(read_episodes(full.run_dir)))
    assert _stable(read_steps(res.run_dir)).equals(_stable(read_steps(full.run_dir)))
    drop = [*_VOLATILE, "latency_p50_s", "latency_p90_s"]
    assert res.metrics.drop(drop).equals(full.metrics.drop(drop))


def test_evaluate_limit_then_full_run_skips_finished(assets):
    p = _params(assets)
    first = evaluate(
        p,
        RunSpec.from_params(p, policy="landmark_prior", split="test_nd", limit=2),
        run_id="lim",
        progress=False,
    )
    assert first.n_played == 2 and first.metrics["n"][0] == 2
    rest = evaluate(
        p,
        RunSpec.from_params(p, policy="landmark_prior", split="test_nd"),
        run_id="lim",
        progress=False,
    )
    assert rest.n_skipped == 2 and rest.metrics["n"][0] == rest.n_queries


def test_evaluate_resume_with_changed_params_raises(assets):
    evaluate(
        _params(assets),
        RunSpec.from_params(_params(assets), policy="landmark_prior", split="test_no", limit=1),
        run_id="chg",
        progress=False,
    )
    changed = _params(assets).with_updates(env={"max_turns": 3})
    with pytest.raises(ConfigError, match="params changed"):
        evaluate(
            changed,
            RunSpec.from_params(changed, policy="landmark_prior", split="test_no"),
            run_id="chg",
            progress=False,
        )
    with pytest.raises(ConfigError, match="policy='landmark_prior'"):
        evaluate(
            _params(assets),
            RunSpec.from_params(_params(assets), policy="oracle", split="test_no"),
            run_id="chg",
            progress=False,
        )


def test_evaluate_process_pool_equals_in_process(assets):
    seq = evaluate(
        _params(assets),
        RunSpec.from_params(_params(assets), policy="landmark_prior", split="train"),
        run_id="seq",
        progress=False,
    )
    par = evaluate(
        _params(assets, workers=2, chunk_size=2, parallel_min_s=0),
        RunSpec.from_params(
            _params(assets, workers=2, chunk_size=2, parallel_min_s=0),
            policy="landmark_prior",
            split="train",
        ),
        run_id="par",
        progress=False,
    )
    assert par.n_played == seq.n_played
    assert _stable(read_episodes(par.run_dir)).equals(_stable(read_episodes(seq.run_dir)))


class _Slow(PolicyBase):
    def act(self, messages, images):
        time.sleep(0.05)
        return '<tool_call>{"name": "zoom_in", "arguments": {"view_id": "global", "bbox_2d": [0, 0, 500, 500]}}</tool_call>'


register_policy("slow_zoomer", lambda params, *, env, checkpoint: _Slow(), replace=True)


def test_evaluate_episode_timeout_ends_unanswered(assets):
    p = _params(assets, episode_timeout_s=0.01)
    r = evaluate(
        p,
        RunSpec.from_params(p, policy="slow_zoomer", split="test_no", limit=2),
        run_id="slow",
        progress=False,
    )
    ep = read_episodes(r.run_dir)
    assert ep["timed_out"].all() and (ep["stop_reason"] == "timeout").all()
    assert (ep["turns"] == 1).all() and not ep["valid_answer"].any() and r.metrics["hit1"][0] == 0.0
    assert (ep["policy_s"] >= 0.05).all()


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    pytest.importorskip("transformers")
    from urbex.train.tiny import make_tiny_model

    return make_tiny_model(tmp_path_factory.mktemp("tiny") / "qwen3vl-tiny")


def test_evaluate_vlm_tiny_model_end_to_end(assets, tiny_model):
    p = _params(assets).with_updates(
        env={
            "max_turns": 2,
            "global_view_size": (128, 128),
            "zoom_size": (64, 64),
            "oblique_size": (64, 64),
        },
        vlm={"max_new_tokens": 12},
    )
    r = evaluate(
        p,
        RunSpec.from_params(p, policy="vlm", split="test_no", checkpoint=tiny_model, limit=2),
        progress=False,
    )
    ep = read_episodes(r.run_dir)
    assert ep.height == 2 and (ep["turns"] >= 1).all()
    assert (ep["policy_s"] > 0).all() and r.run_id.endswith(tiny_model.name)
    steps = read_steps(r.run_dir)
    assert steps["model_text"].str.len_chars().sum() > 0
    # a random tiny model: accuracy near zero is expected (reported, not hidden)
    assert 0.0 <= r.metrics["hit1"][0] <= 1.0


# The warehouse queries the README documents (kept runnable here).
README_QUERIES = (
    "SELECT policy, split, n, round(100 * hit1, 1) AS hit1, round(100 * iou_bev, 1) AS iou "
    "FROM metrics ORDER BY policy, split",
    "SELECT tool, count(*) AS calls, avg(latency_s) AS s FROM steps GROUP BY tool ORDER BY calls DESC",
    "SELECT e.query_id, q.description, e.iou_bev, e.target_rank FROM episodes e "
    "JOIN queries q USING (query_id) WHERE e.policy = 'oracle' ORDER BY e.iou_bev LIMIT 5",
    "SELECT i.class_name, avg(e.hit1::INT) AS hit1 FROM episodes e JOIN instances i "
    "ON e.scene_id = i.scene_id AND e.object_id = i.object_id GROUP BY ALL ORDER BY 1",
)


def test_readme_warehouse_queries_run_read_only(assets):
    from urbex.report.warehouse import refresh_warehouse

    evaluate(
        _params(assets),
        RunSpec.from_params(_params(assets), policy="oracle", split="test_no"),
        progress=False,
    )
    refresh_warehouse(assets)
    con = duckdb.connect(str(assets / "warehouse.duckdb"), read_only=True)
    try:
        results = [con.execute(q).fetchall() for q in README_QUERIES]
    finally:
        con.close()
    assert all(results)
    assert ("oracle", "test_no") in {(r[0], r[1]) for r in results[0]}


def test_evaluate_vlm_lockstep_batch_matches_sequential_greedy(assets, tiny_model):
    p = _params(assets).with_updates(
        env={
            "max_turns": 2,
            "global_view_size": (128, 128),
            "zoom_size": (64, 64),
            "oblique_size": (64, 64),
        },
        vlm={"max_new_tokens": 8},
    )
    seq = evaluate(
        p,
        RunSpec.from_params(p, policy="vlm", split="test_no", checkpoint=tiny_model, limit=2),
        run_id="v1",
        progress=False,
    )
    bat = evaluate(
        p.with_updates(vlm={"batch_size": 2}),
        RunSpec.from_params(
            p.with_updates(vlm={"batch_size": 2}),
            policy="vlm",
            split="test_no",
            checkpoint=tiny_model,
            limit=2,
        ),
        run_id="v2",
        progress=False,
    )
    assert bat.n_played == 2
    a, b = read_steps(seq.run_dir), read_steps(bat.run_dir)
    assert a["tool"].to_list() == b["tool"].to_list() and a.height == b.height


def test_evaluate_resume_with_another_sample_never_mixes_samples(assets):
    p = _params(assets)
    evaluate(
        p,
        RunSpec.from_params(p, policy="landmark_prior", split="test_no", limit=2),
        run_id="grow",
        progress=False,
    )
    r = evaluate(
        p,
        RunSpec.from_params(p, policy="landmark_prior", split="test_no", limit=3),
        run_id="grow",
        progress=False,
    )
    want = {q.query_id for q in load_queries(p.layout, "test_no", limit=3, sample_seed=0)}
    assert set(read_episodes(r.run_dir)["query_id"].to_list()) == want
    assert r.n_skipped == 2 and r.metrics["n"][0] == 3
    # a smaller sample than the run holds would silently keep the extra episodes in the metrics
    with pytest.raises(ConfigError, match="outside the selected queries"):
        evaluate(
            p,
            RunSpec.from_params(p, policy="landmark_prior", split="test_no", limit=2),
            run_id="grow",
            progress=False,
        )


def test_evaluate_restart_stale_replaces_a_run_of_other_settings(assets):
    """What the DVC stages pass: a changed param or a smaller sample replaces the run (played
    afresh, nothing of the old one left) instead of raising; the same settings still resume."""
    p = _params(assets)
    kw = {"run_id": "stale", "progress": False}

    def spec(params, limit):
        return RunSpec.from_params(params, policy="landmark_prior", split="test_no", limit=limit)

    evaluate(p, spec(p, 3), **kw)
    (p.layout.run("stale") / "index.html").write_text("the old page")
    smaller = evaluate(p, spec(p, 2), restart_stale=True, **kw)
    assert smaller.n_skipped == 0 and smaller.n_played == 2
    assert not (smaller.run_dir / "index.html").exists()
    want = {q.query_id for q in load_queries(p.layout, "test_no", limit=2, sample_seed=0)}
    assert set(read_episodes(smaller.run_dir)["query_id"].to_list()) == want
    changed = p.with_updates(env={"max_turns": 3})
    r = evaluate(changed, spec(changed, 2), restart_stale=True, **kw)
    assert r.n_skipped == 0 and r.n_played == 2
    assert read_spec(r.run_dir) is not None
    again = evaluate(changed, spec(changed, 2), restart_stale=True, **kw)  # same settings: resumed
    assert again.n_skipped == 2 and again.n_played == 0
    summary = json.loads(p.layout.run_summary("stale").read_text())
    assert summary["n"] == 2 and 0.0 <= summary["hit1"] <= 1.0
    assert "sample_limit" not in summary  # the spec's columns are not metrics


def test_evaluate_resume_with_point_metrics_toggled_raises(assets):
    evaluate(_params(assets), RunSpec.from_params(_params(assets), policy="landmark_prior", split="test_no", limit=1), run_id="pm", progress=False)  # fmt: skip
    with pytest.raises(ConfigError, match="params changed"):
        evaluate(_params(assets, point_metrics=False), RunSpec.from_params(_params(assets, point_metrics=False), policy="landmark_prior", split="test_no"), run_id="pm", progress=False)  # fmt: skip


def test_evaluate_stores_its_spec_in_run_json_and_metrics(assets):
    p = _params(assets, landmark_perturbation="wrong", landmark_perturbation_seed=3)
    r = evaluate(
        p,
        RunSpec.from_params(p, policy="oracle", split="test_no", limit=2),
        run_id="spec1",
        progress=False,
    )
    want = RunSpec(
        policy="oracle",
        split="test_no",
        perturbation=LandmarkPerturbation(mode="wrong", seed=3),
        sample=Sample(limit=2, seed=0),
    )
    assert r.spec == want and r.spec.run_id == "oracle-test_no-lm_wrong"
    meta = json.loads((r.run_dir / "run.json").read_text())
    assert meta["spec"] == want.to_dict() and read_spec(r.run_dir) == want
    assert meta["schema"] == RUN_SCHEMA and "landmark_perturbation" not in meta  # spec once
    m = pl.read_parquet(r.run_dir / "metrics.parquet").row(0, named=True)
    assert RunSpec.from_columns(m) == want
    assert m["landmark_perturbation"] == "wrong" and m["sample_limit"] == 2
    con = duckdb.connect(":memory:")
    try:
        from urbex.report.warehouse import refresh_warehouse

        refresh_warehouse(assets, con=con)
        got = (
            con.cursor()
            .sql(
                "SELECT landmark_perturbation_mode, landmark_perturbation_seed, sample_limit "
                "FROM metrics WHERE run_id = 'spec1'"
            )
            .fetchall()
        )
    finally:
        con.close()
    assert got == [("wrong", 3, 2)]


def test_evaluate_of_an_older_run_json_refuses_naming_the_command_or_restarts_stale(assets):
    p = _params(assets)
    spec = RunSpec.from_params(p, policy="oracle", split="test_nd", limit=1)
    r = evaluate(p, spec, run_id="older", progress=False)
    path = r.run_dir / "run.json"
    meta = json.loads(path.read_text())
    del meta["schema"]  # as written before RunRecord (schema 1)
    path.write_text(json.dumps({**meta, **spec.columns(), "limit": 1}))
    with pytest.raises(ConfigError, match=r"schema 1 .*--run-id older --restart-stale") as exc:
        evaluate(p, spec, run_id="older", progress=False)
    assert len(str(exc.value).splitlines()) == 1 and str(path) in str(exc.value)
    again = evaluate(p, spec, run_id="older", progress=False, restart_stale=True)
    assert again.n_skipped == 0 and again.n_played == 1  # played afresh
    assert read_run(path) == RunRecord(
        run_id="older",
        spec=spec,
        fingerprint=read_run(path).fingerprint,
        status="complete",
        n_queries=1,
        n_episodes=1,
    )


def test_evaluate_by_spec_applies_its_perturbation_and_sample(assets):
    spec = RunSpec(
        policy="oracle",
        split="test_no",
        perturbation=LandmarkPerturbation(mode="missing"),
        sample=Sample(limit=2, seed=1),
    )
    r = evaluate(_params(assets), spec=spec, progress=False)
    assert r.run_id == "oracle-test_no-lm_missing" and r.spec == spec and r.n_queries == 2
    fp = json.loads((r.run_dir / "run.json").read_text())["fingerprint"]
    assert fp["landmark_perturbation"] == {"mode": "missing"}
    with pytest.raises(TypeError, match="policy"):  # the spec names the run; no second way
        evaluate(_params(assets), spec=spec, policy="oracle", progress=False)
    # a repeat (repeated decoding) plays with eval.seed = repeat_seed, under its own id
    rep = evaluate(
        _params(assets),
        spec=RunSpec(
            policy="oracle", split="test_no", repeat_seed=1, sample=Sample(limit=2, seed=0)
        ),
        progress=False,
    )
    assert rep.run_id == "oracle-test_no-rep1"
    assert json.loads((rep.run_dir / "run.json").read_text())["fingerprint"]["seed"] == 1


def test_metrics_view_columns_are_what_finalize_run_writes(assets, tmp_path):
    from urbex.report.warehouse import TABLES, refresh_warehouse

    r = evaluate(_params(assets), RunSpec.from_params(_params(assets), policy="oracle", split="test_no", limit=2), run_id="cols", progress=False)  # fmt: skip
    written = pl.read_parquet(r.run_dir / "metrics.parquet").columns
    timed = pl.read_parquet(r.run_dir / "timings" / "metrics.parquet").columns
    assert {"latency_s", "env_s", "policy_s"} <= set(timed) and "latency_s" not in written
    assert sorted({*written, *timed}) == sorted(c for c, _ in TABLES["metrics"].columns)
    con = duckdb.connect(":memory:")
    refresh_warehouse(tmp_path, con=con)  # no runs: the empty view has the same columns
    assert sorted(con.sql("SELECT * FROM metrics").columns) == sorted({*written, *timed})
    refresh_warehouse(r.run_dir.parent.parent.parent, con=con)  # the run: its timings joined
    row = con.sql("SELECT n, latency_s FROM metrics WHERE run_id = 'cols'").fetchall()
    assert row == [(2, pytest.approx(float(r.metrics["latency_s"][0])))]


# ---------------------------------------------------------------------------------------------
# one writer per run; run.json's status; the warehouse's runs table
# ---------------------------------------------------------------------------------------------

_REPO = Path(__file__).resolve().parents[2]

#: An ``evaluate`` whose policy sleeps on its first turn: it holds the run's lock until killed.
_HOLDER = """
import sys, time
from pathlib import Path
from urbex.env.policy import PolicyBase
from urbex.config import Params
from urbex.eval.runner import evaluate
from urbex.eval.runspec import RunSpec

class Sleepy(PolicyBase):
    def act(self, messages, images):
        time.sleep(600)
        raise AssertionError("not reached")

p = Params(paths={"assets": Path(sys.argv[1])}, eval={"workers": 1})
evaluate(p, RunSpec.from_params(p, policy="oracle", split="test_no"), run_id=sys.argv[2],
         policy_obj=Sleepy(), progress=False)
"""


def _subprocess_env() -> dict[str, str]:
    import os

    return {**os.environ, "PYTHONPATH": str(_REPO), "HF_HUB_OFFLINE": "1", "TQDM_DISABLE": "1"}


def _params_file(assets: Path, tmp_path: Path) -> Path:
    p = tmp_path / "params.yaml"
    p.write_text(f"paths:\n  assets: {json.dumps(str(assets))}\neval:\n  workers: 1\n")
    return p


def test_evaluate_second_writer_exits_2_naming_the_holder_and_a_killed_holder_never_blocks(
    assets, tmp_path
):
    import signal
    import subprocess
    import sys

    run_id = "two-writers"
    d = assets / "eval" / "runs" / run_id
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(assets), run_id],
        cwd=_REPO,
        env=_subprocess_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        while not (d / "run.json").is_file():  # written once the holder has the lock
            assert holder.poll() is None, holder.stderr.read().decode()
            assert time.monotonic() < deadline, "the holder never took the lock"
            time.sleep(0.1)
        t0 = time.monotonic()
        second = subprocess.run(
            [sys.executable, "-m", "urbex.cli", "--params", str(_params_file(assets, tmp_path)),
             "-q", "evaluate", "--policy", "oracle", "--split", "test_no", "--run-id", run_id],
            cwd=_REPO, env=_subprocess_env(), capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        elapsed = time.monotonic() - t0
        err = second.stderr.strip()
        assert second.returncode == 2, err
        assert len(err.splitlines()) == 1 and "Traceback" not in err
        assert f"run {run_id!r}" in err and f"pid {holder.pid}" in err and "host" in err
        assert elapsed < 60  # it refused at once instead of playing
        assert not list((d / "episodes").glob("*.parquet"))  # and wrote nothing
        assert json.loads((d / "run.json").read_text())["status"] == "running"  # the holder's
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=60)
    # the OS released the dead holder's lock: the next run plays everything, exactly once
    r = evaluate(
        _params(assets),
        RunSpec.from_params(_params(assets), policy="oracle", split="test_no"),
        run_id=run_id,
        progress=False,
    )
    assert r.n_played == r.n_queries and read_episodes(r.run_dir).height == r.n_queries
    meta = json.loads((r.run_dir / "run.json").read_text())
    assert meta["status"] == "complete" and meta["n_episodes"] == r.n_queries
    from urbex.eval.runlock import LOCK_HOLDER_FILE

    assert not (d / LOCK_HOLDER_FILE).exists()  # released on exit


def test_evaluate_same_run_locked_in_process_raises_run_locked(assets):
    from urbex.errors import RunLockedError
    from urbex.eval.runlock import run_lock

    d = assets / "eval" / "runs" / "locked-here"
    with run_lock(d, run_id="locked-here") as me:
        with pytest.raises(RunLockedError, match=rf"pid {me['pid']} on host"):
            evaluate(_params(assets), RunSpec.from_params(_params(assets), policy="oracle", split="test_no", limit=1), run_id="locked-here", progress=False)  # fmt: skip
    evaluate(_params(assets), RunSpec.from_params(_params(assets), policy="oracle", split="test_no", limit=1), run_id="locked-here", progress=False)  # fmt: skip


def test_evaluate_vlm_failed_start_marks_the_run_failed_and_cli_exits_2(assets, tmp_path, capsys):
    from urbex.cli import main

    missing = tmp_path / "no-such-checkpoint"
    args = ["--params", str(_params_file(assets, tmp_path)), "-q", "evaluate", "--policy", "vlm",
            "--split", "test_no", "--limit", "1", "--checkpoint", str(missing),
            "--run-id", "vlm-nockpt"]  # fmt: skip
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no-such-checkpoint" in err
    meta = json.loads((assets / "eval" / "runs" / "vlm-nockpt" / "run.json").read_text())
    assert meta["status"] == "failed" and "no-such-checkpoint" in meta["error"]
    assert len(meta["error"].splitlines()) == 1
    con = duckdb.connect(":memory:")
    try:
        from urbex.report.warehouse import refresh_warehouse

        refresh_warehouse(assets, con=con)
        row = con.execute(
            "SELECT status, policy, split, sample_limit, n_queries, n_episodes FROM runs "
            "WHERE run_id = 'vlm-nockpt'"
        ).fetchall()
    finally:
        con.close()
    assert row == [("failed", "vlm", "test_no", 1, 1, None)]


def test_evaluate_policy_error_mid_run_marks_failed_and_the_warehouse_hides_it(assets):
    from urbex.report.warehouse import refresh_warehouse

    p = _params(assets)
    _Flaky.armed = True
    try:
        with pytest.raises(RuntimeError, match="injected"):
            evaluate(
                p,
                RunSpec.from_params(p, policy="flaky_prior", split="test_no"),
                run_id="flaky-wh",
                progress=False,
            )
    finally:
        _Flaky.armed = False
    d = assets / "eval" / "runs" / "flaky-wh"
    meta = json.loads((d / "run.json").read_text())
    assert meta["status"] == "failed" and meta["error"] == "RuntimeError: injected failure"
    assert read_episodes(d).height == 4  # the finished episodes stay on disk for the resume

    def view(sql: str) -> list[tuple]:
        con = duckdb.connect(":memory:")
        try:
            refresh_warehouse(assets, con=con)
            return con.execute(sql, ["flaky-wh"]).fetchall()
        finally:
            con.close()

    for table in ("episodes", "steps", "metrics"):
        assert view(f"SELECT count(*) FROM {table} WHERE run_id = ?") == [(0,)], table
    assert view("SELECT status FROM runs WHERE run_id = ?") == [("failed",)]
    r = evaluate(p, RunSpec.from_params(p, policy="flaky_prior", split="test_no"), run_id="flaky-wh", progress=False)  # fmt: skip
    assert view("SELECT count(*) FROM episodes WHERE run_id = ?") == [(r.n_queries,)]
    assert view("SELECT status, error, n_episodes FROM runs WHERE run_id = ?") == [
        ("complete", None, r.n_queries)
    ]


def test_run_json_holds_every_runs_view_column(assets):
    from urbex.report.warehouse import RUN_COLUMNS, TABLES

    r = evaluate(_params(assets, landmark_perturbation="noise"), RunSpec.from_params(_params(assets, landmark_perturbation="noise"), policy="oracle", split="test_no", limit=2), run_id="runs-cols", progress=False)  # fmt: skip
    meta = json.loads((r.run_dir / "run.json").read_text())
    times = json.loads((r.run_dir / "timings" / "run.json").read_text())
    assert not {"created", "updated"} & set(meta)  # timestamps: in the unversioned timings/
    assert {"created", "updated"} <= set(times)
    assert TABLES["runs"].columns == RUN_COLUMNS
    con = duckdb.connect(":memory:")
    try:
        from urbex.report.warehouse import refresh_warehouse

        refresh_warehouse(assets, con=con)
        cur = con.execute("SELECT * FROM runs WHERE run_id = 'runs-cols'")
        row = dict(zip([d[0] for d in cur.description], cur.fetchall()[0], strict=True))
    finally:
        con.close()
    assert list(row) == [c for c, _ in RUN_COLUMNS]
    assert {k: row[k] for k in r.spec.columns()} == r.spec.columns()  # from run.json's spec
    assert row["created"] == times["created"] and row["status"] == "complete"
    assert (row["n_queries"], row["n_episodes"]) == (meta["n_queries"], meta["n_episodes"])
