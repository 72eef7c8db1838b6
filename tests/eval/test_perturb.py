"""Tests of urbex.eval.perturb: noise / wrong / missing landmarks, footprint bounds moved along."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from urbex.errors import LandmarkError
from urbex.eval.perturb import PerturbedLandmarks, perturb_landmark_table
from urbex.landmarks import (
    FOOTPRINT_BOUNDS,
    LandmarkIndex,
    footprint_bounds,
    with_footprint_bounds,
)


def _landmarks() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "scene_id": ["s", "s", "s", "t"],
            "landmark_id": ["s:0", "s:1", "s:2", "t:0"],
            "name": ["Merton Hall", "Kings Parade", "Mill Pond", "Other Hall"],
            "x": [0.0, 100.0, 200.0, 5.0],
            "y": [0.0, 0.0, 50.0, 5.0],
            "footprint_wkt": [
                "POLYGON ((-5 -5, 5 -5, 5 5, -5 5, -5 -5))",
                "LINESTRING (90 0, 110 0)",
                None,
                "POINT (5 5)",
            ],
        }
    )


def _at(index, name: str, scene: str) -> tuple[float, float]:
    res = index.lookup(name, scene_id=scene)
    assert res.found, (name, res.status)
    return res.best.x, res.best.y


def test_perturbation_noise_shifts_every_landmark_by_noise_m():
    clean = LandmarkIndex(_landmarks())
    pert = PerturbedLandmarks(clean, "noise", noise_m=10.0, seed=3)
    for name, scene in (("Merton Hall", "s"), ("Kings Parade", "s"), ("Other Hall", "t")):
        (x0, y0), (x1, y1) = _at(clean, name, scene), _at(pert.for_query("x", scene), name, scene)
        assert np.hypot(x1 - x0, y1 - y0) == pytest.approx(10.0)
    row = pert.index.lookup("Merton Hall", scene_id="s").best.row
    from shapely import wkt

    c = wkt.loads(row["footprint_wkt"]).centroid
    assert (c.x, c.y) == pytest.approx((row["x"], row["y"]))  # footprint moved along
    again = PerturbedLandmarks(clean, "noise", noise_m=10.0, seed=3).index
    assert again.table["x"].to_list() == pert.index.table["x"].to_list()  # seeded


def test_perturbation_wrong_moves_each_landmark_to_another_of_its_scene():
    t = _landmarks()
    w = perturb_landmark_table(t, "wrong", seed=1)
    s_pos = set(zip(t["x"][:3], t["y"][:3]))
    for i in range(3):
        moved = (w["x"][i], w["y"][i])
        assert moved != (t["x"][i], t["y"][i]) and moved in s_pos
    assert sorted(zip(w["x"][:3], w["y"][:3])) == sorted(s_pos)  # a permutation
    assert (w["x"][3], w["y"][3]) == (5.0, 5.0)  # alone in scene t: unchanged
    idx = PerturbedLandmarks(LandmarkIndex(t), "wrong", seed=1).index
    assert _at(idx, "Kings Parade", "s") != (100.0, 0.0)


def test_perturbation_missing_hides_only_the_mentioned_landmarks():
    pert = PerturbedLandmarks(LandmarkIndex(_landmarks()), "missing")
    idx = pert.for_query("the red car next to merton hall", "s")
    assert not idx.lookup("Merton Hall", scene_id="s").found
    assert _at(idx, "Kings Parade", "s") == (100.0, 0.0)
    assert _at(idx, "Mill Pond", "s") == (200.0, 50.0)
    assert _at(idx, "Other Hall", "t") == (5.0, 5.0)
    assert _at(pert.for_query("a tree near kings parade", "s"), "Merton Hall", "s") == (0.0, 0.0)
    assert pert.for_query("a tree", "s").table.height == 4  # nothing mentioned: the clean map


def _bounds(t: pl.DataFrame) -> np.ndarray:
    return t.select(FOOTPRINT_BOUNDS).to_numpy().astype(np.float64)


def _shapely_bounds(t: pl.DataFrame) -> np.ndarray:
    import shapely

    wkts = [w or None for w in t["footprint_wkt"].to_list()]
    return np.asarray(shapely.bounds(shapely.from_wkt(np.array(wkts, dtype=object))))


@pytest.mark.parametrize("mode", ["noise", "wrong"])
@pytest.mark.parametrize("stored", [True, False], ids=["stored_bounds", "bare_table"])
def test_perturb_landmark_table_shifts_bounds_with_the_landmark(mode: str, stored: bool) -> None:
    clean = with_footprint_bounds(_landmarks())
    t = clean if stored else _landmarks()
    p = perturb_landmark_table(t, mode, noise_m=10.0, seed=3)
    dx = (p["x"] - clean["x"]).to_numpy()
    dy = (p["y"] - clean["y"]).to_numpy()
    assert np.abs(np.hypot(dx, dy)).max() > 0  # something moved
    want = _bounds(clean) + np.stack([dx, dy, dx, dy], axis=1)
    np.testing.assert_allclose(_bounds(p), want, rtol=0, atol=1e-9, equal_nan=True)
    # the bounds are exactly the shifted WKT's; no footprint stays no footprint
    np.testing.assert_array_equal(_bounds(p), _shapely_bounds(p))
    assert p["footprint_wkt"][2] is None and p.row(2, named=True)["fp_x_min_m"] is None


def test_perturbed_index_rows_carry_the_shifted_bounds() -> None:
    clean = LandmarkIndex(_landmarks())
    pert = PerturbedLandmarks(clean, "noise", noise_m=10.0, seed=3)
    a = clean.lookup("Merton Hall", scene_id="s").best
    b = pert.index.lookup("Merton Hall", scene_id="s").best
    shift = np.array([b.x - a.x, b.y - a.y] * 2)
    np.testing.assert_allclose(footprint_bounds(b.row), footprint_bounds(a.row) + shift)


def test_perturb_landmark_table_without_footprints_shifts_stored_bounds() -> None:
    t = with_footprint_bounds(_landmarks()).drop("footprint_wkt")
    p = perturb_landmark_table(t, "wrong", seed=1)
    dx, dy = (p["x"] - t["x"]).to_numpy(), (p["y"] - t["y"]).to_numpy()
    want = _bounds(t) + np.stack([dx, dy, dx, dy], axis=1)
    np.testing.assert_array_equal(_bounds(p), want)


def test_perturb_landmark_table_bad_footprint_raises() -> None:
    bad = _landmarks().with_columns(pl.lit("POLYGON ((0 0").alias("footprint_wkt"))
    with pytest.raises(LandmarkError, match="Merton Hall"):
        perturb_landmark_table(bad, "noise", noise_m=10.0)
