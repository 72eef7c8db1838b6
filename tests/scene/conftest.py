"""Shared tiny clouds for the scene tests (seeded, generated in memory)."""

from __future__ import annotations

import numpy as np
import pytest

from urbex.pointcloud import PointCloud


def random_cloud(
    seed: int,
    n: int = 5000,
    extent: tuple[float, float, float] = (40.0, 30.0, 10.0),
    offset: tuple[float, float, float] = (500.0, 200.0, 3.0),
) -> PointCloud:
    rng = np.random.default_rng(seed)
    xyz = (rng.random((n, 3)) * np.array(extent)).astype(np.float32)
    return PointCloud(
        xyz=xyz,
        offset=np.array(offset),
        rgb=rng.integers(0, 256, (n, 3), dtype=np.uint8),
        semantic=rng.integers(0, 13, n).astype(np.int32),
        instance=rng.integers(-1, 20, n).astype(np.int32),
        source="test",
    )


@pytest.fixture
def cloud() -> PointCloud:
    return random_cloud(0)


@pytest.fixture
def make_cloud():  # type: ignore[no-untyped-def]
    """The :func:`random_cloud` factory (tests have no package to import it from)."""
    return random_cloud
