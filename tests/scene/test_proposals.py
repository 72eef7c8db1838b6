"""Instance proposals of a scene's points (the agent's marks): the algorithm, the ids' order,
the point labels, and what the scene cache stores."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from urbex.config import SceneParams
from urbex.errors import StaleCacheError
from urbex.pointcloud import PointCloud
from urbex.scene import SceneCache, build_scene_cache
from urbex.scene.proposals import build_proposals, proposals_from_table, propose

P = SceneParams(resolution=0.5, cell_size=4.0, global_view_size=64, hole_fill_iterations=0)


def _car(rng: np.random.Generator, x: float, y: float, n: int = 300) -> np.ndarray:
    return np.c_[rng.uniform(x, x + 4.5, n), rng.uniform(y, y + 2, n), np.full(n, 1.5)]


def _street(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Three cars (class 9) on a car park (5) and a building (2), with grey colours."""
    rng = np.random.default_rng(seed)
    cars = [_car(rng, 0, 0), _car(rng, 10, 0), _car(rng, 0, 20)]
    park = np.c_[rng.uniform(-5, 20, 4000), rng.uniform(-5, 10, 4000), np.zeros(4000)]
    house = np.c_[rng.uniform(30, 45, 3000), rng.uniform(30, 40, 3000), rng.uniform(0, 9, 3000)]
    xyz = np.vstack([*cars, park, house])
    sem = np.r_[np.full(900, 9), np.full(4000, 5), np.full(3000, 2)]
    rgb = np.full((len(xyz), 3), 128, np.uint8)
    return xyz, sem, rgb


def test_proposal_ids_run_in_reading_order_and_label_their_points():
    xyz, sem, rgb = _street()
    p, labels = build_proposals(xyz, sem, rgb, class_scheme="sensaturban")
    assert p.mark_id.tolist() == [1, 2, 3, 4, 5]
    centre_y = (p.box_2d_m[:, 1] + p.box_2d_m[:, 3]) / 2
    assert np.all(np.diff(centre_y) <= 0)  # north to south
    assert p.class_name.tolist() == ["Building", "Car", "Parking", "Car", "Car"]
    # every point of a proposal carries its id; other points 0
    for row, mid in enumerate(p.mark_id.tolist()):
        mine = xyz[labels == mid]
        assert len(mine) == p.n_points[row]
        assert np.allclose(mine[:, :2].min(0), p.box_2d_m[row, :2])
        assert np.allclose(mine[:, :2].max(0), p.box_2d_m[row, 2:])
        assert np.isclose(mine[:, 2].max(), p.z_range_m[row, 1])
    assert np.allclose(p.rgb, 128)


def test_point_labels_in_chunks_and_on_disk_match_the_whole_array(tmp_path: Path) -> None:
    """The build streams the labels in chunks (never a label per point in memory): any chunking
    and the ``.npy`` it writes give the same labels; classes without proposals label 0."""
    xyz, sem, rgb = _street(2)
    sem = np.r_[sem[:-10], np.full(10, 77)]  # a label no class maps to
    p, whole = build_proposals(xyz, sem, rgb, class_scheme="sensaturban")
    _, labels = propose(xyz, sem, rgb, class_scheme="sensaturban")
    assert len(labels) == len(xyz) and whole[-10:].tolist() == [0] * 10
    stitched = np.concatenate([labels.chunk(a, a + 777) for a in range(0, len(xyz), 777)])
    assert np.array_equal(stitched, whole)
    assert labels.chunk(-5, 3).tolist() == whole[:3].tolist()  # clipped to the cloud
    assert labels.chunk(len(xyz) - 2, len(xyz) + 50).size == 2
    path = labels.save_npy(tmp_path / "proposal.npy", chunk=1000)
    assert np.array_equal(np.load(path), whole)
    assert sorted(set(whole.tolist()) - {0}) == p.mark_id.tolist()
    _, none = propose(xyz, None, rgb, class_scheme="sensaturban")  # no semantics: all 0
    assert not none.array().any() and len(none) == len(xyz)


def test_proposals_ignore_instance_ids_and_are_deterministic():
    xyz, sem, rgb = _street(1)
    a, la = build_proposals(xyz, sem, rgb, class_scheme="sensaturban")
    b, lb = build_proposals(xyz, sem, rgb, class_scheme="sensaturban")
    assert a.to_arrow().equals(b.to_arrow()) and np.array_equal(la, lb)


def test_proposals_round_trip_through_the_table():
    xyz, sem, rgb = _street(2)
    p, _ = build_proposals(xyz, sem, rgb, class_scheme="sensaturban", origin_m=(100, 200, 3))
    q = proposals_from_table(p.to_arrow())
    assert q.mark_id.tolist() == p.mark_id.tolist()
    assert np.array_equal(q.box_2d_m, p.box_2d_m) and np.array_equal(q.z_range_m, p.z_range_m)
    assert p.box_2d_m[:, 0].min() > 90  # the origin is added: world metres
    assert np.allclose(q.box_3d_m(0)[[2, 5]], p.z_range_m[0])


def test_proposals_without_classes_are_empty():
    xyz, _, _ = _street()
    p, labels = build_proposals(xyz, None, None, class_scheme="sensaturban")
    assert len(p) == 0 and not labels.any()


def test_scene_cache_stores_proposals_and_each_points_mark(tmp_path: Path):
    xyz, sem, rgb = _street(3)
    cloud = PointCloud(
        xyz=xyz.astype(np.float32), offset=np.array([500.0, 200.0, 3.0]), rgb=rgb,
        semantic=sem.astype(np.int32), instance=np.full(len(xyz), -1, np.int32), source="t",
    )  # fmt: skip
    build_scene_cache(cloud, tmp_path / "s", P, scene_id="s")
    cache = SceneCache.open(tmp_path / "s")
    assert cache.meta.n_proposals == len(cache.proposals) == 5
    p = cache.proposals
    assert p.box_2d_m[:, 0].min() > 490  # world metres (offset included)
    idx = cache.crop_indices(p.box_2d_m[0])
    labels = cache.proposal_of(idx)
    assert np.count_nonzero(labels == 1) == p.n_points[0]


def test_a_cache_built_before_proposals_names_the_rebuild_command(tmp_path: Path):
    xyz, sem, rgb = _street(4)
    cloud = PointCloud(xyz=xyz.astype(np.float32), rgb=rgb, semantic=sem.astype(np.int32))
    build_scene_cache(cloud, tmp_path / "old", P, scene_id="old")
    meta = tmp_path / "old" / "meta.json"
    data = json.loads(meta.read_text())
    del data["n_proposals"]  # as an older urbex wrote it
    meta.write_text(json.dumps(data))
    (tmp_path / "old" / "proposals.parquet").unlink()
    cache = SceneCache.open(tmp_path / "old")  # still opens: only marks need proposals
    assert not cache.has_proposals
    with pytest.raises(StaleCacheError, match=r"urbex cache --scene old --force"):
        _ = cache.proposals
    with pytest.raises(StaleCacheError, match="old"):
        cache.proposal_of([0])
