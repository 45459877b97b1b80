"""What a search needs of a conversation, kept between searches: ``<data dir>/cache/search/``.

Folding a long log is most of a search's cost (about 0.7 s for 100,000
messages), and most conversations have not changed since the last search, or
have only grown. So after a key is folded for a search, each numbered
message's searchable text (``context.recall.searchable_text``), number, role,
time and flags are written here, with the log's size, modification time and
inode (the *stamp*); the next search of an unchanged log reads this instead of
folding it. With them goes what it takes to go on from there (the *fold*: how
many bytes of the log were folded, their CRC-32, and the little state an
appended patch reads, ``HistoryBuilder.resume_state``): a log that has grown
since is brought up to date by folding only what was appended
(``search_extend.py``).

A cache, never the truth: written whole (temp file + rename) and private
(0600), not fsynced, and read with the store's rules (no link followed, no
FIFO opened). Anything odd about it — garbled, of another key or another
version, counts that disagree — means "no cache": the key is folded as if
there were none.

The format is three parts: a JSON header line (with the size of what follows
it), a JSON line of columns (numbers and times as runs, a letter per role and
a digit per flag), then the texts joined by NUL (a NUL inside a text is
written as a space: no query holds one). Reading 100,000 entries this way
takes a few milliseconds; the entries themselves are made only for the
messages a search shows.
"""

from __future__ import annotations

import json
import logging
import os
import zlib
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence
from itertools import groupby
from pathlib import Path
from typing import Any, NamedTuple, overload

from ..context import history
from .errors import StoreError
from .fsutil import atomic_write, check_dir, ensure_dir, open_regular, read_regular
from .keys import key_dirname
from .store import LOG_NAME

CACHE_DIR = Path("cache") / "search"
VERSION = 3
#: a fold state (the open tool block's messages) larger than this is not kept: the cache
#: still serves an unchanged log, and a grown one is folded whole
MAX_FOLD_BYTES = 256 * 1024
#: the bytes of the log read at a time for its CRC-32
_CRC_PIECE = 256 * 1024
_ROLE_LETTER = {"user": "u", "assistant": "a", "tool": "t"}
_LETTER_ROLE = {letter: role for role, letter in _ROLE_LETTER.items()}
#: flags, one digit per entry
WORKING, REWOUND, COMPACTED = "0", "1", "2"
log = logging.getLogger(__name__)


class CachedEntry(NamedTuple):
    """A numbered message as a search sees it: ``message`` holds only its searchable text
    (what ``context.recall`` would read of the whole message)."""

    n: int
    role: str
    message: dict[str, Any]
    time: str
    rewound: bool = False
    compacted: bool = False


class SearchEntries:
    """A key's numbered messages as columns; an entry is made when it is asked for.

    It is what ``context.recall_index.HistoryIndex`` reads (a ``HistorySource``: the highest
    number, an entry by number, all of them), and a sequence of entries in order.
    ``fold`` (None when the key cannot be brought up to date this way) is ``{"end":
    bytes folded, "crc": their CRC-32, "state": HistoryBuilder.resume_state(), "names":
    call id -> tool name, for the calls of the open tool block}``.
    """

    __slots__ = ("flags", "fold", "numbers", "roles", "texts", "times")

    def __init__(self, numbers: list[int], roles: str, times: list[str], flags: str,
                 texts: list[str], fold: dict[str, Any] | None = None) -> None:
        self.numbers, self.roles, self.times, self.flags = numbers, roles, times, flags
        self.texts, self.fold = texts, fold

    def __len__(self) -> int:
        return len(self.numbers)

    @overload
    def __getitem__(self, index: int) -> CachedEntry: ...
    @overload
    def __getitem__(self, index: slice) -> list[CachedEntry]: ...

    def __getitem__(self, index: int | slice) -> CachedEntry | list[CachedEntry]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        role = _LETTER_ROLE[self.roles[index]]
        flag = self.flags[index]
        return CachedEntry(self.numbers[index], role, {"role": role, "content": self.texts[index]},
                           self.times[index], flag == REWOUND, flag == COMPACTED)

    def __iter__(self) -> Iterator[CachedEntry]:
        return (self[i] for i in range(len(self)))

    @property
    def last_number(self) -> int:
        return self.numbers[-1] if self.numbers else 0

    @property
    def last_rewind(self) -> object:
        """Changes when the rewound numbers may have: these columns never change."""
        return self

    def entry(self, n: int) -> CachedEntry:
        """Message ``n`` (IndexError when there is none)."""
        at = bisect_left(self.numbers, n)
        if at == len(self.numbers) or self.numbers[at] != n:
            raise IndexError(f"no message {n}")
        return self[at]

    def entries(self) -> SearchEntries:
        return self

    def rewound(self) -> list[int]:
        """The numbers of the rewound messages."""
        flags, numbers = self.flags, self.numbers
        out: list[int] = []
        at = flags.find(REWOUND)
        while at >= 0:
            out.append(numbers[at])
            at = flags.find(REWOUND, at + 1)
        return out


