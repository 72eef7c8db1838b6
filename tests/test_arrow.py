"""urbex.arrow: the tables pyarrow's own constructors would build, without importing pandas."""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from urbex.arrow import read_parquet, row_table, table

SCHEMA = pa.schema(
    [
        ("name", pa.string()),
        ("x", pa.float64()),
        ("n", pa.int64()),
        ("ok", pa.bool_()),
        ("small", pa.int32()),
        ("u8", pa.uint8()),
        ("f32", pa.float32()),
    ]
)
COLUMNS = {
    "name": ["a", None, "ç"],
    "x": [1.5, None, math.nan],
    "n": [np.int64(3), 2, None],
    "ok": [True, np.bool_(False), None],
    "small": [1, -2, 3],
    "u8": [0, 255, None],
    "f32": [np.float32(0.5), None, 2.0],
}


def _nan_as_text(rows: list[dict]) -> list[dict]:
    """Rows with NaN spelt ``"nan"`` (NaN != NaN would fail an equal comparison)."""
    return [
        {k: "nan" if isinstance(v, float) and math.isnan(v) else v for k, v in r.items()}
        for r in rows
    ]


def _bytes(t: pa.Table, path) -> bytes:
    pq.write_table(t, path, compression="zstd")
    return path.read_bytes()


@pytest.mark.parametrize("rows", [3, 0])
def test_table_writes_the_parquet_bytes_of_from_pydict(tmp_path, rows):
    cols = {k: v[:rows] for k, v in COLUMNS.items()}
    ours = table(cols, SCHEMA)
    theirs = pa.Table.from_pydict(cols, schema=SCHEMA)
    assert ours.schema == theirs.schema
    assert _nan_as_text(ours.to_pylist()) == _nan_as_text(theirs.to_pylist())
    assert _bytes(ours, tmp_path / "a.parquet") == _bytes(theirs, tmp_path / "b.parquet")


def test_table_takes_numpy_columns_and_casts_them_to_the_schema():
    t = table({"small": np.array([1, 2], np.int64), "f32": np.array([1.0, 2.5])},
              pa.schema([("small", pa.int32()), ("f32", pa.float32())]))  # fmt: skip
    assert t.schema.field("small").type == pa.int32()
    assert t.column("f32").to_pylist() == [1.0, 2.5]


def test_table_rejects_other_columns_other_lengths_wrong_values_and_types():
    with pytest.raises(ValueError, match="not the schema's"):
        table({"name": ["a"]}, SCHEMA)
    with pytest.raises(ValueError, match="different lengths"):
        table({"a": [1, 2], "b": [1]}, pa.schema([("a", pa.int64()), ("b", pa.int64())]))
    with pytest.raises(TypeError, match="does not fit"):
        table({"a": ["seven"]}, pa.schema([("a", pa.int64())]))
    with pytest.raises(TypeError, match="not supported"):
        table({"a": [[1]]}, pa.schema([("a", pa.list_(pa.int64()))]))


def test_row_table_types_a_row_as_from_pylist_does(tmp_path):
    row = {"scene_id": "s", "n": 7, "x": 1.25, "crs": None, "flag": True}
    ours, theirs = row_table(row), pa.Table.from_pylist([row])
    assert ours.schema == theirs.schema and ours.equals(theirs)
    assert _bytes(ours, tmp_path / "a.parquet") == _bytes(theirs, tmp_path / "b.parquet")
    with pytest.raises(TypeError, match="'bounds' is a list"):
        row_table({"bounds": [1.0, 2.0]})


def test_read_parquet_reads_what_read_table_reads(tmp_path):
    path = tmp_path / "t.parquet"
    pq.write_table(table({**COLUMNS, "x": [1.5, None, -2.0]}, SCHEMA), path)  # no NaN: equals
    assert read_parquet(path).equals(pq.read_table(path))
    assert read_parquet(path, ["name"]).column_names == ["name"]
    (tmp_path / "bad.parquet").write_bytes(b"not parquet")
    with pytest.raises(pa.ArrowInvalid):
        read_parquet(tmp_path / "bad.parquet")


def test_an_evaluation_run_and_a_scene_row_never_import_pandas(tmp_path, repo_root):
    """In a fresh interpreter: an episodes shard written, its query ids read back, the run
    read, a scene row built — pandas (0.4-0.5 s to import) stays out of ``sys.modules``."""
    code = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        from tests.eval.test_episodes import _ep, _step
        from urbex.arrow import row_table
        from urbex.eval.episodes import finished_query_ids, read_episodes, write_chunk
        d = Path({str(tmp_path)!r}) / "run"
        write_chunk(d, [_ep("q1"), _ep("q2")], [_step("q1"), _step("q2")])
        assert finished_query_ids(d) == {{"q1", "q2"}}
        assert read_episodes(d).height == 2
        row_table({{"scene_id": "s", "n": 1, "crs": None}})
        print("pandas" in sys.modules)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=repo_root, capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "False"
