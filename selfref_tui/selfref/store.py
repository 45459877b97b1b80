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
  carries ``"more": true``. On load a trailing batch without its last line, a
  partial last line or a last line that is not JSON is a torn write from a
  crash: it was never reported committed, so it is dropped with a warning and
  the file is cut back to the end of the last whole batch.
* **Nothing is lost by compaction.** The state is the fold of the log; before
  a summary/replace patch the working messages are copied into ``history``
  marked ``archived``, so people can still read what the model no longer sees.
* **Damage stays local.** Bad JSON or a wrong-shaped record in the middle of
  a log fails that key alone, naming file and line; a writer moves the file
  aside (kept, never deleted) so the key can start again.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..context.apply import TranscriptBuilder
from ..context.experiences import experiences_of
from ..context.mutations import (
    MUTATION_TYPES,
    ContextMutation,
    ContextReplaceMutation,
    ContextSummaryMutation,
    MutationDecodeError,
    mutation_to_dict,
)
from .decode import decode_mutation
from .errors import (
    CorruptStoreError,
    InvalidKeyError,
    StoreError,
    StoreLockedError,
    UnsupportedSchemaError,
)
from .fsutil import FILE_MODE, atomic_write, ensure_dir, fsync_dir, write_all
from .keys import validate_key
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

SCHEMA = 1
LOG_NAME = "log.jsonl"
META_NAME = "meta.json"

log = logging.getLogger(__name__)

# Record kinds besides patches: required fields, then optional ones, with types.
_Types = type | tuple[type, ...]
_RECORD_SHAPES: dict[str, tuple[dict[str, _Types], dict[str, _Types]]] = {
    "ref": ({"id": str, "content": str}, {"created": str, "message_index": int}),
    "fd": ({"id": str, "content": str}, {"created": str, "source": str}),
    "fork": (
        {"fork_id": str},
        {
            "child_key": str, "task": str, "status": str, "response": (str, type(None)),
            "error": (str, type(None)), "created": str, "updated": str,
        },
    ),
}
_LINE_ONLY = ("t", "ts", "more")
_ARCHIVING = (ContextSummaryMutation, ContextReplaceMutation)


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class KeyInfo:
    """A line of the key list, read from ``meta.json`` only."""

    key: str
    messages: int
    updated: str
    #: Non-empty when the key's files could not be read normally (shown, not hidden).
    problem: str = ""


def check_record(record: dict[str, Any]) -> str | None:
    """Why ``record`` is not a valid ref/fd/fork record, or None when it is."""
    if not isinstance(record, dict):
        return f"expected an object, got {type(record).__name__}"
    kind = record.get("t")
    shape = _RECORD_SHAPES.get(kind) if isinstance(kind, str) else None
    if shape is None:
        return f"unknown record type {kind!r}"
    required, optional = shape
    for name, typ in required.items():
        if not isinstance(record.get(name), typ):
            return f"{kind} record needs a text field {name!r}"
    for name, typ in optional.items():
        if name in record and not isinstance(record[name], typ):
            wrong = type(record[name]).__name__
            return f"{kind} record field {name!r} has the wrong type ({wrong})"
    return None


