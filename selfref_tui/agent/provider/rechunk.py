"""A streamed body's HTTP chunks joined where they arrive, so the client parses one per read.

A server streaming a chat completion sends one HTTP chunk per SSE event, one
per token: 1 MB of tool arguments is 143,000 chunks, and the HTTP library under
the ``openai`` client (h11, then httpcore and httpx) turns each into an event
and passes it up through eight async-generator layers, about 10 µs a chunk:
half of what reading cost after the events themselves were made cheap. Here
the connection's socket stream is wrapped for one response: each read from
the socket is re-framed as one chunk holding the data of every chunk in it
(the same bytes in the same order), so h11 and everything above it run once
per read (up to 64 KB) instead of once per token. h11 still parses a valid
chunked body and ends it with the server's own last chunk, so errors,
timeouts, the connection's reuse and its closing are the library's own.

This is the one place that reaches into the HTTP library's private objects
(``tests/provider/test_rechunk.py`` pins them); when they are not what it
expects, or the body is not chunked, nothing is wrapped and the body is read
as the library reads it.
"""

from __future__ import annotations

import re
from typing import Any

#: a chunk-size line as h11 reads one (hex digits, extensions, trailing blanks), or stricter
_SIZE = re.compile(rb"([0-9A-Fa-f]{1,20})(?:;[^\r\n]*)?[\t ]*")
#: the longest chunk-size line we wait for before leaving the rest to h11
MAX_HEADER = 1024


class Rechunker:
    """Raw chunked-body bytes in; the same body out, each call's data as one chunk.

    Pure (tests feed it any split). Once the body's last chunk (size 0) starts,
    or anything is not a well-formed chunk, the rest passes through untouched:
    h11 then reads the trailer, or reports the malformation itself, with the
    same words and after the same data as it would have. To that end our
    chunk's closing CRLF is sent only with what follows it: a bad footer from
    the server is then what h11 reads as ours. ``start_inside`` is for a body
    h11 has begun: the chunk it is in is finished as the server framed it.
    """

    __slots__ = ("_crlf", "_head", "_left", "_owe", "_plain", "through")

    def __init__(self) -> None:
        self._left = 0  # data bytes still to come in the server's current chunk
        self._crlf = b""  # what remains of the CRLF after that chunk's data
        self._head = b""  # an unfinished chunk-size line
        self._plain = False  # h11 is inside the server's chunk: finish it as sent
        self._owe = False  # our last chunk's CRLF is not sent yet
        self.through = False  # passing bytes on untouched from here on

    def feed(self, raw: bytes) -> bytes:
        """What h11 should see for ``raw`` (b"" when it is all held: read more)."""
        if self.through:
            return raw
        if self._head:
            raw = self._head + raw
            self._head = b""
        plain: list[bytes] = []  # the end of a chunk h11 began, as sent
        parts: list[bytes] = []  # data of the chunks after it: one chunk of ours
        pos = 0
        end = len(raw)
        while pos < end:
            if self._left:
                take = min(self._left, end - pos)
                (plain if self._plain else parts).append(raw[pos : pos + take])
                pos += take
                self._left -= take
                if not self._left:
                    self._crlf = b"\r\n"
                continue
            if self._crlf:
                want = self._crlf
                got = raw[pos : pos + len(want)]
                if got != want[: len(got)]:  # h11 names the bad footer, after the same data
                    sent = b"" if self._plain else b"\r\n"[: 2 - len(want)]
                    return self._out(plain, parts, sent + raw[pos:], close=False)
                if self._plain:
                    plain.append(got)
                pos += len(got)
                self._crlf = want[len(got) :]
                if not self._crlf:
                    self._plain = False
                continue
            line_end = raw.find(b"\r\n", pos)
            if line_end < 0:
                if end - pos > MAX_HEADER:
                    return self._out(plain, parts, raw[pos:], close=True)
                self._head = raw[pos:]
                break
            size = _SIZE.fullmatch(raw, pos, line_end)
            left = int(size.group(1), 16) if size is not None else 0
            if not left:  # the last chunk (h11 reads it and the trailer), or a bad line
                return self._out(plain, parts, raw[pos:], close=True)
            start = line_end + 2
            stop = start + left
            if raw[stop : stop + 2] == b"\r\n":  # the usual: the whole chunk is here
                parts.append(raw[start:stop])
                pos = stop + 2
                continue
            self._left = left
            pos = start
        return self._out(plain, parts, None, close=False)

    def _out(self, plain: list[bytes], parts: list[bytes], rest: bytes | None, *,
             close: bool) -> bytes:
        """``plain`` as it is, then ``parts`` as one chunk of ours, then ``rest`` untouched
        (``close``: after our open chunk's CRLF)."""
        out = b"".join(plain)  # only before any chunk of ours: nothing is owed then
        if parts:
            data = b"".join(parts)
            out += (b"\r\n" if self._owe else b"") + b"%x\r\n" % len(data) + data
            self._owe = True
        if rest is not None:
            self.through = True
            if close and self._owe:
                out += b"\r\n"
                self._owe = False
            out += rest
        return out

    def at_eof(self) -> bytes:
        """What to hand on when the server stops: a size line held back, after our CRLF
        (h11 then reports the cut body as it would have)."""
        if self.through or not self._head:
            return b""
        self.through = True
        out = (b"\r\n" if self._owe else b"") + self._head
        self._head = b""
        self._owe = False
        return out

    def start_inside(self) -> bool:
        """After feeding what h11 already holds (its output dropped: h11 reads those bytes
        as sent), finish h11's chunk as sent. False: it holds half a size line or
        more than chunks (leave this body to h11)."""
        if self.through or self._head:
            return False
        self._plain = bool(self._left or self._crlf)
        self._owe = False
        return True


