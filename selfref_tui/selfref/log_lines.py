"""The log's lines: what a record may hold, and how one line is read, sealed and copied.

Kept apart from the store's fold (key_fold.py) because the branch copy
(:func:`log_prefix`), the search cache's catch-up and the load all read lines
the same way, and none of them needs a loaded key to do it.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from ..context.mutations import MutationDecodeError
from .checksum import seal, seal_bytes, verify
from .decode import decode_mutation
from .fsutil import FILE_MODE, fsync_dir, write_all

SCHEMA = 1

# Record kinds besides patches: required fields, then optional ones, with types.
_Types = type | tuple[type, ...]
RECORD_SHAPES: dict[str, tuple[dict[str, _Types], dict[str, _Types]]] = {
    "ref": ({"id": str, "content": str}, {"created": str, "message_index": int}),
    "fd": ({"id": str, "content": str}, {"created": str, "source": str}),
    "fork": (
        {"fork_id": str},
        {
            "child_key": str, "task": str, "status": str, "response": (str, type(None)),
            "error": (str, type(None)), "created": str, "updated": str,
        },
    ),
    # a file the model's write changed (checkpoints.py): its bytes before and after
    "file": ({"path": str, "after": str},
             {"before": (str, type(None)), "call_id": str, "created": str,
              "before_size": int, "after_size": int}),
    # where a branch came from (the key and message it was made at)
    "origin": ({"key": str}, {"message": int, "created": str}),
    # the person pinned (or unpinned) message n: compactions keep it verbatim
    "pin": ({"n": int, "pinned": bool}, {}),
}
LINE_ONLY = ("t", "ts", "more", "c")
#: a longer line is damage, not parsed (a real record is far smaller: fds hold big outputs
#: in pages, and the largest tool output seen is a few MB)
MAX_LINE_BYTES = 256 * 1024 * 1024


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def pin_record(n: int, pinned: bool = True) -> dict[str, Any]:
    """The record that pins (or unpins) message ``n``; commit it with ``records=``."""
    return {"t": "pin", "n": n, "pinned": pinned}


def check_record(record: dict[str, Any]) -> str | None:
    """Why ``record`` is not a valid ref/fd/fork record, or None when it is."""
    if not isinstance(record, dict):
        return f"expected an object, got {type(record).__name__}"
    kind = record.get("t")
    shape = RECORD_SHAPES.get(kind) if isinstance(kind, str) else None
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
    if kind == "pin" and (type(record["n"]) is not int or record["n"] < 1
                          or type(record["pinned"]) is not bool):
        return "pin record needs a message number (from 1) and pinned true or false"
    return None


_raw_decode = json.JSONDecoder().raw_decode
#: a log at least this long is read with msgspec where it can be (:func:`fast_decoder`): its
#: import (a few ms) is paid only where it saves more
FAST_FROM = 1 << 20
#: a decoder of a line's bytes, and what it raises for one it will not read
FastDecoder = tuple[Callable[[bytes], Any], tuple[type[BaseException], ...]]
#: the deepest nesting a line is read at with msgspec: ``json``, a Python frame further
#: from the limit, refuses a line nested a level or two sooner than msgspec does, so a
#: line that may nest deeper (more brackets than this) is read with ``json`` alone
_SHALLOW = 256


@cache
def _msgspec() -> FastDecoder | None:
    try:
        from msgspec import DecodeError
        from msgspec.json import Decoder
    except ImportError:  # a dependency; without it a long log only loads slower
        return None
    return Decoder().decode, (DecodeError, ValueError, RecursionError)


#: ``many``: set in a thread while it reads logs that add up to :data:`FAST_FROM`
_reading = threading.local()


@contextmanager
def many_logs(many: bool = True) -> Iterator[None]:
    """While it lasts, with ``many``, the logs this thread reads are read as a long one is
    (:func:`fast_decoder`), however short: a search that folds a hundred logs of 400 KB
    pays msgspec's import once and saves a tenth of every fold."""
    before = getattr(_reading, "many", False)
    _reading.many = many or before
    try:
        yield
    finally:
        _reading.many = before


def fast_decoder(data: bytes) -> FastDecoder | None:
    """What may read the lines of the log ``data`` in about half the time of ``json``
    (:func:`parse_line`): msgspec, which makes of every record it reads what ``json``
    makes of it (integers of any length too, unlike orjson, which reads one past 64 bits
    as a float); not for a short log (unless it is one of many: :func:`many_logs`).
    None: ``json`` alone."""
    if ((len(data) < FAST_FROM and not getattr(_reading, "many", False))
            or _stack_room() < 2 * _SHALLOW):
        return None
    return _msgspec()


