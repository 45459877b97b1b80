"""File checkpoints: what the model's writes replaced, kept so a rewind can put it back.

Rewinding the conversation without the files the agent wrote is the first
complaint people have about other agents' undo. So before ``fd_to_file``
changes a file, its previous bytes (or the fact that it did not exist) are
kept in the key's folder, content-addressed like images (``files/<sha256>``,
written and fsynced before the write they protect), and a ``file`` record
committed with the tool's result names them::

    {"t": "file", "path": "/abs/path", "before": "<sha256>" | null,
     "after": "<sha256>", "call_id": "...", "created": "..."}

A file larger than :data:`MAX_KEPT_BYTES` is not read for its checkpoint (a
model overwriting a log of gigabytes would have the whole of it read and
copied): its record says ``"before": "too-large"`` with ``"before_size"``, and
a rewind lists it as a file that cannot be restored, and why. A new content
over that size (an append to a large log) is hashed a piece at a time and not
kept: its record says ``"after_size"``, and undoing a rewind cannot write it
back (it says so).

A restore (:func:`restore`) works from those records: for each path the
oldest ``before`` among the writes being undone is put back (or the file is
removed when it did not exist), but only when the file still holds what the
newest of those writes left (``after``); a file changed since by someone else
is reported, never overwritten unasked. Restores are confined like the
model's writes (``files.write_file`` / :func:`files.remove_file` with the
allowed roots): a log is input, and a path it names outside the roots is
refused.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import CheckpointError, StoreError
from .fsutil import atomic_write, check_dir, ensure_dir, fsync_dir, open_regular, read_regular

if TYPE_CHECKING:
    from .file_edit import Digest

FILES_DIR = "files"
_HEX = re.compile(r"[0-9a-f]{64}")
#: the largest file whose previous content a write keeps (32 MiB): source files, notes and
#: data a model writes are far smaller; a larger one is neither read nor kept, and a
#: rewind says it cannot be restored
MAX_KEPT_BYTES = 32 * 1024 * 1024
#: ``before`` of a file record whose previous content was larger than the limit (not a
#: hash: a reader that knows nothing of it refuses it as a checkpoint name, never
#: mistaking it for "did not exist" and removing the file)
TOO_LARGE = "too-large"


class Checkpoints:
    """The ``files/`` folder of one key: blobs named by the sha256 of their bytes."""

    def __init__(self, key_dir: Path, limit: int = MAX_KEPT_BYTES) -> None:
        self.folder = key_dir / FILES_DIR
        #: a previous content larger than this is not kept (:data:`MAX_KEPT_BYTES`)
        self.limit = limit

    def keep(self, data: bytes) -> str:
        """Store ``data`` (once per content, fsynced); its hash."""
        digest = hashlib.sha256(data).hexdigest()
        path = self.folder / digest
        try:
            existing = read_regular(path) if self.folder.is_dir() else None
            if existing is not None and hashlib.sha256(existing).hexdigest() == digest:
                return digest
            created = ensure_dir(self.folder)
            check_dir(self.folder)
            atomic_write(path, data, sync_dir=True)
            if created:
                fsync_dir(self.folder.parent)
        except OSError as exc:
            raise CheckpointError(f"could not keep a copy of the file in {self.folder}: "
                                  f"{exc.strerror or exc}; nothing was written") from None
        except StoreError as exc:  # a link, FIFO or device planted under the copy's name
            raise CheckpointError(f"could not keep a copy of the file: {exc}; nothing was "
                                  "written") from None
        return digest

    def read(self, digest: str) -> bytes:
        """The bytes kept under ``digest``; CheckpointError when missing or changed."""
        if not _HEX.fullmatch(digest):
            raise CheckpointError(f"not a checkpoint name: {digest[:80]!r}")
        try:
            data = read_regular(self.folder / digest)
        except OSError as exc:
            raise CheckpointError(f"cannot read {self.folder / digest}: {exc}") from None
        except StoreError as exc:  # a link, FIFO or device in its place: not followed
            raise CheckpointError(str(exc)) from None
        if data is None:
            raise CheckpointError(f"the copy {self.folder / digest} is missing")
        if hashlib.sha256(data).hexdigest() != digest:
            raise CheckpointError(f"the copy {self.folder / digest} was changed")
        return data

    def recorder(self, call_id: str, records: list[dict[str, Any]], created: str
                 ) -> Recorder:
        """The ``checkpoint`` callback of :func:`files.write_file` for one tool call."""
        return Recorder(self, call_id, records, created)


class Recorder:
    """Keeps the bytes before and after one write and stages its ``file`` record.

    The record goes into ``records`` (committed with the call's result);
    :meth:`discard` takes it back when the write then fails.
    """

    def __init__(self, checkpoints: Checkpoints, call_id: str, records: list[dict[str, Any]],
                 created: str) -> None:
        self.checkpoints = checkpoints
        #: read by ``files.write_file``: a larger file is not read, its size is passed
        self.limit = checkpoints.limit
        self.call_id = call_id
        self.records = records
        self.created = created
        self._staged: dict[str, Any] | None = None

    def __call__(self, target: Path, before: bytes | int | None, after: bytes | Digest
                 ) -> None:
        """``before``: the previous bytes, None (no file), or the size of a file over the
        limit (not read); bytes over it are not kept either. ``after``: the new bytes, or
        the :class:`~.files.Digest` of a new content over the limit (not kept: its record
        says ``after_size``, and a rewind cannot write it back)."""
        size = before if isinstance(before, int) else (
            len(before) if before is not None and len(before) > self.limit else None)
        record: dict[str, Any] = {
            "t": "file", "path": str(target),
            "before": (TOO_LARGE if size is not None else None if before is None
                       else self.checkpoints.keep(before)),  # type: ignore[arg-type]
            "after": (self.checkpoints.keep(after) if isinstance(after, bytes)
                      else after.sha256),
            "call_id": self.call_id, "created": self.created,
        }
        if size is not None:
            record["before_size"] = size
        if not isinstance(after, bytes):
            record["after_size"] = after.size
        self.records.append(record)
        self._staged = record

    def discard(self) -> None:
        if self._staged is not None and self._staged in self.records:
            self.records.remove(self._staged)
        self._staged = None


@dataclass
class FileChange:
    """One path the writes being undone changed: what to put back, and what to expect."""

    path: str
    #: the bytes' hash to restore, None: the file did not exist (restore removes it)
    before: str | None
    #: the hash the last of those writes left (the file must still hold it; None: missing)
    after: str | None
    writes: int = 1
    #: other hashes the model's own writes left there since the first of these (writes an
    #: earlier rewind took out of the context, whose file the person kept): not a change
    #: by someone else either
    also: tuple[str, ...] = ()
    #: restoring redoes the model's writes (an undone rewind): it writes what they left
    redo: bool = False
    #: ``before`` is :data:`TOO_LARGE`: the size of the content that was not kept
    before_size: int = 0
    #: what the last of these writes left was larger than a checkpoint keeps: its size
    after_size: int = 0

    def reversed(self) -> FileChange:
        """The change that redoes these writes (an undone rewind puts them back)."""
        if self.after_size:  # their result was not kept: it cannot be written back
            return FileChange(self.path, TOO_LARGE, self.before, self.writes, redo=True,
                              before_size=self.after_size)
        return FileChange(self.path, self.after, self.before, self.writes, redo=True)

    def what_restoring_does(self) -> str:
        """What restoring this file does, for people (the CLI's list, the app's dialog)."""
        if self.before is None:
            return "restoring removes it: it did not exist before"
        if self.redo:
            return "restoring writes the model's version again"
        return "restoring puts back its earlier content"

    def why_left(self, now: str | None) -> str:
        """Why restoring leaves this file as it is, given ``now`` (its hash, None: missing;
        see :func:`state_of`), or "" when restoring would change it."""
        if self.before == TOO_LARGE:
            return too_large(self.before_size, redo=self.redo)
        if now == self.before:
            return "already as it was"
        if not self.model_left(now):
            return ("changed since the model wrote it: left as it is" if now is not None
                    else "removed since: left as it is")
        return ""

    def model_left(self, now: str | None) -> bool:
        """Whether ``now`` (the file's hash, None: missing) is what the model's writes left
        there: restoring it overwrites nothing of anyone else's."""
        return now == self.after or now in self.also


def changes(records: Iterable[dict[str, Any]],
            later: Iterable[dict[str, Any]] = ()) -> list[FileChange]:
    """The files ``records`` (``file`` records, oldest first) changed, one per path.

    ``later``: file records of every write from the first of ``records`` on, in
    log order (those too, and those of messages rewound before): what each of
    them left is recorded as :attr:`FileChange.also`.
    """
    out: dict[str, FileChange] = {}
    for record in records:
        path, after = record.get("path"), record.get("after")
        if not isinstance(path, str) or not isinstance(after, str):
            continue
        before = record.get("before")
        before = before if isinstance(before, str) else None
        known = out.get(path)
        after_size = record.get("after_size")
        after_size = after_size if isinstance(after_size, int) else 0
        if known is None:
            size = record.get("before_size") if before == TOO_LARGE else 0
            out[path] = FileChange(path, before, after,
                                   before_size=size if isinstance(size, int) else 0,
                                   after_size=after_size)
        else:
            known.after = after
            known.after_size = after_size
            known.writes += 1
    for record in later:
        known = out.get(record.get("path"))  # type: ignore[arg-type]
        after = record.get("after")
        if known is not None and isinstance(after, str) and after not in known.also:
            known.also += (after,)
    return list(out.values())


def combined(undone: Sequence[FileChange], redone: Sequence[FileChange]) -> list[FileChange]:
    """``undone`` and ``redone`` (reversed changes) as one change per path.

    A rewind into a stretch rewound before takes some writes out of the context
    and brings others back; a path both touched is listed once: it gets what the
    writes coming back left (they are in the context again), and it may hold what
    either side left now (the newest write taken out, or what was there before
    those coming back).
    """
    out = {change.path: change for change in undone}
    for change in redone:
        known = out.get(change.path)
        if known is None:
            out[change.path] = change
            continue
        also = tuple(dict.fromkeys(h for h in (*known.also, change.after, *change.also)
                                   if h is not None and h != known.after))
        out[change.path] = FileChange(change.path, change.before, known.after,
                                      known.writes + change.writes, also, redo=True,
                                      before_size=change.before_size,
                                      after_size=known.after_size)
    return list(out.values())


@dataclass
class RestoreReport:
    """What :func:`restore` did, one line per file for people."""

    restored: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    #: (path, why) for files left as they are
    skipped: list[tuple[str, str]] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = [f"restored {p}" for p in self.restored]
        out += [f"removed {p} (it did not exist before)" for p in self.removed]
        out += [f"left {p} as it is: {why}" for p, why in self.skipped]
        return out


def state_of(path: str) -> str | None:
    """The sha256 of the file at ``path`` now (None when missing); read without following
    a link or blocking (a link or FIFO there reads as changed), a piece at a time (a
    large file is hashed, never held whole)."""
    try:
        fd = open_regular(Path(path), os.O_RDONLY)
    except FileNotFoundError:
        return None
    except Exception:  # a link, FIFO or unreadable file: not what the write left
        return "unreadable"
    try:
        with os.fdopen(fd, "rb") as fh:
            return hashlib.file_digest(fh, "sha256").hexdigest()
    except Exception:
        return "unreadable"


def restore(checkpoints: Checkpoints, wanted: Sequence[FileChange],
            roots: Sequence[str | Path]) -> RestoreReport:
    """Put each file of ``wanted`` back as it was before the writes being undone.

    A file that no longer holds what the last write left was changed by
    someone else: it is skipped and said, never overwritten. Paths outside
    ``roots`` are refused as the model's writes are.

    The file is looked at twice: by name, to say why one is left, and again
    through the descriptors the write or removal then uses, with no link
    followed on the way (the model's writes recorded the path they reached,
    which had none). Between the two, someone may swap the file, or a folder on
    its way, for a link to another file inside the roots: that file is never
    written or removed in its place.
    """
    from .file_walk import FileWriteError, PathNotAllowed
    from .files import remove_file, write_file

    report = RestoreReport()
    for change in wanted:
        if change.before == TOO_LARGE:
            report.skipped.append((change.path, too_large(change.before_size,
                                                          redo=change.redo)))
            continue
        now = state_of(change.path)
        if now == change.before:
            continue  # already as it should be (whoever made it so: nothing is in the way)
        if not change.model_left(now):
            why = ("it was removed since" if now is None
                   else "it was created again since" if change.after is None
                   else "it was changed since the model wrote it")
            report.skipped.append((change.path, why))
            continue
        try:
            if change.before is None:
                remove_file(change.path, roots=list(roots), links=False,
                            check=_still(change))
                report.removed.append(change.path)
            else:
                data = checkpoints.read(change.before)
                still = _still(change)
                write_file(change.path, data, roots=list(roots), links=False,
                           checkpoint=lambda _path, held, _new, still=still: still(held))
                report.restored.append(change.path)
        except PathNotAllowed:
            report.skipped.append((change.path, outside_roots(roots)))
        except (CheckpointError, FileWriteError) as exc:
            report.skipped.append((change.path, str(exc)))
    return report


def _still(change: FileChange) -> Callable[[bytes | int | None], None]:
    """A check of the bytes a restore is about to replace (None: the file is missing):
    CheckpointError unless they are what the model's writes left there."""
    def check(held: bytes | int | None) -> None:
        now = hashlib.sha256(held).hexdigest() if isinstance(held, bytes) else None
        if not change.model_left(now):
            raise CheckpointError("it was removed since" if held is None
                                  else "it was changed since the model wrote it")
    return check


def standing(change: FileChange, roots: Sequence[str | Path] | None) -> str:
    """Why restoring would leave ``change``'s file as it is, looked at on disk now, or ""
    when restoring would change it: what :meth:`FileChange.why_left` says, and first
    whether the path is inside ``roots`` (None: not asked) with no link on its way, so
    a list offers no file that :func:`restore` would refuse."""
    from .file_walk import FileWriteError, LinkOnTheWay, PathNotAllowed, resolve_target
    from .files import refuse_read_only

    if roots is None or change.before == TOO_LARGE:
        return change.why_left(state_of(change.path))
    try:
        resolve_target(change.path, list(roots))
    except PathNotAllowed:
        return outside_roots(roots, done=False)
    except FileWriteError:
        pass  # not a path a write could use: the restore says why
    why = change.why_left(state_of(change.path))
    if why:
        return why
    try:  # as the model left it, but read through a folder that became a link: refused
        target = resolve_target(change.path, list(roots), links=False)
    except LinkOnTheWay as exc:
        return str(exc)
    except (PathNotAllowed, FileWriteError):
        return ""
    try:  # made read-only since: a write leaves it (a removal needs only the folder)
        if change.before is not None:
            refuse_read_only(target, change.path)
    except FileWriteError as exc:
        return str(exc)
    return ""


def too_large(size: int, *, redo: bool = False) -> str:
    """Why a file whose earlier content (``redo``: the model's version) was too large to
    keep cannot be restored."""
    held = f"{size / 2**20:,.0f} MiB" if size else "more"
    cap = f"more than the {MAX_KEPT_BYTES // 2**20} MiB a checkpoint keeps"
    if redo:
        return (f"cannot be restored: the model's version held {held}, {cap}, so it was "
                "not kept")
    return (f"cannot be restored: it held {held} before the model wrote it, {cap}, so its "
            "earlier content was not kept")


def outside_roots(roots: Sequence[str | Path], *, done: bool = True) -> str:
    """Why a file outside ``roots`` was not restored (``done``), or cannot be, and what to
    do, for the person.

    The write's own refusal speaks to the model ("write to a relative path
    inside them"); here the path comes from the conversation's log: the folder
    it was written in is not an allowed one now (another working folder), or
    the record was not written by this program.
    """
    where = ", ".join(str(root) for root in roots) or "none"
    what = "so it was not touched" if done else "so it cannot be restored from here"
    return (f"it is outside the allowed directories ({where}), {what}; if "
            "you expected the model to have written it, start selfref-tui in its folder "
            "(or add that folder to [agent] allowed_roots in the config) and rewind to the same "
            "message again")
