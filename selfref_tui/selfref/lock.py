"""One writer per memory key.

An OS file lock (``filelock``, released by the kernel when the holder dies, so
there are no stale locks to clean up) guards the key's log. Next to it the
holder writes who it is, so the second writer's error can name the process to
close instead of saying only "locked". When the holder is this very process
(a window that did not let a key go), it also names the thread and the code
that took the lock, so such a failure explains itself.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import traceback
from datetime import UTC, datetime
from pathlib import Path

from filelock import FileLock, Timeout

from selfref_tui.safety import inert_line, key_option, name_line

from .errors import StoreError, StoreLockedError
from .fsutil import FILE_MODE, atomic_write, check_regular, read_regular

#: this package's folder: calls from in here are the store's own, not who asked
_STORE_DIR = Path(__file__).parent

LOCK_NAME = "writer.lock"
INFO_NAME = "writer.json"


class WriterLock:
    """The write lock of one key directory; acquire once, release once."""

    def __init__(self, key: str, key_dir: Path) -> None:
        self.key = key
        self.key_dir = key_dir
        # thread_local=False: the app may release from another thread than it acquired on.
        self._lock = FileLock(
            str(key_dir / LOCK_NAME), timeout=0, mode=FILE_MODE, thread_local=False
        )

    @property
    def held(self) -> bool:
        return self._lock.is_locked

    def acquire(self) -> None:
        check_regular(self.key_dir / LOCK_NAME)  # a planted link or FIFO is refused, not opened
        try:
            self._lock.acquire(timeout=0)
        except Timeout:
            raise StoreLockedError(self._held_message()) from None
        info = {
            "schema": 1,
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": datetime.now(UTC).isoformat(timespec="seconds"),
            "thread": threading.current_thread().name,
            "by": _opener(),
        }
        try:
            atomic_write(self.key_dir / INFO_NAME, json.dumps(info).encode())
        except OSError:
            pass  # the info only improves the error message; the lock is what counts

    def release(self) -> None:
        if self._lock.is_locked:
            try:
                (self.key_dir / INFO_NAME).unlink(missing_ok=True)
            except OSError:
                pass
            self._lock.release(force=True)

    def _held_message(self) -> str:
        holder = "another selfref-tui process"
        try:
            info = json.loads(read_regular(self.key_dir / INFO_NAME) or b"{}")
            pid, host, started = info.get("pid"), info.get("host"), info.get("started")
            if type(pid) is not int or not isinstance(host, str):
                pass  # not written yet (the holder is between its lock and its note), or
                # not ours: "pid None on None" named nobody
            elif pid == os.getpid() and host == socket.gethostname():
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
