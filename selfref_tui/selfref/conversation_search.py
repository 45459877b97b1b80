"""Search every conversation's stored history: ``selfref-tui search``, the switcher's filter.

The rule is the recall tools' (``context/recall.py``, one implementation): every
word of the query and every "quoted phrase" must occur in a message, case
aside; matches come newest first, numbered as everywhere else
(``MemoryKey.entries()``). Rewound and compacted messages are searched too
and say so: a person looks for what was said, whatever the model sees now.

Keys are opened read-only (no lock: the app may be writing one), each once
per :class:`ConversationSearch`; its index is kept and extended as the key
grows, so the switcher's filter, asked at every key typed, reads the disk
only for what changed.

Loading a key (folding its whole log) is most of a search's cost, so what a
search needs of it is kept between searches (``search_cache.py``) for as long
as its log does not change; and a key is first looked at as bytes: its log
is JSON with every non-ASCII character escaped, so a word of plain ASCII that
occurs in a message occurs, as it is, in the log's lower-cased bytes. A key
whose log lacks one of the query's words cannot match and is never loaded.
Only words that escaping leaves alone are checked this way (no quote,
backslash or control character; a phrase is checked word by word, since its
spaces may be line breaks in the text); and the characters whose case-folded
form holds ASCII ("ß" is "ss", "İ" is "i": ``context/casefold.py``) turn the
shortcut off for a log that holds them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from ..context.builder import FOLD_TEXTS
from ..context.casefold import TO_ASCII
from ..context.casefold import fold as case_fold
from . import log_lines
from .fsutil import read_regular
from .images import missing_text
from .reference import SelfReference
from .store import LOG_NAME

#: the characters whose case-folded form holds ASCII ("ß" folds to "ss"), as a log escapes
#: them, and in UTF-8 (a cache); and, in a log, the start of a message whose content is a
#: list of parts (their texts are read joined: a word may run across two)
_ESCAPED_TO_ASCII = (*(f"\\u{ord(c):04x}".encode() for c in TO_ASCII), b'"content":[')
_UTF8_TO_ASCII = tuple(c.encode() for c in TO_ASCII)
#: how many occurrences of a start that marks share are read one by one before the marks
#: are looked for with a scan each instead
_STARTS_READ = 100_000
#: the part of a log (or cache) looked at as it is for the query's words before the whole
#: is lower-cased: 1/8 (a log that lacks a word is read an eighth further than before)
_HEAD_PART = 8
#: shorter data is lower-cased at once (a few microseconds); longer, the head is looked at
#: first (a search of 100 logs of 400 KB lower-cased each: ~40 ms, their heads: ~0.1 ms)
_HEAD_FROM = 1 << 16
#: characters a word checked against a log may not hold: those JSON escapes, and those the
#: fold writes next to a patch's text
_ESCAPED = frozenset('"\\\'()[]')
#: what the fold writes into messages itself, lower-cased
_FOLD_WORDS = case_fold(" ".join([*FOLD_TEXTS, missing_text("")]))


class Match(NamedTuple):
    """One message that holds the query (a tuple: ``--limit 0`` makes one per match)."""

    key: str
    n: int
    role: str
    time: str
    snippet: str
    rewound: bool = False
    compacted: bool = False

    def as_dict(self) -> dict[str, Any]:
        return self._asdict()


@dataclass(frozen=True)
class Found:
    """What a search found: the matches shown (newest first within each key, keys by
    latest activity), how many match in all, and what could not be read."""

    matches: list[Match]
    total: int
    #: per key: how many of its messages match (keys without a match left out)
    counts: dict[str, int]
    problems: list[str]


class ConversationSearch:
    """Searches a data dir's conversations; keeps what it read for the next search."""

    def __init__(self, data_dir: str | Path | None, *, source: str = "") -> None:
        # A store of its own: read-only opens, never a lock, nothing shared with a writer.
        self._store = SelfReference(data_dir, source=source)
        self._indexes: dict[str, Any] = {}
        #: per key: (its log's stamp, its entries) from the last search
        self._entries: dict[str, tuple[Any, Any]] = {}
        #: the keys this search folded whole (the others came from a cache, or were ruled out)
        self.folded: set[str] = set()
        #: folds to keep in the cache, written by close(): not on the way to the answer
        #: (key, its folder, its log's stamp, its entries, what resumes the fold but its CRC)
        self._saves: list[tuple[str, Path, Any, Any, dict[str, Any] | None]] = []
        #: bytes of the logs folded so far (many short ones are read as a long one is)
        self._folding = 0

    def close(self, *, detach: bool = False) -> None:
        """Write the caches this search's folds made (after the answer was shown), and let go.

        ``detach`` (a command's process, its answer written): the caches are written by a
        child process of its own that nothing waits for, so the command exits at once
        (writing a fold of 100,000 messages is about 0.08 s). Where it cannot fork (another
        system, threads running) they are written here, as without it.
        """
        if detach and self._saves and _in_a_child(self._write_caches):
            self._saves = []  # a child writes them
        self._write_caches()
        self._store.close()

    def _write_caches(self) -> None:
        from . import search_cache

        saves, self._saves = self._saves, []
        for key, key_dir, stamp, entries, fold in saves:
            if fold is not None:  # a fold of the whole log: the CRC of what it folded
                crc = search_cache.log_crc(key_dir, stamp, fold["end"])
                entries.fold = None if crc is None else {**fold, "crc": crc}
            search_cache.save(self._store.data_dir, key, key_dir, stamp, entries)

    def __enter__(self) -> ConversationSearch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def keys(self, *, forks: bool = False) -> list[str]:
        """The conversations, latest activity first (the agent's forks with ``forks``)."""
        return [info.key for info in self._store.keys(forks=forks)]

    def search(self, query: str, *, keys: list[str] | None = None, limit: int | None = None,
               forks: bool = False) -> Found:
        """Messages of ``keys`` (default: every conversation) holding ``query``.

        ``limit``: at most this many matches per key (None: all). Raises
        ``context.recall.RecallError`` for an empty query.
        """
        from ..context.recall import parse_query
        from ..context.recall_index import HistoryIndex
        from .errors import StoreError
        from .search_cache import SearchEntries

        if not parse_query(query):
            from ..context.recall import RecallError

            raise RecallError("the query is empty; give one or more words, or a \"quoted "
                              "phrase\"")
        matches: list[Match] = []
        counts: dict[str, int] = {}
        problems: list[str] = []
        total = 0
        log_words, cache_words = _plain_words(parse_query(query))
        for key in keys if keys is not None else self.keys(forks=forks):
            try:
                entries = self._entries_of(key, log_words, cache_words, problems)
            except StoreError as exc:
                problems.append(str(exc))
                continue
            if entries is None:
                continue  # never loaded: its log (or cache) lacks a word of the query
            kept = self._indexes.get(key)
            if kept is not None and kept[0] is entries:
                index = kept[1]
            elif isinstance(entries, SearchEntries):  # the texts are there: lower-cased only
                index = HistoryIndex.of_texts(entries, entries.numbers, entries.texts,
                                              entries.rewound())
            else:
                index = HistoryIndex()
            self._indexes[key] = (entries, index)
            found = index.search(entries, query, limit=limit, every=True,
                                 include_rewound=True)
            if not found.total:
                continue
            counts[key] = found.total
            total += found.total
            matches += [Match(key, hit.n, hit.role, hit.time, hit.snippet, hit.rewound,
                              hit.compacted) for hit in found.hits]
        return Found(matches, total, counts, problems)

    def _entries_of(self, key: str, log_words: list[bytes], cache_words: list[bytes],
                    problems: list[str]) -> Any:
        """``key``'s numbered messages: from the last search, or its cache while its log
        is unchanged, or its cache brought up to date when its log only grew, else folded
        (and cached for the next search); None when its bytes show that it cannot hold all
        of the words (``_plain_words``)."""
        from . import search_cache
        from .search_extend import extend

        key_dir = self._store.key_dir(key)
        stamp = search_cache.stamp_of(key_dir)
        memo = self._entries.get(key)
        if memo is not None and stamp is not None and memo[0] == stamp:
            return memo[1]
        base: Any = memo[1] if memo is not None else None
        if not isinstance(base, search_cache.SearchEntries) or base.fold is None:
            base = None
            found = search_cache.read(self._store.data_dir, key)
            if found is not None and stamp is not None and found[0].get("stamp") == stamp:
                if cache_words and not _may_hold(found[1], cache_words, _UTF8_TO_ASCII):
                    return None
                entries = search_cache.parse(*found)
                if entries is not None:
                    self._entries[key] = (stamp, entries)
                    return entries
            elif found is not None and found[0].get("fold") is not None:
                base = found  # parsed below, if the log may hold the words
        try:
            log_bytes = read_regular(key_dir / LOG_NAME)
        except OSError:
            log_bytes = b""  # loading it says what is wrong
        if log_bytes is None:
            return None  # no log: no messages
        if log_words and log_bytes and not _may_hold(log_bytes, log_words, _ESCAPED_TO_ASCII):
            return None
        if isinstance(base, tuple):
            base = search_cache.parse(*base)
        if base is not None and log_bytes:
            extended = extend(base, log_bytes, key_dir)
            if extended is not None:
                self._saves.append((key, key_dir, stamp, extended, None))
                self._entries[key] = (stamp, extended)
                return extended
        self._folding += len(log_bytes)
        with log_lines.many_logs(self._folding >= log_lines.FAST_FROM):
            memory = self._store.open(key, write=False)
        self.folded.add(key)
        warnings = memory.take_warnings()
        problems += warnings
        names: dict[str, str] = {}
        entries = search_cache.from_columns(*memory.numbered_columns(), names)
        if entries is None:  # a message no cache can hold: searched as the store has it
            entries = memory.entries()
        else:
            # a load that had to skip or mend something is not a base to build on
            state = None if warnings else memory.resume_state()
            fold = None if state is None else {
                "end": memory.log_size, "state": state,
                "names": search_cache.block_names(state, names)}
            self._saves.append((key, key_dir, stamp, entries, fold))
        self._store.release(key)  # what the search needs is in the entries
        self._entries[key] = (stamp, entries)
        return entries


