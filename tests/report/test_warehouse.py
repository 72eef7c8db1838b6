import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from urbex.report.warehouse import TABLES, readable_runs, refresh_warehouse
from urbex.scene.meta import scene_row


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


def _view_columns(con: duckdb.DuckDBPyConnection, table: str) -> tuple[str, ...]:
    return tuple(r[0] for r in con.execute(f"DESCRIBE {table}").fetchall())


@pytest.mark.parametrize(
    ("table", "record"),
    [("episodes", "EpisodeRecord"), ("steps", "StepRow")],
)
def test_warehouse_record_views_show_every_record_field(tmp_path, table, record):
    # a field added to the record (and so to its Parquet shards) must appear in the empty view
    from dataclasses import fields

    import urbex.eval.episodes as ep

    con = duckdb.connect(":memory:")
    refresh_warehouse(tmp_path, con=con)
    assert _view_columns(con, table) == tuple(f.name for f in fields(getattr(ep, record)))
    cols = ep.EPISODE_COLUMNS if table == "episodes" else ep.STEP_COLUMNS
    assert tuple(c for c, _ in TABLES[table].columns) == cols


def test_warehouse_instances_view_shows_every_instance_table_column(tmp_path):
    import numpy as np

    from urbex.scene.instances import INSTANCE_COLUMNS, instance_table

    con = duckdb.connect(":memory:")
    refresh_warehouse(tmp_path, con=con)
    assert _view_columns(con, "instances") == INSTANCE_COLUMNS
    empty = instance_table(
        scene_id="s",
        xyz=np.zeros((0, 3)),
        origin=np.zeros(3),
        rgb=None,
        semantic=None,
        instance=None,
        class_scheme="sensaturban",
        boxes=None,
    )
    assert tuple(empty.columns) == INSTANCE_COLUMNS


def test_warehouse_record_view_types_match_the_shards(tmp_path):
    # the empty view and a shard written with the record's schema agree on names and types
    from urbex.atomic import write_table_atomic
    from urbex.eval.episodes import episode_schema, step_schema

    empty = duckdb.connect(":memory:")
    refresh_warehouse(tmp_path, con=empty)
    want = {t: empty.execute(f"DESCRIBE {t}").fetchall() for t in ("episodes", "steps")}
    run = tmp_path / "eval" / "runs" / "r"
    write_table_atomic(episode_schema().empty_table(), run / "episodes" / "part-0.parquet")
    write_table_atomic(step_schema().empty_table(), run / "steps" / "part-0.parquet")
    full = duckdb.connect(":memory:")
    refresh_warehouse(tmp_path, con=full)
    for t in ("episodes", "steps"):
        got = full.execute(f"DESCRIBE {t}").fetchall()
        assert [r[:2] for r in got] == [r[:2] for r in want[t]]


def test_scene_row_keys_are_the_scenes_view_columns():
    from urbex.scene.meta import SCENE_COLUMNS

    meta = {"n_points": 3, "bounds": [0, 1, 2, 3, 4, 5], "bev_width": 3, "bev_height": 3}
    row = scene_row({**meta, "resolution": 0.1}, scene_id="s")
    assert tuple(row) == tuple(c for c, _ in SCENE_COLUMNS)


def test_warehouse_globs_come_from_the_layout():
    from urbex.atomic import PUBLIC
    from urbex.layout import AssetLayout

    rel = AssetLayout.relative()
    assert TABLES["scenes"].glob == "scenes/[!.]*/scene.parquet"
    assert TABLES["instances"].glob == rel.instances(PUBLIC).as_posix()
    assert TABLES["episodes"].glob == "eval/runs/[!.]*/episodes/part-*.parquet"
    assert TABLES["metrics"].glob == rel.run_metrics(PUBLIC).as_posix()
    assert TABLES["queries"].glob == "splits/queries.parquet"


def test_warehouse_landmarks_and_queries_views_follow_their_table_schemas(tmp_path):
    from urbex.annotations.clean import QUERY_SCHEMA
    from urbex.landmarks import write_landmark_table
    from urbex.landmarks.table import LANDMARK_SCHEMA, empty_landmark_table

    con = duckdb.connect(":memory:")
    refresh_warehouse(tmp_path, con=con)
    assert _view_columns(con, "landmarks") == tuple(LANDMARK_SCHEMA)
    assert _view_columns(con, "queries") == (*QUERY_SCHEMA, "split")
    want = con.execute("DESCRIBE landmarks").fetchall()
    write_landmark_table(empty_landmark_table(), tmp_path / "landmarks" / "s.parquet")
    full = duckdb.connect(":memory:")
    refresh_warehouse(tmp_path, con=full)
    assert [r[:2] for r in full.execute("DESCRIBE landmarks").fetchall()] == [r[:2] for r in want]


