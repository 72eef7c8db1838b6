"""Place names: unique per pool, reproducible per seed, numbered once the word lists run out."""

from __future__ import annotations

import numpy as np
import pytest

from urbex.synth.names import NAME_STYLES, NamePool


@pytest.mark.parametrize("style", sorted(NAME_STYLES))
def test_same_seed_same_names(style):
    def draw(seed):
        p = NamePool(np.random.default_rng(seed), style)
        return [p.road(), p.building(), p.park(), p.parking(), p.road()]

    assert draw(4) == draw(4)
    assert draw(4) != draw(5)


@pytest.mark.parametrize("style", sorted(NAME_STYLES))
def test_names_are_unique_and_numbered_when_exhausted(style):
    pool = NamePool(np.random.default_rng(0), style)
    names = [pool.parking() for _ in range(250)]  # more than the patterns can fill (< 150)
    assert len(set(names)) == 250
    assert any(n.rsplit(" ", 1)[-1].isdigit() for n in names)


def test_road_stems_are_not_reused_while_any_are_left():
    pool = NamePool(np.random.default_rng(1), "stpls3d")
    n_stems = len(NAME_STYLES["stpls3d"]["road_stems"])
    roads = [pool.road() for _ in range(n_stems)]
    stems = [r.rsplit(" ", 1)[0] for r in roads]
    assert len(set(stems)) == n_stems
    assert all(r.rsplit(" ", 1)[1] in NAME_STYLES["stpls3d"]["road_suffixes"] for r in roads)


def test_building_park_and_parking_names_share_one_namespace():
    pool = NamePool(np.random.default_rng(2), "sensaturban")
    names = [f() for _ in range(30) for f in (pool.building, pool.park, pool.parking)]
    assert len(set(names)) == len(names)
    assert all("{" not in n for n in names)  # every pattern filled in


def test_unknown_style_raises():
    with pytest.raises(ValueError, match="style: expected one of"):
        NamePool(np.random.default_rng(0), "kitti")
