"""Tests for urbex.scene._resample: the area resampling sums every source pixel in order."""

from __future__ import annotations

import numpy as np
import pytest

from urbex.scene import _resample as R


def _reference(rgb, z, r0, sy, sx, acc, wsum):
    """One addition per (source pixel, output pixel) overlap, rows then columns, in Python."""
    ho, wo = wsum.shape
    for rr in range(rgb.shape[0]):
        s = r0 + rr
        for o in range(ho):
            wy = min(s + 1.0, (o + 1) * sy) - max(float(s), o * sy)
            if wy <= 0.0:
                continue
            for cc in range(rgb.shape[1]):
                if np.isnan(z[rr, cc]):
                    continue
                for p in range(wo):
                    wx = min(cc + 1.0, (p + 1) * sx) - max(float(cc), p * sx)
                    if wx <= 0.0:
                        continue
                    wgt = wx * wy
                    for k in range(3):
                        acc[o, p, k] += wgt * rgb[rr, cc, k]
                    wsum[o, p] += wgt


@pytest.mark.parametrize("shape,out,band", [((30, 41), (7, 9), 4), ((12, 10), (30, 25), 5)])
def test_area_accumulate_same_bits_as_one_addition_per_overlap(shape, out, band) -> None:
    rng = np.random.default_rng(0)
    rgb = rng.integers(0, 256, (*shape, 3), dtype=np.uint8)
    z = np.where(rng.random(shape) < 0.2, np.nan, 1.0).astype(np.float32)
    sy, sx = shape[0] / out[0], shape[1] / out[1]
    got = (np.zeros((*out, 3)), np.zeros(out))
    want = (np.zeros((*out, 3)), np.zeros(out))
    for a in range(0, shape[0], band):  # band by band, as the build calls it
        R.area_accumulate(rgb[a : a + band], z[a : a + band], a, 0, 0.0, 0.0, sy, sx, *got)
        _reference(rgb[a : a + band], z[a : a + band], a, sy, sx, *want)
    assert got[0].tobytes() == want[0].tobytes() and got[1].tobytes() == want[1].tobytes()