def _stack_room() -> int:
    """How many more frames Python allows here (a line nested ``_SHALLOW`` deep must be
    read by both decoders, so both agree)."""
    depth, frame = 0, sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    return sys.getrecursionlimit() - depth


def parse_line(raw: bytes, sealed: bool, fast: FastDecoder | None = None
               ) -> tuple[Any, str | None]:
    """(record, None) for a line that verifies and parses to an object, else (None, why);
    ``fast``: what :func:`fast_decoder` gave for the line's log."""
    if len(raw) > MAX_LINE_BYTES:
        return None, f"the line is {len(raw):,} bytes long (more than {MAX_LINE_BYTES:,})"
    check = verify(raw)
    if check is False:
        return None, "the checksum does not match (the line was changed)"
    if check is None and sealed:
        return None, "the line has no checksum (it was changed)"
    if fast is not None and raw[:1] == b"{" and (
            len(raw) <= 2 * _SHALLOW or raw.count(b"[") + raw.count(b"{") <= _SHALLOW):
        # A record msgspec reads is the one ``json`` reads. It refuses some that ``json``
        # reads (a lone surrogate's escape, NaN, white space ``str.strip`` drops after the
        # object) and all that ``json`` refuses (bad UTF-8, extra data, deep nesting):
        # those are read below, as they always were, so a line is kept or damaged as
        # before. (White space before the object it would read: such a line goes below;
        # so does one that may nest deep: ``_SHALLOW``.)
        decode, refused = fast
        try:
            rec = decode(raw)
        except refused:
            pass
        else:
            if type(rec) is dict:
                return rec, None
    try:
        text = raw.decode("utf-8")
        rec, end = _raw_decode(text)  # the C scanner, without json.loads's wrappers
        if end != len(text) and text[end:].strip():
            raise ValueError("extra data")
    except UnicodeDecodeError:
        return None, "the line is not valid UTF-8"
    except ValueError as exc:
        if "digits" in str(exc):  # int() limit: a number with thousands of digits
            return None, "the line holds a number too large to read"
        return None, "the line is not valid JSON"
    except RecursionError:
        return None, "the line nests too deeply to read"
    if type(rec) is not dict:
        return None, f"expected an object, got {type(rec).__name__}"
    return rec, None


def resealed(raw: bytes, *, more: bool, had_more: bool) -> bytes:
    """A kept line, sealed, with ``more`` set as its place in the saved file needs."""
    if more == had_more:
        return raw if verify(raw) else seal_bytes(raw.rstrip())
    rec = json.loads(raw)
    rec.pop("c", None)
    rec.pop("more", None)
    if more:
        rec["more"] = True
    return seal(json.dumps(rec, ensure_ascii=True, separators=(",", ":"))).encode()


def log_prefix(data: bytes, patches: int) -> list[bytes]:
    """The records of a log (sealed lines, header left out) before its ``patches``-th patch.

    A branch starts from them: folded, they give exactly the state the source
    key had before that patch. Lines are checked as a load checks them; a
    damaged one is left out (and the line before it closes its batch, as the
    load treats it), and the last line kept closes its batch.
    """
    lines = data.split(b"\n")
    if lines and not lines[-1]:
        lines.pop()
    sealed = len(lines) > 0 and verify(lines[0]) is True
    out: list[bytes] = []
    mores: list[bool] = []
    count = 0
    for raw in lines[1:]:
        rec, problem = parse_line(raw, sealed)
        if problem is None and rec.get("t") == "m":
            if count == patches:
                break
            try:
                decode_mutation(rec.get("m"))
            except MutationDecodeError:
                problem = "bad patch"
            else:
                count += 1
        elif problem is None:
            problem = check_record(rec)
        if problem is not None:
            if mores and mores[-1]:
                out[-1], mores[-1] = resealed(out[-1], more=False, had_more=True), False
            continue
        out.append(raw if verify(raw) else seal_bytes(raw.rstrip()))
        mores.append(bool(rec.get("more")))
    if mores and mores[-1]:
        out[-1] = resealed(out[-1], more=False, had_more=True)
    return out


def sealed_record(record: dict[str, Any]) -> bytes:
    """One log line for ``record`` (a whole batch of its own), sealed."""
    return seal(json.dumps(record, ensure_ascii=True, separators=(",", ":"))).encode("ascii")


def header_line(key: str, created: str) -> bytes:
    return sealed_record({"t": "header", "schema": SCHEMA, "key": key, "created": created})


def keep_copy(path: Path, data: bytes) -> None:
    """Write the original log next to it, never over an existing file."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
                 FILE_MODE)
    try:
        write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    fsync_dir(path.parent)