def _in_a_child(job: Callable[[], object]) -> bool:
    """Run ``job`` in a forked child that nothing waits for, and True; False (nothing
    done) where this process cannot fork safely. The child leaves the terminal's session
    (a ctrl+c or a closed terminal meant for the command does not cut its write short:
    the caches are written whole, or not at all, as always), lets go of the command's
    output (a pipe reading it ends with the command), and exits without Python's exit
    steps (the parent's buffers and handlers are not its own)."""
    import os
    import sys
    import threading

    if not hasattr(os, "fork") or threading.active_count() > 1:
        return False
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    try:
        pid = os.fork()
    except OSError:
        return False
    if pid:
        return True
    try:
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        job()
    finally:
        os._exit(0)


def _may_hold(data: bytes, words: list[bytes], marks: tuple[bytes, ...]) -> bool:
    """False when ``data`` (a log, or a cache) cannot hold a message with all of ``words``
    (it holds none of ``marks``, and lacks a word)."""
    # The words are lower-case: met as they are, they are in the lower-cased bytes too.
    # Most long logs that hold them do so early (a log of 100,000 messages lower-cased:
    # ~35 ms, its first eighth looked at as it is: ~1 ms), so that is looked at first.
    head = len(data) // _HEAD_PART
    if len(data) >= _HEAD_FROM and all(data.find(word, 0, head) >= 0 for word in words):
        return True
    lowered = data.lower()
    if all(word in lowered for word in words):
        return True
    if marks is _UTF8_TO_ASCII and lowered.isascii():
        return False  # (one fast pass) a cache of plain ASCII holds none of them
    return _holds_any(lowered, marks)


