"""The training-curves picture of a GRPO run's step log."""

from __future__ import annotations

import numpy as np
import polars as pl
from PIL import Image

from urbex.train.curves import CURVES_SIZE, plot_training_curves
from urbex.train.logs import TRAINING_LOG_SCHEMA, step_row, training_log_frame


def test_training_curves_picture(tmp_path):
    rng = np.random.default_rng(0)
    n = 30
    rows = [
        step_row("r", i + 1, [], {"reward": 0.0}) | {
            "reward_mean": -0.2 + 0.02 * i + 0.05 * rng.standard_normal(),
            "valid_answer_rate": min(1.0, 0.3 + 0.02 * i), "iou_mean": 0.01 * i,
            "invalid_rate": 0.3 - 0.005 * i, "calls_zoom_in": 1.0 + 0.02 * i,
            "calls_landmark_query": 0.5, "calls_oblique_render": float("nan"),
        }
        for i in range(n)
    ]  # fmt: skip
    out = plot_training_curves(training_log_frame(rows), tmp_path / "c.png")
    with Image.open(out) as im:
        assert im.size == CURVES_SIZE
        colours = len(set(im.convert("RGB").getdata()))
    assert colours > 20  # axes, three panels of series, legend text
    empty = plot_training_curves(pl.DataFrame(schema=TRAINING_LOG_SCHEMA), tmp_path / "e.png")
    assert empty.stat().st_size > 0


def test_training_curves_are_written_atomically_and_deterministically(tmp_path):
    rows = [step_row("r", i + 1, [], {"reward": 0.0}) | {"reward_mean": 0.1 * i} for i in range(5)]
    a = plot_training_curves(training_log_frame(rows), tmp_path / "a.png")
    b = plot_training_curves(training_log_frame(rows), tmp_path / "b.png")
    assert a.read_bytes() == b.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.png", "b.png"]