def text_pass(messages: Iterable[dict[str, Any]], names: dict[str, str]) -> list[str]:
    """Each message's searchable text, in order; ``names`` (call id -> tool name) is read
    and filled as the messages are met, as ``context.recall_index.HistoryIndex`` does."""
    from ..context.recall import searchable_text

    texts = []
    add = texts.append
    for message in messages:
        content = message.get("content")
        if type(content) is str and message.get("role") != "tool" and not message.get(
                "tool_calls"):
            add(content)  # what searchable_text returns for a plain message, sooner
        else:
            add(searchable_text(message, names))
    return texts


#: a fold's message states (``context.history``'s, a byte each) and the flags they become
_STATES = bytes([history.WORKING, history.COMPACTED, history.REWOUND])
_STATE_FLAG = bytes.maketrans(_STATES, (WORKING + COMPACTED + REWOUND).encode())


def from_columns(numbers: list[int], messages: list[dict[str, Any]], times: list[str],
                 states: bytes, names: dict[str, str] | None = None) -> SearchEntries | None:
    """The entries of ``MemoryKey.numbered_columns()`` (``names`` is filled with the tool
    names of the calls met); None when a role is not one a numbered message has, or a
    state not one an entry has."""
    texts = text_pass(messages, {} if names is None else names)
    try:
        roles = "".join([_ROLE_LETTER[message.get("role")] for message in messages])
    except (KeyError, TypeError):
        return None
    if states.strip(_STATES):
        return None
    return SearchEntries(numbers, roles, times, states.translate(_STATE_FLAG).decode("ascii"),
                         texts)


def from_entries(entries: Sequence[Any], state: dict[str, Any] | None = None,
                 end: int = 0, crc: int = 0) -> SearchEntries | None:
    """The columns of ``MemoryKey.entries()``; with ``state`` (the fold's resume state at
    ``end`` bytes whose CRC-32 is ``crc``) they can be brought up to date later. None when a
    role is not one a numbered message has."""
    names: dict[str, str] = {}
    states = bytes(history.REWOUND if entry.rewound else history.COMPACTED if entry.compacted
                   else history.WORKING for entry in entries)
    found = from_columns([entry.n for entry in entries], [entry.message for entry in entries],
                         [entry.time for entry in entries], states, names)
    if found is not None and state is not None:
        found.fold = {"end": end, "crc": crc, "state": state, "names": block_names(state, names)}
    return found


def block_names(state: dict[str, Any], names: dict[str, str]) -> dict[str, str]:
    """Of ``names``, the calls of the open tool block (the only ones an appended result
    can answer)."""
    block = state.get("block") or []
    if not block:
        return {}
    calls = block[0][2].get("tool_calls") or []
    ids = [str(call.get("id", "")) for call in calls if isinstance(call, dict)]
    return {cid: names[cid] for cid in ids if cid in names}


def _stamp(key_dir: Path) -> list[int] | None:
    try:
        st = os.lstat(key_dir / LOG_NAME)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ino]


def stamp_of(key_dir: Path) -> list[int] | None:
    """What tells an unchanged log (taken before the log is read)."""
    return _stamp(key_dir)


def _path(data_dir: Path, key: str) -> Path:
    return data_dir / CACHE_DIR / f"{key_dirname(key)}.txt"


def _own_folders(data_dir: Path) -> bool:
    """Whether ``cache/`` and ``cache/search/`` are real folders (or not made yet): a link
    or anything else planted there is not followed, so no cache is written in the folder
    it leads to (replacing a ``<key>.txt`` of someone's) or read from there."""
    try:
        check_dir(data_dir / CACHE_DIR.parent)
        check_dir(data_dir / CACHE_DIR)
    except StoreError as exc:
        log.warning("search cache not used: %s", exc)
        return False
    return True


def read(data_dir: Path, key: str) -> tuple[dict[str, Any], bytes] | None:
    """The key's cache (its header, and its bytes), whatever log it was made from; None
    when there is none of this version and key, or it was cut short."""
    if not _own_folders(data_dir):
        return None
    try:
        data = read_regular(_path(data_dir, key))
        if data is None:
            return None
        end = data.index(b"\n")
        header = json.loads(data[:end])
    except (OSError, ValueError, RecursionError, StoreError):
        return None
    if not isinstance(header, dict) or header.get("v") != VERSION or header.get("key") != key:
        return None
    if header.get("size") != len(data) - end - 1:
        return None  # cut short (its bytes, looked at for a word, would lack some)
    return header, data


