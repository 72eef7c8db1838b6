import json
from pathlib import Path

import numpy as np
import pytest

from urbex.io.cityrefer import read_annotations, read_box3d, read_false_segments, read_segs
from urbex.io.datasets import list_scenes, read_scene
from urbex.io.geojson import read_landmarks_geojson
from urbex.synth.dataset import asprs_from_sensaturban, generate_dataset, scene_split
from urbex.synth.manifest import DEFECT_REASONS, read_manifest

KW = dict(
    scenes=3, seed=11, density=5.0, size=90.0, las_copy=True, stpls3d_scenes=1, progress=False
)


@pytest.fixture(scope="module")
def ds(tmp_path_factory):
    out = tmp_path_factory.mktemp("synth") / "data"
    return out, generate_dataset(out, **KW)


def _all_anns(root: Path):
    out = []
    for split in ("train", "val", "test"):
        out += [
            (split, a) for a in read_annotations(root / "meta_data" / f"CityRefer_{split}.json")
        ]
    return out


def test_generate_dataset_reads_back_through_io(ds):
    root, man = ds
    ids = man.scene_ids("cityrefer")
    assert sorted(list_scenes("cityrefer", root)) == sorted(ids)
    for entry in man.scenes:
        if entry.layout != "cityrefer":
            continue
        raw = read_scene("cityrefer", root, entry.scene_id)
        assert len(raw.cloud) == entry.n_points
        segs = read_segs(root / "scans" / entry.scene_id / f"{entry.scene_id}.segs.json")
        box_ids = {int(b.object_id) for b in raw.boxes}
        assert set(segs) == box_ids == {b.instance_id for b in raw.boxes}
        assert len(box_ids) == entry.n_instances
        inst = raw.cloud.instance
        for b in raw.boxes:
            pts = raw.cloud.xyz[inst == b.instance_id]
            assert len(pts) == len(segs[b.instance_id]) > 0
            lo, hi = b.box3d[:3], b.box3d[3:]
            assert np.all(pts >= lo - 1e-3) and np.all(pts <= hi + 1e-3)
        assert raw.landmark_file is not None


def test_generate_dataset_same_seed_identical_files(ds, tmp_path):
    root, _ = ds
    again = tmp_path / "again"
    generate_dataset(again, **KW)
    for rel in [
        "synth_manifest.json",
        "box3d/synthville_block_0_bbox.json",
        "meta_data/CityRefer_train.json",
        "scans/synthville_block_1/synthville_block_1.ply",
        "false_segments/false_segments.csv",
        "stpls3d/RealWorldData/SYNTHUSC_points.txt",
    ]:
        assert (root / rel).read_bytes() == (again / rel).read_bytes(), rel


def test_manifest_defects_are_exactly_the_defective_rows(ds):
    root, man = ds
    boxes = {
        sid: {b.object_id for b in read_box3d(root / "box3d" / f"{sid}_bbox.json")[1]}
        for sid in man.scene_ids()
    }
    false = {(f.scene_id, f.object_id) for f in read_false_segments(root / "false_segments")}
    seen: set[tuple[str, str, str]] = set()
    found = set()
    for _, a in _all_anns(root):
        key = (a.scene_id, a.object_id, a.description)
        words = a.description.split()
        if not words:
            reason = "empty"
        elif len(words) == 1:
            reason = "too_short"
        elif a.object_id not in boxes[a.scene_id]:
            reason = "missing_instance"
        elif (a.scene_id, a.object_id) in false:
            reason = "false_segment"
        elif key in seen:
            reason = "duplicate"
        else:
            reason = None
        seen.add(key)
        if reason:
            found.add((a.scene_id, a.ann_id, a.object_id, reason))
    planted = {(d.scene_id, d.ann_id, d.object_id, d.reason) for d in man.defects}
    assert planted == found
    assert {d.reason for d in man.defects} == set(DEFECT_REASONS)


def test_valid_rows_are_unique_and_in_the_right_split(ds):
    root, man = ds
    bad = {(d.scene_id, d.object_id, d.ann_id) for d in man.defects}
    split_of = {s.scene_id: s.split for s in man.scenes if s.layout == "cityrefer"}
    texts = set()
    n_valid = 0
    for split, a in _all_anns(root):
        assert split_of[a.scene_id] == split
        if (a.scene_id, a.object_id, a.ann_id) in bad:
            continue
        n_valid += 1
        assert (a.scene_id, a.description) not in texts
        texts.add((a.scene_id, a.description))
        assert a.object_name in {"Building", "Car", "Parking", "Ground"}
    assert n_valid >= 10
    assert sorted(split_of.values()) == ["test", "train", "val"]
    worded = {(r.scene_id, r.object_id, r.ann_id) for r in man.phrasings}
    assert len(worded) == n_valid and not worded & bad  # one record per valid row


