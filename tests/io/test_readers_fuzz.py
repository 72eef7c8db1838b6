"""Fuzzing the point-cloud readers (hypothesis): mutated PLY / LAS / LAZ bytes never give a
traceback — each read returns a cloud or raises an :class:`~urbex.errors.UrbexError`.

Mutations of small valid files: truncations, byte flips and overwrites, random bodies under a
valid header, and PLY header edits (vertex count, property types, format). Seeded
(``derandomize``) and bounded (``max_examples``) so each test takes a few seconds.
"""

from __future__ import annotations

import io
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from urbex.errors import UrbexError
from urbex.io.las import read_las, write_las
from urbex.io.ply import PlyReader, read_ply, write_ply
from urbex.pointcloud import PointCloud

FUZZ = settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _cloud(n: int, *, dtype: type = np.float32, offset: float = 0.0) -> PointCloud:
    rng = np.random.default_rng(11)
    return PointCloud(
        xyz=(rng.random((n, 3)) * 60).astype(dtype),
        offset=np.full(3, offset),
        rgb=rng.integers(0, 256, (n, 3), dtype=np.uint8),
        semantic=rng.integers(0, 13, n).astype(np.int32),
        instance=rng.integers(-1, 20, n).astype(np.int32),
        class_scheme="asprs" if offset else "sensaturban",
        crs="EPSG:32630" if offset else None,
    )


def _ply_bytes(kind: str) -> bytes:
    buf = io.BytesIO()
    if kind == "double":
        write_ply(buf, _cloud(24, dtype=np.float64))
        return buf.getvalue()
    write_ply(buf, _cloud(24), ascii=kind == "ascii")
    raw = buf.getvalue()
    if kind == "big":  # same header, big-endian body of the same rows
        head, body = raw.split(b"end_header\n", 1)
        dt = np.dtype(
            [(a, "<f4") for a in "xyz"]
            + [(c, "u1") for c in ("red", "green", "blue")]
            + [("class", "u1"), ("instance", "<i4")]
        )
        rows = np.frombuffer(body, dt)
        big = rows.astype(dt.newbyteorder(">"))
        head = head.replace(b"binary_little_endian", b"binary_big_endian")
        return head + b"end_header\n" + big.tobytes()
    return raw


PLY = {k: _ply_bytes(k) for k in ("little", "big", "double", "ascii")}
_HEADER_EDITS = [
    (b"element vertex 24", b"element vertex 0"),
    (b"element vertex 24", b"element vertex 23"),
    (b"element vertex 24", b"element vertex 25"),
    (b"element vertex 24", b"element vertex 99999999999999999999"),
    (b"property float x", b"property double x"),
    (b"property float y", b"property uchar y"),
    (b"property double x", b"property float x"),
    (b"property uchar red", b"property int red"),
    (b"property int instance", b"property float instance"),
    (b"property uchar class", b"property list uchar int class"),
    (b"binary_little_endian", b"binary_big_endian"),
    (b"binary_little_endian", b"ascii"),
    (b"ascii", b"binary_little_endian"),
    (b"end_header\n", b"end_header\r\n"),
    (b"end_header\n", b"element face 3\nproperty int a\nend_header\n"),
]


def _read_ply_everywhere(data: bytes, path: Path) -> None:
    """read_ply from a file object and from a path (memmap), and chunked."""
    for src in (io.BytesIO(data), path):
        if isinstance(src, Path):
            src.write_bytes(data)
        try:
            cloud = read_ply(src)
        except UrbexError as e:
            assert "\n" not in str(e), str(e)
            continue
        assert np.isfinite(cloud.xyz).all()
    try:
        with PlyReader(path) as reader:
            for chunk in reader.iter_chunks(7):
                assert np.isfinite(chunk.xyz).all()
    except UrbexError:
        pass


@pytest.fixture(scope="module")
def fuzz_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


