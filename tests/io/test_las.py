"""Tests for urbex.io.las: real files (feet → metres), round trips, bad input."""

from __future__ import annotations

import io
import logging
import warnings
from pathlib import Path

import numpy as np
import pytest

from urbex.errors import PointCloudFormatError
from urbex.io.las import LasReader, read_las, unit_conversion, write_las
from urbex.pointcloud import PointCloud


def test_read_las_autzen_feet_converted_to_metres(
    realdata: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="urbex.io.las"):
        c = read_las(realdata / "autzen_trim.laz")
    assert len(c) == 110_000
    world = c.world_xyz()
    extent = world.max(axis=0) - world.min(axis=0)
    # 1178 x 563 x 114 ft
    np.testing.assert_allclose(extent, [359.0, 172.0, 35.0], atol=1.5)
    assert c.xyz.dtype == np.float64 and np.abs(c.xyz).max() < 1e4
    assert c.class_scheme == "asprs" and set(np.unique(c.semantic)) == {1, 2}
    assert c.rgb is not None and c.rgb.max() > 100
    assert "metre" in c.crs and "foot" in caplog.text


def test_read_las_autzen_crs_metres_matches_feet_times_0_3048(realdata: Path) -> None:
    import laspy
    import pyproj

    c = read_las(realdata / "autzen_trim.laz")
    with laspy.open(realdata / "autzen_trim.laz") as f:
        feet_crs = f.header.parse_crs()
    lon, lat = -123.07, 44.05
    ft = pyproj.Transformer.from_crs(4326, feet_crs, always_xy=True).transform(lon, lat)
    m = pyproj.Transformer.from_crs(4326, pyproj.CRS(c.crs), always_xy=True).transform(lon, lat)
    np.testing.assert_allclose(np.array(ft) * 0.3048, m, rtol=0, atol=1e-6)
    # the same raw point, via laspy in feet
    raw = laspy.read(realdata / "autzen_trim.laz")
    np.testing.assert_allclose(c.world_xyz()[0, 0], raw.x[0] * 0.3048, rtol=0, atol=1e-6)


def test_read_las_simple_no_crs_warns_and_keeps_units(realdata: Path) -> None:
    import laspy

    with pytest.warns(UserWarning, match="no CRS"):
        c = read_las(realdata / "simple.las")
    assert len(c) == 1065 and c.crs is None
    raw = laspy.read(realdata / "simple.las")
    np.testing.assert_allclose(c.world_xyz()[:, 2], np.asarray(raw.z), rtol=0, atol=1e-9)


def test_las_reader_chunks_match_whole(realdata: Path) -> None:
    whole = read_las(realdata / "autzen_trim.laz")
    with LasReader(realdata / "autzen_trim.laz", chunk_size=40_000) as reader:
        assert reader.count == 110_000 and reader.units.xy == 0.3048
        chunks = list(reader.iter_chunks())
    assert [len(c) for c in chunks] == [40_000, 40_000, 30_000]
    np.testing.assert_array_equal(np.concatenate([c.xyz for c in chunks]), whole.xyz)
    np.testing.assert_array_equal(np.concatenate([c.rgb for c in chunks]), whole.rgb)


def _cloud(n: int = 800) -> PointCloud:
    rng = np.random.default_rng(5)
    return PointCloud(
        xyz=rng.random((n, 3)) * 300,
        offset=np.array([512_000.0, 5_400_000.0, 12.0]),
        rgb=rng.integers(0, 256, (n, 3), dtype=np.uint8),
        semantic=rng.choice([1, 2, 6, 9], n).astype(np.int32),
        instance=rng.integers(-1, 100, n).astype(np.int32),
        class_scheme="asprs",
        crs="EPSG:32630",
    )


