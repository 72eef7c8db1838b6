"""Diagnostic tables on hand-computed frames (``diagnose`` end to end: test_diagnose.py)."""

from __future__ import annotations

import polars as pl
import pytest

from urbex.eval.perturb import LandmarkPerturbation
from urbex.eval.runspec import RunSpec, Sample
from urbex.report.diagnostics import (
    box_extent,
    disambiguation,
    landmark_availability,
    matching_rules,
    query_context,
    tool_use,
)

# ------------------------------------------------------------------ constructed frames


def _keys(n: int, run: str = "r") -> dict[str, list[str]]:
    return {"run_id": [run] * n, "policy": ["p"] * n, "split": ["test_no"] * n}


def test_matching_rules_hand_computed_rates_and_spread():
    ep = pl.DataFrame(
        {
            **_keys(4),
            "target_rank": [1, 2, 5, None],
            "target_rank_nz": [1, 2, None, None],
            "target_rank_ciou": [1, 1, 3, None],
        }
    )
    t = {r["rule"]: r for r in matching_rules(ep).iter_rows(named=True)}
    assert (t["iou"]["hit1"], t["iou"]["hit3"]) == (0.25, 0.5)
    assert (t["iou_nonzero"]["hit1"], t["iou_nonzero"]["hit3"]) == (0.25, 0.5)
    assert (t["ciou"]["hit1"], t["ciou"]["hit3"]) == (0.5, 0.75)
    assert t["iou"]["hit1_spread"] == pytest.approx(0.25)
    assert t["iou"]["hit3_spread"] == pytest.approx(0.25)


def test_box_extent_hand_computed_over_valid_answers():
    ep = pl.DataFrame(
        {
            **_keys(5),
            "valid_answer": [True, True, True, True, False],
            "hit1": [True, True, True, False, False],
            "hit1_iou25": [True, False, False, False, False],
            "n_pos_overlap": [1, 3, 5, 7, 0],
            "n_iou25": [1, 0, 2, 0, 0],
            "area_ratio": [1.0, 2.0, 4.0, 10.0, None],
        }
    )
    r = box_extent(ep).row(0, named=True)
    assert (r["n"], r["n_valid"]) == (5, 4)
    assert r["hit1"] == pytest.approx(0.6) and r["hit1_iou25"] == pytest.approx(0.2)
    assert r["hit1_drop"] == pytest.approx(0.4)
    assert r["n_pos_overlap_mean"] == 4.0 and r["n_iou25_median"] == 0.5
    assert r["area_ratio_median"] == 3.0
    assert r["area_ratio_p90"] == pytest.approx(4.0 + 0.7 * 6.0)  # linear between 4 and 10


def _context() -> pl.DataFrame:
    # five queries; target centres at the origin except q5
    return pl.DataFrame(
        {
            "query_id": ["q1", "q2", "q3", "q4", "q5"],
            "target_cx": [0.0, 0.0, 0.0, 0.0, 100.0],
            "target_cy": [0.0, 0.0, 0.0, 0.0, 100.0],
            "n_distractors": [0, 3, 4, 7, 12],
            "has_landmark": [True, True, True, False, True],
            "landmark_dist_m": [10.0, 60.0, 150.0, None, 500.0],
        }
    )


def _zoom(q: str, box: list[float], valid: bool = True, turn: int = 1) -> dict:
    return {
        "run_id": "r",
        "query_id": q,
        "turn": turn,
        "tool": "zoom_in",
        "valid": valid,
        "region_x_min_m": box[0],
        "region_y_min_m": box[1],
        "region_x_max_m": box[2],
        "region_y_max_m": box[3],
    }


