"""The point-cloud record: validation on construction, world coordinates, selection."""

from __future__ import annotations

import numpy as np
import pytest

from urbex.pointcloud import CLASS_SCHEMES, PointCloud


def _cloud(n=5, **kw):
    rng = np.random.default_rng(0)
    base = {
        "xyz": rng.random((n, 3), dtype=np.float32),
        "rgb": rng.integers(0, 256, (n, 3), dtype=np.uint8),
        "semantic": np.arange(n, dtype=np.int32),
        "instance": np.full(n, -1, np.int32),
    }
    return PointCloud(**{**base, **kw})


def test_world_xyz_adds_the_offset_in_float64():
    xyz = np.array([[0.5, 0.25, 1.0]], np.float32)
    pc = PointCloud(xyz=xyz, offset=[500000.0, 4000000.0, 10.0])
    w = pc.world_xyz()
    assert w.dtype == np.float64
    assert w.tolist() == [[500000.5, 4000000.25, 11.0]]
    assert pc.offset.dtype == np.float64 and len(pc) == pc.n_points == 1


def test_default_offset_is_zero_and_scheme_sensaturban():
    pc = PointCloud(xyz=np.zeros((0, 3)))
    assert pc.offset.tolist() == [0.0, 0.0, 0.0] and len(pc) == 0
    assert pc.class_names()[9] == "Cars"


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"xyz": np.zeros((5, 2), np.float32)}, r"xyz: expected shape \(N, 3\)"),
        ({"xyz": np.zeros((5, 3), np.int32)}, "xyz: expected float32 or float64"),
        ({"offset": [0.0, 0.0]}, r"offset: expected shape \(3,\)"),
        ({"rgb": np.zeros((5, 3), np.float32)}, "rgb: expected dtype uint8"),
        ({"rgb": np.zeros((5, 4), np.uint8)}, r"rgb: expected shape \(N, 3\)"),
        ({"rgb": np.zeros((4, 3), np.uint8)}, "rgb: expected 5 rows"),
        ({"semantic": np.zeros(5, np.int64)}, "semantic: expected dtype int32"),
        ({"instance": np.zeros((5, 1), np.int32)}, "instance: expected 1-D array"),
        ({"class_scheme": "kitti"}, "class_scheme: expected one of"),
    ],
)
def test_invalid_fields_raise_naming_the_field(kw, match):
    with pytest.raises(ValueError, match=match):
        _cloud(**kw)


def test_select_by_mask_and_by_index_keeps_every_attribute_aligned():
    pc = _cloud(n=6, class_scheme="stpls3d", source="a.ply", offset=[1.0, 2.0, 3.0])
    by_mask = pc.select(pc.semantic % 2 == 0)
    assert by_mask.semantic.tolist() == [0, 2, 4]
    np.testing.assert_array_equal(by_mask.xyz, pc.xyz[[0, 2, 4]])
    np.testing.assert_array_equal(by_mask.rgb, pc.rgb[[0, 2, 4]])
    by_index = pc.select(np.array([5, 1]))
    assert by_index.semantic.tolist() == [5, 1] and by_index.instance.tolist() == [-1, -1]
    assert by_index.offset.tolist() == [1.0, 2.0, 3.0]
    assert (by_index.class_scheme, by_index.source) == ("stpls3d", "a.ply")
    assert pc.n_points == 6  # the original is unchanged


def test_select_without_optional_attributes():
    pc = PointCloud(xyz=np.zeros((3, 3)))
    sub = pc.select(np.array([True, False, True]))
    assert len(sub) == 2 and sub.rgb is None and sub.semantic is None and sub.instance is None


@pytest.mark.parametrize("scheme", sorted(CLASS_SCHEMES))
def test_class_names_per_scheme(scheme):
    names = _cloud(class_scheme=scheme).class_names()
    assert names is CLASS_SCHEMES[scheme] and 0 in names
    assert all(isinstance(k, int) and v for k, v in names.items())
