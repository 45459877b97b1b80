"""Writing people's files: atomic, and confined when the model asks for it.

Why atomic: an export or ``fd_to_file`` that fails half-way (disk full, killed
process) must not leave half a file where a good one was. Every write goes to
a temporary file in the target's directory, is fsynced, and replaces the
target with ``os.replace``; the directory is fsynced after. An existing file
keeps its permission bits; a new one gets the usual umask-based mode.

Why confined: the model chooses ``file_path``. With ``roots`` given (model
writes; default the current directory), the path is resolved against the
first root, then fully resolved with ``realpath`` — which follows ``..`` and
every symlink, file or directory — and must land inside one of the roots.
So ``/etc/passwd``, ``../../x`` and links that point outside are refused with
``PathNotAllowed``; links that stay inside are followed and the target is
written. Missing parent directories are created only after that check, and
the parent's real path is checked again after creating them (a link swapped
in meanwhile is refused). ``roots=None`` means a person-initiated export:
no confinement, ``~`` expanded.

Modes: ``write`` replaces the file (``exist_ok=False`` refuses an existing
one); ``append`` adds bytes at the end; ``insert`` puts the content before
1-based ``insert_at_line`` (``lines + 1`` appends), adding the newlines needed
so lines do not run together. ``create=False`` refuses a missing file.
Existing files are handled as bytes, so a file that is not UTF-8 is not
damaged by an append or insert.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..refs.fds import FdError, attrs

if TYPE_CHECKING:
    from ..refs.fds import FdTable

MODES = ("write", "append", "insert")


class PathNotAllowed(Exception):
    """The path leaves the allowed directories."""


class FileWriteError(Exception):
    """The write did not happen; ``kind`` is the matching fd_error type."""

    def __init__(self, message: str, kind: str = "write_error") -> None:
        super().__init__(message)
        self.kind = kind


def _inside(path: str, root: str) -> bool:
    try:
        return os.path.commonpath([path, root]) == root
    except ValueError:
        return False


def resolve_target(path: str | os.PathLike[str], roots: Sequence[str | os.PathLike[str]] | None
                   ) -> Path:
    """The real file a write to ``path`` would change; PathNotAllowed if outside ``roots``."""
    raw = os.fspath(path)
    if "\x00" in raw:
        raise PathNotAllowed("the file path contains a NUL byte; use a plain file name")
    if not raw.strip():
        raise FileWriteError("the file path is empty; give a file name such as out.txt",
                             "invalid_parameter")
    if roots is None:
        return Path(os.path.realpath(os.path.expanduser(raw)))
    real_roots = [os.path.realpath(os.fspath(r)) for r in roots]
    if not real_roots:
        raise PathNotAllowed("no directories are allowed for writing here")
    candidate = raw if os.path.isabs(raw) else os.path.join(real_roots[0], raw)
    real = os.path.realpath(candidate)
    if not any(_inside(real, r) and real != r for r in real_roots):
        where = ", ".join(real_roots)
        raise PathNotAllowed(
            f"{raw!r} resolves outside the allowed directories ({where}); "
            "write to a relative path inside them, e.g. out/result.txt")
    return Path(real)


def write_file(
    path: str | os.PathLike[str],
    content: str,
    *,
    mode: str = "write",
    insert_at_line: int | None = None,
    exist_ok: bool = True,
    create: bool = True,
    roots: Sequence[str | os.PathLike[str]] | None = None,
    separate: bool = False,
) -> Path:
    """Write ``content`` atomically; returns the real path written.

    ``separate`` (a person's append): the content starts on a new line after
    one blank line, so a second export does not run into the first.
    """
    if mode not in MODES:
        raise FileWriteError(f"mode must be write, append or insert, not {mode!r}",
                             "invalid_parameter")
    if not isinstance(content, str):
        raise FileWriteError("content must be text", "invalid_parameter")
    if insert_at_line is not None and mode != "insert":
        raise FileWriteError("insert_at_line only applies to mode insert", "invalid_parameter")
    try:
        data = content.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise FileWriteError(f"the content is not valid text ({exc.reason}); nothing was "
                             "written", "invalid_parameter") from None
    target = resolve_target(path, roots)
    shown = os.fspath(path)
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise FileWriteError(f"cannot use {shown}: {exc.strerror}; choose another path") from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise FileWriteError(f"{shown} exists and is not a regular file; choose another path")
    if st is not None and mode == "write" and not exist_ok:
        raise FileWriteError(f"{shown} already exists; pass exist_ok=true to replace it or "
                             "choose another path")
    if st is None and not create:
        raise FileWriteError(f"{shown} does not exist; pass create=true to create it",
                             "not_found")
    old = b""
    if st is not None and mode != "write":
        try:
            old = target.read_bytes()
        except OSError as exc:
            raise FileWriteError(f"cannot read {shown}: {exc.strerror}") from None
    if mode == "append":
        if separate and old.strip():
            old = old.rstrip(b"\n") + b"\n\n"
        data = old + data
    elif mode == "insert":
        data = _insert(old, data, insert_at_line, shown)
    _make_parents(target, roots, shown)
    _atomic_write(target, data, stat.S_IMODE(st.st_mode) if st is not None else None, shown)
    return target


def _insert(old: bytes, data: bytes, line: object, shown: str) -> bytes:
    if isinstance(line, bool) or not isinstance(line, int):
        raise FileWriteError("insert mode needs insert_at_line, a whole number from 1",
                             "invalid_parameter")
    lines = _split_lf(old)
    if not 1 <= line <= len(lines) + 1:
        raise FileWriteError(f"{shown} has {len(lines)} lines; insert_at_line must be 1 to "
                             f"{len(lines) + 1}", "invalid_range")
    before, after = lines[: line - 1], lines[line - 1:]
    if before and not before[-1].endswith(b"\n"):
        before[-1] += b"\n"
    if after and data and not data.endswith(b"\n"):
        data += b"\n"
    return b"".join(before) + data + b"".join(after)


def _split_lf(data: bytes) -> list[bytes]:
    if not data:
        return []
    parts = data.split(b"\n")
    out = [p + b"\n" for p in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


def _make_parents(target: Path, roots: Sequence[str | os.PathLike[str]] | None,
                  shown: str) -> None:
    parent = target.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FileWriteError(f"cannot create the directory for {shown}: {exc.strerror}") \
            from None
    if roots is not None and os.path.realpath(parent) != os.fspath(parent):
        raise PathNotAllowed(f"a directory on the way to {shown!r} changed into a link while "
                             "writing; nothing was written")


def _atomic_write(target: Path, data: bytes, mode_bits: int | None, shown: str) -> None:
    tmp = target.parent / f".selfref-{secrets.token_hex(8)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) \
        | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(tmp, flags, 0o666)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                if mode_bits is not None:
                    os.fchmod(f.fileno(), mode_bits)
                os.fsync(f.fileno())
            os.replace(tmp, target)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except OSError as exc:
        raise FileWriteError(f"could not write {shown}: {exc.strerror or exc}; nothing was "
                             "changed") from None
    try:
        dir_fd = os.open(target.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)


def fd_to_file(
    table: FdTable,
    fd: str,
    file_path: str,
    mode: str = "write",
    insert_at_line: int | None = None,
    exist_ok: bool = True,
    create: bool = True,
    roots: Sequence[str | os.PathLike[str]] | None = None,
) -> str:
    """The model's tool: write an fd or ref to a file inside ``roots`` (default: cwd)."""
    allowed = tuple(roots) if roots is not None else (Path.cwd(),)
    try:
        fd_id, content = table.lookup(fd)
    except FdError as exc:
        return exc.xml()
    if not isinstance(file_path, str):
        return FdError("invalid_parameter", "file_path must be a string").xml()
    try:
        written = write_file(file_path, content, mode=mode, insert_at_line=insert_at_line,
                             exist_ok=exist_ok, create=create, roots=allowed)
    except PathNotAllowed as exc:
        return FdError("path_not_allowed", str(exc)).xml()
    except FileWriteError as exc:
        return FdError(exc.kind, str(exc)).xml()
    return f"<fd_to_file_result{attrs(fd=fd_id, path=written, mode=mode, chars=len(content))} />"
