"""Changing an existing file a piece at a time, and the temp-file replacement every write
ends with.

Apart from ``files`` (the entry points: which mode, which checks, in what order) because
this is the part that touches the bytes: an append in place, an insert or an append by
copy into a temp file, the old content read for a checkpoint, and the atomic replacement
a whole write shares with them.

Why atomic: an export or ``fd_to_file`` that fails half-way (disk full, killed
process) must not leave half a file where a good one was. A write or an insert
goes to a temporary file in the target's directory, is fsynced, and replaces
the target with a rename; the directory is fsynced after. An existing file
keeps its permission bits; a new one gets the usual umask-based mode. The temp
files a killed write leaves behind are removed by the next write into that
folder, when provably dead (``temp_files.py``).

Why streamed: a model appends to logs and inserts into data files of hundreds
of megabytes, and holding such a file (and the file it becomes) in memory took
five times its size. An insert copies the file a piece at a time into the temp
file, the new content spliced in at its line. An append adds the new bytes in
place: the file is neither read nor copied to write it (a failed append is cut
back to the old length; only a process killed during the append itself can
leave part of the new bytes at the end). A file with other names (hard links)
is copied instead, so that its other names keep their content, as a rename
leaves them. The checkpoint (below) still reads a file it keeps, and hashes one
it does not, a piece at a time.
"""

from __future__ import annotations

import errno
import hashlib
import os
import secrets
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, overload

from .file_walk import _CLOEXEC, _NOFOLLOW, FileWriteError, PathNotAllowed, _Walk
from .temp_files import machine_tag, remove_leftovers

#: the piece a large file is read, hashed and copied in
CHUNK_BYTES = 1 << 20


@dataclass(frozen=True)
class Digest:
    """A file's new content, not held in memory: its sha256 and size.

    What a streamed append or insert passes its checkpoint for a result larger
    than the checkpoint keeps (``checkpoint.limit``).
    """

    sha256: str
    size: int


#: what a checkpoint is given: the target, its previous bytes (None: no file; an int: the
#: size of a file over the limit, not read), and its new content
Checkpoint = Callable[[Path, "bytes | int | None", "bytes | Digest"], None]


#: what a checkpoint without a ``limit`` is given in full
MAX_HELD = 1 << 62


def _checkpoint(checkpoint: Checkpoint, target: Path, before: bytes | int | None,
                after: bytes | Digest) -> None:
    from .errors import CheckpointError

    try:
        checkpoint(target, before, after)
    except CheckpointError as exc:
        raise FileWriteError(str(exc)) from None


def _out_of_range(shown: str, lines: int) -> FileWriteError:
    return FileWriteError(f"{shown} has {lines} lines; insert_at_line must be 1 to {lines + 1}",
                          "invalid_range")


class _Held:
    """Bytes gathered up to ``limit`` (None: not gathered), and their sha256 when asked for.

    The checkpoint's view of a streamed file: the content itself while it is
    small enough to keep, only its hash and size beyond that.
    """

    def __init__(self, limit: int | None, hashed: bool) -> None:
        self.limit = limit
        self.parts: list[bytes] | None = [] if limit is not None else None
        self.hash = hashlib.sha256() if hashed else None
        self.size = 0

    def add(self, piece: bytes) -> None:
        self.size += len(piece)
        if self.hash is not None:
            self.hash.update(piece)
        if self.parts is not None:
            if self.limit is not None and self.size > self.limit:
                self.parts = None
            else:
                self.parts.append(piece)

    def content(self) -> bytes | None:
        return b"".join(self.parts) if self.parts is not None else None

    def before(self) -> bytes | int:
        """As a checkpoint's previous content: the bytes, or the size when over the limit."""
        held = self.content()
        return held if held is not None else self.size

    def after(self) -> bytes | Digest:
        """As a checkpoint's new content: the bytes, or their :class:`Digest`."""
        held = self.content()
        if held is not None:
            return held
        assert self.hash is not None
        return Digest(self.hash.hexdigest(), self.size)


