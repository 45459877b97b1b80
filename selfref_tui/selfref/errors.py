"""Store errors, each carrying a one-line message a person can act on.

They share one base class so a front end can catch every store problem with
one ``except`` and show ``str(exc)`` as it is.
"""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path


class StoreError(Exception):
    """Something about the memory-key store on disk needs the person's attention."""


class InvalidKeyError(StoreError, ValueError):
    """A memory key name that cannot be mapped safely to a directory."""


class StoreLockedError(StoreError):
    """Another process (or another open in this one) is writing the key."""


class CorruptStoreError(StoreError):
    """A stored file does not parse; only this key is affected."""


class UnsupportedSchemaError(StoreError):
    """The key was written by a newer selfref-tui; refusing to touch it."""


class UnsafeStoreFileError(StoreError):
    """A store path is a link, FIFO, device or socket: refused, never followed or opened."""


class StoreFileTooLargeError(StoreError):
    """A store file is larger than anything selfref-tui writes there: refused, not read whole."""


class StorePermissionError(StoreError):
    """The store's files or folders cannot be read or written by this user."""


class SalvageReport:
    """A damaged log was loaded without its damaged records; shown to the person.

    ``str()`` is the one-line message: how many records were skipped, which
    lines, and where the original file is kept (or that it was left as is).
    """

    def __init__(self, path: object, lines: list[tuple[int, str]], kept_as: object | None,
                 saved: bool) -> None:
        self.path = path
        self.lines = lines
        self.kept_as = kept_as
        self.saved = saved

    @property
    def skipped(self) -> int:
        return len(self.lines)

    def __str__(self) -> str:
        shown = "; ".join(f"line {n}: {why}" for n, why in self.lines[:3])
        more = f"; and {self.skipped - 3} more" if self.skipped > 3 else ""
        head = (f"{self.path}: skipped {self.skipped} damaged record"
                f"{'' if self.skipped == 1 else 's'} ({shown}{more})")
        if self.saved:
            return (f"{head}; the original file is kept as {self.kept_as} and the conversation "
                    "was saved without them — compare the two to recover what they held.")
        if self.kept_as is not None:
            return f"{head}; the original file is kept as {self.kept_as}."
        return (f"{head}; the file was left as it is — open the conversation in the app (or "
                "give it to a command that writes, such as `selfref-tui ask`) to save a "
                "repaired copy; the original will be kept.")


class CheckpointError(Exception):
    """A checkpoint could not be kept or read; the write it protects must not happen.

    Here rather than in ``checkpoints.py`` (which still exports it): ``files.py``
    catches it, and ``checkpoints.py`` restores through ``files.py``.
    """


def denied(exc: OSError, path: Path, what: str) -> StoreError:
    """A one-line store error for an OSError on ``path`` while trying to ``what`` it."""
    if isinstance(exc, StoreError):
        return exc
    reason = exc.strerror or str(exc)
    # a rename's error names its source (a temporary copy, removed by now) and then its
    # target, the file a person can look at
    named = exc.filename2 or exc.filename or path
    # What to do when nothing can be written here: the two start-up flags that need no
    # write access to this folder (--read-only reads what it holds; --data-dir uses another).
    if isinstance(exc, PermissionError):
        way_out = (f"{READ_ONLY}, or with --data-dir naming a writable folder" if what == "write"
                   else "start selfref-tui with --data-dir naming another folder")
        return StorePermissionError(
            f"Cannot {what} {named}: {reason}; give your user {what} access to it and its "
            f"folder (for example chmod u+rw file, chmod u+rwx folder), or {way_out}.")
    if what == "write" and exc.errno == errno.EROFS:
        return StoreError(f"Cannot write {named}: {reason}; {READ_ONLY}, or with --data-dir "
                          "naming a folder on a writable disk.")
    if what == "write" and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return StoreError(f"Cannot write {named}: {reason}; free some space, or start "
                          "selfref-tui with --data-dir naming a folder on another disk "
                          "(--read-only reads the conversations without writing).")
    return StoreError(f"Cannot {what} {named}: {reason}; check the disk and the "
                      "file, then try again.")


#: a data folder that takes no writes can still be read: no lock taken, nothing written
READ_ONLY = "start selfref-tui with --read-only to read the conversations as they are"
