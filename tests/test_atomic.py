def test_atomic_path_published_file_follows_umask_not_tempfile_0600(tmp_path):
    import os

    from urbex.atomic import atomic_path

    old = os.umask(0o022)
    try:
        with atomic_path(tmp_path / "x.bin") as tmp:
            tmp.write_bytes(b"1")
    finally:
        os.umask(old)
    assert (tmp_path / "x.bin").stat().st_mode & 0o777 == 0o644


def _dead_pid() -> int:
    import subprocess
    import sys

    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_staging_names_are_hidden_and_carry_their_pid(tmp_path):
    import os

    from urbex.atomic import is_staging_name, staging_path, staging_pid

    for kind, suffix in (("tmp", ""), ("tmp", ".parquet"), ("old", "")):
        p = staging_path(tmp_path / "part-1.parquet", kind=kind, suffix=suffix)
        assert p.parent == tmp_path and p.name.startswith(".part-1.parquet.")
        assert is_staging_name(p.name) and staging_pid(p.name) == os.getpid()
    assert not is_staging_name("part-1.parquet") and staging_pid(".urbex_synth") is None


def test_remove_stale_removes_dead_writers_and_keeps_live_ones(tmp_path):
    import os
    import subprocess
    import sys

    from urbex.atomic import remove_stale

    dead = _dead_pid()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (tmp_path / "s").mkdir()
        gone = [tmp_path / f".s.tmp-{dead}-ab12", tmp_path / f".x.parquet.tmp-{dead}-cd.parquet"]
        kept = [tmp_path / f".s.tmp-{live.pid}-ef34", tmp_path / f".s.tmp-{os.getpid()}-01"]
        gone[0].mkdir()
        (gone[0] / "instances.parquet").write_bytes(b"x")
        gone[1].write_bytes(b"")
        for p in kept:
            p.mkdir()
        (tmp_path / ".urbex_synth").write_text("fp")  # not a staging name
        assert sorted(remove_stale(tmp_path)) == sorted(gone)
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
            ["s", ".urbex_synth", *(p.name for p in kept)]
        )
    finally:
        live.kill()
        live.wait()


def test_remove_stale_restores_an_old_version_whose_target_is_missing(tmp_path):
    from urbex.atomic import remove_stale

    dead = _dead_pid()
    old = tmp_path / f".scene.old-{dead}-ab"
    old.mkdir()
    (old / "meta.json").write_text("{}")
    (tmp_path / f".other.old-{dead}-cd").mkdir()
    (tmp_path / "other").mkdir()  # the new version was published: the old one is removed
    remove_stale(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other", "scene"]
    assert (tmp_path / "scene" / "meta.json").read_text() == "{}"


def test_remove_stale_of_one_name_leaves_the_others(tmp_path):
    from urbex.atomic import remove_stale

    dead = _dead_pid()
    a, b = tmp_path / f".a.tmp-{dead}-01", tmp_path / f".b.tmp-{dead}-02"
    a.mkdir()
    b.mkdir()
    assert remove_stale(tmp_path, name="a") == [a] and b.exists()


def test_atomic_path_removes_a_dead_writers_temp_of_the_same_file(tmp_path):
    from urbex.atomic import atomic_path

    left = tmp_path / f".x.parquet.tmp-{_dead_pid()}-ab.parquet"
    left.write_bytes(b"")  # what a kill during the write leaves
    with atomic_path(tmp_path / "x.parquet") as tmp:
        tmp.write_bytes(b"1")
    assert [p.name for p in tmp_path.iterdir()] == ["x.parquet"]


def test_publish_dir_without_rename_exchange_leaves_only_the_new_tree(tmp_path, monkeypatch):
    import urbex.atomic as atomic

    monkeypatch.setattr(atomic, "_exchange", lambda a, b: False)
    for v in ("1", "2"):
        st = atomic.staging_path(tmp_path / "out")
        st.mkdir()
        (st / "f").write_text(v)
        atomic.publish_dir(st, tmp_path / "out")
    assert [p.name for p in tmp_path.iterdir()] == ["out"]
    assert (tmp_path / "out" / "f").read_text() == "2"


def test_public_glob_excludes_staging_names_in_duckdb_and_pathlib(tmp_path):
    import duckdb

    from urbex.atomic import PUBLIC, staging_path

    for d in (
        "a",
        staging_path(tmp_path / "a").name,
        staging_path(tmp_path / "a", kind="old").name,
    ):
        (tmp_path / d).mkdir()
        (tmp_path / d / "i.parquet").write_bytes(b"")
    pattern = (tmp_path / PUBLIC / "i.parquet").as_posix()
    files = duckdb.connect().execute(f"SELECT file FROM glob('{pattern}')").fetchall()
    assert [f for (f,) in files] == [(tmp_path / "a" / "i.parquet").as_posix()]
    assert list(tmp_path.glob(f"{PUBLIC}/i.parquet")) == [tmp_path / "a" / "i.parquet"]
    # the plain `*` of both does match hidden names: why the warehouse uses PUBLIC
    assert len(list(tmp_path.glob("*/i.parquet"))) == 3


def test_remove_stale_removes_leftovers_of_earlier_versions(tmp_path):
    from urbex.atomic import remove_stale

    dead = _dead_pid()
    (tmp_path / "block_0").mkdir()
    for n in (f"block_0.tmp-{dead}", f".block_0.old-{dead}", f".block_0.staging-{dead}"):
        (tmp_path / n).mkdir()
        (tmp_path / n / "instances.parquet").write_bytes(b"x")
    remove_stale(tmp_path, name="block_0")
    assert [p.name for p in tmp_path.iterdir()] == ["block_0"]


def test_publish_dir_removes_what_a_killed_publisher_of_the_same_name_left(tmp_path):
    from urbex.atomic import publish_dir

    left = tmp_path / f".out.old-{_dead_pid()}-ab"
    left.mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "new").mkdir()
    publish_dir(tmp_path / "new", tmp_path / "out")
    assert [p.name for p in tmp_path.iterdir()] == ["out"]
