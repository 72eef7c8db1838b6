"""Tests for urbex.io._laz: LAZ records straight from lazrs equal laspy's, group by group."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from urbex.io import las as las_mod
from urbex.io._laz import laz_record_groups
from urbex.io.las import LasReader, read_las


def _laz(tmp_path: Path, n: int, fmt: int = 7) -> Path:
    import laspy

    rng = np.random.default_rng(fmt)
    header = laspy.LasHeader(point_format=fmt, version="1.4" if fmt >= 6 else "1.2")
    header.scales = np.full(3, 0.01)
    header.offsets = np.array([500.0, 300.0, 0.0])
    las = laspy.LasData(header)
    las.x, las.y, las.z = (rng.uniform(lo, lo + 90, n) for lo in (500, 300, 0))
    las.classification = rng.integers(0, 20, n).astype(np.uint8)
    if "red" in las.point_format.dimension_names:
        las.red = rng.integers(0, 65535, n).astype(np.uint16)
    las.intensity = rng.integers(0, 999, n).astype(np.uint16)  # a layer urbex does not read
    p = tmp_path / f"f{fmt}_{n}.laz"
    las.write(p)
    return p


@pytest.mark.parametrize("fmt,n,group", [(7, 123_457, 50_000), (7, 120_000, 10**9), (3, 70_001, 1)])
def test_laz_record_groups_are_laspys_records_group_by_group(tmp_path, fmt, n, group) -> None:
    import laspy

    p = _laz(tmp_path, n, fmt)
    want = laspy.read(p).points.array
    with laspy.open(p) as f:
        header = f.header
    groups = laz_record_groups(p, header, laspy.DecompressionSelection.all(), group)
    assert groups is not None
    got = np.concatenate([g.copy() for g in groups])  # each group reuses the buffer
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


def test_laz_record_groups_decline_a_file_whose_chunks_run_past_its_end(tmp_path) -> None:
    import laspy

    p = _laz(tmp_path, 120_000)
    raw = p.read_bytes()
    cut = tmp_path / "cut.laz"
    cut.write_bytes(raw[: len(raw) * 2 // 3] + raw[-(8 * 3 + 8) :])  # the chunk table kept
    with laspy.open(p) as f:
        header = f.header
    assert laz_record_groups(cut, header, laspy.DecompressionSelection.all(), 10**9) is None


def test_read_las_laz_same_cloud_through_lazrs_and_through_laspy(tmp_path, monkeypatch) -> None:
    p = _laz(tmp_path, 60_000)
    with pytest.warns(UserWarning, match="no CRS"):
        direct = read_las(p, chunk_size=25_000)  # three groups of chunks
    monkeypatch.setattr(las_mod, "laz_record_groups", lambda *a, **k: None)
    with pytest.warns(UserWarning, match="no CRS"):
        via_laspy = read_las(p, chunk_size=25_000)
    for name in ("xyz", "offset", "rgb", "semantic"):
        a, b = getattr(direct, name), getattr(via_laspy, name)
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), name
    with pytest.warns(UserWarning), LasReader(p) as r:
        assert r.read().n_points == 60_000
