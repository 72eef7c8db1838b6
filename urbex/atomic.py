"""Atomic publishing: write to a staging sibling, then ``os.replace`` it onto the target.

A reader never sees a half-written file or directory: either the old one or the complete new one.
Every stage that publishes a file (:func:`atomic_path`, :func:`atomic_write`) or a directory
built in a staging sibling (:func:`staging_path` + :func:`publish_dir`) goes through here.

Staging names
-------------
Every temporary name follows one pattern, defined here and nowhere else::

    .<name>.tmp-<pid>-<token>[<suffix>]     being written by process <pid>
    .<name>.old-<pid>-<token>               the previous version, set aside by <pid>

They start with ``.``, which a published name never does (:func:`urbex.layout.plain_name`), so
every reader and every warehouse glob excludes them with :data:`PUBLIC` (``[!.]*``: DuckDB's
and :mod:`pathlib`'s ``*`` both match hidden names, ``[!.]*`` matches none). A process that is
killed leaves its staging names behind; the next writer of the same directory removes those
whose ``<pid>`` is no longer alive (:func:`remove_stale`) and leaves a live process's alone.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import json
import os
import re
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

__all__ = [
    "PUBLIC",
    "atomic_path",
    "atomic_write",
    "is_staging_name",
    "pid_alive",
    "publish_dir",
    "remove_stale",
    "staging_path",
    "staging_pid",
    "umask_mode",
    "write_json_atomic",
    "write_table_atomic",
]

#: A glob component matching every published name and no staging name (no leading ``.``).
PUBLIC = "[!.]*"

_STAGING = re.compile(
    r"^\.(?P<name>.+)\.(?P<kind>tmp|old)-(?P<pid>\d+)-(?P<token>[0-9a-f]+)(?P<suffix>\.[^.]+)?$"
)


#: Staging names of urbex versions before this pattern (``<name>.tmp-<pid>``,
#: ``.<name>.old-<pid>``, ``.<stpls3d_refer>.staging-<pid>``): swept as dead leftovers too.
_LEGACY = re.compile(r"^(?:(?P<a>[^.].*)\.tmp|\.(?P<b>.+)\.(?:old|staging))-(?P<pid>\d+)$")


def _match(name: str) -> tuple[str, str, int] | None:
    """``(published name, kind, pid)`` of a current or legacy staging name, else None."""
    m = _STAGING.match(name)
    if m is not None:
        return m["name"], m["kind"], int(m["pid"])
    m = _LEGACY.match(name)
    if m is not None:
        return (m["a"] or m["b"]), "tmp", int(m["pid"])  # never restored: removed
    return None


def umask_mode(*, directory: bool = False) -> int:
    """The permission bits a plain ``open``/``mkdir`` would give under the current umask.

    ``tempfile`` creates files 0600 and directories 0700; files we publish must look like any
    other file the user writes, so we re-apply the umask before renaming them into place.
    """
    mask = os.umask(0)
    os.umask(mask)
    return (0o777 if directory else 0o666) & ~mask


def staging_path(final: str | os.PathLike[str], *, kind: str = "tmp", suffix: str = "") -> Path:
    """A fresh staging sibling of ``final`` owned by this process (nothing is created).

    >>> p = staging_path("/a/scenes/block_0")
    >>> p.parent.as_posix(), p.name.startswith(".block_0.tmp-"), is_staging_name(p.name)
    ('/a/scenes', True, True)
    >>> staging_pid(p.name) == os.getpid()
    True
    """
    if kind not in ("tmp", "old"):
        raise ValueError(f"kind: expected 'tmp' or 'old', got {kind!r}")
    target = Path(final)
    token = secrets.token_hex(4)
    return target.with_name(f".{target.name}.{kind}-{os.getpid()}-{token}{suffix}")


def is_staging_name(name: str) -> bool:
    """True for a name made by :func:`staging_path` (any process).

    >>> is_staging_name(".block_0.tmp-12-ab12"), is_staging_name("block_0")
    (True, False)
    """
    return _STAGING.match(name) is not None


def staging_pid(name: str) -> int | None:
    """The pid in a staging name, or None for any other name.

    >>> staging_pid(".part-1.parquet.old-4242-0f"), staging_pid("part-1.parquet")
    (4242, None)
    """
    m = _STAGING.match(name)
    return int(m["pid"]) if m else None


def pid_alive(pid: int) -> bool:
    """True when a process ``pid`` exists on this machine (ours, or another user's)."""
    if pid <= 0:
        return False
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


@functools.cache
def _renameat2() -> Any:
    """glibc's ``renameat2`` (Linux), or None."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


def _exchange(a: Path, b: Path) -> bool:
    """Swap the entries ``a`` and ``b`` atomically; False where the system cannot."""
    fn = _renameat2()
    if fn is None:
        return False
    at_fdcwd, rename_exchange = -100, 2
    if fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):  # kernel or filesystem lacks it
        return False
    raise OSError(err, os.strerror(err), str(a), None, str(b))


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def remove_stale(directory: str | os.PathLike[str], *, name: str | None = None) -> list[Path]:
    """Remove the staging entries in ``directory`` left by processes that are no longer alive.

    Parameters
    ----------
    directory
        The directory to sweep (missing: nothing to do).
    name
        Only the staging entries of this published name (``.<name>.tmp-…``/``.<name>.old-…``);
        default every staging entry.

    Returns
    -------
    list of Path
        What was removed (or restored). A ``.<name>.old-<pid>-…`` directory whose ``<name>`` is
        missing (the process died between setting the old version aside and moving the new one
        in) is renamed back to ``<name>`` instead, so readers find the complete old version.
        Entries of a live pid (a concurrent writer) are left alone. The staging names of
        earlier urbex versions that carry a pid (``<name>.tmp-<pid>``, ``.<name>.old-<pid>``)
        are removed as well.
    """
    d = Path(directory)
    if not d.is_dir():
        return []
    done: list[Path] = []
    for entry in sorted(d.iterdir()):
        m = _match(entry.name)
        if m is None or (name is not None and m[0] != name) or pid_alive(m[2]):
            continue
        final = d / m[0]
        if m[1] == "old" and not final.exists() and not final.is_symlink():
            with contextlib.suppress(OSError):
                os.replace(entry, final)
                done.append(entry)
                continue
        _remove(entry)
        done.append(entry)
    return done


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str], *, sweep: bool = True) -> Iterator[Path]:
    """Yield a staging path next to ``path``; on success move it onto ``path``.

    The staging file keeps ``path``'s suffix (some writers pick the format by suffix). On an
    exception it is removed and ``path`` is left untouched; staging files of the same target
    left by dead processes are removed first (:func:`remove_stale`) unless ``sweep`` is False
    (a fresh, never-published name has none; listing a directory of many files per write costs
    more than the write).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> with atomic_path(d / "a.txt") as tmp:
    ...     _ = tmp.write_text("hi")
    >>> (d / "a.txt").read_text(), [p.name for p in d.iterdir()]
    ('hi', ['a.txt'])
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    if sweep:
        remove_stale(target.parent, name=target.name)
    tmp = staging_path(target, suffix=target.suffix)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.close(fd)
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
    """Open a staging file next to ``path`` for writing; move it onto ``path`` on success.

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

    An existing ``final`` is swapped with ``staging`` in one step where the system can
    (Linux ``renameat2(RENAME_EXCHANGE)``), then the old version, now under the staging name, is
    removed: ``final`` is at every moment the complete old or the complete new tree. Elsewhere
    ``final`` is first renamed aside (``.<name>.old-<pid>-<token>``) and removed after
    ``staging`` took its place; a process killed between those two renames leaves ``final``
    missing and the complete old version aside, which :func:`remove_stale` (run by the next
    writer) renames back.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> (d / "new").mkdir(); _ = (d / "new" / "f").write_text("2")
    >>> (d / "out").mkdir(); _ = (d / "out" / "f").write_text("1")
    >>> (publish_dir(d / "new", d / "out") / "f").read_text(), sorted(p.name for p in d.iterdir())
    ('2', ['out'])
    """
    src, dst = Path(staging), Path(final)
    dst.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(dst.parent, name=dst.name)  # what killed publishers of ``final`` left
    if dst.exists() and _exchange(src, dst):
        shutil.rmtree(src, ignore_errors=True)  # now the old version, under the staging name
    elif dst.exists():
        old = staging_path(dst, kind="old")
        os.replace(dst, old)
        os.replace(src, dst)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(src, dst)
    return dst


def write_table_atomic(table: Any, path: str | os.PathLike[str], *, sweep: bool = True) -> Path:
    """Write ``table`` (a ``pyarrow.Table``) as Parquet (zstd) to ``path`` through a temp file in
    the same directory and ``os.replace`` (``sweep``: see :func:`atomic_path`)."""
    import pyarrow.parquet as pq  # deferred: the atomic helpers are imported everywhere

    path = Path(path)
    with atomic_path(path, sweep=sweep) as tmp:
        pq.write_table(table, tmp, compression="zstd")
    return path


def write_json_atomic(data: dict[str, Any], path: str | os.PathLike[str]) -> Path:
    """Write ``data`` as indented JSON to ``path`` atomically."""
    path = Path(path)
    with atomic_write(path, "w") as fh:
        fh.write(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
    return path
