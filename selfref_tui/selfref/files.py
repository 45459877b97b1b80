"""Writing people's files: atomic, and confined when the model asks for it.

Why atomic: an export or ``fd_to_file`` that fails half-way (disk full, killed
process) must not leave half a file where a good one was. Every write goes to
a temporary file in the target's directory, is fsynced, and replaces the
target with a rename; the directory is fsynced after. An existing file keeps
its permission bits; a new one gets the usual umask-based mode. The temp
files a killed write leaves behind are removed by the next write into that
folder, when provably dead (``temp_files.py``).

Why directory descriptors: the model chooses ``file_path``, and a path checked
by name and then written by name can be raced — a local process swapping a
directory on the way for a symlink between the check and the write moves the
write elsewhere. So nothing here opens a path by name. The walk starts from a
descriptor of the allowed root and opens each component relative to its
parent's descriptor with ``O_NOFOLLOW | O_DIRECTORY``; the temp file is created
with ``O_EXCL | O_NOFOLLOW`` relative to the final directory's descriptor and
renamed with ``src_dir_fd``/``dst_dir_fd``. A symlink met on the way is read
(``readlink`` relative to its directory) and resolved *lexically inside the
roots*: ``..`` steps back along the descriptors already held and never above
the root, an absolute target must lie inside one of the roots. Links that
stay inside are followed; anything else is ``PathNotAllowed``. Before the
rename the directory path is walked once more and must lead to the same
directory, so a directory swapped in meanwhile fails the write (the returned
path is where the file is).

``roots=None`` is the person's own export: their path is resolved with
``realpath`` (``~`` expanded, their links followed) and then written the same
atomic, descriptor-relative way, from ``/``. A model's path that starts with
``~`` means a home folder too (it would otherwise make a folder named ``~``):
it is expanded, and refused unless the result lies inside the roots
(``./~`` names a folder called ``~``).

Modes: ``write`` replaces the file; ``append`` adds bytes at the end;
``insert`` puts the content before 1-based ``insert_at_line`` (``lines + 1``
appends), adding the newlines needed so lines do not run together.
``exist_ok=False`` refuses to change a file that exists, in every mode;
``create=False`` refuses a missing file. Existing files are handled as bytes,
so a file that is not UTF-8 is not damaged by an append or insert.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

from ..refs.export import export_plan
from ..refs.fds import FdError, attrs
from .temp_files import machine_tag, remove_leftovers

if TYPE_CHECKING:
    from ..refs.fds import FdTable

MODES = ("write", "append", "insert")
#: longer paths cannot be opened by name by other programs; refuse them early
MAX_PATH_BYTES = 4095
_MAX_LINKS = 40
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | _CLOEXEC


class PathNotAllowed(Exception):
    """The path leaves the allowed directories."""


class FileWriteError(Exception):
    """The write did not happen; ``kind`` is the matching fd_error type."""

    def __init__(self, message: str, kind: str = "write_error") -> None:
        super().__init__(message)
        self.kind = kind


class _MissingDir(Exception):
    """A directory on the way does not exist and may not be created."""


@dataclass
class _Walk:
    """Open directory descriptors from a root down to the target's directory."""

    roots: list[tuple[str, ...]]  # each root's real path, as components
    shown: str
    root: int = 0
    fds: list[int] = field(default_factory=list)
    names: list[str] = field(default_factory=list)

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds.clear()
        self.names.clear()

    def start(self, root: int) -> None:
        self.close()
        self.root = root
        real = os.path.join("/", *self.roots[root])
        try:
            self.fds.append(os.open(real, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
                                    | _CLOEXEC))
        except OSError as exc:
            raise FileWriteError(f"cannot open the allowed directory {real}: "
                                 f"{exc.strerror}") from None

    def path(self, *more: str) -> Path:
        return Path("/", *self.roots[self.root], *self.names, *more)

    def same_dir_again(self) -> bool:
        """Walk the resolved names again (no links this time): same directory as held?"""
        fd = os.open(os.path.join("/", *self.roots[self.root]),
                     os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC)
        try:
            for name in self.names:
                nxt = os.open(name, _DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = nxt
            now, held = os.fstat(fd), os.fstat(self.fds[-1])
        except OSError:
            return False
        finally:
            os.close(fd)
        return (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino)


def _parts(path: str) -> tuple[str, ...]:
    return tuple(p for p in path.split("/") if p)


def _beneath(path: str, root: tuple[str, ...]) -> list[str] | None:
    """The components of absolute ``path`` after ``root``, or None when not under it."""
    parts = path.split("/")[1:]
    names = [p for p in parts if p]
    if tuple(names[: len(root)]) != root:
        return None
    # keep the remainder as written ("." and ".." are handled by the walk)
    rest = list(names[len(root):])
    if path.endswith("/"):
        rest.append("")
    return rest


def _root_forms(roots: Sequence[str | os.PathLike[str]]) -> tuple[list[tuple[str, ...]],
                                                                  list[tuple[str, ...]]]:
    """(real roots, the roots as given) as components; a root may be named either way."""
    given = [_parts(os.path.abspath(os.path.expanduser(os.fspath(r)))) for r in roots]
    real = [_parts(os.path.realpath(os.path.expanduser(os.fspath(r)))) for r in roots]
    return real, given


def _resolve(raw: str, roots: Sequence[str | os.PathLike[str]] | None, make_dirs: bool,
             links: bool = True) -> tuple[_Walk, str, os.stat_result | None]:
    """Open the target's directory without following links out of the roots.

    Returns the walk (its last descriptor is the directory), the file name in
    it, and the file's lstat (None when missing). The caller closes the walk.
    ``links`` False: a link anywhere on the way is refused (FileWriteError), even
    one that stays inside.
    """
    if roots is None:
        real, given = [()], [()]
        pending = list(_parts(os.path.realpath(os.path.expanduser(raw))))
        start = 0
    else:
        real, given = _root_forms(roots)
        if not real:
            raise PathNotAllowed("no directories are allowed for writing here")
        pending, start = _place(raw, real, given)
    walk = _Walk(real, raw)
    walk.start(start)
    try:
        name, st = _descend(walk, pending, real, given, make_dirs, links)
    except BaseException:
        walk.close()
        raise
    return walk, name, st


def _place(raw: str, real: list[tuple[str, ...]], given: list[tuple[str, ...]]
           ) -> tuple[list[str], int]:
    path = _home(raw)
    if not os.path.isabs(path):
        return path.split("/"), 0
    for forms in (real, given):
        for i, root in enumerate(forms):
            rest = _beneath(path, root)
            if rest is not None:
                return rest, i
    raise _outside(raw, real, path if path != raw else None)


def _home(raw: str) -> str:
    """A model's ``~/x`` or ``~user/x`` as the home folder it means (the roots still decide).

    Taken literally it would create a folder named ``~`` inside the root, which
    is never what was meant.
    """
    if not raw.startswith("~"):
        return raw
    expanded = os.path.expanduser(raw)
    if not os.path.isabs(expanded):
        raise PathNotAllowed(
            f"{raw!r} names a home folder this system does not have; write to a relative "
            "path inside the allowed directories, e.g. out/result.txt (./~ names a folder "
            "called ~)")
    return expanded


def _outside(raw: str, real: list[tuple[str, ...]], expanded: str | None = None
             ) -> PathNotAllowed:
    where = ", ".join(os.path.join("/", *r) for r in real)
    what = f"{raw!r} is {expanded}, which is" if expanded else f"{raw!r} resolves"
    return PathNotAllowed(
        f"{what} outside the allowed directories ({where}); "
        "write to a relative path inside them, e.g. out/result.txt")


def _descend(walk: _Walk, pending: list[str], real: list[tuple[str, ...]],
             given: list[tuple[str, ...]], make_dirs: bool, follow: bool = True
             ) -> tuple[str, os.stat_result | None]:
    links = 0
    created = 0
    while pending:
        part = pending.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            if not walk.names:
                raise _outside(walk.shown, real)
            walk.names.pop()
            os.close(walk.fds.pop())
            continue
        here = walk.fds[-1]
        if not pending:  # the file itself
            try:
                st = os.stat(part, dir_fd=here, follow_symlinks=False)
            except FileNotFoundError:
                st = None
            except OSError as exc:
                raise _os_error(walk.shown, exc) from None
            if st is None or not stat.S_ISLNK(st.st_mode):
                if links and not follow:  # one that stayed inside (one leading out raised)
                    raise FileWriteError(f"a link is on the way to {walk.shown} now, where "
                                         "the model's write met none: it was changed since, "
                                         "and the link was not followed")
                return part, st
        else:
            try:
                fd = os.open(part, _DIR_FLAGS, dir_fd=here)
            except FileNotFoundError:
                if not make_dirs:
                    raise _MissingDir from None
                created += 1
                if created > 1000:
                    raise PathNotAllowed(f"the directories on the way to {walk.shown!r} keep "
                                         "changing; nothing was written") from None
                try:
                    os.mkdir(part, 0o777, dir_fd=here)
                except FileExistsError:
                    pass
                except OSError as exc:
                    raise FileWriteError(f"cannot create the directory for {walk.shown}: "
                                         f"{exc.strerror}") from None
                pending.insert(0, part)  # open what was just made (never by following a link)
                continue
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                    raise _os_error(walk.shown, exc) from None
                try:
                    st = os.stat(part, dir_fd=here, follow_symlinks=False)
                except OSError as again:
                    raise _os_error(walk.shown, again) from None
                if stat.S_ISDIR(st.st_mode):
                    raise PathNotAllowed(f"a directory on the way to {walk.shown!r} changed "
                                         "while writing; nothing was written") from None
                if not stat.S_ISLNK(st.st_mode):
                    raise FileWriteError(f"cannot write {walk.shown}: {part!r} on the way is "
                                         "not a directory; choose another path") from None
            else:
                walk.fds.append(fd)
                walk.names.append(part)
                continue
        # a symlink: follow it lexically, inside the roots only
        links += 1
        if links > _MAX_LINKS:
            raise PathNotAllowed(f"too many links on the way to {walk.shown!r}; write to a "
                                 "plain path")
        try:
            target = os.readlink(part, dir_fd=here)
        except OSError:
            raise PathNotAllowed(f"a link on the way to {walk.shown!r} changed while "
                                 "writing; nothing was written") from None
        if os.path.isabs(target):
            rest, root = _place(target, real, given)
            walk.start(root)
            pending[:0] = rest
        else:
            pending[:0] = target.split("/")
    if not walk.names:
        raise PathNotAllowed(f"{walk.shown!r} is the allowed directory itself; "
                             "write to a file inside it, e.g. out/result.txt")
    raise FileWriteError(f"{walk.shown} is a directory, not a regular file; choose another "
                         "path")


def _os_error(shown: str, exc: OSError) -> FileWriteError:
    return FileWriteError(f"cannot use {shown}: {exc.strerror or exc}; choose another path")


def resolve_target(path: str | os.PathLike[str], roots: Sequence[str | os.PathLike[str]] | None
                   ) -> Path:
    """The real file a write to ``path`` would change; PathNotAllowed if outside ``roots``.

    A preview: nothing is created, and the answer can be stale by the time a
    write happens; :func:`write_file` checks again as it writes.
    """
    raw = _checked(path)
    try:
        walk, name, _ = _resolve(raw, roots, make_dirs=False)
    except _MissingDir:
        if roots is None:
            return Path(os.path.realpath(os.path.expanduser(raw)))
        real, given = _root_forms(roots)
        pending, start = _place(raw, real, given)
        return Path(os.path.normpath(os.path.join("/", *real[start], *pending)))
    try:
        return walk.path(name)
    finally:
        walk.close()


def write_roots(allowed: Sequence[str | os.PathLike[str]]) -> tuple[Path, ...]:
    """The directories the model's writes (and their restores) may go to: the configured
    ``[agent] allowed_roots``, or the folder the program started in."""
    return tuple(Path(root) for root in allowed) or (Path.cwd(),)


def _checked(path: str | os.PathLike[str]) -> str:
    raw = os.fspath(path)
    if not isinstance(raw, str):
        raise FileWriteError("the file path must be text", "invalid_parameter")
    if "\x00" in raw:
        raise PathNotAllowed("the file path contains a NUL byte; use a plain file name")
    if not raw.strip():
        raise FileWriteError("the file path is empty; give a file name such as out.txt",
                             "invalid_parameter")
    if len(os.fsencode(raw)) > MAX_PATH_BYTES:
        raise FileWriteError("the file path is too long; use a shorter one")
    return raw


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
    checkpoint: Callable[[Path, bytes | int | None, bytes], None] | None = None,
    links: bool = True,
    expect: Path | None = None,
) -> Path:
    """Write ``content`` atomically; returns the path written.

    ``separate`` (a person's append): the content starts on a new line after
    one blank line, so a second export does not run into the first.
    ``checkpoint(target, before, after)`` is called just before the file is
    replaced, with its previous bytes (None: it did not exist) and the new
    ones, read through the same descriptors as the write; if it raises, nothing
    is written (see checkpoints.py). A file larger than ``checkpoint.limit`` (when
    it has one) is not read for it: its size is passed instead of its bytes.
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
        old = _read_old(walk.fds[-1], name, raw) if st is not None and mode != "write" else b""
        before = old if mode != "write" else None
        if mode == "append":
            if separate and old.strip():
                old = old.rstrip(b"\n") + b"\n\n"
            data = old + data
        elif mode == "insert":
            data = _insert(old, data, insert_at_line, raw)
        if checkpoint is not None:
            kept: bytes | int | None = before
            if st is not None and before is None:  # an overwrite: read for the checkpoint,
                # unless larger than it keeps (its size then, the file not read)
                kept = _read_old(walk.fds[-1], name, raw, getattr(checkpoint, "limit", None))
            _checkpoint(checkpoint, target, kept if st is not None else None, data)
        _atomic_write(walk, name, data, stat.S_IMODE(st.st_mode) if st is not None else None,
                      raw)
        return target
    finally:
        walk.close()


def write_beside(files: Sequence[tuple[Path, bytes]]) -> None:
    """Write the files an export puts beside its own (a conversation's images, in
    ``NAME-images/``): each inside its folder, which is made when missing.

    The person chose the export's path, not this folder, and was asked before
    only that file was replaced. So the folder itself may not be a link, and a
    file in it is written only inside it (:func:`write_file` with the folder as
    the one root): ``NAME-images`` linking elsewhere, or a ``1-1.png`` there
    linking to another file, would have had that file overwritten without a
    word. Raises FileWriteError naming the entry, with nothing written, when
    the folder is refused; call it before writing the export itself.
    """
    made: set[Path] = set()
    for path, data in files:
        folder = path.parent
        if folder not in made:
            _own_folder(folder)
            made.add(folder)
        try:
            write_file(path, data, roots=[folder])
        except PathNotAllowed:
            raise FileWriteError(f"{path} is a link leading out of {folder}; it was not "
                                 "followed: remove it, or export elsewhere") from None


def _own_folder(folder: Path) -> None:
    """Make ``folder`` (its parents as the person's path leads), or check that it is one:
    a link or anything else there is refused, not followed."""
    try:
        os.makedirs(folder.parent, exist_ok=True)
        os.mkdir(folder)
        return
    except FileExistsError:
        pass
    except OSError as exc:
        raise FileWriteError(f"cannot create {folder}: {exc.strerror or exc}; nothing was "
                             "written") from None
    try:
        st = os.lstat(folder)
    except OSError as exc:
        raise FileWriteError(f"cannot use {folder}: {exc.strerror or exc}; nothing was "
                             "written") from None
    if stat.S_ISLNK(st.st_mode):
        raise FileWriteError(f"{folder} is a link; the export's images go in a folder of "
                             "their own and it was not followed: nothing was written — move "
                             "it out of the way, or export elsewhere")
    if not stat.S_ISDIR(st.st_mode):
        raise FileWriteError(f"{folder} exists and is not a folder; the export's images go "
                             "there: nothing was written — move it out of the way, or export "
                             "elsewhere")


def _checkpoint(checkpoint: Callable[[Path, bytes | int | None, bytes], None], target: Path,
                before: bytes | int | None, after: bytes) -> None:
    from .errors import CheckpointError

    try:
        checkpoint(target, before, after)
    except CheckpointError as exc:
        raise FileWriteError(str(exc)) from None


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


@overload
def _read_old(dir_fd: int, name: str, shown: str) -> bytes: ...
@overload
def _read_old(dir_fd: int, name: str, shown: str, limit: int | None) -> bytes | int: ...
def _read_old(dir_fd: int, name: str, shown: str, limit: int | None = None) -> bytes | int:
    """The current bytes of a regular file, opened without following or blocking.

    ``limit``: a file holding more bytes than that is not read; its size is returned.
    """
    try:
        fd = os.open(name, os.O_RDONLY | _NOFOLLOW | os.O_NONBLOCK | _CLOEXEC, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise PathNotAllowed(f"{shown!r} changed into a link while writing; nothing was "
                                 "written") from None
        raise FileWriteError(f"cannot read {shown}: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FileWriteError(f"{shown} exists and is not a regular file; choose another "
                                 "path")
        if limit is not None and st.st_size > limit:
            return st.st_size
        chunks, size = [], 0
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
            size += len(chunk)
            if limit is not None and size > limit:  # grown since: not read on
                return size
        return b"".join(chunks)
    except OSError as exc:
        raise FileWriteError(f"cannot read {shown}: {exc.strerror}") from None
    finally:
        os.close(fd)


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


def _atomic_write(walk: _Walk, name: str, data: bytes, mode_bits: int | None,
                  shown: str) -> None:
    parent = walk.fds[-1]
    remove_leftovers(parent)
    tmp = f".selfref-h{machine_tag()}-{os.getpid()}-{secrets.token_hex(8)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
    try:
        fd = os.open(tmp, flags, 0o666, dir_fd=parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
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