def _mark_groups(marks: tuple[bytes, ...]) -> list[tuple[bytes, int, frozenset[bytes]]]:
    """``marks`` by the two bytes they start with: (those bytes, the marks' length, the
    marks), one group per length."""
    groups: dict[tuple[bytes, int], set[bytes]] = {}
    for mark in marks:
        groups.setdefault((mark[:2], len(mark)), set()).add(mark)
    return [(start, width, frozenset(group)) for (start, width), group in groups.items()]


_GROUPS = {id(marks): _mark_groups(marks) for marks in (_ESCAPED_TO_ASCII, _UTF8_TO_ASCII)}


def _holds_any(data: bytes, marks: tuple[bytes, ...]) -> bool:
    """Whether ``data`` holds one of ``marks``. Each ``in`` is a scan of the whole of a
    long log (40 MB: ~20 ms), and most marks share their start (a log's ``\\u``, a
    character's first UTF-8 byte): a start that ``data`` lacks rules its marks out in one
    scan, and one that occurs rarely is read where it occurs."""
    for start, width, group in _GROUPS.get(id(marks)) or _mark_groups(marks):
        if len(group) == 1:
            if next(iter(group)) in data:
                return True
            continue
        at = data.find(start)
        for _ in range(_STARTS_READ):
            if at < 0:
                break
            if data[at:at + width] in group:
                return True
            at = data.find(start, at + 1)
        else:  # a start met too often to read each one: a scan per mark
            if any(mark in data for mark in group):
                return True
    return False


def _plain_words(terms: list[str]) -> tuple[list[bytes], list[bytes]]:
    """The query's words that can rule a log out by its bytes, and those that can rule a
    cache out by its bytes (either may be empty: nothing is ruled out).

    A cache holds the searchable texts as they are: any ASCII word will do. A log holds
    what the patches said, escaped as JSON: not a word with a character JSON escapes,
    nor one the fold itself may write (``FOLD_TEXTS``, a missing image's note), nor one
    with a character the fold writes around a name or a reason (``'``, brackets): a word
    there may run across the fold's text and the patch's.
    """
    log_words: list[bytes] = []
    cache_words: list[bytes] = []
    for term in terms:
        for word in term.split():
            if not word.isascii() or not word.isprintable():
                continue
            cache_words.append(word.encode("ascii"))
            if _ESCAPED.isdisjoint(word) and word not in _FOLD_WORDS:
                log_words.append(word.encode("ascii"))
    return log_words, cache_words