def _run(assets, run_id: str, status: str | None, n: int = 2) -> None:
    """A run directory with ``n`` episodes, their steps, metrics and (unless None) a run.json."""
    from urbex.atomic import write_table_atomic
    from urbex.eval.episodes import episode_schema, step_schema
    from urbex.eval.rundir import RunRecord, write_run
    from urbex.eval.runspec import RunSpec

    d = assets / "eval" / "runs" / run_id
    ep = episode_schema()
    rows = [{f.name: None for f in ep} | {"run_id": run_id, "query_id": f"q{i}"} for i in range(n)]
    write_table_atomic(pa.Table.from_pylist(rows, schema=ep), d / "episodes" / "part-0.parquet")
    st = step_schema()
    srows = [{f.name: None for f in st} | {"run_id": run_id, "query_id": "q0"}]
    write_table_atomic(pa.Table.from_pylist(srows, schema=st), d / "steps" / "part-0.parquet")
    pq.write_table(pa.Table.from_pylist([{"run_id": run_id, "n": n}]), d / "metrics.parquet")
    if status is not None:
        record = RunRecord(run_id=run_id, spec=RunSpec(policy="oracle", split="test_no"),
                           fingerprint={"env": {"max_turns": 5}}, status=status, n_queries=n,
                           error="PolicyError: boom" if status == "failed" else None)  # fmt: skip
        write_run(record, d / "run.json")


def test_warehouse_shows_only_complete_runs_and_lists_every_run_in_runs(tmp_path):
    _run(tmp_path, "done", "complete")
    _run(tmp_path, "playing", "running")
    _run(tmp_path, "broken", "failed")
    _run(tmp_path, "handmade", None)  # no run.json: not the runner's, shown as is
    con = duckdb.connect(":memory:")
    counts = refresh_warehouse(tmp_path, con=con)
    for table in ("episodes", "steps", "metrics"):
        got = con.execute(f"SELECT DISTINCT run_id FROM {table} ORDER BY run_id").fetchall()
        assert got == [("done",), ("handmade",)], table
    assert counts["episodes"] == 4 and counts["runs"] == 3
    runs = con.execute("SELECT run_id, status, error, n_queries FROM runs ORDER BY run_id")
    assert runs.fetchall() == [
        ("broken", "failed", "PolicyError: boom", 2),
        ("done", "complete", None, 2),
        ("playing", "running", None, 2),
    ]


def test_warehouse_lists_a_run_of_an_older_run_json_as_failed_with_a_warning(tmp_path):
    import json

    _run(tmp_path, "done", "complete")
    _run(tmp_path, "old", "complete")
    path = tmp_path / "eval" / "runs" / "old" / "run.json"
    meta = json.loads(path.read_text())
    del meta["schema"]  # as written before RunRecord
    path.write_text(json.dumps({**meta, "policy": "oracle", "split": "test_no"}))
    con = duckdb.connect(":memory:")
    with pytest.warns(UserWarning, match=r"old/run.json: left out.*schema 1") as rec:
        counts = refresh_warehouse(tmp_path, con=con)
    assert len(rec) == 1 and "--run-id old --restart-stale" in str(rec[0].message)
    assert counts["runs"] == 2
    got = dict(con.execute("SELECT run_id, status FROM runs").fetchall())
    assert got == {"done": "complete", "old": "failed"}
    (error,) = con.execute("SELECT error FROM runs WHERE run_id = 'old'").fetchone()
    assert "run.json of schema 1" in error and "urbex evaluate" in error
    for table in ("episodes", "steps", "metrics"):
        rows = con.execute(f"SELECT DISTINCT run_id FROM {table}").fetchall()
        assert rows == [("done",)], table
    assert [d.name for d in readable_runs(tmp_path)] == ["done"]


def test_warehouse_runs_view_is_typed_empty_and_over_run_json(tmp_path):
    from urbex.report.warehouse import RUN_COLUMNS

    con = duckdb.connect(":memory:")
    refresh_warehouse(tmp_path, con=con)
    empty = [r[:2] for r in con.execute("DESCRIBE runs").fetchall()]
    assert empty == list(RUN_COLUMNS)
    assert TABLES["runs"].glob == "eval/runs/[!.]*/run.json"
    _run(tmp_path, "r", "running")
    full = duckdb.connect(":memory:")
    refresh_warehouse(tmp_path, con=full)
    assert [r[:2] for r in full.execute("DESCRIBE runs").fetchall()] == empty
