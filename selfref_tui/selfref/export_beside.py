"""The files an export writes beside its own (a conversation's images), refusing links.

Apart from ``files`` because its rule is the person's export, not the model's write: the
person chose the export's path, not the folder beside it, so nothing there may be a link.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

from .file_walk import FileWriteError, LinkOnTheWay, PathNotAllowed
from .files import _read_only, write_file


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