class MemoryKey:
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
        self.summary: dict[str, Any] | None = None
        self.refs: dict[str, list[dict[str, Any]]] = {}
        self.fds: dict[str, dict[str, Any]] = {}
        self.forks: dict[str, dict[str, Any]] = {}
        self.created = ""
        self.updated = ""
        self._builder = TranscriptBuilder()
        self._archive: list[dict[str, Any]] = []
        self._archived_count = 0
        self.last_compacted = 0
        self._history_cache: tuple[int, list[dict[str, Any]]] | None = None
        self._version = 0
        self._size = 0
        self._fd: int | None = None
        self._mutex = threading.Lock()
        self._load()
        if self.writable:
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
        """Everything a person can read: archived copies, compaction markers, current messages."""
        cached = self._history_cache
        if cached is not None and cached[0] == self._version:
            return cached[1]
        msgs = self._builder.messages
        start = 1 if msgs and msgs[0].get("role") == "system" else 0
        history = self._archive + msgs[start:]
        self._history_cache = (self._version, history)
        return history

    @property
    def message_count(self) -> int:
        """Readable messages in ``history`` (compaction markers excluded)."""
        msgs = self._builder.messages
        start = 1 if msgs and msgs[0].get("role") == "system" else 0
        return self._archived_count + len(msgs) - start

    @property
    def log_size(self) -> int:
        return self._size

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
                f"Memory key {self.key!r} is open read-only; open it with write=True to change it."
            )
        ts = now_iso()
        lines: list[dict[str, Any]] = []
        for m in mutations:
            if MUTATION_TYPES.get(type(m).__name__) is not type(m):
                raise TypeError(f"not a ContextMutation: {m!r}")
            lines.append({"t": "m", "ts": ts, "m": mutation_to_dict(m)})
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
            texts = [json.dumps(line, ensure_ascii=True, separators=(",", ":")) for line in lines]
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

    def _open_for_append(self) -> int:
        if self._fd is not None:
            return self._fd
        if self._lock is None:
            raise StoreError(f"Memory key {self.key!r} was closed; open it again to write.")
        created_dir = ensure_dir(self.key_dir)
        fd = os.open(self.log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE)
        if hasattr(os, "fchmod"):
            os.fchmod(fd, FILE_MODE)
        if self._size == 0:
            self.created = now_iso()
            header = {"t": "header", "schema": SCHEMA, "key": self.key, "created": self.created}
            data = (json.dumps(header, ensure_ascii=True) + "\n").encode("ascii")
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
        meta = {
            "schema": SCHEMA,
            "key": self.key,
            "messages": self.message_count,
            "created": self.created,
            "updated": self.updated,
        }
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
        try:
            meta = json.loads(self.meta_path.read_bytes())
            stale = (
                meta.get("messages") != self.message_count
                or meta.get("updated") != self.updated
                or meta.get("key") != self.key
            )
        except (OSError, ValueError, AttributeError):
            stale = True
        if stale:
            self._write_meta()

    def _check_meta_schema(self) -> None:
        try:
            meta = json.loads(self.meta_path.read_bytes())
        except (OSError, ValueError):
            return  # missing or unreadable: a cache, rebuilt from the log
        schema = meta.get("schema") if isinstance(meta, dict) else None
        if isinstance(schema, int) and schema > SCHEMA:
            raise UnsupportedSchemaError(self._newer_message(self.meta_path, schema))

    def _newer_message(self, path: Path, schema: int) -> str:
        return (
            f"Memory key {self.key!r} ({path}) was written by a newer selfref-tui "
            f"(schema {schema}); upgrade selfref-tui to open it — "
            f"this version (schema {SCHEMA}) will not change it."
        )

    def _load(self) -> None:
        self._check_meta_schema()
        try:
            data = self.log_path.read_bytes()
        except FileNotFoundError:
            return
        except OSError as exc:
            raise StoreError(
                f"Cannot read {self.log_path}: {exc.strerror}; check its permissions."
            ) from exc
        torn: str | None = None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            # Bytes that are not UTF-8: a torn last write if on the last line, else damage.
            line_start = data.rfind(b"\n", 0, exc.start) + 1
            lineno = data.count(b"\n", 0, line_start) + 1
            if data.find(b"\n", exc.start, len(data) - 1) != -1:
                self._corrupt(lineno, "the line is not valid UTF-8")
            torn = "the last line is not valid UTF-8"
            text = data[:line_start].decode("utf-8")
        lines = text.split("\n")
        tail = lines.pop()  # "" when the text ends with a newline
        if tail and torn is None:
            torn = "the last line is incomplete"
        last = len(lines)  # 1-based number of the last complete line
        if not lines:
            self._repair(0, torn or "the file is empty")
            return
        if self._parse_header(lines[0], last, torn) is None:
            return
        pos = len(lines[0].encode()) + 1  # byte offsets, for cutting a torn tail
        good_end = pos
        good_line = 1
        ts = self.created
        raw_decode = json.JSONDecoder().raw_decode
        decode = decode_mutation
        builder_apply = self._builder.apply
        flush = self._builder.flush_experiences
        lineno = 1
        for lineno in range(2, last + 1):
            raw = lines[lineno - 1]
            try:
                rec, end = raw_decode(raw)
                if end != len(raw) and raw[end:].strip():
                    raise ValueError("extra data")
            except ValueError:
                if lineno == last:
                    torn = torn or "the last line is not valid JSON"
                    break
                self._corrupt(lineno, "the line is not valid JSON")
            if type(rec) is not dict:
                self._corrupt(lineno, f"expected an object, got {type(rec).__name__}")
            if rec.get("t") == "m":
                try:
                    mutation = decode(rec.get("m"))
                except MutationDecodeError as exc:
                    self._corrupt(lineno, f"bad patch: {exc}")
                if isinstance(mutation, _ARCHIVING):
                    self._archive_working(mutation)
                builder_apply(mutation)
            else:
                problem = self._apply_record(rec, lineno)
                if problem is not None:
                    self._corrupt(lineno, problem)
            pos += (len(raw) if raw.isascii() else len(raw.encode())) + 1
            if rec.get("more"):
                continue
            flush()
            good_end = pos
            good_line = lineno
            ts = rec.get("ts", ts)
        if torn is None and good_line != last:
            torn = "the last batch is incomplete"
        self.updated = ts if isinstance(ts, str) else self.created
        self._size = good_end
        if torn is not None:
            self._repair(good_end, torn)
            if good_line != lineno:
                # Lines of the unfinished batch were folded already: fold again up to
                # the last whole batch (rare: only after a crash mid-batch).
                self._reset_state()
                self._refold(lines[:good_line])

    def _reset_state(self) -> None:
        self.summary = None
        self.refs, self.fds, self.forks = {}, {}, {}
        self._builder = TranscriptBuilder()
        self._archive, self._archived_count = [], 0
        self.last_compacted = 0

    def _refold(self, lines: list[str]) -> None:
        """Fold a prefix already known to be whole batches of valid records."""
        for lineno, raw in enumerate(lines[1:], start=2):
            rec = json.loads(raw)
            self._apply_record(rec, lineno)
            if not rec.get("more"):
                self._builder.flush_experiences()

    def _parse_header(self, raw: str, last: int, torn: str | None) -> dict[str, Any] | None:
        try:
            header = json.loads(raw)
        except ValueError:
            if last == 1:  # crash while the key was being created
                self._repair(0, torn or "the header line is not valid JSON")
                return None
            self._corrupt(1, "the header line is not valid JSON")
        if (
            type(header) is not dict
            or header.get("t") != "header"
            or not isinstance(header.get("schema"), int)
        ):
            self._corrupt(1, "the first line is not a selfref-tui log header")
        schema = header["schema"]
        if schema > SCHEMA:
            raise UnsupportedSchemaError(self._newer_message(self.log_path, schema))
        if schema < 1:
            self._corrupt(1, f"unknown schema version {schema}")
        if header.get("key") != self.key:
            self._corrupt(1, f"the log belongs to key {header.get('key')!r}, not {self.key!r}")
        self.created = header.get("created") if isinstance(header.get("created"), str) else ""
        return header

    def _apply_record(self, rec: dict[str, Any], lineno: int) -> str | None:
        """Fold one log record; a description of the problem if it has the wrong shape."""
        kind = rec.get("t")
        if kind == "m":
            try:
                mutation = decode_mutation(rec.get("m"))
            except MutationDecodeError as exc:
                return f"bad patch: {exc}"
            if isinstance(mutation, _ARCHIVING):
                self._archive_working(mutation)
            self._builder.apply(mutation)
            return None
        problem = check_record(rec)
        if problem is not None:
            return problem
        entry = {k: v for k, v in rec.items() if k not in _LINE_ONLY}
        if kind == "ref":
            self.refs.setdefault(entry["id"], []).append(entry)
        elif kind == "fd":
            self.fds[entry["id"]] = entry
        else:
            self.forks[entry["fork_id"]] = entry
        return None

    def _archive_working(self, mutation: ContextMutation) -> None:
        before = self._archived_count
        for message in self._builder.messages:
            if message.get("role") != "system":
                self._archive.append({**message, "archived": True})
                self._archived_count += 1
        summary: dict[str, Any] = {}
        if isinstance(mutation, ContextSummaryMutation):
            compaction = mutation.summary_message.get("compaction")
            summary = dict(compaction) if isinstance(compaction, dict) else {}
            self.summary = summary
        elif self._archived_count == before:
            return  # a replace on an empty transcript (a fork's seed) hides nothing: no marker
        #: how many messages the latest compaction took out of the model's view
        self.last_compacted = self._archived_count - before
        self._archive.append(
            {"role": "compaction", "summary": summary, "messages_before": self.last_compacted}
        )

    def _repair(self, good_end: int, reason: str) -> None:
        message = (
            f"{self.log_path}: {reason}; dropped the unfinished last write "
            "(it was never reported saved)."
        )
        if self.writable:
            try:
                with open(self.log_path, "r+b") as fh:
                    fh.truncate(good_end)
                    fh.flush()
                    os.fsync(fh.fileno())
                message += " The file was repaired."
            except OSError as exc:
                message += f" Could not repair the file ({exc.strerror})."
        log.warning("%s", message)
        self.warnings.append(message)
        self._size = good_end

    def _corrupt(self, lineno: int, what: str) -> None:
        where = f"{self.log_path} line {lineno}"
        if self.writable:
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
            aside = self.log_path.with_name(f"{LOG_NAME}.corrupt-{stamp}")
            try:
                os.replace(self.log_path, aside)
                if self.meta_path.exists():
                    meta_aside = self.meta_path.with_name(f"{META_NAME}.corrupt-{stamp}")
                    os.replace(self.meta_path, meta_aside)
                fsync_dir(self.key_dir)
                hint = (
                    f"the file was moved aside to {aside.name} (kept); opening the key again "
                    "starts it empty — repair that file and rename it back to restore it."
                )
            except OSError as exc:
                hint = f"could not move it aside ({exc.strerror}); repair or remove it."
        else:
            hint = "repair the file, or open the key for writing to move it aside and start again."
        raise CorruptStoreError(f"Memory key {self.key!r} is damaged at {where}: {what}; {hint}")
