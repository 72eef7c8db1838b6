"""Tests for urbex.io._ply_fast: the one-pass decoder gives what the numpy path gives, bit for bit.

Each test forces the decoder on (``FAST_MIN_POINTS`` = 0) and compares against the numpy path
(``FAST_MIN_POINTS`` huge) on the same file. Few distinct row layouts are used: numba compiles
the loop once per layout.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from urbex.errors import PointCloudFormatError
from urbex.io import ply
from urbex.io._ply_fast import fast_layout
from urbex.io.ply import PlyReader, read_ply, write_ply
from urbex.pointcloud import PointCloud

NUMPY_ONLY = 1 << 62


def _cloud(n: int, *, seed: int = 0) -> PointCloud:
    rng = np.random.default_rng(seed)
    return PointCloud(
        xyz=(rng.random((n, 3)) * 400 - 50).astype(np.float32),
        rgb=rng.integers(0, 256, (n, 3), dtype=np.uint8),
        semantic=rng.integers(0, 13, n).astype(np.int32),
        instance=rng.integers(-1, 1000, n).astype(np.int32),
    )


def _both(monkeypatch: pytest.MonkeyPatch, path: Path) -> tuple[PointCloud, PointCloud]:
    """(decoder, numpy path) reads of ``path``."""
    monkeypatch.setattr(ply, "FAST_MIN_POINTS", 0)
    fast = read_ply(path)
    monkeypatch.setattr(ply, "FAST_MIN_POINTS", NUMPY_ONLY)
    return fast, read_ply(path)


def _assert_identical(a: PointCloud, b: PointCloud) -> None:
    for name in ("xyz", "offset", "rgb", "semantic", "instance"):
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None), name
        if x is not None:
            assert x.dtype == y.dtype and x.shape == y.shape, name
            assert x.tobytes() == y.tobytes(), name
    assert a.crs == b.crs


def _odd_layout_file(path: Path, n: int, seed: int = 1) -> np.ndarray:
    """double xyz out of order among extra properties, ushort labels, char instances."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(
        [
            ("instance", "<i2"),
            ("nx", "<f4"),
            ("z", "<f8"),
            ("blue", "u1"),
            ("label", "<u2"),
            ("y", "<f8"),
            ("alpha", "u1"),
            ("x", "<f8"),
            ("green", "u1"),
            ("red", "u1"),
        ]
    )
    rows = np.zeros(n, dt)
    rows["x"] = 512_000 + rng.random(n) * 300
    rows["y"] = 5_400_000 + rng.random(n) * 300
    rows["z"] = rng.random(n) * 40 - 5
    rows["x"][:3] = rows["x"][3]  # ties in the bounds
    for c in ("red", "green", "blue", "alpha"):
        rows[c] = rng.integers(0, 256, n)
    rows["label"] = rng.integers(0, 65535, n)
    rows["instance"] = rng.integers(-32768, 32767, n)
    rows["nx"] = rng.random(n)
    ply_types = {"<i2": "short", "<f4": "float", "<f8": "double", "|u1": "uchar", "<u2": "ushort"}
    props = "".join(f"property {ply_types[dt[k].str]} {k}\n" for k in dt.names)
    head = (
        "ply\nformat binary_little_endian 1.0\ncomment crs EPSG:32630\n"
        f"element camera 1\nproperty int id\nelement vertex {n}\n{props}"
        "element extra 2\nproperty float w\nend_header\n"
    )
    extra = np.arange(2, dtype="<f4").tobytes()
    path.write_bytes(head.encode() + np.int32(7).tobytes() + rows.tobytes() + extra)
    return rows


def test_decoder_matches_numpy_path_on_write_ply_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    c = _cloud(2_000)
    write_ply(tmp_path / "a.ply", c)
    fast, slow = _both(monkeypatch, tmp_path / "a.ply")
    _assert_identical(fast, slow)
    np.testing.assert_array_equal(fast.xyz, c.xyz)
    np.testing.assert_array_equal(fast.instance, c.instance)
    assert fast.xyz.flags.c_contiguous and fast.xyz.flags.writeable
    xyz_only = PointCloud(xyz=c.xyz)
    write_ply(tmp_path / "b.ply", xyz_only)
    fast, slow = _both(monkeypatch, tmp_path / "b.ply")
    _assert_identical(fast, slow)
    assert fast.rgb is None and fast.semantic is None and fast.instance is None


def test_decoder_odd_order_extra_properties_and_offset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = _odd_layout_file(tmp_path / "odd.ply", 1_500)
    with PlyReader(tmp_path / "odd.ply") as r:
        assert r._fast is not None  # the decoder takes this layout
    fast, slow = _both(monkeypatch, tmp_path / "odd.ply")
    _assert_identical(fast, slow)
    assert fast.xyz.dtype == np.float64 and fast.offset[0] == np.floor(rows["x"].min())
    np.testing.assert_array_equal(fast.world_xyz()[:, 0], rows["x"])
    np.testing.assert_array_equal(fast.rgb[:, 2], rows["blue"])
    np.testing.assert_array_equal(fast.semantic, rows["label"].astype(np.int32))
    np.testing.assert_array_equal(fast.instance, rows["instance"].astype(np.int32))
    assert fast.crs == "EPSG:32630"


