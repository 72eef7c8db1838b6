"""Atomic publishing: write to a temporary sibling, then ``os.replace`` it onto the target.

A reader never sees a half-written file or directory: either the old one or the complete new one.
Every stage that publishes a file (:func:`atomic_path`, :func:`atomic_write`) or a directory
built in a staging sibling (:func:`publish_dir`) goes through here.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

__all__ = ["atomic_path", "atomic_write", "publish_dir", "umask_mode"]


def umask_mode(*, directory: bool = False) -> int:
    """The permission bits a plain ``open``/``mkdir`` would give under the current umask.

    ``tempfile`` creates files 0600 and directories 0700; files we publish must look like any
    other file the user writes, so we re-apply the umask before renaming them into place.
    """
    mask = os.umask(0)
    os.umask(mask)
    return (0o777 if directory else 0o666) & ~mask


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on success move it onto ``path``.

    The temporary file keeps ``path``'s suffix (some writers pick the format by suffix).
    On an exception the temporary file is removed and ``path`` is left untouched.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> with atomic_path(d / "a.txt") as tmp:
    ...     _ = tmp.write_text("hi")
    >>> (d / "a.txt").read_text()
    'hi'
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(
        dir=target.parent, prefix=f".{target.stem}.", suffix=f".tmp{target.suffix}"
    )
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        if tmp.exists():
            os.chmod(tmp, umask_mode())
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def atomic_write(
    path: str | os.PathLike[str], mode: str = "wb", **kwargs: Any
) -> Iterator[IO[Any]]:
    """Open a temporary file next to ``path`` for writing; move it onto ``path`` on success.

    Parameters
    ----------
    path
        Final destination.
    mode
        ``"wb"`` or ``"w"``; extra keyword arguments go to :func:`open` (e.g. ``encoding``).
    """
    with atomic_path(path) as tmp, open(tmp, mode, **kwargs) as fh:
        yield fh


def publish_dir(staging: str | os.PathLike[str], final: str | os.PathLike[str]) -> Path:
    """Move the finished directory ``staging`` onto ``final`` (a sibling path); return ``final``.

    An existing ``final`` is first renamed aside and removed only after ``staging`` took its
    place, so ``final`` is at every moment either the complete old or the complete new tree.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> (d / "new").mkdir(); _ = (d / "new" / "f").write_text("2")
    >>> (d / "out").mkdir(); _ = (d / "out" / "f").write_text("1")
    >>> (publish_dir(d / "new", d / "out") / "f").read_text(), (d / "new").exists()
    ('2', False)
    """
    src, dst = Path(staging), Path(final)
    dst.parent.mkdir(parents=True, exist_ok=True)
    if dst.exists():
        old = dst.with_name(f".{dst.name}.old-{os.getpid()}")
        os.replace(dst, old)
        os.replace(src, dst)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(src, dst)
    return dst
