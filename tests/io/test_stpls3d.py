"""Tests for urbex.io.stpls3d: text round trips and malformed files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from urbex.errors import PointCloudFormatError
from urbex.io.ply import write_ply
from urbex.io.stpls3d import read_stpls3d_ply, read_stpls3d_txt, write_stpls3d_txt
from urbex.pointcloud import PointCloud


def _cloud(n: int, *, instance: bool, offset: tuple[float, float, float] = (0, 0, 0)) -> PointCloud:
    rng = np.random.default_rng(3)
    return PointCloud(
        xyz=rng.random((n, 3)) * 250,
        offset=np.array(offset),
        rgb=rng.integers(0, 256, (n, 3), dtype=np.uint8),
        semantic=rng.choice([0, 1, 5, 15, 19], n).astype(np.int32),
        instance=rng.integers(-1, 60, n).astype(np.int32) if instance else None,
        class_scheme="stpls3d",
    )


@pytest.mark.parametrize("instance", [False, True])
@pytest.mark.parametrize("offset", [(0.0, 0.0, 0.0), (368_000.0, 3_770_000.0, 50.0)])
def test_write_stpls3d_txt_roundtrip_exact(
    tmp_path: Path, instance: bool, offset: tuple[float, float, float]
) -> None:
    c = _cloud(777, instance=instance, offset=offset)
    p = tmp_path / "USC_points.txt"
    write_stpls3d_txt(p, c)
    first = p.read_text().splitlines()[0]
    assert first == "x,y,z,r,g,b,semantic" + (",instance" if instance else "")
    r = read_stpls3d_txt(p)
    assert r.class_scheme == "stpls3d" and r.xyz.dtype == np.float64
    np.testing.assert_array_equal(r.world_xyz(), c.world_xyz())
    np.testing.assert_array_equal(r.rgb, c.rgb)
    np.testing.assert_array_equal(r.semantic, c.semantic)
    if instance:
        np.testing.assert_array_equal(r.instance, c.instance)
    else:
        assert r.instance is None
    assert bool(r.offset.any()) == bool(any(offset))
    assert np.abs(r.xyz).max() < 1e3


def test_read_stpls3d_txt_float_labels_accepted(tmp_path: Path) -> None:
    p = tmp_path / "a.txt"
    p.write_text("x,y,z,r,g,b,label\n1.5,2,3,10.0,20,30,5.000\n")
    r = read_stpls3d_txt(p)
    assert r.semantic.tolist() == [5] and r.rgb.tolist() == [[10, 20, 30]]


@pytest.mark.parametrize(
    "text,field,message",
    [
        ("x,y,z,r,g\n1,2,3,4,5\n", "header", "expected 7 or 8 columns"),
        (
            "x,y,z,r,g,b,semantic\n1,2,3,4,5,300,1\n",
            "b",
            r"expected 0\.\.255, got 5\.\.300|0\.\.255",
        ),
        ("x,y,z,r,g,b,semantic\n1,2,3,4,5,6,1.5\n", "semantic", "fractions"),
        ("x,y,z,r,g,b,semantic\n1,2,abc,4,5,6,1\n", "z", "expected numbers"),
    ],
    ids=["columns", "colour-range", "fraction", "text"],
)
def test_read_stpls3d_txt_bad_input_raises(
    tmp_path: Path, text: str, field: str, message: str
) -> None:
    p = tmp_path / "bad.txt"
    p.write_text(text)
    with pytest.raises(PointCloudFormatError, match=message) as info:
        read_stpls3d_txt(p)
    assert info.value.field == field and str(p) in str(info.value)


def test_write_stpls3d_txt_requires_semantic(tmp_path: Path) -> None:
    c = PointCloud(xyz=np.zeros((1, 3)), rgb=np.zeros((1, 3), np.uint8))
    with pytest.raises(ValueError, match="semantic"):
        write_stpls3d_txt(tmp_path / "a.txt", c)


def test_read_stpls3d_ply_sets_scheme(tmp_path: Path) -> None:
    c = _cloud(10, instance=False)
    write_ply(tmp_path / "a.ply", c)
    r = read_stpls3d_ply(tmp_path / "a.ply")
    assert r.class_scheme == "stpls3d"
    np.testing.assert_array_equal(r.semantic, c.semantic)


@pytest.mark.parametrize("cell", ["nan", "", "inf", "1e300"])
def test_read_stpls3d_txt_bad_coordinate_raises_naming_column_and_row(
    tmp_path: Path, cell: str
) -> None:
    # an empty or NaN cell used to be read as a NaN coordinate (silently dropped far downstream)
    p = tmp_path / "USC_points.txt"
    p.write_text(f"x,y,z,r,g,b,semantic\n1,2,3,4,5,6,0\n1,{cell},3,4,5,6,0\n1.5,2,3,4,5,6,1\n")
    with pytest.raises(
        PointCloudFormatError, match=r"of 3 rows, 1 (hold NaN/inf|lie beyond) .*first at row 1"
    ) as e:
        read_stpls3d_txt(p)
    assert e.value.field == "y" and str(p) in str(e.value)
