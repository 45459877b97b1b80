"""The confined path walk: where a write of a person's file may go, and reaching it.

Apart from the writing itself (``files``, ``file_edit``) because it is the part that
decides *where*: every write, removal and preview (``resolve_target``) of a path the
model chose goes through :func:`_resolve`, and the rule is easier to check kept whole.

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
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

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
