"""One writer per memory key.

An OS file lock (``flock`` on ``writer.lock``, released by the kernel when the
holder dies, so there are no stale locks to clean up) guards the key's log.
It is taken with :mod:`fcntl` directly: the lock a ``filelock.FileLock`` took
(the same ``flock``, so a writer of either kind sees the other), without its
imports, which were a twentieth of a ``selfref-tui rewind``'s start. Next to it the
holder writes who it is, so the second writer's error can name the process to
close instead of saying only "locked". When the holder is this very process
(a window that did not let a key go), it also names the thread and the code
that took the lock, so such a failure explains itself.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import threading
import traceback
from datetime import UTC, datetime
from pathlib import Path

from selfref_tui.safety import inert_line, key_option, name_line

from .errors import StoreError, StoreLockedError
from .fsutil import atomic_write, check_regular, open_regular, read_regular

#: this package's folder: calls from in here are the store's own, not who asked
_STORE_DIR = Path(__file__).parent

LOCK_NAME = "writer.lock"
INFO_NAME = "writer.json"
#: what ``flock`` says when another open file holds the lock (EACCES on some file systems)
_HELD = frozenset({errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES})


class WriterLock:
    """The write lock of one key directory; acquire once, release once."""

    def __init__(self, key: str, key_dir: Path) -> None:
        self.key = key
        self.key_dir = key_dir
        #: the open ``writer.lock`` while the lock is held (any thread may release it: the
        #: app lets a key go from another thread than the one that took it)
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        path = self.key_dir / LOCK_NAME
        check_regular(path)  # a planted link or FIFO is refused, not opened
        fd = open_regular(path, os.O_RDWR | os.O_CREAT)  # nor one swapped in after the look
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in _HELD:
                raise StoreLockedError(self._held_message()) from None
            raise
        self._fd = fd
        info = {
            "schema": 1,
            "pid": os.getpid(),
            "host": _host(),
            "started": datetime.now(UTC).isoformat(timespec="seconds"),
            "thread": threading.current_thread().name,
            "by": _opener(),
        }
        try:
            # not flushed to the disk: after a power loss the lock is gone too, and a note
            # left over names nobody (the next holder rewrites it); a flush cost every write
            # open (the app's, a rewind's) 0.1-20 ms of waiting for the disk
            atomic_write(self.key_dir / INFO_NAME, json.dumps(info).encode(), fsync=False)
        except OSError:
            pass  # the info only improves the error message; the lock is what counts

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                (self.key_dir / INFO_NAME).unlink(missing_ok=True)
            except OSError:
                pass
            os.close(fd)  # the lock goes with the file's last descriptor

    def _held_message(self) -> str:
        holder = "another selfref-tui process"
        try:
            info = json.loads(read_regular(self.key_dir / INFO_NAME) or b"{}")
            pid, host, started = info.get("pid"), info.get("host"), info.get("started")
            if type(pid) is not int or not isinstance(host, str):
                pass  # not written yet (the holder is between its lock and its note), or
                # not ours: "pid None on None" named nobody
            elif pid == os.getpid() and host == _host():
                holder = (
                    f"this process (pid {pid}{_taken_by(info)})"
                )
            else:
                # read back from disk: data, made inert before it joins the error
                since = f", since {inert_line(started, 40)}" if isinstance(started, str) else ""
                holder = (f"another selfref-tui (pid {pid} on {inert_line(host, 80)}{since})")
        except (OSError, ValueError, AttributeError, RecursionError, StoreError):
            pass
        return (
            f"Conversation '{name_line(self.key)}' is open for writing in {holder}; "
            "close it there first, or read it meanwhile with "
            f"`selfref-tui --read-only {key_option(self.key)}`."
        )


def _host() -> str:
    """This machine's name, as ``socket.gethostname()`` gives it (on POSIX it reads the
    same ``uname`` field), without importing :mod:`socket` for one call."""
    return os.uname().nodename


def _opener() -> str:
    """The two innermost calls outside the store that asked for the lock ("a → b")."""
    calls = [
        f"{f.name} ({Path(f.filename).name}:{f.lineno})"
        for f in traceback.extract_stack(limit=16)
        if Path(f.filename).parent != _STORE_DIR
    ]
    return " → ".join(calls[-2:])


def _taken_by(info: dict) -> str:
    """", thread 'x', taken by a → b" from this process's own writer.json, clipped."""
    thread, by = info.get("thread"), info.get("by")
    if not isinstance(thread, str) or not isinstance(by, str):
        return ""
    return f", thread {thread[:40]!r}, taken by {inert_line(by, 160)}"
