"""Server-sent events read a backlog at a time, not an event at a time.

A chat completion streams one SSE event per token, and a fast server (or a
client that fell behind for a moment) leaves thousands of them buffered. The
``openai`` client parses them one by one: a Python line decoder, a ``json.loads``
and an async-generator hop per event, about half of the CPU the app spent
reading a 1 MB answer (~25 µs an event). Here a reader task pulls the response's
bytes and the consumer takes everything that arrived since it last looked, so a
backlog costs one wake-up, one split and one C-level JSON scan per event; at a
slow pace a batch is simply one event, so nothing waits for company.

:class:`SseParser` is pure (any chunking of the bytes gives the same events);
:func:`event_batches` is the async part. Everything from the server is data:
malformed JSON is reported after the events before it, never guessed at.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import json.scanner
from collections.abc import AsyncIterator
from typing import Any

#: the C scanner ``json.loads`` ends in, without its per-call Python wrapper
_scan = json.scanner.make_scanner(json.JSONDecoder())
_WHITESPACE = " \t\n\r"
#: the longest wait for the bytes after ``[DONE]`` (so the connection can be reused)
DRAIN_S = 1.0
#: the most one event may hold. An event is one token in practice, but a server may
#: send a whole tool call (Ollama, some vLLM parsers) or a whole answer in one: at most
#: the model's output, 128k tokens ≈ 512 KB of text, and its arguments are JSON in a
#: JSON string, escaped twice (``\\\"``, ``\\u00e9``): a few MB at worst. 8 MB is
#: twice that; past it the event is not an answer but a line that never ends, and
#: holding it would grow the memory for as long as the server writes.
MAX_EVENT_BYTES = 8 * 1024 * 1024


class SseError(ValueError):
    """A data field that is not one JSON value (``json.JSONDecodeError``'s message)."""


class EventTooLarge(SseError):
    """An event (its lines up to the blank line that ends it) over ``MAX_EVENT_BYTES``."""


class SseParser:
    """Bytes in, the ``data`` payloads of complete events out (``[DONE]`` ends it).

    Follows the SSE rules the OpenAI-compatible servers use: lines end in LF,
    CRLF or CR; a blank line ends an event; ``data:`` lines (one optional
    space after the colon) are joined with LF; comments (``:``) and other
    fields (``event:``, ``id:``, ``retry:``) carry nothing we read.

    An event over ``limit`` bytes, ended or not, ends the stream: ``feed``
    returns the events before it and sets ``too_large``; what was held of it
    is let go, and later bytes are ignored. The unfinished event is kept as
    its pieces (joined once, when it ends), so a long one costs linear time.
    """

    __slots__ = ("_cr", "_held", "_size", "done", "limit", "too_large")

    def __init__(self, limit: int = MAX_EVENT_BYTES) -> None:
        self._held: list[bytes] = []  # the pieces of the unfinished event
        self._size = 0  # their bytes
        self._cr = False  # the last read ended in CR: an LF first in the next one is its pair
        self.limit = limit
        self.done = False
        self.too_large = False

    def feed(self, data: bytes) -> list[str]:
        """The payloads of the events ``data`` completes, in order (none after ``[DONE]``
        or past an event too large)."""
        if self.done or self.too_large or not data:
            return []
        if self._cr and data[:1] == b"\n":
            data = data[1:]
            if not data:
                self._cr = False
                return []
        self._cr = data[-1:] == b"\r"
        if b"\r" in data:
            data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if self._held:
            if b"\n\n" not in data and not (data[:1] == b"\n"
                                             and self._held[-1][-1:] == b"\n"):
                # the event goes on: no join, no scan of what was held
                self._held.append(data)
                self._size += len(data)
                if self._size > self.limit:
                    self._overflow()
                return []
            buf = b"".join(self._held) + data
            self._held.clear()
        else:
            buf = data
        blocks = buf.split(b"\n\n")
        rest = blocks.pop()
        out: list[str] = []
        for block in blocks:
            if len(block) > self.limit:
                self._overflow()
                return out
            payload = _payload(block)
            if payload is None:
                continue
            if payload.startswith("[DONE]"):
                self.done = True
                return out
            out.append(payload)
        if rest:
            self._held.append(rest)
            self._size = len(rest)
            if self._size > self.limit:
                self._overflow()
        return out

    def _overflow(self) -> None:
        self.too_large = True
        self._held.clear()
        self._size = 0


def _payload(block: bytes) -> str | None:
    """The data of one event block (None: an event without data, or only comments)."""
    if block.startswith(b"data:") and b"\ndata" not in block:
        # The usual event: one data line (perhaps with other fields after it).
        line = block[5:].split(b"\n", 1)[0]
        return (line[1:] if line[:1] == b" " else line).decode("utf-8", "replace")
    parts: list[bytes] = []
    for line in block.split(b"\n"):
        if line.startswith(b"data:"):
            value = line[5:]
            parts.append(value[1:] if value[:1] == b" " else value)
    if not parts:
        return None
    return b"\n".join(parts).decode("utf-8", "replace")


def decode(payloads: list[str]) -> tuple[list[Any], SseError | None]:
    """Each payload as one JSON value; those before the first bad one, and its error."""
    out: list[Any] = []
    for payload in payloads:
        start = len(payload) - len(payload.lstrip(_WHITESPACE))
        try:
            value, end = _scan(payload, start)
        except StopIteration as stop:
            return out, SseError(f"Expecting value: char {stop.value} of {payload[:80]!r}")
        except ValueError as exc:
            return out, SseError(str(exc))
        if payload[end:].strip(_WHITESPACE):
            return out, SseError(f"Extra data: char {end} of {payload[:80]!r}")
        out.append(value)
    return out, None


async def backlog(source: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """What ``source`` yielded since the consumer last asked, joined into one piece.

    A reader task drains ``source``: while bytes are buffered below it (an
    HTTP chunk per event), it keeps reading without giving the loop up, and
    the consumer wakes once for all of them. An error from ``source`` is raised
    after the bytes before it. Closing this generator stops the reader.
    """
    pending: list[bytes] = []
    state: dict[str, Any] = {"end": False, "error": None}
    wake = asyncio.Event()

    async def read() -> None:
        try:
            async for data in source:
                pending.append(data)
                wake.set()
        except Exception as exc:  # raised to the consumer, in order
            state["error"] = exc
        finally:
            state["end"] = True
            wake.set()

    reader = asyncio.get_running_loop().create_task(read())
    try:
        while True:
            if not pending and not state["end"]:
                await wake.wait()
            wake.clear()
            if pending:
                data = b"".join(pending) if len(pending) > 1 else pending[0]
                pending.clear()
                yield data
                continue
            if state["end"]:
                if state["error"] is not None:
                    raise state["error"]
                return
    finally:
        if not reader.done():
            reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await reader


async def drain(source: AsyncIterator[bytes], seconds: float = DRAIN_S) -> None:
    """Read what follows ``[DONE]`` (the chunked body's end), so HTTP/1.1 can reuse the
    connection; an error or a slow server only costs the reuse."""
    with contextlib.suppress(Exception):
        async with asyncio.timeout(seconds):
            async for _ in source:
                pass
