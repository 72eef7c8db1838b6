"""Tests for urbex.io.ply: round trips, byte orders, chunking, and malformed files."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

from urbex.errors import PointCloudFormatError
from urbex.io.ply import PlyReader, read_ply, write_ply
from urbex.pointcloud import PointCloud


def _cloud(n: int = 500, *, dtype: type = np.float32, seed: int = 0, **kw: object) -> PointCloud:
    rng = np.random.default_rng(seed)
    return PointCloud(
        xyz=(rng.random((n, 3)) * 400 - 50).astype(dtype),
        rgb=rng.integers(0, 256, (n, 3), dtype=np.uint8),
        semantic=rng.integers(0, 13, n).astype(np.int32),
        instance=rng.integers(-1, 1000, n).astype(np.int32),
        **kw,
    )


def _assert_same(a: PointCloud, b: PointCloud) -> None:
    assert a.xyz.dtype == b.xyz.dtype
    np.testing.assert_array_equal(a.world_xyz(), b.world_xyz())
    for name in ("rgb", "semantic", "instance"):
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None), name
        if x is not None:
            np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("ascii", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_write_ply_roundtrip_exact(tmp_path: Path, ascii: bool, dtype: type) -> None:
    c = _cloud(dtype=dtype, crs="EPSG:32630")
    write_ply(tmp_path / "a.ply", c, ascii=ascii)
    r = read_ply(tmp_path / "a.ply")
    _assert_same(c, r)
    assert r.crs == "EPSG:32630"
    assert r.source == str(tmp_path / "a.ply")
    assert not list(tmp_path.glob(".*tmp*")), "temporary file left behind"


def test_write_ply_roundtrip_bytesio() -> None:
    c = _cloud(n=37)
    buf = io.BytesIO()
    write_ply(buf, c)
    buf.seek(0)
    _assert_same(c, read_ply(buf))


def test_write_ply_optional_fields_absent(tmp_path: Path) -> None:
    c = PointCloud(xyz=np.zeros((4, 3), np.float32))
    write_ply(tmp_path / "a.ply", c)
    r = read_ply(tmp_path / "a.ply")
    assert r.rgb is None and r.semantic is None and r.instance is None and len(r) == 4


def test_write_ply_empty_cloud(tmp_path: Path) -> None:
    write_ply(tmp_path / "a.ply", PointCloud(xyz=np.zeros((0, 3), np.float32)))
    assert len(read_ply(tmp_path / "a.ply")) == 0


def test_read_ply_large_double_coords_get_offset(tmp_path: Path) -> None:
    c = _cloud(dtype=np.float64, offset=np.array([512_345.0, 5_400_123.0, 20.0]))
    write_ply(tmp_path / "a.ply", c)
    header = (tmp_path / "a.ply").read_bytes()[:400]
    assert b"property double x" in header
    r = read_ply(tmp_path / "a.ply")
    assert r.xyz.dtype == np.float64
    np.testing.assert_array_equal(r.offset, np.floor(c.world_xyz().min(axis=0)))
    assert np.abs(r.xyz).max() < 1000
    np.testing.assert_array_equal(r.world_xyz(), c.world_xyz())


def test_read_ply_small_double_coords_no_offset(tmp_path: Path) -> None:
    c = _cloud(dtype=np.float64)
    write_ply(tmp_path / "a.ply", c)
    r = read_ply(tmp_path / "a.ply")
    assert not r.offset.any() and r.xyz.dtype == np.float64


@pytest.mark.parametrize("order,fmt", [("<", "binary_little_endian"), (">", "binary_big_endian")])
def test_read_ply_byte_orders_and_aliases(tmp_path: Path, order: str, fmt: str) -> None:
    # handwritten file: double xyz, ushort colours (16-bit), float scalar_class, instance_id,
    # an ignored property, and a fixed-size element before the vertices
    n = 6
    rng = np.random.default_rng(1)
    dt = np.dtype(
        [
            ("x", order + "f8"),
            ("y", order + "f8"),
            ("z", order + "f8"),
            ("intensity", order + "u2"),
            ("red", order + "u2"),
            ("green", order + "u2"),
            ("blue", order + "u2"),
            ("scalar_class", order + "f4"),
            ("instance_id", order + "i4"),
        ]
    )
    rows = np.zeros(n, dt)
    for a in "xyz":
        rows[a] = rng.random(n) * 100
    for c in ("red", "green", "blue"):
        rows[c] = rng.integers(0, 256, n) * 257
    rows["scalar_class"] = rng.integers(0, 13, n)
    rows["instance_id"] = rng.integers(-1, 9, n)
    pre = np.arange(2, dtype=order + "i4")
    head = (
        f"ply\nformat {fmt} 1.0\nelement camera 2\nproperty int id\nelement vertex {n}\n"
        "property double x\nproperty double y\nproperty double z\nproperty ushort intensity\n"
        "property ushort red\nproperty ushort green\nproperty ushort blue\n"
        "property float scalar_class\nproperty int instance_id\n"
        "element face 1\nproperty list uchar int vertex_indices\nend_header\n"
    )
    face = np.array([3], "u1").tobytes() + np.arange(3, dtype=order + "i4").tobytes()
    (tmp_path / "h.ply").write_bytes(head.encode() + pre.tobytes() + rows.tobytes() + face)
    r = read_ply(tmp_path / "h.ply", class_scheme="stpls3d")
    np.testing.assert_array_equal(r.xyz, np.stack([rows[a] for a in "xyz"], 1))
    np.testing.assert_array_equal(r.rgb[:, 0], rows["red"] >> 8)
    np.testing.assert_array_equal(r.semantic, rows["scalar_class"].astype(np.int32))
    np.testing.assert_array_equal(r.instance, rows["instance_id"])
    assert r.class_scheme == "stpls3d"


def test_read_ply_ascii_fixture_face_first_crlf(data_dir: Path) -> None:
    r = read_ply(data_dir / "tiny_ascii_face.ply")
    np.testing.assert_array_equal(
        r.xyz, np.array([[0.5, 1.25, -2], [100.125, -3.5, 7], [1000, 2, 3]], np.float32)
    )
    np.testing.assert_array_equal(r.rgb[0], [255, 0, 10])
    np.testing.assert_array_equal(r.semantic, [2, 9, 0])


@pytest.mark.parametrize("ascii", [False, True])
def test_ply_reader_iter_chunks_concatenate_to_whole(tmp_path: Path, ascii: bool) -> None:
    c = _cloud(n=1001, dtype=np.float64, offset=np.array([6e5, 0.0, 0.0]))
    write_ply(tmp_path / "a.ply", c, ascii=ascii)
    with PlyReader(tmp_path / "a.ply") as reader:
        assert reader.count == 1001
        assert reader.header.format == ("ascii" if ascii else "binary_little_endian")
        chunks = list(reader.iter_chunks(300))
    assert [len(ch) for ch in chunks] == [300, 300, 300, 101]
    assert all(np.array_equal(ch.offset, chunks[0].offset) for ch in chunks)
    world = np.concatenate([ch.world_xyz() for ch in chunks])
    np.testing.assert_allclose(world, c.world_xyz(), rtol=0, atol=1e-9)
    np.testing.assert_array_equal(np.concatenate([ch.instance for ch in chunks]), c.instance)


def test_write_ply_semantic_out_of_uchar_range_raises(tmp_path: Path) -> None:
    c = PointCloud(xyz=np.zeros((2, 3), np.float32), semantic=np.array([0, 300], np.int32))
    with pytest.raises(ValueError, match=r"'class'.*0\.\.255.*0\.\.300"):
        write_ply(tmp_path / "a.ply", c)
    assert not list(tmp_path.iterdir())


def _binary_header(props: str, n: int, fmt: str = "binary_little_endian") -> bytes:
    return f"ply\nformat {fmt} 1.0\nelement vertex {n}\n{props}end_header\n".encode()


XYZ = "property float x\nproperty float y\nproperty float z\n"


@pytest.mark.parametrize(
    "content,field,message",
    [
        (b"PLY\nformat ascii 1.0\n", "magic", "not a PLY file"),
        (b"\x00\x01binary junk", "magic", "not a PLY file"),
        (_binary_header(XYZ, 10) + b"\x00" * 12 * 4, "vertex", "promises 10 vertices.*holds 4"),
        (_binary_header(XYZ + "property float128 q\n", 1), "q", "unknown property type 'float128'"),
        (_binary_header("property float y\nproperty float z\n", 1), "x", "no 'x' property"),
        (
            _binary_header(XYZ + "property list uchar int nbrs\n", 1),
            "nbrs",
            "list properties on the vertex element",
        ),
        (_binary_header(XYZ, 1, fmt="binary_middle_endian"), "format", "unsupported format"),
        (
            b"ply\nformat ascii 1.0\nelement vertex 3\n" + XYZ.encode() + b"end_header\n1 2 3\n",
            "vertex",
            "promises 3 vertices, the file holds 1",
        ),
        (
            b"ply\nformat ascii 1.0\nelement face 0\nproperty int a\nend_header\n",
            "vertex",
            "no 'vertex' element",
        ),
    ],
    ids=[
        "magic",
        "binary-junk",
        "truncated",
        "unknown-type",
        "missing-x",
        "list",
        "format",
        "ascii-truncated",
        "no-vertex",
    ],
)
def test_read_ply_bad_input_raises_naming_file_and_field(
    tmp_path: Path, content: bytes, field: str, message: str
) -> None:
    p = tmp_path / "bad.ply"
    p.write_bytes(content)
    with pytest.raises(PointCloudFormatError, match=message) as info:
        read_ply(p)
    assert info.value.field == field
    assert str(p) in str(info.value) and repr(field) in str(info.value)


def test_read_ply_missing_file_raises(tmp_path: Path) -> None:
    with pytest.raises(PointCloudFormatError, match="cannot open"):
        read_ply(tmp_path / "nope.ply")


def test_read_ply_list_element_before_vertex_in_binary_raises(tmp_path: Path) -> None:
    head = (
        "ply\nformat binary_little_endian 1.0\nelement face 1\nproperty list uchar int idx\n"
        f"element vertex 1\n{XYZ}end_header\n"
    )
    (tmp_path / "f.ply").write_bytes(head.encode() + b"\x00" * 64)
    with pytest.raises(PointCloudFormatError, match="precedes 'vertex'"):
        read_ply(tmp_path / "f.ply")


def test_read_ply_16bit_colours_scaled_the_same_in_every_channel(tmp_path: Path) -> None:
    # a 16-bit file whose blue channel happens to stay <= 255 (dark blue) must still be
    # shifted like red and green, not read as 8-bit (which would make every point blue-ish)
    n = 4
    dt = np.dtype([(a, "<f4") for a in "xyz"] + [(c, "<u2") for c in ("red", "green", "blue")])
    rows = np.zeros(n, dt)
    rows["red"] = [65535, 40000, 300, 1000]
    rows["green"] = [30000, 512, 65535, 2000]
    rows["blue"] = [255, 0, 200, 100]
    head = (
        f"ply\nformat binary_little_endian 1.0\nelement vertex {n}\n"
        "property float x\nproperty float y\nproperty float z\n"
        "property ushort red\nproperty ushort green\nproperty ushort blue\nend_header\n"
    )
    (tmp_path / "c.ply").write_bytes(head.encode() + rows.tobytes())
    r = read_ply(tmp_path / "c.ply")
    want = np.stack([rows[c] >> 8 for c in ("red", "green", "blue")], 1).astype(np.uint8)
    np.testing.assert_array_equal(r.rgb, want)


# -- issue 11: corrupt bodies, lying vertex counts --------------------------------------------


def _valid_ply(tmp_path: Path, n: int = 200, *, ascii: bool = False) -> tuple[Path, bytes, int]:
    """A small valid PLY (float xyz, colours, class); returns (path, bytes, header length)."""
    p = tmp_path / ("valid_ascii.ply" if ascii else "valid.ply")
    write_ply(p, _cloud(n=n, seed=3), ascii=ascii)
    raw = p.read_bytes()
    return p, raw, raw.index(b"end_header\n") + len(b"end_header\n")


def test_read_ply_random_body_raises_naming_the_column(tmp_path: Path) -> None:
    # a valid header over random bytes: NaN and 1e38 coordinates used to be read silently and
    # crash the cache build with "OverflowError: cannot convert float infinity to integer"
    _, raw, h = _valid_ply(tmp_path)
    bad = tmp_path / "random_body.ply"
    bad.write_bytes(raw[:h] + np.random.default_rng(0).bytes(len(raw) - h))
    with pytest.raises(
        PointCloudFormatError, match=r"of 200 rows, \d+ (hold NaN/inf|lie beyond).*row \d+"
    ) as e:
        read_ply(bad)
    assert e.value.field in ("x", "y", "z") and str(bad) in str(e.value)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("value", [np.nan, np.inf, 3e30])
@pytest.mark.parametrize("ascii", [False, True])
def test_read_ply_bad_coordinate_names_column_row_count_and_value(
    tmp_path: Path, value: float, ascii: bool
) -> None:
    c = _cloud(n=50, dtype=np.float64, seed=4)
    xyz = c.xyz.copy()
    xyz[[27, 30], 1] = value
    p = tmp_path / "bad.ply"
    write_ply(p, PointCloud(xyz=xyz, semantic=c.semantic), ascii=ascii)
    with pytest.raises(
        PointCloudFormatError, match=r"of 50 rows, 2 (hold NaN/inf|lie beyond) .*first at row 27: "
    ) as e:
        read_ply(p)
    assert e.value.field == "y" and str(p) in str(e.value)
    chunked = r"of rows 20\.\.39, 2 .*first at row 27"
    with PlyReader(p) as reader, pytest.raises(PointCloudFormatError, match=chunked):
        list(reader.iter_chunks(20))


@pytest.mark.parametrize("ascii", [False, True])
def test_read_ply_header_undercounting_vertices_raises(tmp_path: Path, ascii: bool) -> None:
    # "element vertex 150" over 200 vertices used to be read as a 150-point cloud, exit 0
    _, raw, _ = _valid_ply(tmp_path, ascii=ascii)
    bad = tmp_path / "under.ply"
    bad.write_bytes(raw.replace(b"element vertex 200\n", b"element vertex 150\n"))
    want = r"declares 150 vertices .*(room for 200 vertices|200 data lines)"
    with pytest.raises(PointCloudFormatError, match=want) as e:
        read_ply(bad)
    assert e.value.field == "vertex" and str(bad) in str(e.value)
    with pytest.raises(PointCloudFormatError, match=want):
        read_ply(io.BytesIO(bad.read_bytes()))


def test_read_ply_later_elements_and_trailing_newline_are_not_extra_data(
    tmp_path: Path, data_dir: Path
) -> None:
    # fixed-size rows after the vertices are accounted for; a stray byte or two is tolerated
    c = _cloud(n=5, seed=5)
    buf = io.BytesIO()
    write_ply(buf, c)
    raw = buf.getvalue().replace(b"end_header\n", b"element extra 2\nproperty int id\nend_header\n")
    (tmp_path / "tail.ply").write_bytes(raw + np.arange(2, dtype="<i4").tobytes() + b"\n")
    assert len(read_ply(tmp_path / "tail.ply")) == 5
    # ASCII: a face element after the vertices is not "extra lines"; blank lines are ignored
    assert len(read_ply(data_dir / "tiny_ascii_face.ply")) == 3
    _, araw, _ = _valid_ply(tmp_path, n=4, ascii=True)
    (tmp_path / "blank.ply").write_bytes(araw + b"\n\n  \n")
    assert len(read_ply(tmp_path / "blank.ply")) == 4