def test_decoder_chunks_equal_numpy_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _odd_layout_file(tmp_path / "odd.ply", 1_000)
    got = []
    for limit in (0, NUMPY_ONLY):
        monkeypatch.setattr(ply, "FAST_MIN_POINTS", limit)
        with PlyReader(tmp_path / "odd.ply") as r:
            got.append(list(r.iter_chunks(300)))
    assert [len(c) for c in got[0]] == [300, 300, 300, 100]
    for a, b in zip(*got, strict=True):
        _assert_identical(a, b)


@pytest.mark.parametrize("value", [np.nan, -np.inf, 3e30])
def test_decoder_bad_coordinate_raises_like_numpy_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: float
) -> None:
    c = _cloud(60, seed=4)
    xyz = c.xyz.copy()
    xyz[[27, 30], 2] = value
    p = tmp_path / "bad.ply"
    write_ply(p, PointCloud(xyz=xyz, rgb=c.rgb, semantic=c.semantic, instance=c.instance))
    messages = []
    for limit in (0, NUMPY_ONLY):
        monkeypatch.setattr(ply, "FAST_MIN_POINTS", limit)
        with pytest.raises(PointCloudFormatError, match=r"of 60 rows, 2 .*row 27") as e:
            read_ply(p)
        assert e.value.field == "z"
        messages.append(str(e.value))
        with PlyReader(p) as r, pytest.raises(PointCloudFormatError, match=r"rows 20\.\.39"):
            list(r.iter_chunks(20))
    assert messages[0] == messages[1]


@pytest.mark.parametrize(
    "props,order",
    [
        ("property float x\nproperty float y\nproperty float z\n", ">"),  # big-endian
        ("property float x\nproperty double y\nproperty float z\n", "<"),  # mixed types
        ("property int x\nproperty int y\nproperty int z\n", "<"),  # integer coordinates
        ("property float x\nproperty float y\nproperty float z\nproperty float class\n", "<"),
        (
            "property float x\nproperty float y\nproperty float z\n"
            "property ushort red\nproperty ushort green\nproperty ushort blue\n",
            "<",
        ),
    ],
    ids=["big-endian", "mixed-xyz", "int-xyz", "float-labels", "16-bit-colours"],
)
def test_fast_layout_declines_and_numpy_path_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, props: str, order: str
) -> None:
    names = [line.split()[-1] for line in props.splitlines()]
    types = {"float": "f4", "double": "f8", "int": "i4", "ushort": "u2"}
    dt = np.dtype(
        [(line.split()[-1], order + types[line.split()[1]]) for line in props.splitlines()]
    )
    rows = np.zeros(5, dt)
    for i, name in enumerate(names):
        rows[name] = np.arange(5) * (i + 1) + 1
    fmt = "binary_big_endian" if order == ">" else "binary_little_endian"
    head = f"ply\nformat {fmt} 1.0\nelement vertex 5\n{props}end_header\n"
    (tmp_path / "d.ply").write_bytes(head.encode() + rows.tobytes())
    monkeypatch.setattr(ply, "FAST_MIN_POINTS", 0)
    with PlyReader(tmp_path / "d.ply") as r:
        assert r._fast is None
        cloud = r.read()
    np.testing.assert_array_equal(cloud.xyz, np.stack([rows[a] for a in "xyz"], 1))
    if "class" in names:
        np.testing.assert_array_equal(cloud.semantic, rows["class"].astype(np.int32))


def test_fast_layout_view_puts_fields_at_file_offsets(tmp_path: Path) -> None:
    _odd_layout_file(tmp_path / "odd.ply", 4)
    with PlyReader(tmp_path / "odd.ply") as r:
        layout = fast_layout(r._vertex, "<", "label", "instance")
        row = r._vertex.dtype("<")
    assert layout is not None and layout.view.itemsize == row.itemsize
    for canon, name in [
        ("x", "x"),
        ("z", "z"),
        ("r", "red"),
        ("sem", "label"),
        ("inst", "instance"),
    ]:
        assert layout.view.fields[canon][1] == row.fields[name][1]
        assert layout.view.fields[canon][0] == row.fields[name][0]
    assert (layout.has_rgb, layout.has_sem, layout.has_inst) == (True, True, True)
    assert fast_layout(r._vertex, ">", "label", "instance") is None


def test_decoder_slices_give_the_same_cloud_and_release_the_mapped_pages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from urbex.io import _ply_fast

    _odd_layout_file(tmp_path / "odd.ply", 3_000)
    released: list[int] = []
    orig = _ply_fast._MappedPages.release

    def spy(self, rows):  # type: ignore[no-untyped-def]
        released.append(len(rows))
        orig(self, rows)

    whole = read_ply(tmp_path / "odd.ply")  # one slice
    monkeypatch.setattr(_ply_fast._MappedPages, "release", spy)
    monkeypatch.setattr(ply, "FAST_MIN_POINTS", 0)
    monkeypatch.setattr(_ply_fast, "_SLICE_BYTES", 7_000)  # 7,000 bytes: many slices
    sliced = read_ply(tmp_path / "odd.ply")
    _assert_identical(whole, sliced)
    assert len(released) > 10 and sum(released) == 3_000  # every slice, once
