"""The readers' shared checks: coordinate sanity, stream sizes, LAS record lengths."""

from __future__ import annotations

import io
import re
import struct

import numpy as np
import pytest

from urbex.errors import PointCloudFormatError
from urbex.io._checks import MAX_ABS_COORD, check_coordinates, las_record_problem, stream_size
from urbex.io.las import write_las
from urbex.pointcloud import PointCloud


def test_check_coordinates_accepts_finite_and_empty():
    check_coordinates(np.zeros((0, 3)), "a.ply")
    check_coordinates(np.array([[MAX_ABS_COORD, -MAX_ABS_COORD, 0.0]]), "a.ply")


@pytest.mark.parametrize(
    ("rows", "field", "what", "first"),
    [
        ({2: (0, np.inf, 0)}, "y", "1 hold NaN/inf", 2),
        ({2: (0, 0, 3e9)}, "z", "1 lie beyond ±1e+09 m", 2),
        ({3: (-2e9, 0, 0)}, "x", "1 lie beyond ±1e+09 m", 3),
        ({1: (np.nan, 0, 0), 2: (5e9, 0, 0)}, "x", "1 hold NaN/inf and 1 lie beyond ±1e+09 m", 1),
    ],
)
def test_check_coordinates_names_the_axis_count_and_first_row(rows, field, what, first):
    xyz = np.zeros((4, 3))
    for i, v in rows.items():
        xyz[i] = v
    with pytest.raises(
        PointCloudFormatError, match=re.escape(f"of 4 rows, {what} (first at row {first}")
    ) as e:
        check_coordinates(xyz, "scan.las")
    assert e.value.field == field and str(e.value.path) == "scan.las"


def test_check_coordinates_chunk_rows_are_file_rows():
    xyz = np.zeros((3, 3))
    xyz[1, 0] = np.nan
    with pytest.raises(
        PointCloudFormatError, match=r"of rows 100..102, 1 hold NaN/inf \(first at row 101"
    ) as e:
        check_coordinates(xyz, io.BytesIO(), total=1000, first_row=100)
    assert e.value.path is None and e.value.field == "x"  # a stream: named, not a path


def test_stream_size_of_paths_streams_and_the_unknown(tmp_path):
    p = tmp_path / "f.bin"
    p.write_bytes(b"x" * 10)
    assert stream_size(p) == 10 and stream_size(str(tmp_path / "missing")) is None
    buf = io.BytesIO(b"y" * 8)
    buf.seek(3)
    assert stream_size(buf) == 5 and buf.tell() == 3  # position kept

    class _Pipe(io.RawIOBase):
        def seekable(self):
            return False

    assert stream_size(_Pipe()) is None


def _las_bytes() -> bytes:
    cloud = PointCloud(xyz=np.random.default_rng(0).random((20, 3)).astype(np.float32))
    buf = io.BytesIO()
    write_las(buf, cloud)
    return buf.getvalue()


def test_las_record_problem_of_a_sound_file_and_of_non_las_is_none(tmp_path):
    data = _las_bytes()
    assert las_record_problem(io.BytesIO(data), len(data)) is None
    (tmp_path / "a.las").write_bytes(data)
    assert las_record_problem(tmp_path / "a.las", len(data)) is None
    assert las_record_problem(io.BytesIO(b"PLY\n" + b"\0" * 400), 404) is None
    assert las_record_problem(tmp_path / "missing.las", 0) is None


def test_las_record_problem_corrupt_vlr_count_and_truncation():
    data = bytearray(_las_bytes())
    header_size = struct.unpack_from("<H", data, 94)[0]
    struct.pack_into("<L", data, 100, 1_000_000)  # a lying VLR count
    problem = las_record_problem(io.BytesIO(bytes(data)), len(data))
    assert problem is not None and "of 1000000" in problem and "past the end of the file" in problem
    cut = bytearray(_las_bytes()[: header_size + 10])  # a VLR announced, the file cut short
    struct.pack_into("<L", cut, 100, 1)
    assert "VLR 1 of 1 starts at byte" in las_record_problem(io.BytesIO(bytes(cut)), len(cut))


def test_las_record_problem_leaves_the_stream_where_it_was():
    data = b"junk" + _las_bytes()
    buf = io.BytesIO(data)
    buf.seek(4)
    assert las_record_problem(buf, len(data) - 4) is None and buf.tell() == 4