@pytest.mark.parametrize("suffix", [".las", ".laz"])
def test_write_las_roundtrip_to_mm_scale(tmp_path: Path, suffix: str) -> None:
    c = _cloud()
    p = tmp_path / f"a{suffix}"
    write_las(p, c)
    head = p.read_bytes()[:400]
    assert head[:4] == b"LASF"
    r = read_las(p)
    np.testing.assert_array_equal(r.offset, c.offset)
    np.testing.assert_array_equal(r.xyz, np.round(c.xyz / 0.001) * 0.001)
    assert np.abs(r.xyz - c.xyz).max() <= 0.0005 + 1e-12
    np.testing.assert_array_equal(r.rgb, c.rgb)
    np.testing.assert_array_equal(r.semantic, c.semantic)
    np.testing.assert_array_equal(r.instance, c.instance)
    assert "UTM zone 30N" in r.crs
    assert not list(tmp_path.glob(".*tmp*"))


def test_write_las_laz_is_compressed(tmp_path: Path) -> None:
    import laspy

    c = _cloud(5000)
    write_las(tmp_path / "a.las", c)
    write_las(tmp_path / "a.laz", c)
    with laspy.open(tmp_path / "a.laz") as f:
        assert f.header.are_points_compressed
        assert f.header.version.minor == 4 and f.header.point_format.id == 7
    assert (tmp_path / "a.laz").stat().st_size < (tmp_path / "a.las").stat().st_size


def test_write_las_roundtrip_bytesio_custom_instance_dim() -> None:
    c = _cloud(50)
    buf = io.BytesIO()
    write_las(buf, c, instance_dim="segment")
    buf.seek(0)
    r = read_las(buf, instance_dim="segment")
    np.testing.assert_array_equal(r.instance, c.instance)
    buf.seek(0)
    assert read_las(buf).instance is None  # default dim name absent


def test_write_las_semantic_out_of_range_raises(tmp_path: Path) -> None:
    c = PointCloud(xyz=np.zeros((2, 3)), semantic=np.array([1, 256], np.int32))
    with pytest.raises(ValueError, match="classification"):
        write_las(tmp_path / "a.las", c)


def test_read_las_empty_file_raises(tmp_path: Path) -> None:
    import laspy

    las = laspy.LasData(laspy.LasHeader(point_format=3, version="1.2"))
    las.write(tmp_path / "empty.las")
    with pytest.raises(PointCloudFormatError, match="0 points") as info:
        read_las(tmp_path / "empty.las")
    assert info.value.field == "point_count" and "empty.las" in str(info.value)


@pytest.mark.parametrize("content", [b"", b"not a las file at all" * 20, b"LASF" + b"\x00" * 50])
def test_read_las_unreadable_raises(tmp_path: Path, content: bytes) -> None:
    p = tmp_path / "bad.las"
    p.write_bytes(content)
    with pytest.raises(PointCloudFormatError, match="cannot read as LAS") as info:
        read_las(p)
    assert info.value.field == "file" and "bad.las" in str(info.value)


@pytest.mark.parametrize(
    "crs,xy",
    [("EPSG:2994", 0.3048), ("EPSG:2277", 1200 / 3937), ("EPSG:32630", 1.0), ("EPSG:4326", 1.0)],
    ids=["intl-foot", "us-survey-foot", "utm-metre", "geographic"],
)
def test_unit_conversion_factors(crs: str, xy: float) -> None:
    u = unit_conversion(crs)
    assert u.xy == pytest.approx(xy, rel=1e-12) and u.z == pytest.approx(xy, rel=1e-12)


def _las_with_instance(dtype: type, values: list) -> io.BytesIO:
    import laspy

    h = laspy.LasHeader(point_format=1, version="1.2")  # legacy format, no RGB
    h.scales, h.offsets = [0.01] * 3, [1000.0, 2000.0, 10.0]
    h.add_extra_dims([laspy.ExtraBytesParams(name="instance", type=dtype)])
    las = laspy.LasData(h)
    las.x, las.y, las.z = (np.arange(4.0) + o for o in (1000.0, 2000.0, 10.0))
    las["instance"] = np.array(values, dtype=dtype)
    buf = io.BytesIO()
    las.write(buf)
    buf.seek(0)
    return buf