@FUZZ
@given(
    kind=st.sampled_from(sorted(PLY)),
    edits=st.lists(st.sampled_from(_HEADER_EDITS), max_size=3),
    flips=st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 255)), max_size=6),
    cut=st.one_of(st.none(), st.floats(0, 1)),
)
def test_read_ply_mutated_file_is_a_cloud_or_an_urbex_error(
    fuzz_dir: Path,
    kind: str,
    edits: list[tuple[bytes, bytes]],
    flips: list[tuple[float, int]],
    cut: float | None,
) -> None:
    data = PLY[kind]
    for old, new in edits:
        data = data.replace(old, new, 1)
    buf = bytearray(data)
    for where, value in flips:
        buf[int(where * len(buf))] = value
    if cut is not None:
        buf = buf[: int(cut * len(buf))]
    _read_ply_everywhere(bytes(buf), fuzz_dir / "m.ply")


@FUZZ
@given(
    kind=st.sampled_from(sorted(PLY)),
    seed=st.integers(0, 2**32 - 1),
    delta=st.integers(-40, 40),
    body=st.binary(max_size=600),
)
def test_read_ply_valid_header_random_body_is_a_cloud_or_an_urbex_error(
    fuzz_dir: Path, kind: str, seed: int, delta: int, body: bytes
) -> None:
    # uniformly random bytes of about the body's size (NaN, 1e38, ... coordinates), then
    # hypothesis' own bytes (zeros, repeats, short bodies)
    head, real = PLY[kind].split(b"end_header\n", 1)
    noise = np.random.default_rng(seed).bytes(max(len(real) + delta, 0))
    for data in (noise, body):
        _read_ply_everywhere(head + b"end_header\n" + data, fuzz_dir / "b.ply")


@FUZZ
@given(header=st.binary(max_size=300), tail=st.binary(max_size=200))
def test_read_ply_random_header_is_an_urbex_error(
    fuzz_dir: Path, header: bytes, tail: bytes
) -> None:
    _read_ply_everywhere(b"ply\n" + header + b"\nend_header\n" + tail, fuzz_dir / "h.ply")


def _las_bytes(suffix: str) -> bytes:
    """A 60-point LAS 1.4 / LAZ (CRS VLR, instance extra bytes) as written by write_las."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / f"small{suffix}"
        write_las(path, _cloud(60, dtype=np.float64, offset=512_000.0))
        return path.read_bytes()


LAS = {s: _las_bytes(s) for s in (".las", ".laz")}


def _read_las_everywhere(data: bytes, path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for src in (io.BytesIO(data), path):
            if isinstance(src, Path):
                src.write_bytes(data)
            try:
                cloud = read_las(src, chunk_size=25)
            except UrbexError as e:
                assert "\n" not in str(e), str(e)
                continue
            assert np.isfinite(cloud.xyz).all()


@FUZZ
@given(
    suffix=st.sampled_from(sorted(LAS)),
    flips=st.lists(
        st.tuples(st.one_of(st.integers(0, 400), st.integers(0, 10**6)), st.integers(0, 255)),
        max_size=6,
    ),
    cut=st.one_of(st.none(), st.floats(0, 1)),
)
def test_read_las_mutated_file_is_a_cloud_or_an_urbex_error(
    fuzz_dir: Path, suffix: str, flips: list[tuple[int, int]], cut: float | None
) -> None:
    buf = bytearray(LAS[suffix])
    for where, value in flips:  # mostly the header and VLRs (first 400 bytes), else anywhere
        buf[where % len(buf)] = value
    if cut is not None:
        buf = buf[: int(cut * len(buf))]
    _read_las_everywhere(bytes(buf), fuzz_dir / f"m{suffix}")


def test_fuzz_base_files_are_valid(fuzz_dir: Path) -> None:
    for kind, data in PLY.items():
        assert len(read_ply(io.BytesIO(data))) == 24, kind
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for suffix, data in LAS.items():
            (fuzz_dir / f"ok{suffix}").write_bytes(data)
            assert len(read_las(fuzz_dir / f"ok{suffix}", chunk_size=25)) == 60, suffix
