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