@pytest.mark.parametrize(
    ("dtype", "values"),
    [(np.uint8, [0, 1, 255, 3]), (np.uint16, [0, 1, 65535, 3]), (np.int64, [0, 1, -1, 3])],
)
def test_read_las_instance_dim_other_integer_types(dtype: type, values: list) -> None:
    with pytest.warns(UserWarning, match="no CRS"):
        pc = read_las(_las_with_instance(dtype, values), instance_dim="instance")
    assert pc.rgb is None and pc.instance is not None
    np.testing.assert_array_equal(pc.instance, values)


@pytest.mark.parametrize(
    ("dtype", "values"),
    [(np.uint64, [0, 1, 2**40, 3]), (np.int64, [0, 1, -(2**35), 3]), (np.float32, [0, 1.5, 2, 3])],
)
def test_read_las_instance_dim_unrepresentable_raises(dtype: type, values: list) -> None:
    # 2**40 used to wrap silently to 0 (merging with instance 0); 1.5 was truncated to 1.
    with (
        pytest.warns(UserWarning, match="no CRS"),
        pytest.raises(PointCloudFormatError, match="instance"),
    ):
        read_las(_las_with_instance(dtype, values), instance_dim="instance")


# -- issue 11: files cut short ----------------------------------------------------------------


def _small(tmp_path: Path, suffix: str, *, crs: str | None = None, n: int = 2000) -> bytes:
    c = _cloud(n)
    c = PointCloud(xyz=c.xyz, offset=c.offset, semantic=c.semantic, class_scheme="asprs", crs=crs)
    p = tmp_path / f"whole{suffix}"
    write_las(p, c)
    return p.read_bytes()


@pytest.mark.parametrize("cut", [7, 1000, 20_000])
def test_read_las_cut_mid_point_raises_expected_vs_found_size(tmp_path: Path, cut: int) -> None:
    # used to be "ValueError: buffer size must be a multiple of element size" (a traceback)
    raw = _small(tmp_path, ".las", crs="EPSG:32630")
    p = tmp_path / "cut.las"
    p.write_bytes(raw[:-cut])
    want = (
        rf"promises 2000 points of 36 bytes .*\({len(raw)} bytes\), the file has {len(raw) - cut}"
    )
    with pytest.raises(PointCloudFormatError, match=want) as info:
        read_las(p)
    assert info.value.field == "point_count" and str(p) in str(info.value)
    with pytest.raises(PointCloudFormatError, match="promises 2000 points"):
        read_las(io.BytesIO(raw[:-cut]))


