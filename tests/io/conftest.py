"""Shared fixtures for the io tests: the real LiDAR samples in ``<repo>/../shared/realdata``."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data"


@pytest.fixture(scope="session")
def realdata() -> Path:
    """``<repo>/../shared/realdata`` (skips the test when the directory is absent)."""
    d = REPO.parent / "shared" / "realdata"
    if not (d / "autzen_trim.laz").is_file():
        pytest.skip(f"real LiDAR samples not found at {d} (CI checks out shared/ next to the repo)")
    return d


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """``tests/data``."""
    return DATA
