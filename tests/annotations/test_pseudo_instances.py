"""Pseudo-instance clustering of labelled points (STPLS3D): grid components, merged-row splits,
and cluster precision/recall against true instances."""

from __future__ import annotations

import numpy as np

from urbex.annotations.pseudo_instances import (
    cluster_mask,
    evaluate_clusters,
    pseudo_instances,
    split_merged,
)
from urbex.config import Params


def test_cluster_mask_separates_distant_groups() -> None:
    rng = np.random.default_rng(0)
    a = rng.uniform(0, 5, (200, 2))
    b = rng.uniform(20, 25, (200, 2))
    xy = np.vstack([a, b, [[100.0, 100.0]]])
    lab = cluster_mask(xy, np.ones(len(xy), bool), cell=0.5, closing=1, min_points=5)
    assert len(set(lab[:200])) == 1 and len(set(lab[200:400])) == 1 and lab[0] != lab[200]
    assert lab[-1] == -1


def test_split_merged_row_of_cars() -> None:
    rng = np.random.default_rng(1)
    # four 1.8 x 4.4 m cars side by side with 0.6 m gaps, merged into one component
    cars = [rng.uniform([i * 2.4, 0], [i * 2.4 + 1.8, 4.4], (40, 2)) for i in range(4)]
    xy = np.vstack(cars)
    truth = np.repeat(np.arange(4), 40)
    merged = np.zeros(len(xy), np.int32)
    out = split_merged(xy, merged, footprint_m2=9.0)  # sampled hull ≈ 36 m²
    assert len(np.unique(out)) == 4
    assert evaluate_clusters(out, truth)["recall"] == 1.0


def test_evaluate_clusters_perfect_and_empty() -> None:
    t = np.array([0, 0, 1, 1, -1])
    assert evaluate_clusters(t, t)["precision"] == 1.0
    e = evaluate_clusters(np.full(5, -1), t)
    assert e["precision"] == 0.0 and e["recall"] == 0.0 and e["n_true"] == 2


def _stpls3d_cloud(
    parts: list[tuple[int, tuple[float, float, float, float], int]], seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """xyz, semantic of rectangles (semantic id, (x0, y0, x1, y1), n points), z 0..3 m."""
    rng = np.random.default_rng(seed)
    xyz, sem = [], []
    for s, (x0, y0, x1, y1), n in parts:
        xyz.append(
            np.column_stack([rng.uniform(x0, x1, n), rng.uniform(y0, y1, n), rng.uniform(0, 3, n)])
        )
        sem.append(np.full(n, s))
    return np.vstack(xyz), np.concatenate(sem).astype(np.int32)


def test_pseudo_instances_scene_without_buildings_or_vehicles() -> None:
    xyz, sem = _stpls3d_cloud([(0, (0, 0, 50, 50), 2000), (3, (5, 5, 10, 10), 300)])
    inst, table = pseudo_instances(xyz, sem, None, params=Params().stpls3d_refer)
    assert (inst == -1).all() and table.height == 0 and "object_id" in table.columns
    inst, table = pseudo_instances(
        np.zeros((0, 3)), np.zeros(0, np.int32), None, params=Params().stpls3d_refer
    )
    assert inst.shape == (0,) and table.height == 0


def test_pseudo_instances_single_vehicle_no_building() -> None:
    xyz, sem = _stpls3d_cloud([(0, (0, 0, 50, 50), 3000), (5, (10, 10, 14.5, 11.9), 120)])
    inst, table = pseudo_instances(xyz, sem, None, params=Params().stpls3d_refer)
    assert table["object_name"].to_list() == ["Car"]
    assert (inst[sem == 5] == 0).all() and (inst[sem != 5] == -1).all()
    assert np.isnan(table["mean_r"][0])


def test_pseudo_instances_all_points_one_class() -> None:
    xyz, sem = _stpls3d_cloud([(1, (0, 0, 20, 15), 3000)])
    inst, table = pseudo_instances(xyz, sem, None, params=Params().stpls3d_refer)
    assert table.height == 1 and (inst == 0).all()
    assert table["n_points"][0] == 3000


def test_pseudo_instances_touching_buildings_merge_separated_split() -> None:
    touching, sem = _stpls3d_cloud([(1, (0, 0, 10, 10), 1500), (1, (10, 0, 20, 10), 1500)])
    _, table = pseudo_instances(touching, sem, None, params=Params().stpls3d_refer)
    assert table.height == 1  # documented limit of grid connectivity: a shared wall joins them
    apart, sem = _stpls3d_cloud([(1, (0, 0, 10, 10), 1500), (1, (14, 0, 24, 10), 1500)])
    inst, table = pseudo_instances(apart, sem, None, params=Params().stpls3d_refer)
    assert table.height == 2 and inst[0] != inst[-1]