def test_disambiguation_bins_regional_and_local_success():
    ep = pl.DataFrame(
        {**_keys(5), "query_id": ["q1", "q2", "q3", "q4", "q5"]}
        | {"hit1": [True, False, True, True, False]}
    )
    steps = pl.DataFrame(
        [
            _zoom("q1", [-5, -5, 5, 5]),  # contains the origin
            _zoom("q2", [-5, -5, 5, 5]),  # contains, but a miss
            _zoom("q3", [10, 10, 20, 20]),  # misses the target ...
            _zoom("q3", [-1, -1, 1, 1], turn=2),  # ... then finds it
            _zoom("q4", [-5, -5, 5, 5], valid=False),  # invalid zoom never counts
            _zoom("q5", [0, 0, 10, 10]),  # target at (100, 100): outside
        ]
    )
    t = disambiguation(ep, steps, _context())
    d = {r["bin"]: r for r in t.filter(pl.col("factor") == "distractors").iter_rows(named=True)}
    assert list(d) == ["0", "1-4", "5-9", ">=10"]
    assert [d[b]["n"] for b in d] == [1, 2, 1, 1]
    assert d["0"]["regional_success"] == 1.0 and d["0"]["local_success"] == 1.0
    assert d["1-4"]["regional_success"] == 1.0 and d["1-4"]["local_success"] == 0.5
    assert d["5-9"]["regional_success"] == 0.0 and d["5-9"]["local_success"] is None
    assert d["5-9"]["hit1"] == 1.0  # a hit without regional success is not "local success"
    assert d[">=10"]["n_regional"] == 0
    lm = {
        r["bin"]: r for r in t.filter(pl.col("factor") == "landmark_distance").iter_rows(named=True)
    }
    assert list(lm) == ["<50 m", "50-100 m", "100-200 m", ">=200 m", "no landmark"]
    assert [lm[b]["n"] for b in lm] == [1, 1, 1, 1, 1]
    assert [lm[b]["regional_success"] for b in lm] == [1.0, 1.0, 1.0, 0.0, 0.0]


def test_query_context_counts_same_class_distractors_within_radius():
    q = pl.DataFrame({"query_id": ["a"], "scene_id": ["s"], "object_id": ["1"]})
    inst = pl.DataFrame(
        {
            "scene_id": ["s", "s", "s", "s", "t"],
            "object_id": ["1", "2", "3", "4", "5"],
            "class_name": ["Car", "Car", "Car", "Tree", "Car"],
            "cx": [0.0, 49.0, 51.0, 1.0, 0.0],
            "cy": [0.0, 0.0, 0.0, 0.0, 0.0],
        }
    )
    lm = pl.DataFrame(
        {"scene_id": ["s", "s"], "name": ["Near", "Far"], "x": [0.0, 300.0], "y": [30.0, 0.0]}
    )
    m = pl.DataFrame({"query_id": ["a", "a"], "name": ["Far", "Near"]})
    r = query_context(q, inst, m, lm, radius_m=50.0).row(0, named=True)
    assert r["n_distractors"] == 1  # object 2 only: 3 is too far, 4 another class, 5 another scene
    assert r["has_landmark"] and r["landmark_dist_m"] == 30.0  # the nearest mentioned one


def test_landmark_availability_pairs_perturbation_runs_with_clean_run():
    qs = ["a", "b", "c", "d"]
    ep = pl.concat(
        [
            pl.DataFrame({**_keys(4, "lp-test_no"), "query_id": qs, "hit1": [1, 1, 0, 1]}),
            pl.DataFrame({**_keys(4, "lp-test_no-lm_wrong"), "query_id": qs, "hit1": [0, 1, 0, 1]}),
        ]
    ).with_columns(pl.col("hit1").cast(pl.Boolean))
    ctx = pl.DataFrame({"query_id": qs, "has_landmark": [True, True, True, False]})
    clean = RunSpec(policy="p", split="test_no")
    wrong = RunSpec(
        policy="p", split="test_no", perturbation=LandmarkPerturbation(mode="wrong", seed=0)
    )
    runs = pl.DataFrame(
        [
            {"run_id": "lp-test_no", **clean.columns()},
            {"run_id": "lp-test_no-lm_wrong", **wrong.columns()},
        ]
    )
    t = landmark_availability(ep, ctx, runs)
    row = {(r["run_id"], r["subset"]): r for r in t.iter_rows(named=True)}
    clean_with = row[("lp-test_no", "with landmark")]
    assert clean_with["hit1"] == pytest.approx(2 / 3) and clean_with["delta_hit1"] is None
    assert row[("lp-test_no", "without landmark")]["hit1"] == 1.0
    w = row[("lp-test_no-lm_wrong", "with landmark")]
    assert w["clean_run_id"] == "lp-test_no" and w["landmark_perturbation"] == "wrong"
    assert w["hit1"] == pytest.approx(1 / 3) and w["delta_hit1"] == pytest.approx(-1 / 3)
    assert row[("lp-test_no-lm_wrong", "all")]["delta_hit1"] == pytest.approx(-0.25)


