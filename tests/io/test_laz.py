"""LAZ through :class:`urbex.io.las.LasReader` (laspy's reader, lazrs backend): a file read in
several chunks gives the cloud its uncompressed twin gives, bit for bit, for the point formats
that compress by layer (6–10) and those that do not."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from urbex.io.las import LasReader, read_las


def _pair(tmp_path: Path, n: int, fmt: int) -> tuple[Path, Path]:
    """The same random points as ``.las`` and ``.laz`` (with a layer urbex does not read)."""
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
    las.intensity = rng.integers(0, 999, n).astype(np.uint16)
    out = []
    for suffix in (".las", ".laz"):
        p = tmp_path / f"f{fmt}_{n}{suffix}"
        las.write(p)
        out.append(p)
    return out[0], out[1]


@pytest.mark.parametrize(("fmt", "n", "chunk"), [(7, 60_000, 25_000), (3, 70_001, 10**9)])
def test_laz_read_in_chunks_is_its_las_twin(tmp_path, fmt, n, chunk) -> None:
    las_path, laz_path = _pair(tmp_path, n, fmt)
    with pytest.warns(UserWarning, match="no CRS"):
        plain = read_las(las_path, chunk_size=chunk)
    with pytest.warns(UserWarning, match="no CRS"):
        packed = read_las(laz_path, chunk_size=chunk)
    for name in ("xyz", "offset", "rgb", "semantic"):
        a, b = getattr(plain, name), getattr(packed, name)
        if a is None:
            assert b is None, name
            continue
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), name
    with pytest.warns(UserWarning), LasReader(laz_path) as r:
        assert r.read().n_points == n


def test_a_laz_file_cut_short_is_a_format_error_naming_it(tmp_path) -> None:
    from urbex.errors import PointCloudFormatError

    _, laz_path = _pair(tmp_path, 120_000, 7)
    cut = tmp_path / "cut.laz"
    cut.write_bytes(laz_path.read_bytes()[: laz_path.stat().st_size // 2])
    with pytest.raises(PointCloudFormatError) as e, pytest.warns(UserWarning):
        read_las(cut)
    assert "cut.laz" in str(e.value)
