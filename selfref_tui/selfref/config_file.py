"""Saving one entry into the person's config.toml (``theme``, a trusted MCP tool, …).

The text is changed by :mod:`selfref_tui.config_edit` (only that entry; comments,
layout and line endings kept); this module is the disk side, where a config
file can be more than a file:

- a symlink (a dotfiles repository) is written at its target, the link kept;
- a file with other hard links is refused: replacing it would split them;
- a read-only file (no write bit) is refused, never replaced: the person made it so;
- the file keeps its mode; a missing file is created private (0600);
- the write is atomic (temp file in the target's directory, fsync, rename) and is
  refused if the file changed while it was being edited.

Every refusal is a :class:`ConfigError` whose message says what to do.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Sequence
from pathlib import Path

from ..config import ConfigError
from ..config_edit import Value, with_item, with_value
from .errors import UnsafeStoreFileError
from .fsutil import FILE_MODE, atomic_write, fsync_dir, open_regular

#: larger than any config file; a bigger "config" is not one (nor read whole)
MAX_CONFIG_BYTES = 4 * 1024 * 1024
_BOM = "\ufeff"


def set_config_value(path: Path, table: Sequence[str], key: str, value: Value, *,
                     create_table: bool = True) -> bool:
    """``key = value`` in ``[table]`` (``()``: top level); False if it already said so."""
    return edit_config(path, lambda text, where: with_value(
        text, table, key, value, where=where, create_table=create_table))


def add_config_item(path: Path, table: Sequence[str], key: str, item: Value, *,
                    create_table: bool = False) -> bool:
    """``item`` appended to the array ``key`` of ``[table]``; False if it was there."""
    return edit_config(path, lambda text, where: with_item(
        text, table, key, item, where=where, create_table=create_table))


def edit_config(path: Path, edit: Callable[[str, str], str]) -> bool:
    """Apply ``edit(text, where)`` to the config at ``path``; False when it changed nothing."""
    target = _target(path)
    where = str(path)
    try:
        before = os.stat(target)
    except FileNotFoundError:
        before = None
    if before is None:
        text = ""
        mode = FILE_MODE
    else:
        _check_writable(path, target, before)
        text = _read(path, target)
        mode = stat.S_IMODE(before.st_mode)
    bom = text.startswith(_BOM)
    new = edit(text.removeprefix(_BOM), where)
    if (_BOM + new if bom else new) == text:
        return False
    if before is not None:
        try:
            now = os.stat(target)
        except FileNotFoundError:
            now = None
        if now is None or (now.st_mtime_ns, now.st_size, now.st_ino) != (
                before.st_mtime_ns, before.st_size, before.st_ino):
            raise ConfigError(f"{where} changed while it was being saved; try again")
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
    try:
        atomic_write(target, ((_BOM if bom else "") + new).encode("utf-8"), mode=mode)
        fsync_dir(target.parent)
    except OSError as exc:
        raise ConfigError(f"cannot write {where}: {exc.strerror or exc}; edit it by "
                          "hand") from None
    if before is not None and os.geteuid() == 0 and (before.st_uid, before.st_gid) != (0, 0):
        try:  # root saving a person's file: it stays theirs
            os.chown(target, before.st_uid, before.st_gid)
        except OSError:
            pass
    return True


def _target(path: Path) -> Path:
    """The file to write: ``path``, or where its chain of links ends."""
    if not path.is_symlink():
        return path
    target = Path(os.path.realpath(path))
    if not target.exists():
        raise ConfigError(f"{path} is a link to {target}, which does not exist; create it or "
                          "replace the link with a file")
    return target


def _check_writable(path: Path, target: Path, st: os.stat_result) -> None:
    shown = f"{path} (a link to {target})" if target != path else str(path)
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError(f"{shown} is not a regular file; selfref-tui saves settings only "
                          "into a regular file")
    if st.st_nlink > 1:
        raise ConfigError(f"{shown} has {st.st_nlink} hard links; saving would replace it "
                          "with a new file and split them, so edit it by hand")
    if not st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(
            target, os.W_OK):
        raise ConfigError(f"{shown} is read-only; make it writable or edit it by hand")


def _read(path: Path, target: Path) -> str:
    try:  # no link followed, no FIFO waited on, even if one replaced the file just now
        with os.fdopen(open_regular(target, os.O_RDONLY), "rb") as f:
            data = f.read(MAX_CONFIG_BYTES + 1)
    except UnsafeStoreFileError:
        raise ConfigError(f"{path} is not a regular file; selfref-tui saves settings only "
                          "into a regular file") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path} is over {MAX_CONFIG_BYTES // 2**20} MB; edit it by hand")
    try:
        return data.decode("utf-8")  # bytes as they are: CRLF stays CRLF
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not UTF-8 text; edit it by hand") from None
