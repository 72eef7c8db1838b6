"""Fixtures for the annotation tests: one small synthetic data set per session."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def synth_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 3-scene synthetic CityRefer data set (100 m blocks) + one STPLS3D-style scene."""
    from urbex.synth.dataset import generate_dataset

    root = tmp_path_factory.mktemp("synth") / "ds"
    generate_dataset(
        root,
        scenes=3,
        seed=0,
        size=100,
        density=5,
        las_copy=False,
        stpls3d_scenes=1,
        progress=False,
    )
    return root
