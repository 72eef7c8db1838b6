"""View registry and view-unit ↔ world mapping."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from urbex.env.views import EpisodeView, ViewRegistry, expand_to_aspect
from urbex.geometry import Affine


def _view(vid="global", kind="global", w=200, h=100, res=0.5):
    t = Affine.north_up(x_min=100.0, y_max=50.0, resolution=res)
    box = t.box_to_world([0, 0, w, h])
    return EpisodeView(
        view_id=vid, kind=kind, image=Image.new("RGB", (w, h)), world_box=box, transform=t
    )


def test_view_units_round_trip():
    v = _view()
    world = np.array([110.0, 20.0, 130.0, 45.0])
    units = v.from_world_box(world)
    np.testing.assert_allclose(v.to_world_box(units), world)
    np.testing.assert_allclose(v.to_world_box([0, 0, 1000, 1000]), v.world_box)
    u, vv = v.world_to_units(100.0, 50.0)
    assert (float(u), float(vv)) == (0.0, 0.0)


def test_view_units_are_per_axis_normalised():
    v = _view(w=200, h=100, res=0.5)  # 100 m x 50 m
    np.testing.assert_allclose(v.to_world_box([0, 0, 500, 500]), [100.0, 25.0, 150.0, 50.0])


def test_oblique_view_has_no_transform():
    img = Image.new("RGB", (8, 8))
    o = EpisodeView(view_id="oblique_1", kind="oblique", image=img, world_box=[0, 0, 1, 1])
    with pytest.raises(ValueError, match="oblique"):
        o.to_world_box([0, 0, 10, 10])
    with pytest.raises(ValueError, match="transform"):
        EpisodeView(view_id="zoom_1", kind="zoom", image=img, world_box=[0, 0, 1, 1])


def test_registry_ids_are_sequential_and_unique():
    reg = ViewRegistry()
    reg.add(_view())
    reg.add(_view(vid=reg.next_id("zoom"), kind="zoom"))
    img = Image.new("RGB", (8, 8))
    reg.add(
        EpisodeView(
            view_id=reg.next_id("oblique"), kind="oblique", image=img, world_box=[0, 0, 1, 1]
        )
    )
    assert reg.ids == ["global", "zoom_1", "oblique_2"]
    assert reg.oblique_ids == {"oblique_2"}
    assert reg.last("zoom").view_id == "zoom_1"
    with pytest.raises(ValueError, match="already exists"):
        reg.add(_view(vid="zoom_1", kind="zoom"))
    with pytest.raises(ValueError, match="expected view id"):
        reg.add(_view(vid="zoom_9", kind="zoom"))


@pytest.mark.parametrize(
    ("box", "aspect", "min_extent"),
    [([0, 0, 4, 2], 1.0, 0), ([0, 0, 1, 8], 2.0, 0), ([3, 3, 3, 3], 1.5, 4)],
)
def test_expand_to_aspect_contains_and_matches_aspect(box, aspect, min_extent):
    out = expand_to_aspect(box, aspect, min_extent=min_extent)
    w, h = out[2] - out[0], out[3] - out[1]
    assert w / h == pytest.approx(aspect)
    assert min(w, h) >= min_extent - 1e-9
    assert out[0] <= box[0] and out[1] <= box[1] and out[2] >= box[2] and out[3] >= box[3]
