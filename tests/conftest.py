"""Shared fixtures. Offline by construction: no model or data download is ever attempted."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TQDM_DISABLE", "1")
if os.environ.get("PYTEST_XDIST_WORKER"):
    # `pytest -n 2` on a 2-core machine: one compute thread per worker (and per child process
    # it starts). Torch's OpenMP pool would otherwise take every core in each worker, and the
    # two pools spin against each other: the torch-heavy tests ran 2-4x slower than alone.
    os.environ.setdefault("OMP_NUM_THREADS", "1")

# The toy city's fixtures, for every test folder (imported after the offline switches above).
from tests.fixtures.city import city, env, synth_city  # noqa: F401

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The repository root."""
    return REPO_ROOT


@pytest.fixture(scope="session")
def realdata() -> Path:
    """``../shared/realdata`` next to the checkout (real LAS/LAZ scans from laspy's test data)."""
    for cand in (REPO_ROOT.parent / "shared" / "realdata", REPO_ROOT / "shared" / "realdata"):
        if (cand / "autzen_trim.laz").exists():
            return cand
    pytest.skip("../shared/realdata is not present next to this checkout")