class _Edit:
    """An append or insert into an existing file, a piece at a time (see the module's why)."""

    def __init__(self, walk: _Walk, name: str, shown: str, target: Path, data: bytes,
                 checkpoint: Checkpoint | None, limit: int | None) -> None:
        self.walk, self.name, self.shown, self.target = walk, name, shown, target
        self.data, self.checkpoint, self.limit = data, checkpoint, limit

    def _open(self, flags: int, what: str = "read") -> tuple[int, os.stat_result]:
        fd = _open_old(self.walk.fds[-1], self.name, self.shown, flags, what)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise FileWriteError(f"{self.shown} exists and is not a regular file; choose "
                                     "another path")
        except BaseException:
            os.close(fd)
            raise
        return fd, st

    def append(self, separate: bool) -> None:
        """The new bytes at the end, written in place: the file is not read to write them.

        ``separate``: trailing newlines of a file with text are cut to one blank
        line before the new bytes (their count is read from the end only).
        """
        fd, st = self._open(os.O_RDWR, "append to")  # a write: said so when refused
        try:
            size = st.st_size
            start, piece = size, self.data
            if separate:
                newlines, text = _tail(fd, size)
                if text:
                    start, piece = size - newlines, b"\n\n" + self.data
            if st.st_nlink > 1:  # other names keep their content: copied, then renamed
                self._replace(fd, st, lambda src, out: _copy_cut(src, out, start, piece))
                return
            if self.checkpoint is not None:
                self._keep_appended(fd, size, start, piece)
            if self.walk.names and not self.walk.same_dir_again():
                raise PathNotAllowed(f"a directory on the way to {self.shown!r} changed while "
                                     "writing; nothing was written")
            try:
                _write_at(fd, piece, start)
                os.ftruncate(fd, start + len(piece))
                os.fsync(fd)
            except OSError as exc:
                _put_back(fd, size, start)
                raise FileWriteError(f"could not append to {self.shown}: "
                                     f"{exc.strerror or exc}; it was left as it was") from None
        except OSError as exc:
            raise FileWriteError(f"cannot read {self.shown}: {exc.strerror or exc}") from None
        finally:
            os.close(fd)

    def _keep_appended(self, fd: int, size: int, start: int, piece: bytes) -> None:
        """The checkpoint of an append in place: the old bytes (read only when small
        enough to keep) and the new content (its hash when over the limit)."""
        assert self.checkpoint is not None and self.limit is not None
        small = size <= self.limit
        before = _Held(self.limit if small else None, hashed=False)
        after = _Held(self.limit if start + len(piece) <= self.limit else None, hashed=True)
        offset = 0
        while offset < size:
            chunk = os.pread(fd, min(CHUNK_BYTES, size - offset), offset)
            if not chunk:
                break
            if small:
                before.add(chunk)
            if offset < start:
                after.add(chunk[:start - offset])
            offset += len(chunk)
        after.add(piece)
        _checkpoint(self.checkpoint, self.target, before.before() if small else size,
                    after.after())

    def insert(self, line: int) -> None:
        """The new bytes before 1-based ``line``, the file copied around them a piece at a
        time into the temp file that replaces it."""
        fd, st = self._open(os.O_RDONLY)
        try:
            if line < 1:
                raise _out_of_range(self.shown, _count_lines(fd))
            self._replace(fd, st, lambda src, out: _copy_inserting(src, out, self.data, line,
                                                                   self.shown))
        except OSError as exc:
            raise FileWriteError(f"cannot read {self.shown}: {exc.strerror or exc}") from None
        finally:
            os.close(fd)

    def _replace(self, fd: int, st: os.stat_result,
                 copy: Callable[[_Source, Callable[[bytes], None]], None]) -> None:
        """The file replaced by what ``copy`` makes of it, through a temp file; the
        checkpoint is given the old and new content before the rename."""
        kept = self.checkpoint is not None
        limit = self.limit or 0
        src = _Source(fd, _Held(limit if kept and st.st_size <= limit else None, hashed=False))
        # the result is at least the old size and the new bytes: over the limit, not held
        after = _Held(limit if kept and st.st_size + len(self.data) <= limit else None,
                      hashed=kept)

        def fill(out: Any) -> None:
            def put(piece: bytes) -> None:
                out.write(piece)
                after.add(piece)

            copy(src, put)
            if self.checkpoint is not None:
                _checkpoint(self.checkpoint, self.target, src.held.before(), after.after())

        _replace_with(self.walk, self.name, stat.S_IMODE(st.st_mode), self.shown, fill)


class _Source:
    """The old file read from the start, a piece at a time; what a checkpoint keeps of it."""

    def __init__(self, fd: int, held: _Held) -> None:
        self.fd, self.held = fd, held

    def read(self) -> bytes:
        chunk = os.read(self.fd, CHUNK_BYTES)
        self.held.add(chunk)
        return chunk


def _copy_inserting(src: _Source, put: Callable[[bytes], None], data: bytes, line: int,
                    shown: str) -> None:
    """Copy the file with ``data`` before ``line``, adding the newlines needed so lines
    do not run together; the line count is only known at the end, where a line past it
    fails (``invalid_range``)."""
    need, seen, last = line - 1, 0, b""
    chunk = src.read()
    cut = 0 if need == 0 else -1
    while cut < 0:
        if not chunk:  # the end, before that line: only the one after a last partial line
            partial = last not in (b"", b"\n")
            if need != seen + partial:
                raise _out_of_range(shown, seen + partial)
            put(b"\n" + data if partial else data)
            return
        count = chunk.count(b"\n")
        if seen + count < need:
            put(chunk)
            seen += count
            last = chunk[-1:]
            chunk = src.read()
            continue
        at = -1
        for _ in range(need - seen):
            at = chunk.index(b"\n", at + 1)
        cut = at + 1
    put(chunk[:cut])
    rest = chunk[cut:] or src.read()
    put(data + b"\n" if rest and data and not data.endswith(b"\n") else data)
    while rest:
        put(rest)
        rest = src.read()


