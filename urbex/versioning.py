"""Content hashes of published files, computed the way DVC records them.

Both front doors name a version of a file by the same string: DVC writes it into ``dvc.lock``
(``md5:`` of each dep and out), and the Dagster assets return it as their ``DataVersion``
(``pipelines/``). For a file it is the hex MD5 of its bytes (DVC 3's ``hash: md5``: the bytes as
they are, no line-ending conversion); for a directory it is DVC's *tree* hash: the MD5 of the
JSON list of ``{"md5": <file md5>, "relpath": <posix path inside the directory>}`` over every
file below it (empty folders do not count), sorted by ``relpath``, serialised with
``json.dumps(..., sort_keys=True)``, with ``.dir`` appended. The files ``.dvcignore`` leaves out
must be left out here too (``ignore``; :meth:`urbex.layout.AssetLayout.unversioned` is the
project's list), or the two doors disagree.

This module does not import DVC (the library never does): ``tests/test_versioning.py`` checks
it against the hashes DVC itself writes into ``dvc.lock``.

>>> import tempfile
>>> d = Path(tempfile.mkdtemp())
>>> (d / "a.txt").write_bytes(b"hello\\n")
6
>>> content_hash(d / "a.txt")
'b1946ac92492d2347c6235b4d2611184'
>>> (d / "sub").mkdir(); (d / "empty").mkdir(); _ = (d / "sub" / "b.bin").write_bytes(b"")
>>> content_hash(d)
'71d510279832bad4a7496aa6deb44804.dir'
>>> content_hash(d, ignore=lambda p: p.name == "sub")  # `dvc add` of a folder with a.txt only
'b47e3488a546e2214c42aa9bec8396e2.dir'
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

__all__ = ["content_hash", "file_md5", "tree_md5"]

_CHUNK = 1 << 20


def file_md5(path: Path) -> str:
    """Hex MD5 of a file's bytes (DVC's ``md5`` of a file)."""
    h = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def tree_md5(directory: Path, *, ignore: Callable[[Path], bool] | None = None) -> str:
    """DVC's directory hash (``<md5>.dir``) of every file below ``directory``.

    Parameters
    ----------
    directory
        An existing directory.
    ignore
        Called with each file's path (and each folder's, whose files then go with it); True
        leaves it out, as a ``.dvcignore`` pattern does.

    Raises
    ------
    NotADirectoryError
        ``directory`` is not a directory.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise NotADirectoryError(f"tree_md5: {directory} is not a directory")
    entries = []
    for here, folders, files in os.walk(directory):
        base = Path(here)
        folders[:] = sorted(f for f in folders if ignore is None or not ignore(base / f))
        for name in files:
            path = base / name
            if ignore is not None and ignore(path):
                continue
            entries.append(
                {"md5": file_md5(path), "relpath": path.relative_to(directory).as_posix()}
            )
    entries.sort(key=lambda e: e["relpath"])
    blob = json.dumps(entries, sort_keys=True).encode("utf-8")
    return hashlib.md5(blob, usedforsecurity=False).hexdigest() + ".dir"


def content_hash(path: Path, *, ignore: Callable[[Path], bool] | None = None) -> str:
    """The hash DVC records for ``path``: :func:`file_md5` of a file, :func:`tree_md5` of a
    directory (``ignore`` as there).

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist.
    """
    path = Path(path)
    if path.is_dir():
        return tree_md5(path, ignore=ignore)
    if not path.is_file():
        raise FileNotFoundError(f"content_hash: {path} does not exist")
    return file_md5(path)
