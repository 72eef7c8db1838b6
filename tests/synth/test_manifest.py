"""The synthetic data set's manifest: records validated, written and read back."""

from __future__ import annotations

import json

import pytest

from urbex.errors import AnnotationError
from urbex.synth.manifest import (
    Defect,
    PhrasingRecord,
    SceneEntry,
    SynthManifest,
    read_manifest,
)


def _scene(sid, layout="cityrefer", split="train"):
    return SceneEntry(scene_id=sid, layout=layout, split=split, style="sensaturban", seed=1,
                      crs="EPSG:27700", offset=(1.0, 2.0, 3.0), n_points=10, n_instances=2,
                      n_queries=3)  # fmt: skip


def _manifest(tmp_path):
    return SynthManifest(
        root=tmp_path,
        params={"scenes": 2},
        seed=7,
        scenes=(_scene("a"), _scene("s3d", layout="stpls3d", split=""), _scene("b")),
        defects=(Defect(scene_id="a", ann_id=3, object_id="1", reason="duplicate"),),
        phrasings=(
            PhrasingRecord(scene_id="a", ann_id=0, object_id="1", family="plain", noise=("typo",)),
            PhrasingRecord(
                scene_id="b",
                ann_id=0,
                object_id="2",
                family="existential",
                noise=("misspelled_name",),
                phenomena=("count", "misspelled_name"),
            ),
        ),
    )


def test_manifest_round_trips_through_json(tmp_path):
    m = _manifest(tmp_path)
    (tmp_path / "synth_manifest.json").write_text(json.dumps(m.to_dict()))
    back = read_manifest(tmp_path)  # the directory, or the file
    assert back == m and read_manifest(tmp_path / "synth_manifest.json") == m
    assert back.scenes[0].offset == (1.0, 2.0, 3.0) and back.phrasings[0].noise == ("typo",)
    assert back.phrasings[1].phenomena == ("count", "misspelled_name")
    assert "root" not in m.to_dict()


def test_scene_ids_per_layout_in_generation_order(tmp_path):
    m = _manifest(tmp_path)
    assert m.scene_ids() == ["a", "b"] and m.scene_ids("stpls3d") == ["s3d"]


def test_manifest_without_phenomena_reads_as_none(tmp_path):
    doc = _manifest(tmp_path).to_dict()
    for r in doc["phrasings"]:
        del r["phenomena"]  # written before GENERATOR_VERSION 3
    (tmp_path / "synth_manifest.json").write_text(json.dumps(doc))
    assert [r.phenomena for r in read_manifest(tmp_path).phrasings] == [(), ()]


def test_manifest_without_phrasings_reads_as_none(tmp_path):
    doc = _manifest(tmp_path).to_dict()
    del doc["phrasings"]  # written before GENERATOR_VERSION 2
    (tmp_path / "synth_manifest.json").write_text(json.dumps(doc))
    assert read_manifest(tmp_path).phrasings == ()


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda d: d.pop("scenes"), "scenes"),
        (lambda d: d["defects"][0].update(reason="ugly"), "Defect.reason: expected one of"),
        (lambda d: d["phrasings"][0].update(family="shouty"), "shouty"),
        (lambda d: d["phrasings"][1].update(phenomena=["poetry"]), "poetry"),
        (lambda d: d["scenes"][0].update(colour="red"), "colour"),
    ],
)
def test_read_manifest_malformed_records_raise_annotation_error(tmp_path, edit, match):
    doc = _manifest(tmp_path).to_dict()
    edit(doc)
    (tmp_path / "synth_manifest.json").write_text(json.dumps(doc))
    with pytest.raises(AnnotationError, match=match) as e:
        read_manifest(tmp_path)
    assert e.value.path == tmp_path / "synth_manifest.json"


def test_read_manifest_missing_file_raises_annotation_error(tmp_path):
    with pytest.raises(AnnotationError, match="not a valid synth manifest"):
        read_manifest(tmp_path)


def test_defect_and_phrasing_validate_on_construction():
    with pytest.raises(ValueError, match=r"Defect.reason"):
        Defect(scene_id="a", ann_id=0, object_id="1", reason="bad")
    with pytest.raises(ValueError):
        PhrasingRecord(scene_id="a", ann_id=0, object_id="1", family="plain", noise=("shout",))
