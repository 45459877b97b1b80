"""Writing people's files: atomic, and confined when the model asks for it.

The entry points (:func:`write_file`, :func:`remove_file`, :func:`fd_to_file`): the
checks a change goes through and in what order. Where the path leads is ``file_walk``'s
(the confined walk, and why it holds descriptors); the bytes of an edit and the atomic
replacement are ``file_edit``'s (why atomic, why streamed); the images beside an export
are ``export_beside``'s.

Modes: ``write`` replaces the file; ``append`` adds bytes at the end;
``insert`` puts the content before 1-based ``insert_at_line`` (``lines + 1``
appends), adding the newlines needed so lines do not run together.
``exist_ok=False`` refuses to change a file that exists, in every mode;
``create=False`` refuses a missing file. A file this user may not write
(read-only, or immutable) is refused in every mode, before anything is read.
Existing files are handled as bytes,
so a file that is not UTF-8 is not damaged by an append or insert.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..refs.export import export_plan
from ..refs.fds import FdError, attrs
from .file_edit import (
    MAX_HELD,
    Checkpoint,
    _checkpoint,
    _Edit,
    _out_of_range,
    _read_old,
    _replace_with,
)
from .file_walk import (
    MAX_PATH_BYTES,
    FileWriteError,
    PathNotAllowed,
    _checked,
    _MissingDir,
    _resolve,
    _Walk,
)

if TYPE_CHECKING:
    from ..refs.fds import FdTable

MODES = ("write", "append", "insert")


def write_file(
    path: str | os.PathLike[str],
    content: str | bytes,
    *,
    mode: str = "write",
    insert_at_line: int | None = None,
    exist_ok: bool = True,
    create: bool = True,
    roots: Sequence[str | os.PathLike[str]] | None = None,
    separate: bool = False,
    checkpoint: Checkpoint | None = None,
    links: bool = True,
    expect: Path | None = None,
) -> Path:
    """Write ``content`` atomically; returns the path written.

    ``separate`` (a person's append): the content starts on a new line after
    one blank line, so a second export does not run into the first.
    ``checkpoint(target, before, after)`` is called just before the file is
    changed, with its previous bytes (None: it did not exist) and the new
    ones, read through the same descriptors as the write; if it raises, nothing
    is written (see checkpoints.py). A file larger than ``checkpoint.limit`` (when
    it has one) is not held for it: its size is passed instead of its bytes, and
    a :class:`Digest` instead of a new content over the limit.
    ``links`` False: a link anywhere on the way is refused, even one inside the
    roots (a restore writes back to the very path the model wrote, which had none).
    ``expect``: the file the person said yes to changing (as :func:`resolve_target`
    showed it); a path that leads elsewhere now (a link made or retargeted while
    they read the question) is refused, nothing written.
    """
    if mode not in MODES:
        raise FileWriteError(f"mode must be write, append or insert, not {mode!r}",
                             "invalid_parameter")
    if isinstance(content, bytes) and mode != "write":  # a person's image export
        raise FileWriteError("bytes can only be written whole (mode write)", "invalid_parameter")
    if not isinstance(content, (str, bytes)):
        raise FileWriteError("content must be text", "invalid_parameter")
    if insert_at_line is not None and mode != "insert":
        raise FileWriteError("insert_at_line only applies to mode insert", "invalid_parameter")
    if mode == "insert" and (isinstance(insert_at_line, bool)
                             or not isinstance(insert_at_line, int)):
        raise FileWriteError("insert mode needs insert_at_line, a whole number from 1",
                             "invalid_parameter")
    try:
        data = content if isinstance(content, bytes) else content.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise FileWriteError(f"the content is not valid text ({exc.reason}); nothing was "
                             "written", "invalid_parameter") from None
    raw = _checked(path)
    try:
        walk, name, st = _resolve(raw, roots, make_dirs=create, links=links)
    except _MissingDir:
        raise FileWriteError(f"{raw} does not exist; pass create=true to create it",
                             "not_found") from None
    try:
        target = walk.path(name)
        if expect is not None and target != expect:
            raise FileWriteError(f"{raw} leads to {target} now, not to {expect}, the file the "
                                 "person said yes to changing; nothing was written")
        if len(os.fsencode(os.fspath(target))) > MAX_PATH_BYTES:
            raise FileWriteError(f"the path of {raw} is too long; use a shorter one")
        if st is not None and not stat.S_ISREG(st.st_mode):
            raise FileWriteError(f"{raw} exists and is not a regular file; choose another path")
        if st is not None and not exist_ok:
            raise FileWriteError(f"{raw} already exists; nothing was changed; choose another "
                                 "path")
        if st is None and not create:
            raise FileWriteError(f"{raw} does not exist; pass create=true to create it",
                                 "not_found")
        if st is not None and not os.access(name, os.W_OK, dir_fd=walk.fds[-1],
                                            follow_symlinks=False):
            raise _read_only(raw)
        limit = _limit(checkpoint)
        if st is not None and mode != "write":
            edit = _Edit(walk, name, raw, target, data, checkpoint, limit)
            if mode == "insert":
                edit.insert(insert_at_line)  # type: ignore[arg-type]
            else:
                edit.append(separate)
            return target
        if mode == "insert" and insert_at_line != 1:  # a new file has no lines
            raise _out_of_range(raw, 0)
        if checkpoint is not None:
            kept: bytes | int | None = None
            if st is not None:  # an overwrite: read for the checkpoint, unless larger
                # than it keeps (its size then, the file not read)
                kept = _read_old(walk.fds[-1], name, raw, limit)
            _checkpoint(checkpoint, target, kept, data)
        _atomic_write(walk, name, data, stat.S_IMODE(st.st_mode) if st is not None else None,
                      raw)
        return target
    finally:
        walk.close()


def refuse_read_only(target: Path, shown: str) -> None:
    """FileWriteError when the existing file ``target`` (or the one a link there leads
    to) may not be written, by the rule :func:`write_file` keeps, for a caller that
    asks the person first: a question about a change that would be refused anyway is
    not put. A preview, as :func:`resolve_target` is: the write checks again."""
    try:
        if os.path.exists(target) and not os.access(target, os.W_OK):
            raise _read_only(shown)
    except (OSError, ValueError):
        pass  # a path that cannot be looked at: the write says why


def _read_only(shown: str) -> FileWriteError:
    """A file without write permission for this user, or immutable, is left alone by every
    mode: an append opening it in place is refused anyway, and a write or insert
    replacing it by rename (which needs only the folder's permission) would quietly
    undo what the person meant by making it read-only."""
    return FileWriteError(f"{shown} is read-only; nothing was changed")


def _limit(checkpoint: Checkpoint | None) -> int | None:
    """The most bytes ``checkpoint`` keeps (None: no checkpoint, nothing held for one)."""
    if checkpoint is None:
        return None
    limit = getattr(checkpoint, "limit", None)
    return limit if isinstance(limit, int) else MAX_HELD


def remove_file(path: str | os.PathLike[str],
                roots: Sequence[str | os.PathLike[str]] | None, *, links: bool = True,
                check: Callable[[bytes], None] | None = None) -> Path:
    """Remove a regular file, confined like :func:`write_file` (a rewind undoing a create).

    Never follows a link at the end (a link or other non-file there is refused),
    and the directory is reached through descriptors from the root. ``links``
    False: no link on the way either. ``check(data)``: called with the file's
    bytes, read through the same descriptors, before it is removed; if it
    raises (CheckpointError), the file is left.
    """
    raw = _checked(path)
    try:
        walk, name, st = _resolve(raw, roots, make_dirs=False, links=links)
    except _MissingDir:
        raise FileWriteError(f"{raw} does not exist", "not_found") from None
    try:
        target = walk.path(name)
        if st is None:
            raise FileWriteError(f"{raw} does not exist", "not_found")
        if not stat.S_ISREG(st.st_mode):
            raise FileWriteError(f"{raw} is not a regular file; it was left as it is")
        if check is not None:
            from .errors import CheckpointError

            try:
                check(_read_old(walk.fds[-1], name, raw))
            except CheckpointError as exc:
                raise FileWriteError(str(exc)) from None
        try:
            os.unlink(name, dir_fd=walk.fds[-1])
            os.fsync(walk.fds[-1])
        except OSError as exc:
            raise FileWriteError(f"could not remove {raw}: {exc.strerror or exc}") from None
        return target
    finally:
        walk.close()


def _atomic_write(walk: _Walk, name: str, data: bytes, mode_bits: int | None,
                  shown: str) -> None:
    _replace_with(walk, name, mode_bits, shown, lambda out: out.write(data))


def fd_to_file(
    table: FdTable,
    fd: str,
    file_path: str,
    mode: str = "write",
    insert_at_line: int | None = None,
    exist_ok: bool = True,
    create: bool = True,
    roots: Sequence[str | os.PathLike[str]] | None = None,
    raw: bool = False,
    checkpoint: Any = None,
    expect: Path | None = None,
) -> str:
    """The model's tool: write an fd or ref to a file inside ``roots`` (default: cwd).

    A ref that is exactly one fenced block is written as the bare code, as the
    person's export does (``raw=True`` keeps the fence lines): the fence is
    Markdown around the file, not part of it. ``checkpoint`` (a
    ``checkpoints.Recorder``) keeps what the write replaces, for a rewind.
    ``expect``: the file the person agreed to change (see :func:`write_file`).
    """
    allowed = tuple(roots) if roots is not None else (Path.cwd(),)
    try:
        fd_id, content = table.lookup(fd)
    except FdError as exc:
        return exc.xml()
    if not isinstance(file_path, str):
        return FdError("invalid_parameter", "file_path must be a string").xml()
    fence = None
    if not raw and fd_id.startswith("ref:"):
        plan = export_plan(fd_id.removeprefix("ref:"), content)
        if plan.fenced:
            content, fence = plan.content, "removed"
    try:
        written = write_file(file_path, content, mode=mode, insert_at_line=insert_at_line,
                             exist_ok=exist_ok, create=create, roots=allowed,
                             checkpoint=checkpoint, expect=expect)
    except PathNotAllowed as exc:
        if checkpoint is not None:
            checkpoint.discard()
        return FdError("path_not_allowed", str(exc)).xml()
    except FileWriteError as exc:
        if checkpoint is not None:
            checkpoint.discard()
        return FdError(exc.kind, str(exc)).xml()
    result = attrs(fd=fd_id, path=written, mode=mode, chars=len(content), fence=fence)
    return f"<fd_to_file_result{result} />"