@pytest.mark.parametrize("crs", [None, "EPSG:32630"])
def test_read_laz_cut_in_half_raises_naming_the_file(tmp_path: Path, crs: str | None) -> None:
    # used to be "lazrs.LazrsError: IoError: failed to fill whole buffer" (a traceback); with a
    # CRS (an extended VLR after the points) it was a page-long "cannot parse the CRS VLR"
    raw = _small(tmp_path, ".laz", crs=crs)
    p = tmp_path / "half.laz"
    p.write_bytes(raw[: len(raw) // 2])
    with (
        pytest.warns(UserWarning, match="no CRS") if crs is None else _no_warning(),
        pytest.raises(PointCloudFormatError, match=r"truncated|cannot decode the LAZ points") as e,
    ):
        read_las(p)
    msg = str(e.value)
    assert str(p) in msg and "\n" not in msg and len(msg) < 400
    assert f"{len(raw) // 2} bytes" in msg and ("2000 points" in msg or "VLR" in msg)


def test_read_laz_real_file_cut_in_half_raises(tmp_path: Path, realdata: Path) -> None:
    raw = (realdata / "autzen_trim.laz").read_bytes()
    p = tmp_path / "autzen_half.laz"
    p.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(PointCloudFormatError, match="promises 110000 points") as e:
        read_las(p)
    assert e.value.field == "points"
    with LasReader(p) as reader, pytest.raises(PointCloudFormatError, match="cannot decode"):
        list(reader.iter_chunks(40_000))


def _no_warning():  # type: ignore[no-untyped-def]
    import contextlib

    return contextlib.nullcontext()


def test_read_las_corrupt_evlr_length_raises_without_allocating(tmp_path: Path) -> None:
    # found by the fuzz test: one flipped byte (1 extended VLR at byte 0) made laspy allocate the
    # record's garbage length (MemoryError) before reading it
    raw = bytearray(_small(tmp_path, ".las", crs="EPSG:32630", n=5))
    raw[243] = 1  # number_of_evlrs (LAS 1.4 header), start_of_first_evlr stays 0
    p = tmp_path / "evlr.las"
    p.write_bytes(bytes(raw))
    with pytest.raises(PointCloudFormatError, match=r"extended VLR 1 of 1 ends at byte \d+") as e:
        read_las(p)
    assert e.value.field == "file" and f"the file has {len(raw)} bytes" in str(e.value)


def test_write_las_fixed_creation_date_makes_the_bytes_reproducible(tmp_path: Path) -> None:
    """laspy writes today's date into the header; a given date is written instead, so two
    writes of one cloud are byte-identical whatever the day (the synthetic data set's DVC hash)."""
    import datetime

    import laspy

    rng = np.random.default_rng(0)
    cloud = PointCloud(xyz=rng.uniform(0, 10, (50, 3)), offset=np.zeros(3))
    day = datetime.date(2001, 2, 3)
    a, b = tmp_path / "a.laz", tmp_path / "b.laz"
    write_las(a, cloud, creation_date=day)
    write_las(b, cloud, creation_date=day)
    assert a.read_bytes() == b.read_bytes()
    assert laspy.read(a).header.creation_date == day


def _same_cloud(a: PointCloud, b: PointCloud) -> None:
    for name in ("xyz", "offset", "rgb", "semantic", "instance"):
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None), name
        if x is not None:
            assert x.dtype == y.dtype and x.tobytes() == y.tobytes(), name
    assert a.crs == b.crs


@pytest.mark.parametrize("crs", [None, "EPSG:2994"])  # metres / international feet
def test_read_las_mapped_records_equal_laspy_decoding(tmp_path: Path, crs: str | None) -> None:
    # a path to an uncompressed file is read from the memory-mapped records; a file object
    # goes through laspy's reader: both must give the same bytes
    rng = np.random.default_rng(7)
    n = 3_000
    c = PointCloud(
        xyz=rng.uniform(0, 500, (n, 3)),
        offset=np.array([600_000.0, 4_000_000.0, 10.0]),
        rgb=rng.integers(0, 256, (n, 3), dtype=np.uint8),
        semantic=rng.integers(0, 20, n).astype(np.int32),
        instance=rng.integers(-1, 50, n).astype(np.int32),
        crs=crs,
    )
    p = tmp_path / "a.las"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # no CRS
        write_las(p, c)
        mapped = read_las(p)
        decoded = read_las(io.BytesIO(p.read_bytes()))
        with LasReader(p) as r:
            assert r._raw_records() is not None
    _same_cloud(mapped, decoded)
    np.testing.assert_array_equal(mapped.semantic, c.semantic)


def test_read_las_mapped_point_format_3_classification_bits(realdata: Path) -> None:
    # format 3: classification is the low 5 bits of the raw byte (flags in the high bits)
    with pytest.warns(UserWarning, match="no CRS"):
        mapped = read_las(realdata / "simple.las")
        decoded = read_las(io.BytesIO((realdata / "simple.las").read_bytes()))
    _same_cloud(mapped, decoded)
    assert mapped.semantic.max() < 32
