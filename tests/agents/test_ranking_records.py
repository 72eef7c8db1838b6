"""The rankers' records: Candidates and Anchor validate on construction and name what is wrong."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from urbex.agents.ranking_records import Anchor, Candidates
from urbex.errors import CacheError


def test_records_reject_bad_input():
    with pytest.raises(ValueError, match="Anchor 'X'"):
        Anchor(name="X", box=np.array([1.0, 0.0, 0.0, 1.0]))
    with pytest.raises(ValueError, match=r"Candidates.box"):
        Candidates.build(class_name=["Car"], box=[[0, 0, np.nan, 1]])
    with pytest.raises(CacheError, match="missing"):
        Candidates.from_table(pl.DataFrame({"object_id": ["1"]}), scene_id="s")