def _copy_cut(src: _Source, put: Callable[[bytes], None], start: int, piece: bytes) -> None:
    """Copy the file's first ``start`` bytes, then ``piece`` (an append, by copy)."""
    left = start
    while left > 0:
        chunk = src.read()
        if not chunk:
            break
        put(chunk[:left])
        left -= len(chunk)
    while src.read():  # the rest (newlines cut): read for the checkpoint's old content
        pass
    put(piece)


def _count_lines(fd: int) -> int:
    lines, last, offset = 0, b"", 0
    while chunk := os.pread(fd, CHUNK_BYTES, offset):
        lines += chunk.count(b"\n")
        last = chunk[-1:]
        offset += len(chunk)
    return lines + (last not in (b"", b"\n"))


def _tail(fd: int, size: int) -> tuple[int, bool]:
    """(how many newlines end the file, whether it holds anything but whitespace), read
    from the end back only as far as needed."""
    newlines, end, counting = 0, size, True
    while end > 0:
        start = max(0, end - 65536)
        chunk = os.pread(fd, end - start, start)
        if not chunk:
            break
        if counting:
            kept = chunk.rstrip(b"\n")
            newlines += len(chunk) - len(kept)
            if kept:
                counting = False
            chunk = kept
        if chunk.strip():
            return newlines, True
        end = start
    return newlines, False


def _write_at(fd: int, data: bytes, offset: int) -> None:
    view = memoryview(data)
    while view:
        done = os.pwrite(fd, view, offset)
        view, offset = view[done:], offset + done


def _put_back(fd: int, size: int, start: int) -> None:
    """Undo a failed append: the old length, and the newlines it had cut (best effort)."""
    try:
        os.ftruncate(fd, start)
        if size > start:
            _write_at(fd, b"\n" * (size - start), start)
        os.fsync(fd)
    except OSError:
        pass


def _open_old(dir_fd: int, name: str, shown: str, flags: int = os.O_RDONLY,
              what: str = "read") -> int:
    """The existing file ``name`` opened without following a link or blocking; ``what``
    it is opened to do, for the error (an append opens it to write: "cannot read" told
    the model it lacked a permission it has)."""
    try:
        return os.open(name, flags | _NOFOLLOW | os.O_NONBLOCK | _CLOEXEC, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise PathNotAllowed(f"{shown!r} changed into a link while writing; nothing was "
                                 "written") from None
        changed = "" if what == "read" else "; nothing was changed"
        raise FileWriteError(f"cannot {what} {shown}: {exc.strerror}{changed}") from None


@overload
def _read_old(dir_fd: int, name: str, shown: str) -> bytes: ...
@overload
def _read_old(dir_fd: int, name: str, shown: str, limit: int | None) -> bytes | int: ...
def _read_old(dir_fd: int, name: str, shown: str, limit: int | None = None) -> bytes | int:
    """The current bytes of a regular file, opened without following or blocking.

    ``limit``: a file holding more bytes than that is not read; its size is returned.
    """
    fd = _open_old(dir_fd, name, shown)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FileWriteError(f"{shown} exists and is not a regular file; choose another "
                                 "path")
        if limit is not None and st.st_size > limit:
            return st.st_size
        held = _Held(MAX_HELD if limit is None else limit, hashed=False)
        while chunk := os.read(fd, CHUNK_BYTES):
            held.add(chunk)
            if held.parts is None:  # grown since: not read on
                return held.size
        return held.before()
    except OSError as exc:
        raise FileWriteError(f"cannot read {shown}: {exc.strerror}") from None
    finally:
        os.close(fd)


def _replace_with(walk: _Walk, name: str, mode_bits: int | None, shown: str,
                  fill: Callable[[Any], object]) -> None:
    """Replace ``name`` with a temp file ``fill`` writes (it may raise: nothing changes)."""
    parent = walk.fds[-1]
    remove_leftovers(parent)
    tmp = f".selfref-h{machine_tag()}-{os.getpid()}-{secrets.token_hex(8)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
    try:
        fd = os.open(tmp, flags, 0o666, dir_fd=parent)
        try:
            with os.fdopen(fd, "wb") as f:
                fill(f)
                f.flush()
                if mode_bits is not None:
                    os.fchmod(f.fileno(), mode_bits)
                os.fsync(f.fileno())
            if walk.names and not walk.same_dir_again():
                raise PathNotAllowed(f"a directory on the way to {shown!r} changed while "
                                     "writing; nothing was written")
            os.replace(tmp, name, src_dir_fd=parent, dst_dir_fd=parent)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=parent)
            except OSError:
                pass
            raise
    except OSError as exc:
        raise FileWriteError(f"could not write {shown}: {exc.strerror or exc}; nothing was "
                             "changed") from None
    try:
        os.fsync(parent)
    except OSError:
        pass