class _RechunkedStream:
    """The connection's network stream, its reads re-framed by a :class:`Rechunker`.

    A read that holds no whole byte of data (half a size line) is followed by
    another: an empty read would tell h11 the server closed the connection.
    """

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._rechunker = Rechunker()

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        while True:
            raw = await self._stream.read(max_bytes, timeout)
            if not raw:
                held = self._rechunker.at_eof()  # the server stopped inside a size line
                return held or raw  # then the end: h11 says what it means
            out = self._rechunker.feed(raw)
            if out:
                return out

    def __getattr__(self, name: str) -> Any:  # write, aclose, get_extra_info, start_tls
        return getattr(self._stream, name)


def rechunk(response: Any) -> Any | None:
    """Wrap the socket stream under ``response`` (an ``httpx`` response whose body
    has not been read); returns what :func:`restore` needs, or None when it cannot.

    Every read of the library's private objects is inside one ``try``: when h11,
    httpcore or httpx change them (an attribute gone, renamed, of another type),
    this returns None and the body is read by the library as usual, never an
    error for the turn. Nothing is changed until the last line.
    """
    try:
        connection = response.stream._stream._httpcore_stream._stream._connection
        state = connection._h11_state
        network = connection._network_stream
        reader = state._reader
        if (type(reader).__name__ != "ChunkedReader" or reader._bytes_in_chunk
                or reader._bytes_to_discard or reader._reading_trailer
                or type(network) is _RechunkedStream):
            return None
        wrapped = _RechunkedStream(network)
        # What h11 holds already it parses as it is; ours starts after it.
        held, _closed = state.trailing_data
        if not isinstance(held, (bytes, bytearray)):
            return None
        wrapped._rechunker.feed(held)  # only to learn where in a chunk it ends
        if not wrapped._rechunker.start_inside():
            return None
    except Exception:  # the library's insides are not what we know: leave the body to it
        return None
    connection._network_stream = wrapped
    return connection, network, wrapped


def restore(handle: Any) -> None:
    """Put the connection's own stream back (the next request on it reads as usual)."""
    connection, network, wrapped = handle
    if getattr(connection, "_network_stream", None) is wrapped:
        connection._network_stream = network
