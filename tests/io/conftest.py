"""Shared fixtures for the io tests (the real LiDAR samples: ``realdata`` in tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """``tests/data``."""
    return DATA
