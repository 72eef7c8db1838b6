"""Without-GT proposals (``ranking_proposals``): clustering the scene's class points (no
instance ids), proposal recall per class, and the policy's rows on both test splits."""

from __future__ import annotations

import duckdb
import numpy as np
import polars as pl
import pytest

from tests.fixtures.city import build_untidy_project, make_untidy_city
from urbex.agents.proposals import proposal_recall, propose_instances
from urbex.agents.ranker import fit_project_ranker
from urbex.config import Params
from urbex.env.world import World
from urbex.eval.runspec import RunSpec


def test_proposals_of_the_untidy_city_recall_every_class():
    """Cars parked inside car parks and trees on lawns still come out as their own instances
    (two cars parked 0.7 m apart in a lot sometimes merge: IoU 0.5 recall of cars ~0.86)."""
    cloud, recs, _ = make_untidy_city(seed=2)
    props = propose_instances(
        cloud.world_xyz(), cloud.semantic, cloud.rgb, class_scheme="sensaturban"
    )
    targets = pl.DataFrame(
        {
            "class_name": [r.object_name for r in recs],
            "x_min": [r.center[0] - r.size[0] / 2 for r in recs],
            "y_min": [r.center[1] - r.size[1] / 2 for r in recs],
            "x_max": [r.center[0] + r.size[0] / 2 for r in recs],
            "y_max": [r.center[1] + r.size[1] / 2 for r in recs],
        }
    )
    rec = {r["class_name"]: r for r in proposal_recall(props, targets)}
    assert set(rec) == {"Building", "Car", "Ground", "Parking"}
    for cls, r in rec.items():
        assert r["recall_iou25"] >= 0.9 and r["recall_iou50"] >= 0.8, (cls, r)


def test_proposals_ignore_points_of_other_classes_and_small_clusters():
    rng = np.random.default_rng(0)
    trees = np.c_[rng.uniform(0, 30, 3000), rng.uniform(0, 30, 3000), rng.uniform(2, 8, 3000)]
    speck = np.c_[rng.uniform(50, 50.3, 5), rng.uniform(0, 0.3, 5), np.ones(5)]
    xyz = np.vstack([trees, speck])
    sem = np.r_[np.full(3000, 1), np.full(5, 9)]  # vegetation; a 5-point "car"
    assert len(propose_instances(xyz, sem, None, class_scheme="sensaturban")) == 0


def test_proposal_recall_without_proposals_is_zero():
    from urbex.agents.ranking_records import Candidates

    t = pl.DataFrame(
        {"class_name": ["Car"], "x_min": [0.0], "y_min": [0.0], "x_max": [1.0], "y_max": [1.0]}
    )
    empty = Candidates.build(class_name=[], box=np.zeros((0, 4)))
    assert proposal_recall(empty, t)[0]["recall_iou25"] == 0.0


@pytest.fixture(scope="module")
def untidy(tmp_path_factory):
    assets = build_untidy_project(tmp_path_factory.mktemp("proposals"), seeds=(0, 1, 2, 3))
    params = Params(paths={"assets": assets}, eval={"workers": 1, "chunk_size": 16})
    fit_project_ranker(
        World.from_params(params), params.layout, candidate_classes=params.eval.candidate_classes
    )
    return params


def test_ranking_proposals_has_rows_on_both_test_splits(untidy):
    from urbex.eval.runner import evaluate

    for split in ("test_nd", "test_no"):
        r = evaluate(
            untidy,
            RunSpec.from_params(untidy, policy="ranking_proposals", split=split),
            progress=False,
        )
        prior = evaluate(
            untidy,
            RunSpec.from_params(untidy, policy="landmark_prior", split=split),
            progress=False,
        )
        m = r.metrics.row(0, named=True)
        assert m["n"] > 0 and m["valid_rate"] == 1.0
        assert m["hit1"] > prior.metrics["hit1"][0], split
        assert m["iou_3d"] is not None and m["point_f1"] is not None


def test_proposal_recall_table_lands_in_the_warehouse(untidy):
    from urbex.agents.proposals import proposal_recall_table
    from urbex.env.world import World
    from urbex.report.warehouse import refresh_warehouse

    world = World.from_params(untidy)
    df = proposal_recall_table(world, untidy.layout, untidy.eval.candidate_classes)
    assert set(df["split"]) == {"test_nd", "test_no"}
    assert (df["recall_iou25"] >= df["recall_iou50"]).all()
    refresh_warehouse(untidy.assets)
    con = duckdb.connect(str(untidy.layout.warehouse), read_only=True)
    try:
        n = con.execute("SELECT count(*) FROM diagnostics_proposal_recall").fetchone()[0]
    finally:
        con.close()
    assert n == df.height
