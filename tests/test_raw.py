"""The raw data set: the synthetic default generated once per fingerprint, or a user's root."""

from __future__ import annotations

import json

import pytest

from urbex.config import Params
from urbex.errors import ConfigError
from urbex.raw import materialize_raw, raw_dataset, synthetic_scene_ids

SYNTH = {"scenes": 2, "size": 40.0, "density": 2.0, "las_copy": False, "stpls3d_scenes": 0}


def _params(tmp_path, **kw):
    return Params(paths={"assets": tmp_path / "assets"}, synth=SYNTH, **kw)


def test_synthetic_scene_ids_follow_synth_scenes(tmp_path):
    assert synthetic_scene_ids(_params(tmp_path).synth) == [
        "synthville_block_0",
        "synthville_block_1",
    ]


def test_raw_dataset_synthetic_is_described_without_generating(tmp_path):
    ds = raw_dataset(_params(tmp_path, data={"scenes": ["synthville_block_1"]}))
    assert ds.generated and ds.source == "cityrefer"
    assert ds.scene_ids == ("synthville_block_1",)
    assert ds.root == tmp_path / "assets" / "raw" / "synthetic" and not ds.root.exists()


def test_raw_dataset_unknown_scene_names_the_available_ones(tmp_path):
    with pytest.raises(ConfigError, match=r"data.scenes lists \['synthville_block_9'\]"):
        raw_dataset(_params(tmp_path, data={"scenes": ["synthville_block_9"]}))


@pytest.mark.parametrize("make", ["unset", "missing", "empty"])
def test_raw_dataset_real_source_needs_a_root_with_scenes(tmp_path, make):
    data = {"source": "cityrefer"}
    if make != "unset":
        data["root"] = str(tmp_path / "root")
    if make == "empty":
        (tmp_path / "root").mkdir()
    match = {"unset": "data.root must be set", "missing": "is not a directory",
             "empty": "holds no scenes in the 'cityrefer' layout"}[make]  # fmt: skip
    with pytest.raises(ConfigError, match=match):
        raw_dataset(_params(tmp_path, data=data))


def test_materialize_raw_generates_once_per_fingerprint_then_registers_a_real_root(tmp_path):
    params = _params(tmp_path)
    ds = materialize_raw(params, progress=False)
    stamp = ds.root / ".urbex_synth"
    assert stamp.is_file() and ds.scene_ids == ("synthville_block_0", "synthville_block_1")
    assert [p.name for p in ds.root.parent.iterdir()] == ["synthetic"]  # no staging left
    before = stamp.stat().st_mtime_ns
    materialize_raw(params, progress=False)  # same params: nothing regenerated
    assert stamp.stat().st_mtime_ns == before
    other = Params(paths={"assets": tmp_path / "assets"}, synth={**SYNTH, "seed": 1})
    materialize_raw(other, progress=False)  # other synth params: regenerated
    assert stamp.read_text() != "" and stamp.stat().st_mtime_ns != before

    real = _params(tmp_path / "real", data={"source": "cityrefer", "root": str(ds.root)})
    reg = materialize_raw(real)
    assert not reg.generated and reg.root == ds.root
    doc = json.loads(real.layout.raw_registered.read_text())
    assert doc == {"source": "cityrefer", "root": str(ds.root),
                   "scene_ids": ["synthville_block_0", "synthville_block_1"]}  # fmt: skip
