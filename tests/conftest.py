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
    """The folder of the real LAS/LAZ samples (laspy's test data; docs/realdata.md): the
    environment variable ``URBEX_REALDATA``, else ``shared/realdata`` beside or inside the
    checkout; the test is skipped when none holds ``autzen_trim.laz``."""
    given = os.environ.get("URBEX_REALDATA")
    cands = [Path(given)] if given else []
    cands += [REPO_ROOT.parent / "shared" / "realdata", REPO_ROOT / "shared" / "realdata"]
    for cand in cands:
        if (cand / "autzen_trim.laz").is_file():
            return cand
    pytest.skip("real LiDAR samples not found: set URBEX_REALDATA (docs/realdata.md)")
