"""Writing people's files: atomic, and confined when the model asks for it.

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
``create=False`` refuses a missing file. A file this user may not write
(read-only, or immutable) is refused in every mode, before anything is read.
Existing files are handled as bytes,
so a file that is not UTF-8 is not damaged by an append or insert.
"""

from __future__ import annotations

import errno
import hashlib
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
#: the piece a large file is read, hashed and copied in
CHUNK_BYTES = 1 << 20
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


class LinkOnTheWay(FileWriteError):
    """A link is on the way where none may be (``links=False``: a restore), though it
    stays inside the roots."""


class _MissingDir(Exception):
    """A directory on the way does not exist and may not be created."""


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
                    raise LinkOnTheWay(f"a link is on the way to {walk.shown} now, where "
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


def resolve_target(path: str | os.PathLike[str], roots: Sequence[str | os.PathLike[str]] | None,
                   *, links: bool = True) -> Path:
    """The real file a write to ``path`` would change; PathNotAllowed if outside ``roots``.

    A preview: nothing is created, and the answer can be stale by the time a
    write happens; :func:`write_file` checks again as it writes. ``links`` as
    for :func:`write_file` (:class:`LinkOnTheWay` when one is met).
    """
    raw = _checked(path)
    try:
        walk, name, _ = _resolve(raw, roots, make_dirs=False, links=links)
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


def write_beside(files: Sequence[tuple[Path, bytes]]) -> None:
    """Write the files an export puts beside its own (a conversation's images, in
    ``NAME-images/``): each inside its folder, which is made when missing.

    The person chose the export's path, not this folder, and was asked before
    only that file was replaced. So the folder itself may not be a link, nor
    may any file name in it: ``NAME-images`` linking elsewhere, or a ``2-1.png``
    there linking to another file, would have had that file overwritten without
    a word. Every name is looked at before the first is written, so a refusal
    leaves no export half-written (the first images new, the rest missing).
    Raises FileWriteError naming the entry, with nothing written; call it before
    writing the export itself.
    """
    made: set[Path] = set()
    for path, _ in files:
        if path.parent not in made:
            _own_folder(path.parent)
            made.add(path.parent)
    for path, _ in files:
        _beside_ok(path)
    for path, data in files:
        try:  # still no link: one made since the look is refused, not followed
            write_file(path, data, roots=[path.parent], links=False)
        except (PathNotAllowed, LinkOnTheWay):
            raise _beside_link(path) from None


def _beside_ok(path: Path) -> None:
    """Refuse an image name that is taken by a link, by something not a file, or by a
    file that may not be written; a missing one or a plain file is fine."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise FileWriteError(f"cannot use {path}: {exc.strerror or exc}; nothing was "
                             "written") from None
    if stat.S_ISLNK(st.st_mode):
        raise _beside_link(path)
    if not stat.S_ISREG(st.st_mode):
        raise FileWriteError(f"{path} exists and is not a file; the export's images go "
                             "there: nothing was written — move it out of the way, or "
                             "export elsewhere")
    if not os.access(path, os.W_OK, follow_symlinks=False):
        raise _read_only(str(path))


def _beside_link(path: Path) -> FileWriteError:
    return FileWriteError(f"{path} is a link; it was not followed and nothing was written: "
                          "remove it, or export elsewhere")


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


def _limit(checkpoint: Checkpoint | None) -> int | None:
    """The most bytes ``checkpoint`` keeps (None: no checkpoint, nothing held for one)."""
    if checkpoint is None:
        return None
    limit = getattr(checkpoint, "limit", None)
    return limit if isinstance(limit, int) else MAX_HELD


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


def _atomic_write(walk: _Walk, name: str, data: bytes, mode_bits: int | None,
                  shown: str) -> None:
    _replace_with(walk, name, mode_bits, shown, lambda out: out.write(data))


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
