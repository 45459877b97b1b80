"""Where a person's export of a ref goes: one rule for the command line and the app.

A path that names a folder — an existing one, or any path written with a
trailing slash (the folder is created) — means "a file named after the ref in
that folder"; anything else is the file itself. Both front ends call
:func:`export_target`, so ``refs export ID ~/exports`` and the app's dialog
given ``~/exports`` write the same file.

A person's export follows a link at the path, as a shell's ``>`` does, so
both front ends ask first (:func:`link_note` says where it leads): a link was
replaced as "this file already exists" without a word about the file it
changed, and a link to nothing yet was written through without a question.
"""

from __future__ import annotations

import os
from pathlib import Path


def expand_home(value: str) -> Path:
    """``value`` with ``~`` or ``~user`` expanded; ValueError names a user the machine lacks."""
    try:
        return Path(value).expanduser()
    except RuntimeError:  # what pathlib raises for ~name of an unknown user
        raise ValueError(
            f"No home folder for {value.split('/')[0]!r}: write the path out."
        ) from None


def names_folder(value: str) -> bool:
    """True when ``value`` means a folder: a trailing slash, or a folder that exists."""
    value = value.strip()
    if value.endswith(("/", os.sep)):
        return True
    try:
        return expand_home(value).is_dir()
    except (OSError, ValueError):
        return False


def export_target(value: str, suggested_name: str) -> Path:
    """The file an export of ``value`` writes (ValueError for an unknown ``~user``)."""
    value = value.strip()
    path = expand_home(value)
    if names_folder(value):
        return path / suggested_name
    return path


def is_file(path: Path) -> bool:
    """``path.is_file()``, False where the path cannot be looked at: pathlib raises for a
    folder without permission or a name too long, and the app's export ended with it; the
    write that follows says why instead."""
    try:
        return path.is_file()
    except OSError:
        return False


def is_taken(path: Path) -> bool:
    """Something is at ``path``: a file, a folder, a link (leading anywhere), a FIFO…"""
    try:
        return path.exists() or path.is_symlink()
    except OSError:
        return False


def is_link(path: Path) -> bool:
    """True when ``path`` itself is a symbolic link (leading anywhere, or nowhere yet)."""
    try:
        return path.is_symlink()
    except OSError:
        return False


def link_note(path: Path) -> str:
    """" (a link to /real/file)" when ``path`` is a link, with ", which does not exist yet"
    for one that leads nowhere yet; "" otherwise. OSError when where it leads cannot be
    looked at (a name too long, a folder without permission)."""
    if not is_link(path):
        return ""
    real = Path(os.path.realpath(path))
    return f" (a link to {real}{'' if real.exists() else ', which does not exist yet'})"