def parse(header: dict[str, Any], data: bytes) -> SearchEntries | None:
    """The entries in a cache :func:`read` returned; None when it does not hold together."""
    try:
        _head, meta, text = data.decode("utf-8", "surrogatepass").split("\n", 2)
        columns = json.loads(meta)
        numbers = _runs_out(columns["n"], int)
        times = _runs_out(columns["t"], str)
        roles, flags = columns["r"], columns["f"]
        texts = text.split("\x00") if numbers else []
        count = len(numbers)
        if not (type(roles) is str and type(flags) is str and len(roles) == count
                and len(flags) == count and len(times) == count and len(texts) == count):
            return None
        if roles.strip("uat") or flags.strip("012"):
            return None
        fold = header.get("fold")
        if fold is not None and not _fold_ok(fold):
            fold = None
        return SearchEntries(numbers, roles, times, flags, texts, fold)
    except (ValueError, TypeError, KeyError, RecursionError):
        return None


def load(data_dir: Path, key: str, key_dir: Path) -> SearchEntries | None:
    """The key's entries as last cached, when its log has not changed since; else None."""
    found = read(data_dir, key)
    if found is None or found[0].get("stamp") != _stamp(key_dir):
        return None
    return parse(*found)


def save(data_dir: Path, key: str, key_dir: Path, stamp: list[int] | None,
         entries: SearchEntries) -> None:
    """Keep ``entries`` (a fold of the log as it was at ``stamp``) for the next search."""
    if stamp is None or stamp != _stamp(key_dir):
        return  # the log moved on while it was read: the next search folds it again
    fold = entries.fold
    if fold is not None and len(json.dumps(fold, ensure_ascii=True)) > MAX_FOLD_BYTES:
        fold = None
    columns = json.dumps({"n": _runs_in(entries.numbers, 1), "t": _runs_in(entries.times, 0),
                          "r": entries.roles, "f": entries.flags},
                         ensure_ascii=True, separators=(",", ":")).encode("ascii") + b"\n"
    body = "\x00".join(entries.texts)
    if "\x00" in body and body.count("\x00") != len(entries.texts) - 1:
        body = "\x00".join(text.replace("\x00", " ") for text in entries.texts)
    texts = body.encode("utf-8", "surrogatepass")
    # the bytes after the header: a file cut short (a power loss: it is not fsynced) ends
    # a text early, and would otherwise be read as whole
    header = json.dumps({"v": VERSION, "key": key, "stamp": stamp, "fold": fold,
                         "size": len(columns) + len(texts)},
                        ensure_ascii=True, separators=(",", ":"))
    path = _path(data_dir, key)
    if not _own_folders(data_dir):
        return  # a cache: the search still answered
    try:
        ensure_dir(path.parent)
        atomic_write(path, [f"{header}\n".encode("ascii") + columns, texts], fsync=False)
    except OSError as exc:  # a cache: the search still answered
        log.warning("could not keep the search cache %s: %s", path, exc)


def log_crc(key_dir: Path, stamp: list[int] | None, end: int) -> int | None:
    """The CRC-32 of the log's first ``end`` bytes, when the log is still as it was at
    ``stamp``; else None. Read a piece at a time into one buffer: a log of 100,000
    messages (40 MB) read whole into fresh memory took twice as long."""
    if stamp is None:
        return None
    path = key_dir / LOG_NAME
    try:
        fd = open_regular(path, os.O_RDONLY)  # no link followed, no FIFO opened
    except (OSError, StoreError):
        return None
    crc, left = 0, end
    buffer = memoryview(bytearray(_CRC_PIECE))
    try:
        with os.fdopen(fd, "rb", buffering=0) as log_file:
            while left > 0:
                got = log_file.readinto(buffer[:min(left, _CRC_PIECE)])
                if not got:
                    return None  # shorter than what was folded
                crc = zlib.crc32(buffer[:got], crc)
                left -= got
    except OSError:
        return None
    return crc if stamp == _stamp(key_dir) else None


def _fold_ok(fold: Any) -> bool:
    return (isinstance(fold, dict) and type(fold.get("end")) is int
            and type(fold.get("crc")) is int and isinstance(fold.get("state"), dict)
            and isinstance(fold.get("names"), dict))


def _runs_in(values: list[Any], step: int) -> list[list[Any]]:
    """``values`` as runs ``[first, count]``: each value ``step`` after the one before
    (numbers count up, times repeat)."""
    if step and values and values == list(range(values[0], values[0] + len(values))):
        return [[values[0], len(values)]]  # (one comparison in C) no number left out
    runs: list[list[Any]] = []
    if not step:  # (runs found in C) a batch's messages share its time
        for value, group in groupby(values):
            runs.append([value, len(list(group))])
        return runs
    for value in values:
        if runs:
            run = runs[-1]
            if value - run[0] == run[1]:
                run[1] += 1
                continue
        runs.append([value, 1])
    return runs


def _runs_out(runs: Any, kind: type) -> list[Any]:
    out: list[Any] = []
    step = kind is int
    for first, count in runs:
        if type(first) is not kind or type(count) is not int or count < 1:
            raise ValueError("not a run")
        out += range(first, first + count) if step else [first] * count
    return out
