"""Small file-system helpers with the store's durability, privacy and safety rules.

Everything the store creates is private to the person (files 0600, directories
0700): transcripts hold whatever people paste into a chat.

Everything the store reads is input: a key's files may have been replaced by a
symlink (to another key's files, or anywhere), a FIFO (an ``open`` that never
returns) or a device. :func:`read_regular` and :func:`open_regular` look with
``lstat`` first and open with ``O_NOFOLLOW | O_NONBLOCK``, then check the
opened file with ``fstat``, so such a file is refused without being followed
and without an open that can block.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .errors import StoreFileTooLargeError, UnsafeStoreFileError

FILE_MODE = 0o600
DIR_MODE = 0o700
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_KINDS = {
    stat.S_IFLNK: "a symbolic link",
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a directory",
}


def kind_of(mode: int) -> str:
    return _KINDS.get(stat.S_IFMT(mode), "not a regular file")


def not_regular(path: Path, consequence: str) -> str:
    """The one line for a side file (not the store's own) that is a link, FIFO or the
    like: what it is, ``consequence`` (what the app does without it), what to do."""
    try:
        kind = kind_of(os.lstat(path).st_mode)
    except OSError:
        kind = "not a regular file"
    return (f"{path} is {kind}, not a regular file: {consequence} — remove it or move it "
            "out of the way")


def unsafe(path: Path, mode: int, expected: str = "a regular file") -> UnsafeStoreFileError:
    return UnsafeStoreFileError(
        f"{path} is {kind_of(mode)}, not {expected}; selfref-tui does not follow or open such "
        "entries in its store — move it out of the way (it may point at another key's files).")


def check_regular(path: Path) -> os.stat_result | None:
    """lstat of ``path`` (None when missing); UnsafeStoreFileError unless a regular file."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(st.st_mode):
        raise unsafe(path, st.st_mode)
    return st


def check_dir(path: Path) -> bool:
    """True when ``path`` is a real directory, False when missing; refuses links and others."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    if not stat.S_ISDIR(st.st_mode):
        raise unsafe(path, st.st_mode, "a directory")
    return True


def open_regular(path: Path, flags: int, mode: int = FILE_MODE) -> int:
    """``os.open`` that never follows a link, never blocks, and yields a regular file only."""
    fd = os.open(path, flags | _NOFOLLOW | _NONBLOCK | _CLOEXEC, mode)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise unsafe(path, st.st_mode)
        if _NONBLOCK:
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: Path, *, limit: int | None = None) -> bytes | None:
    """The bytes of a regular file, None when missing; links, FIFOs, devices refused.

    ``limit``: the most bytes the file may hold; a larger one is refused
    (:class:`StoreFileTooLargeError`) after reading at most ``limit + 1`` bytes.
    """
    if check_regular(path) is None:
        return None
    try:
        fd = open_regular(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == getattr(__import__("errno"), "ELOOP", -1):
            raise unsafe(path, stat.S_IFLNK) from None
        raise
    with os.fdopen(fd, "rb") as fh:
        data = fh.read() if limit is None else fh.read(limit + 1)
    if limit is not None and len(data) > limit:
        raise StoreFileTooLargeError(f"{path} is over {limit:,} bytes, more than selfref-tui "
                                     "ever writes there; it was not read — move it out of the way")
    return data


def fsync_dir(path: Path) -> None:
    """Make a create/rename in ``path`` durable (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def ensure_dir(path: Path) -> bool:
    """Create ``path`` (and parents) as 0700; True when it had to be created."""
    if path.is_dir():
        return False
    parent = path.parent
    if parent != path and not parent.is_dir():
        ensure_dir(parent)
    try:
        path.mkdir(mode=DIR_MODE)
    except FileExistsError:
        return False
    os.chmod(path, DIR_MODE)
    fsync_dir(parent)
    return True


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def atomic_write(path: Path, data: bytes | list[bytes], *, sync_dir: bool = False,
                 fsync: bool = True, mode: int = FILE_MODE) -> None:
    """Replace ``path`` with ``data`` (or the parts listed, one after the other: a large
    file is not copied whole to put a head before it) via temp file (+ fsync) + rename.

    The rename means readers never see half a file while the system runs.
    ``fsync=False`` is for caches that can be rebuilt from the truth: it saves
    a disk flush, at the price that after a power loss (not a process crash)
    the file may hold old, empty or garbled content. The temp file is created
    afresh (``O_EXCL | O_NOFOLLOW``): a link or FIFO planted under its name is
    removed, never followed; the rename replaces ``path``'s entry, whatever it
    was, without following it. ``mode``: the new file's (the store's files are
    private; a file of the person's keeps its own).
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, FILE_MODE)
    try:
        if hasattr(os, "fchmod"):  # umask may have narrowed it
            os.fchmod(fd, mode)
        for part in data if isinstance(data, list) else [data]:
            write_all(fd, part)
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise
    if sync_dir:
        fsync_dir(path.parent)