def test_box3d_landmarks_appear_in_geojson(ds):
    root, man = ds
    for sid in man.scene_ids():
        _, boxes = read_box3d(root / "box3d" / f"{sid}_bbox.json")
        gdf = read_landmarks_geojson(root / "landmarks" / f"{sid}.geojson")
        names = set(gdf["name"])
        named = {b.landmark for b in boxes if b.landmark}
        assert named and named <= names
        assert {"road"} <= set(gdf["kind"]) and gdf.crs.to_epsg() == 27700
        # geometry is local + offset
        entry = next(s for s in man.scenes if s.scene_id == sid)
        b = next(b for b in boxes if b.landmark)
        geom = gdf[gdf["name"] == b.landmark].geometry.iloc[0]
        cx, cy = geom.centroid.x - entry.offset[0], geom.centroid.y - entry.offset[1]
        assert (
            abs(cx - b.center[0]) < b.size[0] / 2 + 1 and abs(cy - b.center[1]) < b.size[1] / 2 + 1
        )


def test_las_copy_has_crs_offset_and_instances(ds):
    root, man = ds
    assert sorted(list_scenes("las", root / "las")) == sorted(man.scene_ids())
    sid = man.scene_ids()[0]
    entry = next(s for s in man.scenes if s.scene_id == sid)
    las = read_scene("las", root / "las", sid)
    ply = read_scene("cityrefer", root, sid)
    assert "27700" in str(las.cloud.crs) or "British National Grid" in str(las.cloud.crs)
    np.testing.assert_allclose(
        las.cloud.world_xyz(), ply.cloud.world_xyz() + np.array(entry.offset), atol=2e-3
    )
    np.testing.assert_array_equal(las.cloud.instance, ply.cloud.instance)
    np.testing.assert_array_equal(las.cloud.semantic, asprs_from_sensaturban(ply.cloud.semantic))
    assert las.landmark_file is not None and las.landmark_file.suffix == ".geojson"


def test_stpls3d_has_no_instance_column_and_hidden_truth_aligns(ds):
    root, _ = ds
    st = root / "stpls3d"
    assert list_scenes("stpls3d", st) == ["SYNTHUSC"]
    header = (st / "RealWorldData" / "SYNTHUSC_points.txt").open().readline().strip()
    assert header == "x,y,z,r,g,b,semantic"
    raw = read_scene("stpls3d", st, "SYNTHUSC")
    assert raw.cloud.instance is None and raw.landmark_file is not None
    hidden = np.load(st / "hidden" / "SYNTHUSC_instances.npy")
    assert hidden.dtype == np.int32 and hidden.shape == (len(raw.cloud),)
    objs = json.loads((st / "hidden" / "SYNTHUSC_objects.json").read_text())["objects"]
    assert {o["instance_id"] for o in objs} == set(np.unique(hidden[hidden >= 0]).tolist())
    for o in objs:
        m = hidden == o["instance_id"]
        assert set(np.unique(raw.cloud.semantic[m]).tolist()) == {o["semantic"]}
        pts = raw.cloud.xyz[m]
        assert np.all(pts >= np.array(o["box"][:3]) - 1e-3) and np.all(
            pts <= np.array(o["box"][3:]) + 1e-3
        )


def test_read_manifest_round_trips(ds):
    root, man = ds
    back = read_manifest(root)
    assert back.scenes == man.scenes and back.defects == man.defects and back.params == man.params
    assert back.phrasings == man.phrasings and len(man.phrasings) > 0
    assert not [
        p for p in root.parent.iterdir() if p.name.startswith(".data.")
    ]  # no temp leftovers


def test_generate_dataset_overwrites_existing_output(tmp_path):
    out = tmp_path / "d"
    generate_dataset(out, scenes=1, seed=0, density=2.0, size=60.0, las_copy=False, progress=False)
    m = generate_dataset(
        out, scenes=1, seed=1, density=2.0, size=60.0, las_copy=False, progress=False
    )
    assert read_manifest(out).seed == 1 == m.seed
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]


def test_generate_dataset_unknown_format_raises(tmp_path):
    with pytest.raises(ValueError, match="formats"):
        generate_dataset(tmp_path / "x", formats=("ply",), progress=False)
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize(
    ("n", "counts"), [(1, (1, 0, 0)), (2, (1, 0, 1)), (3, (1, 1, 1)), (10, (6, 2, 2))]
)
def test_scene_split_counts(n, counts):
    s = scene_split(n, 0)
    assert (s.count("train"), s.count("val"), s.count("test")) == counts
