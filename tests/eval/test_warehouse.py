import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from urbex.eval.warehouse import TABLES, refresh_warehouse, scene_row


def test_refresh_warehouse_empty_assets_gives_empty_typed_views(tmp_path):
    con = duckdb.connect(":memory:")
    counts = refresh_warehouse(tmp_path, con=con)
    assert set(counts) == set(TABLES)
    assert all(v == 0 for v in counts.values())
    cols = [r[0] for r in con.execute("DESCRIBE scenes").fetchall()]
    assert cols[:2] == ["scene_id", "n_points"]


def test_refresh_warehouse_views_follow_parquet_files(tmp_path):
    d = tmp_path / "scenes" / "a"
    d.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist([{"scene_id": "a", "n_points": 5}]), d / "scene.parquet")
    d2 = tmp_path / "scenes" / "b"
    d2.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist([{"scene_id": "b", "n_points": 7}]), d2 / "scene.parquet")
    con = duckdb.connect(":memory:")
    counts = refresh_warehouse(tmp_path, con=con)
    assert counts["scenes"] == 2
    assert con.execute("SELECT sum(n_points) FROM scenes").fetchone()[0] == 12


def test_refresh_warehouse_file_is_readable_read_only(tmp_path):
    refresh_warehouse(tmp_path)
    con = duckdb.connect(str(tmp_path / "warehouse.duckdb"), read_only=True)
    assert con.execute("SELECT count(*) FROM episodes").fetchone()[0] == 0


def test_scene_row_requires_bounds():
    meta = {
        "n_points": 3,
        "bounds": [0, 1, 2, 3, 4, 5],
        "bev_width": 30,
        "bev_height": 30,
        "resolution": 0.1,
    }
    row = scene_row(meta, scene_id="s")
    assert row["x_max"] == 3.0 and row["bev_width"] == 30
    with pytest.raises(KeyError):
        scene_row({"n_points": 1}, scene_id="s")
    with pytest.raises(ValueError, match="6 values"):
        scene_row({**meta, "bounds": [0, 1]}, scene_id="s")
