"""Small file-system helpers with the store's durability and privacy rules.

Everything the store creates is private to the person (files 0600, directories
0700): transcripts hold whatever people paste into a chat.
"""

from __future__ import annotations

import os
from pathlib import Path

FILE_MODE = 0o600
DIR_MODE = 0o700


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


def atomic_write(path: Path, data: bytes, *, sync_dir: bool = False, fsync: bool = True) -> None:
    """Replace ``path`` with ``data`` via temp file (+ fsync) + rename.

    The rename means readers never see half a file while the system runs.
    ``fsync=False`` is for caches that can be rebuilt from the truth: it saves
    a disk flush, at the price that after a power loss (not a process crash)
    the file may hold old, empty or garbled content.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    try:
        if hasattr(os, "fchmod"):  # umask may have narrowed or an old temp file widened it
            os.fchmod(fd, FILE_MODE)
        write_all(fd, data)
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
