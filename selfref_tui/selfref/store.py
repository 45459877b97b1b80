"""One memory key on disk: an append-only log of patches, and its fold.

Layout, per key (``<data_dir>/keys/<dirname>/``)::

    log.jsonl    {"t": "header", "schema": 1, "key": ..., "created": ...}
                 {"t": "m", "ts": ..., "m": <mutation_to_dict(...)>}
                 {"t": "ref" | "fd" | "fork", "ts": ..., <record fields>}
    meta.json    {"schema": 1, "key", "messages", "created", "updated"}
    writer.lock  / writer.json   (see lock.py)

Why this shape:

* **O(turn) commits.** A commit appends the batch's lines with one ``write``
  and one ``fsync``; nothing is rewritten or re-folded, so a turn costs the
  same at 100 or 100,000 messages. ``meta.json`` is a tiny cache for the key
  list, replaced atomically (temp + rename) but *not* fsynced: the log's
  fsync is the durability guarantee, and a meta file left stale or garbled
  by a power loss costs nothing — ``keys()`` shows such a key with a
  ``problem`` note (name from the log header) and opening the key for
  writing rewrites it from the log. Skipping that flush saved ~0.23 ms of a
  ~0.7 ms commit (ext4, 1,000 messages).
* **Durable, all-or-nothing batches.** Every line of a batch but the last
  carries ``"more": true``. A torn write from a crash is only what a cut
  ``write`` can leave: a last line without its newline, and lines of a batch
  whose last line never arrived. It was never reported committed, so it is
  dropped with a warning and the file is cut back to the last whole batch.
* **Damage is found, and salvaged.** Every line carries a CRC-32 of itself
  (``"c"``, see checksum.py), checked on load; logs written before it still
  load, and a writer seals them on open. A complete line that fails its
  check, does not parse or does not validate is damage, never a torn write:
  the key loads every record that verifies and skips the damaged ones (the
  fold repairs the links they leave), and a writer keeps the original file
  (``log.jsonl.damaged-<time>``) before saving the key without them. The
  person is told how many records were skipped, which lines, and where the
  original is — :class:`~.errors.SalvageReport` in ``warnings``. Nothing
  reported committed is ever deleted.
* **The disk is input.** A key directory, log or meta file that is a link,
  FIFO or device is refused without being followed or opened in a way that
  can block (fsutil.py), so one key can never touch another's files; a log
  whose header names another key is refused, not moved. Permission problems
  are ``StorePermissionError`` naming the file.
* **Nothing is lost by compaction.** The state is the fold of the log; before
  a summary/replace patch the working messages are copied into ``history``
  marked ``archived``, so people can still read what the model no longer sees.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..context.experiences import experiences_of
from ..context.history import HistoryBuilder, HistoryEntry
from ..context.history_reads import CompactionMark
from ..context.mutations import (
    MUTATION_TYPES,
    ContextMutation,
    RewindMutation,
    mutation_to_dict,
)
from ..safety import name_line
from .checkpoints import Checkpoints
from .checksum import seal
from .errors import (
    CorruptStoreError,
    InvalidKeyError,
    SalvageReport,
    StoreError,
    StoreLockedError,
    UnsupportedSchemaError,
    denied,
)
from .fsutil import (
    FILE_MODE,
    atomic_write,
    ensure_dir,
    fsync_dir,
    open_regular,
    write_all,
)
from .images import ImageStore
from .key_fold import KeyFold
from .key_load import KeyLoad
from .key_settings import KeySettings, read_settings, write_settings
from .keys import validate_key
from .log_lines import (
    SCHEMA,
    check_record,
    now_iso,
    pin_record,
)

if TYPE_CHECKING:  # a read-only open (a search) never imports the lock
    from .lock import WriterLock

__all__ = [
    "SCHEMA",
    "CorruptStoreError",
    "InvalidKeyError",
    "KeyInfo",
    "MemoryKey",
    "StoreError",
    "StoreLockedError",
    "UnsupportedSchemaError",
    "validate_key",
]

LOG_NAME = "log.jsonl"
META_NAME = "meta.json"

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class KeyInfo:
    """A line of the key list, read from ``meta.json`` only."""

    key: str
    messages: int
    updated: str
    #: Non-empty when the key's files could not be read normally (shown, not hidden).
    problem: str = ""
    #: a branch's origin: the key it came from and the message it was made before
    origin_key: str = ""
    origin_message: int = 0

    def origin_text(self, *, short: bool = False) -> str:
        """"branch of main up to message 4" ("from main up to #4" when ``short``: a list
        row), or "" for a key that is not a branch. Said by the last message it holds: a
        branch made at the end was "before message 19" of a conversation of 18."""
        if not self.origin_key:
            return ""
        from selfref_tui.safety import name_line  # a name shown: none looks like another

        n, origin = self.origin_message, name_line(self.origin_key)
        if short:
            at = f" up to #{n - 1}" if n > 1 else " before #1" if n == 1 else ""
            return f"from {origin}{at}"
        at = f" up to message {n - 1}" if n > 1 else " before message 1" if n == 1 else ""
        return f"branch of {origin}{at}"


class MemoryKey(KeyLoad, KeyFold):
    """One memory key, loaded: the fold of its log, plus the means to extend it.

    ``messages`` is the working transcript (system message first); treat it and
    every other attribute as read-only and change the key only through
    :meth:`commit`, so memory and disk never disagree.
    """

    def __init__(self, key: str, key_dir: Path, *, lock: WriterLock | None = None) -> None:
        self.key = key
        self.key_dir = key_dir
        self.log_path = key_dir / LOG_NAME
        self.meta_path = key_dir / META_NAME
        self._lock = lock
        self.writable = lock is not None
        self.warnings: list[str] = []
        #: set when damaged records were skipped on load (also in ``warnings``)
        self.salvage: SalvageReport | None = None
        self.summary: dict[str, Any] | None = None
        self.refs: dict[str, list[dict[str, Any]]] = {}
        self.fds: dict[str, dict[str, Any]] = {}
        self.forks: dict[str, dict[str, Any]] = {}
        #: the model's file writes: (number of the tool result they came with, record)
        self._file_writes: list[tuple[int, dict[str, Any]]] = []
        #: set on a branch: {"key": the key it came from, "message": N, "created": ...}
        self.origin: dict[str, Any] | None = None
        #: the message numbers the person pinned (see :attr:`pins`)
        self._pins: set[int] = set()
        self.created = ""
        self.updated = ""
        self._builder = HistoryBuilder(self._archive_working)
        self.last_compacted = 0
        self._history_cache: tuple[int, list[dict[str, Any]]] | None = None
        self._entries_cache: tuple[int, tuple[HistoryEntry, ...]] | None = None
        self._settings: KeySettings | None = None
        self._version = 0
        self._size = 0
        self._fd: int | None = None
        self._mutex = threading.Lock()
        self._images = ImageStore(key_dir)
        self.checkpoints = Checkpoints(key_dir)
        self._load()
        for problem in self._images.problems:
            self._warn(problem)
        self._images.problems.clear()
        if self.writable:
            if self._size:
                self._open_for_append()  # a read-only log fails here, not mid-turn
            self._sync_meta_if_stale()

    # ------------------------------------------------------------- read side

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self._builder.messages

    @property
    def experiences(self) -> list[dict[str, Any]]:
        msgs = self._builder.messages
        return experiences_of(msgs[0] if msgs and msgs[0].get("role") == "system" else None)

    @property
    def history(self) -> list[dict[str, Any]]:
        """Everything a person can read, in order: every message the key held, and markers.

        Compacted messages are copies marked ``archived``, rewound ones copies
        marked ``rewound``; compaction markers are ``{"role": "compaction"}``
        dicts. Runtime notes and summaries are there too (a view skips them).
        """
        cached = self._history_cache
        if cached is not None and cached[0] == self._version:
            return cached[1]
        history = self._builder.history()
        self._history_cache = (self._version, history)
        return history

    @property
    def history_length(self) -> int:
        """``len(self.history)``: the index the next message takes in it. Read at every
        LLM call, so it does not build the history (a list of every message)."""
        return self._builder.history_length()

    def entries(self) -> tuple[HistoryEntry, ...]:
        """The numbered messages (see ``context.history``), cached until the next commit."""
        cached = self._entries_cache
        if cached is not None and cached[0] == self._version:
            return cached[1]
        entries = tuple(self._builder.entries())
        if self._pins:
            pins = self._pins
            entries = tuple(replace(e, pinned=True) if e.n in pins else e for e in entries)
        self._entries_cache = (self._version, entries)
        return entries

    @property
    def pins(self) -> frozenset[int]:
        """The numbers of the messages the person pinned.

        A pin is a record (:func:`pin_record`), not a patch: it changes no
        message the model reads now, only what every later compaction keeps
        verbatim. It is the person's mark on a number that never changes, so
        a rewind leaves it (a pinned message that was rewound is simply not
        in the model's view, and not carried by a summary).
        """
        return frozenset(self._pins)

    def set_pinned(self, n: int, pinned: bool = True) -> bool:
        """Pin (or unpin) message ``n``; False when it already was (nothing is written).

        IndexError when the key has no message ``n``; a store error as :meth:`commit`.
        """
        self.entry(n)  # IndexError: no such message
        if (n in self._pins) == pinned:
            return False
        self.commit(records=[pin_record(n, pinned)])
        return True

    def entry(self, n: int) -> HistoryEntry:
        """Message ``n`` (IndexError when the key has no such message, or ``n`` is hidden:
        the numbers :meth:`entries` leaves out are refused here too)."""
        entry = self._builder.entry(n)
        return replace(entry, pinned=True) if n in self._pins else entry

    def numbered_messages(self, first: int = 1, last: int | None = None
                          ) -> tuple[list[int], list[dict[str, Any]]]:
        """Numbers ``first`` .. ``last`` and their stored dicts, hidden ones left out, in
        bulk (no entry per message): what ``search_history``'s index reads."""
        return self._builder.numbered_messages(first, last)

    def numbered_columns(self) -> tuple[list[int], list[dict[str, Any]], list[str], bytes]:
        """:meth:`entries` as columns (``HistoryBuilder.numbered_columns``): numbers,
        stored dicts, times and states, in bulk; what a search's cache is made of."""
        return self._builder.numbered_columns()

    def numbers_rewound(self) -> list[int]:
        """The numbers of the rewound messages, in order."""
        return self._builder.numbers_rewound()

    def numbers_hidden(self) -> list[int]:
        """The hidden numbers (see :meth:`is_hidden`), in order."""
        return self._builder.numbers_hidden()

    def is_hidden(self, n: int) -> bool:
        """Whether ``n`` was handed out to a message that is hidden now (see
        ``context.history``): not readable, still a point a rewind or a branch can take."""
        return self._builder.is_hidden(n)

    @property
    def last_number(self) -> int:
        """The highest message number handed out (0 for an empty key)."""
        return self._builder.last_number

    def file_writes(self) -> list[tuple[int, dict[str, Any]]]:
        """The model's file writes, oldest first: (its tool result's number, ``file`` record)."""
        return list(self._file_writes)

    def compactions(self) -> list[CompactionMark]:
        """Where each compaction happened, with its summary (see ``context.history_reads``):
        what an export puts between the :meth:`entries`."""
        return self._builder.compactions()

    def history_numbers(self) -> list[int]:
        """The number of each item of :attr:`history` (0 for unnumbered ones and markers)."""
        return [n for n, _ in self._builder.numbered_history()]

    def message(self, n: int) -> dict[str, Any]:
        """Message ``n``'s stored dict (IndexError when none): :meth:`entry` without the rest."""
        return self._builder.message(n)

    def states(self) -> bytes:
        """A snapshot of where every message stands (see :meth:`moved_since`)."""
        return self._builder.states()

    def moved_since(self, before: bytes) -> tuple[list[int], list[int]]:
        """The numbers that left the model's context since ``before`` and that came back."""
        return self._builder.moved_since(before)

    def patch_of(self, n: int) -> int:
        """The position among the key's patches of the one that brought message ``n``."""
        return self._builder.patch_of(n)

    def rewind_patch(self, n: int) -> RewindMutation:
        """The patch that takes the context back to just before message ``n``.

        IndexError when the key has no message ``n``. Committing it changes the
        working context only; message ``n`` and those after it stay readable.
        """
        return RewindMutation(to_patch=self._builder.patch_of(n), first_message=n)

    def is_at(self, patch: int) -> bool:
        """Whether the context is already as it was just before patch ``patch`` (a rewind
        there would change nothing)."""
        return self._builder.is_at(patch)

    @property
    def last_rewind(self) -> int | None:
        """The position of the newest rewind patch (a rewind to it undoes it), or None."""
        rewinds = self._builder.rewinds
        return rewinds[-1] if rewinds else None

    @property
    def undoable_rewind(self) -> int | None:
        """The position of the rewind an undo takes back (the newest not undone), or None.

        Undoing it is a rewind to that position; the next undo then takes the
        rewind before it, so a person can walk back through every rewind.
        """
        stack = self._builder.undoable
        return stack[-1] if stack else None

    @property
    def patch_count(self) -> int:
        """Patches folded so far: a rewind to this position undoes what comes after it."""
        return self._builder.patch_count

    @property
    def rewound_count(self) -> int:
        """How many of the messages are out of the model's context by a rewind."""
        return self._builder.count_rewound()

    @property
    def message_count(self) -> int:
        """Numbered messages the person can read (compacted and rewound ones included)."""
        return self._builder.count_readable()

    @property
    def log_size(self) -> int:
        return self._size

    def resume_state(self) -> dict[str, Any]:
        """What folding the patches appended after the first :attr:`log_size` bytes needs
        (``HistoryBuilder.resume_state``; the search cache keeps it)."""
        return self._builder.resume_state()

    @property
    def settings(self) -> KeySettings:
        """The conversation's model, profile and instructions (key_settings.py)."""
        if self._settings is None:
            self._settings = read_settings(self.key_dir)
        return self._settings

    def save_settings(self, settings: KeySettings) -> None:
        """Replace the key's settings on disk, then here; refused on a read-only key."""
        if not self.writable:
            raise StoreError(
                f"Conversation '{name_line(self.key)}' is open read-only; its settings "
                "cannot change."
            )
        with self._mutex:
            try:
                write_settings(self.key_dir, settings)
            except OSError as exc:
                raise denied(exc, self.key_dir / "settings.json", "write") from exc
            self._settings = settings

    # ------------------------------------------------------------ write side

    def commit(
        self, mutations: Sequence[ContextMutation] = (), *, records: Sequence[dict] = ()
    ) -> None:
        """Persist a batch of patches and records, then apply them in memory.

        Returns only after the batch is on disk (one append, one fsync). The
        batch is all-or-nothing: a crash before this returns loses all of it,
        never part of it. Raises ``StoreError`` on a read-only or closed key
        and ``TypeError``/``ValueError`` on malformed input, writing nothing.
        """
        if not self.writable:
            raise StoreError(
                f"Conversation '{name_line(self.key)}' is open read-only; "
                "open it with write=True to change it."
            )
        ts = now_iso()
        lines: list[dict[str, Any]] = []
        for m in mutations:
            if MUTATION_TYPES.get(type(m).__name__) is not type(m):
                raise TypeError(f"not a ContextMutation: {m!r}")
            lines.append({"t": "m", "ts": ts, "m": self._images.externalize(mutation_to_dict(m))})
        for record in records:
            problem = check_record(record)
            if problem is not None:
                raise ValueError(f"cannot store record: {problem}")
            lines.append({**record, "ts": ts})
        if not lines:
            return
        for line in lines[:-1]:
            line["more"] = True
        try:
            texts = [seal(json.dumps(line, ensure_ascii=True, separators=(",", ":")))
                     for line in lines]
        except (TypeError, ValueError) as exc:
            raise TypeError(f"cannot store this turn: {exc}") from None
        payload = ("\n".join(texts) + "\n").encode("ascii")
        with self._mutex:
            fd = self._open_for_append()
            try:
                write_all(fd, payload)
                os.fsync(fd)
            except OSError as exc:
                try:
                    os.ftruncate(fd, self._size)
                except OSError:
                    pass
                raise StoreError(
                    f"Could not save to {self.log_path}: {exc.strerror or exc}; "
                    "nothing from this batch was saved — free disk space or check permissions."
                ) from exc
            self._size += len(payload)
            # Fold what was written (decoded again), so memory equals a reload exactly
            # and no caller-owned dict is aliased into the transcript.
            for text in texts:
                self._apply_record(json.loads(text), 0)
            self._builder.flush_experiences()
            self.updated = ts
            self._version += 1
            self._write_meta()

    def close(self) -> None:
        """Release the write lock and file handle; the key stays readable in memory."""
        with self._mutex:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
            if self._lock is not None:
                self._lock.release()
                self._lock = None
            self.writable = False

    # ------------------------------------------------------------- internals

    def take_warnings(self) -> list[str]:
        """The load warnings not yet shown, once (a front end shows each one time)."""
        taken, self.warnings = self.warnings, []
        return taken

    def _open_for_append(self) -> int:
        if self._fd is not None:
            return self._fd
        if self._lock is None:
            raise StoreError(f"Conversation '{name_line(self.key)}' was closed; open it "
                             "again to write.")
        try:
            created_dir = ensure_dir(self.key_dir)
            fd = open_regular(self.log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        except OSError as exc:
            raise denied(exc, self.log_path, "write") from exc
        if hasattr(os, "fchmod"):
            os.fchmod(fd, FILE_MODE)
        if self._size == 0:
            self.created = now_iso()
            header = {"t": "header", "schema": SCHEMA, "key": self.key, "created": self.created}
            data = (seal(json.dumps(header, ensure_ascii=True, separators=(",", ":"))) + "\n"
                    ).encode("ascii")
            os.ftruncate(fd, 0)
            write_all(fd, data)
            os.fsync(fd)
            fsync_dir(self.key_dir)
            if created_dir:
                fsync_dir(self.key_dir.parent)
            self._size = len(data)
        self._fd = fd
        return fd

    def _write_meta(self) -> None:
        meta: dict[str, Any] = {
            "schema": SCHEMA,
            "key": self.key,
            "messages": self.message_count,
            "created": self.created,
            "updated": self.updated,
        }
        if self.origin is not None:
            meta["origin"] = {"key": self.origin["key"], "message": self.origin.get("message", 0)}
        try:
            # No fsync: a cache, rebuilt from the (fsynced) log; see the module docstring.
            atomic_write(
                self.meta_path, json.dumps(meta, ensure_ascii=True).encode("ascii"), fsync=False
            )
        except OSError as exc:  # the log is the truth; the meta file is only a cache
            log.warning("could not update %s: %s", self.meta_path, exc)

    def _sync_meta_if_stale(self) -> None:
        if self._size == 0:
            return
        meta = self._read_meta()
        stale = (
            not isinstance(meta, dict)
            or meta.get("messages") != self.message_count
            or meta.get("updated") != self.updated
            or meta.get("key") != self.key
        )
        if stale:
            self._write_meta()

    def _warn(self, message: str) -> None:
        # marked: whoever opened the key says its ``warnings`` to the person (the
        # app's notice, the command line's note), so a log handler need not again
        log.warning("%s", message, extra={"told": True})
        self.warnings.append(message)
