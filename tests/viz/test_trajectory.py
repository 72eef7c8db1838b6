"""trajectory_picture: geometry of the global panel, documented size, degenerate episodes."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from urbex.agents import OraclePolicy
from urbex.env.play import play_episode
from urbex.env.views import EpisodeView
from urbex.geometry import Affine
from urbex.viz.trajectory import COLORS, HEADER_H, PAD, picture_size, trajectory_picture


def _flat_global(side_px: int = 256) -> EpisodeView:
    """A uniform grey global view of world [1000, 2000, 1100, 2100] m (north up)."""
    return EpisodeView(
        view_id="global",
        kind="global",
        image=Image.new("RGB", (side_px, side_px), (90, 90, 90)),
        world_box=np.array([1000.0, 2000.0, 1100.0, 2100.0]),
        transform=Affine.north_up(x_min=1000.0, y_max=2100.0, resolution=100.0 / side_px),
    )


def test_trajectory_picture_pred_box_lands_at_expected_pixels(city):
    cache = city[0]
    img = trajectory_picture(
        cache,
        [],
        [_flat_global(256)],
        query_text="the car",
        pred_box_2d=[1025.0, 2050.0, 1050.0, 2075.0],
        panel_px=512,
    )
    # 256 px view → 512 px panel: 2 picture px per view px, 2.56 view px per metre
    x0, y0 = PAD + 2 * 25 * 2.56, HEADER_H + 2 * 25 * 2.56  # x 1025 m; y 2075 m (top edge)
    x1, y1 = PAD + 2 * 50 * 2.56, HEADER_H + 2 * 50 * 2.56  # x 1050 m; y 2050 m
    px = img.load()
    red = COLORS["pred"]
    xm, ym = round((x0 + x1) / 2), round((y0 + y1) / 2)
    assert px[xm, round(y0)] == red and px[xm, round(y1)] == red
    assert px[round(x0), ym] == red and px[round(x1), ym] == red
    assert px[xm, ym] == (90, 90, 90)  # the inside is the view, untouched
    assert px[xm, round(y0) - 4] == (90, 90, 90)  # nothing drawn outside the box edge
    assert img.size == picture_size(0, 0, panel_px=512)


def test_trajectory_picture_with_zero_steps_uses_the_scene_global_view(city):
    cache = city[0]
    img = trajectory_picture(cache, [], [], query_text="anything at all")
    assert img.mode == "RGB" and img.size == picture_size(0, 0)
    panel = np.asarray(img)[HEADER_H : HEADER_H + 768, PAD : PAD + 768]
    assert panel.std() > 5  # the scene's BEV is drawn, not a blank panel


def test_trajectory_picture_of_an_oracle_episode_has_the_documented_size(env, city):
    cache, index, queries = city
    q = queries[-1]  # a car near a named building: landmark → zoom → oblique → answer
    traj = play_episode(env, OraclePolicy(env), q, seed=0)
    steps, views = traj.steps, list(traj.views)
    n_strip = sum(v.kind != "global" for v in views)
    assert n_strip == 2 and len(steps) == 4
    long_text = " ".join([q.description] * 20)
    hall = index.lookup("Merton Hall", scene_id=q.scene_id).best
    img = trajectory_picture(
        cache,
        steps,
        traj.views,
        query_text=long_text,
        pred_box_2d=traj.outcome.pred_box_2d_m,
        target_box_2d=q.target_box_2d,
        landmarks=[("Merton Hall", hall.x, hall.y)],
        subtitle="policy oracle",
        thumb_px=128,
    )
    assert img.size == picture_size(4, 2, thumb_px=128)
    arr = np.asarray(img)
    # both colours are on the global panel; the first strip thumbnail has a zoom-coloured frame
    panel = arr[HEADER_H : HEADER_H + 768, PAD : PAD + 768].reshape(-1, 3)
    for key in ("pred", "target", "zoom", "oblique", "landmark"):
        assert (panel == COLORS[key]).all(axis=1).any(), key
    x_strip = 2 * PAD + 768
    frame = arr[HEADER_H : HEADER_H + 128, x_strip : x_strip + 128].reshape(-1, 3)
    assert (frame == COLORS["zoom"]).all(axis=1).sum() > 100


def test_picture_size_rejects_negative_counts():
    with pytest.raises(ValueError):
        picture_size(-1, 0)


def test_wrapping_a_huge_description_measures_a_bounded_amount_of_text():
    """``urbex ground --query`` with 100,000 characters: the wrap reads only what fits (it was
    quadratic: minutes). Counted in characters measured, not in seconds."""
    from PIL import Image, ImageDraw

    from urbex.viz.style import pil_font
    from urbex.viz.trajectory import _wrap

    class Counting:
        def __init__(self) -> None:
            self.draw, self.chars = ImageDraw.Draw(Image.new("RGB", (8, 8))), 0

        def textlength(self, text, font):
            self.chars += len(text)
            return self.draw.textlength(text, font=font)

    font = pil_font(14)
    for text, n_lines in (("word " * 20_000, 3), ("x" * 100_000, 1), ("a " * 50_000, 3)):
        d = Counting()
        lines = _wrap(d, text, font, 600, 3)
        assert len(lines) == n_lines and lines[-1].endswith("...")
        assert d.chars < 20_000, d.chars
    d = Counting()
    assert _wrap(d, "the red car", font, 600, 3) == ["the red car"]
