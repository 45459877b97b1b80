"""What a search needs of a conversation, kept between searches: ``<data dir>/cache/search/``.

Folding a long log is most of a search's cost (about 0.7 s for 100,000
messages), and most conversations have not changed since the last search.
So after a key is folded for a search, each numbered message's searchable
text (``context.recall.searchable_text``), number, role, time and flags are
written here, with the log's size, modification time and inode; the next
search of an unchanged log reads this instead of folding it.

A cache, never the truth: it is rebuilt whenever the log differs in any of the
three, written whole (temp file + rename) and private (0600), not fsynced, and
read with the store's rules (no link followed, no FIFO opened). Anything odd
about it — garbled, of another key, counts that disagree — means "no cache":
the key is folded as if there were none.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from .errors import StoreError
from .fsutil import atomic_write, ensure_dir, read_regular
from .keys import key_dirname
from .store import LOG_NAME

CACHE_DIR = Path("cache") / "search"
VERSION = 1
log = logging.getLogger(__name__)


class CachedEntry(NamedTuple):
    """A numbered message as a search sees it: ``message`` holds only its searchable text
    (what ``context.recall`` would read of the whole message). A tuple: 100,000 of them
    are made per search of a long conversation, and a dataclass took 5 µs each."""

    n: int
    role: str
    message: dict[str, Any]
    time: str
    rewound: bool = False
    compacted: bool = False


def _stamp(key_dir: Path) -> list[int] | None:
    try:
        st = os.lstat(key_dir / LOG_NAME)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ino]


def _path(data_dir: Path, key: str) -> Path:
    return data_dir / CACHE_DIR / f"{key_dirname(key)}.txt"


def read(data_dir: Path, key: str, key_dir: Path) -> bytes | None:
    """The key's cache as bytes when it was made from its log as it is now; else None."""
    stamp = _stamp(key_dir)
    if stamp is None:
        return None
    try:
        data = read_regular(_path(data_dir, key))
        if data is None:
            return None
        header = json.loads(data[: data.index(b"\n")])
    except (OSError, ValueError, RecursionError, StoreError):
        return None
    if (not isinstance(header, dict) or header.get("v") != VERSION
            or header.get("key") != key or header.get("stamp") != stamp):
        return None
    return data


def parse(data: bytes) -> list[CachedEntry] | None:
    """The entries in a cache :func:`read` returned; None when it does not hold together."""
    try:
        _head, meta, texts = data.decode("utf-8").split("\n", 2)
        rows = json.loads(meta)
        parts = texts.split("\x00") if rows else []
        if not isinstance(rows, list) or len(rows) != len(parts):
            return None
        if not all(type(row) is list and len(row) == 4 for row in rows):
            return None
        return [CachedEntry(n, role, {"role": role, "content": text}, time, flags & 1 == 1,
                            flags & 2 == 2)
                for (n, role, time, flags), text in zip(rows, parts, strict=True)
                if type(n) is int and type(role) is str and type(time) is str
                and type(flags) is int]
    except (ValueError, TypeError, RecursionError):
        return None


def load(data_dir: Path, key: str, key_dir: Path) -> list[CachedEntry] | None:
    """The key's entries as last cached, when its log has not changed since; else None."""
    data = read(data_dir, key, key_dir)
    return parse(data) if data is not None else None


def save(data_dir: Path, key: str, key_dir: Path, stamp: list[int] | None,
         entries: Sequence[Any]) -> None:
    """Keep ``entries`` (a fold of the log as it was at ``stamp``) for the next search."""
    from ..context.recall import searchable_text

    if stamp is None or stamp != _stamp(key_dir):
        return  # the log moved on while it was read: the next search folds it again
    names: dict[str, str] = {}
    rows, texts = [], []
    for entry in entries:
        message = entry.message
        content = message.get("content")
        if type(content) is str and entry.role != "tool" and not message.get("tool_calls"):
            text = content  # what searchable_text returns for a plain message, sooner
        else:
            text = searchable_text(message, names)
        if "\x00" in text:
            text = text.replace("\x00", " ")
        rows.append([entry.n, entry.role, entry.time,
                     int(bool(getattr(entry, "rewound", False)))
                     | 2 * int(bool(getattr(entry, "compacted", False)))])
        texts.append(text)
    header = json.dumps({"v": VERSION, "key": key, "stamp": stamp}, ensure_ascii=True)
    body = "\n".join([header, json.dumps(rows, ensure_ascii=True, separators=(",", ":")),
                      "\x00".join(texts)])
    path = _path(data_dir, key)
    try:
        ensure_dir(path.parent)
        atomic_write(path, body.encode("utf-8"), fsync=False)
    except OSError as exc:  # a cache: the search still answered
        log.warning("could not keep the search cache %s: %s", path, exc)


def stamp_of(key_dir: Path) -> list[int] | None:
    """What :func:`save` checks the log against (taken before the log is read)."""
    return _stamp(key_dir)

