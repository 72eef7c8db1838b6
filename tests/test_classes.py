"""Target classes and their semantic ids per class scheme."""

from __future__ import annotations

import pytest

from urbex.classes import TARGET_CLASSES, TARGET_SEMANTICS, semantic_ids
from urbex.pointcloud import CLASS_SCHEMES


def test_target_classes_are_the_four_cityrefer_classes_in_a_fixed_order():
    assert TARGET_CLASSES == ("Building", "Car", "Ground", "Parking")


@pytest.mark.parametrize("scheme", sorted(TARGET_SEMANTICS))
def test_every_target_id_is_a_class_of_its_scheme(scheme):
    assert scheme in CLASS_SCHEMES
    assert set(TARGET_SEMANTICS[scheme]) <= set(TARGET_CLASSES)
    for cls in TARGET_CLASSES:
        for i in semantic_ids(cls, scheme):
            assert i in CLASS_SCHEMES[scheme], (scheme, cls, i)
    ids = [i for c in TARGET_CLASSES for i in semantic_ids(c, scheme)]
    assert len(ids) == len(set(ids)), "a semantic id belongs to one target class"


@pytest.mark.parametrize(
    ("cls", "scheme", "ids"),
    [
        ("Building", "stpls3d", (1, 17)),
        ("Ground", "stpls3d", (0, 18, 19)),
        ("Car", "stpls3d", (5, 6)),
        ("Building", "asprs", (6,)),
        ("Car", "asprs", ()),
        ("Tree", "sensaturban", ()),
    ],
)
def test_semantic_ids(cls, scheme, ids):
    assert semantic_ids(cls, scheme) == ids


def test_semantic_ids_unknown_scheme_raises():
    with pytest.raises(ValueError, match="class_scheme: expected one of"):
        semantic_ids("Car", "kitti")
