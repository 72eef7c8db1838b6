"""The diagnostic plots: size, where the series are drawn, and the empty case."""

from __future__ import annotations

import numpy as np
import polars as pl
from PIL import Image

from urbex.report.plots import PLOT_SIZE, plot_area_ratio, plot_success_vs_distractors
from urbex.viz.style import COLOURS

# the plot area of every plot (see urbex.report.plots): x 90..800, y 540 (0 %) .. 60 (100 %)
X0, X1, Y0, Y1 = 90, 800, 540, 60


def _y(pct):
    return round(Y0 - (Y0 - Y1) * pct / 100)


def _xc(i, n):
    return round(X0 + (X1 - X0) / n * (i + 0.5))


def _open(path):
    with Image.open(path) as im:
        assert im.size == PLOT_SIZE and im.mode == "RGB" and im.format == "PNG"
        return np.asarray(im)


def _disamb(rows):
    cols = ["factor", "run_id", "split", "bin", "bin_order", "n_regional", "local_success", "hit1"]
    return pl.DataFrame([dict(zip(cols, r)) for r in rows])


def test_success_vs_distractors_points_sit_at_their_bin_and_share(tmp_path):
    t = _disamb([
        ("distractors", "oracle", "test", "0", 0, 4, 0.5, 0.9),
        ("distractors", "oracle", "test", "1-2", 1, 4, 1.0, 0.9),
        ("distractors", "oracle", "test", "3+", 2, 4, 0.25, 0.9),
        ("landmark_distance", "oracle", "test", "far", 9, 4, 0.0, 0.0),  # another factor
    ])  # fmt: skip
    img = _open(plot_success_vs_distractors(t, tmp_path / "d.png"))
    for i, v in enumerate((50, 100, 25)):
        assert tuple(img[_y(v), _xc(i, 3)]) == COLOURS[0], (i, v)
    assert tuple(img[_y(70), _xc(0, 3)]) == (255, 255, 255)
    assert [p.name for p in tmp_path.iterdir()] == ["d.png"]  # written atomically


def test_success_vs_distractors_run_without_zooms_draws_its_hit1(tmp_path):
    t = _disamb([
        ("distractors", "global", "test", "0", 0, 0, None, 0.75),
        ("distractors", "global", "test", "1+", 1, 0, None, 0.25),
    ])  # fmt: skip
    img = _open(plot_success_vs_distractors(t, tmp_path / "d.png"))
    assert tuple(img[_y(75), _xc(0, 2)]) == COLOURS[0]
    assert tuple(img[_y(25), _xc(1, 2)]) == COLOURS[0]


def test_area_ratio_bars_reach_their_share(tmp_path):
    t = pl.DataFrame({
        "run_id": ["a", "a", "a", "b", "b", "b"], "split": ["test"] * 6,
        "bin": ["<0.5", "0.5-2", ">2"] * 2, "bin_order": [0, 1, 2] * 2,
        "share": [0.0, 1.0, 0.0, 0.5, 0.25, 0.25],
    })  # fmt: skip
    img = _open(plot_area_ratio(t, tmp_path / "a.png"))
    slot = (X1 - X0) / 3
    width = slot * 0.8 / 2
    xa = round(X0 + slot * 1.1 + width / 2)  # run a's bar in bin 1 (share 100 %)
    xb = round(X0 + slot * 0.1 + width * 1.5)  # run b's bar in bin 0 (share 50 %)
    assert tuple(img[_y(95), xa]) == COLOURS[0]
    assert tuple(img[_y(45), xb]) == COLOURS[1] and tuple(img[_y(55), xb]) == (255, 255, 255)
    assert tuple(img[_y(10), round(X0 + slot * 0.1 + width / 2)]) == (255, 255, 255)  # a: 0 %


def test_plots_of_no_runs_say_so(tmp_path):
    empty = _disamb([("distractors", "x", "s", "0", 0, 0, 0.0, 0.0)]).clear()
    a = _open(plot_success_vs_distractors(empty, tmp_path / "d.png"))
    b = _open(plot_area_ratio(pl.DataFrame(schema={"run_id": pl.String, "split": pl.String,
              "bin": pl.String, "bin_order": pl.Int64, "share": pl.Float64}), tmp_path / "a.png"))  # fmt: skip
    for img in (a, b):
        centre = img[Y1 + 200 : Y0 - 200, X0 + 250 : X1 - 250]
        assert (centre < 200).any()  # the grey "no evaluation runs" note


def test_thirty_series_become_panels_of_at_most_eight_by_policy_family(tmp_path):
    """A demo's 30 runs × splits: one panel per policy family, at most MAX_SERIES series each
    (a larger family split in two), each series in exactly one panel; stale panels removed."""
    from urbex.report.plots import MAX_SERIES, panels, plot_panels

    fams = {"oracle": 3, "landmark_prior": 11, "ranking": 4, "vlm": 12}
    rows = [
        ("distractors", f"{pol}-r{i}", pol, "test_nd", "0", 0, 2, 0.5, 0.5)
        for pol, n in fams.items()
        for i in range(n)
    ]
    cols = ["factor", "run_id", "policy", "split", "bin", "bin_order", "n_regional",
            "local_success", "hit1"]  # fmt: skip
    t = pl.DataFrame([dict(zip(cols, r)) for r in rows], orient="row")
    got = panels(t)
    assert [name for name, _ in got] == [
        "landmark_prior-1", "landmark_prior-2", "oracle", "ranking", "vlm-1", "vlm-2",
    ]  # fmt: skip
    assert all(0 < part.select("run_id", "split").n_unique() <= MAX_SERIES for _, part in got)
    assert sorted(r for _, part in got for r in part["run_id"]) == sorted(t["run_id"])
    (tmp_path / "success_vs_distractors.png").write_bytes(b"an old single plot")
    (tmp_path / "success_vs_distractors-gone.png").write_bytes(b"an old family's panel")
    written = plot_panels("success_vs_distractors", t, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"success_vs_distractors-{name}.png" for name, _ in got
    ) == sorted(p.name for p in written)  # fmt: skip
    for p in written:
        _open(p)