def test_tool_use_lzoa_share_and_invalid_rate():
    ep = pl.DataFrame(
        {
            **_keys(3),
            "query_id": ["a", "b", "c"],
            "n_landmark_query": [1, 1, 0],
            "n_zoom_in": [2, 1, 0],
            "n_oblique_render": [1, 0, 0],
            "n_invalid": [0, 1, 0],
            "turns": [5, 4, 1],
        }
    )
    tools = {
        "a": ["landmark_query", "zoom_in", "zoom_in", "oblique_render", "answer"],  # LZZOA: yes
        "b": ["zoom_in", "landmark_query", None, "answer"],  # wrong order
        "c": ["answer"],
    }
    rows = [
        {"run_id": "r", "query_id": q, "turn": i + 1, "tool": t, "valid": t is not None}
        for q, ts in tools.items()
        for i, t in enumerate(ts)
    ]
    r = tool_use(ep, pl.DataFrame(rows)).row(0, named=True)
    assert r["lzoa_share"] == pytest.approx(1 / 3)
    assert r["invalid_rate"] == pytest.approx(0.1)
    assert r["zoom_in"] == 1.0 and r["turns"] == pytest.approx(10 / 3)


def test_landmark_availability_pairs_by_spec_not_by_run_id():
    """The clean twin is the run with the same spec minus the perturbation, whatever its id;
    a clean run of another sample, or of another noise seed's twin, is not it."""
    qs = ["a", "b"]
    names = ["mine", "other-sample", "noisy", "orphan"]
    ep = pl.concat(
        [pl.DataFrame({**_keys(2, n), "query_id": qs, "hit1": [True, False]}) for n in names]
    )
    ctx = pl.DataFrame({"query_id": qs, "has_landmark": [True, False]})
    base = RunSpec(policy="p", split="test_no")
    noise = LandmarkPerturbation(mode="noise", noise_m=5.0, seed=1)
    specs = {
        "mine": base,
        "other-sample": RunSpec(policy="p", split="test_no", sample=Sample(limit=1, seed=0)),
        "noisy": RunSpec(policy="p", split="test_no", perturbation=noise),
        "orphan": RunSpec(
            policy="p", split="test_no", perturbation=noise, sample=Sample(limit=9, seed=0)
        ),
    }
    runs = pl.DataFrame([{"run_id": r, **s.columns()} for r, s in specs.items()])
    t = landmark_availability(ep, ctx, runs).filter(pl.col("subset") == "all")
    twin = dict(zip(t["run_id"].to_list(), t["clean_run_id"].to_list()))
    assert twin == {"mine": None, "other-sample": None, "noisy": "mine", "orphan": None}
    tags = dict(zip(t["run_id"].to_list(), t["landmark_perturbation"].to_list()))
    assert tags == {"mine": "none", "other-sample": "none", "noisy": "noise5", "orphan": "noise5"}


def test_landmark_availability_run_without_spec_columns_uses_its_tag():
    ep = pl.DataFrame({**_keys(1, "old"), "query_id": ["a"], "hit1": [True]})
    ctx = pl.DataFrame({"query_id": ["a"], "has_landmark": [True]})
    runs = pl.DataFrame({"run_id": ["old"], "landmark_perturbation": ["missing"]})
    t = landmark_availability(ep, ctx, runs)
    assert set(t["landmark_perturbation"].to_list()) == {"missing"}
    assert t["clean_run_id"].to_list() == [None] * t.height


def test_check_unique_episodes_accepts_one_episode_per_run_and_query():
    from urbex.report.diagnostics import check_unique_episodes

    check_unique_episodes(pl.DataFrame({"run_id": ["a", "b"], "query_id": ["q", "q"]}))
