"""A body's HTTP chunks joined per read (``rechunk``) read as the same body by h11."""

from __future__ import annotations

import itertools
import json
from contextlib import aclosing
from types import SimpleNamespace

import h11
import openai
import pytest
from h11 import _readers as h11_readers
from hypothesis import given, settings
from hypothesis import strategies as st

from selfref_tui.agent.provider import rechunk
from selfref_tui.agent.provider.chunks import TextChunk
from selfref_tui.agent.provider.client import Provider
from selfref_tui.config import ProviderConfig
from selfref_tui.demo import DemoServer, Reply
from tests.agent.helpers import wait_until

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"


def h11_reads(body_pieces: list[bytes]) -> tuple[bytes, str]:
    """The body h11 decodes from these pieces, and how it ended ("end" or its error)."""
    connection = h11.Connection(h11.CLIENT)
    connection.send(h11.Request(method="GET", target="/", headers=[("Host", "x")]))
    connection.send(h11.EndOfMessage())
    data: list[bytes] = []
    connection.receive_data(HEAD)
    for piece in [*(p for p in body_pieces if p), b""]:  # b"" alone: the peer closed
        connection.receive_data(piece)
        while True:
            try:
                event = connection.next_event()
            except h11.RemoteProtocolError as exc:
                return b"".join(data), f"error: {exc}"
            if event is h11.NEED_DATA:
                break
            if type(event) is h11.Data:
                data.append(bytes(event.data))
            elif type(event) is h11.EndOfMessage:
                return b"".join(data), "end"
    return b"".join(data), "incomplete"


def chunked(pieces: list[bytes], ext: bool) -> bytes:
    return b"".join(b"%x%s\r\n%s\r\n" % (len(p), b"; x=1 " if ext else b"", p) for p in pieces if p)


ENDINGS = [
    b"0\r\n\r\n",
    b"0\r\nX-Trailer: yes\r\n\r\n",
    b"",  # the server went away
    b"5\r\nabc",  # ... in a chunk
    b"zz\r\nabc\r\n",  # a bad size line
    b"3\r\nabcXY",  # a bad chunk footer
    b"3 ;ok\t\r\nabc\r\n0\r\n\r\n",
    b"\n3\r\nabc\r\n",
]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.binary(max_size=40), max_size=30),
    st.sampled_from(ENDINGS),
    st.booleans(),
    st.lists(st.integers(min_value=0, max_value=2000), max_size=12),
    st.integers(min_value=0, max_value=2000),
)
def test_any_split_of_any_body_reads_the_same_rechunked(pieces, ending, ext, cuts, held_at):
    raw = chunked(pieces, ext) + ending
    # h11 holds the body's first bytes (read with the headers); ours starts after them
    held, rest = raw[:held_at], raw[held_at:]
    rechunker = rechunk.Rechunker()
    rechunker.feed(held)
    if not rechunker.start_inside():
        return  # the provider leaves such a body to h11
    bounds = sorted({0, len(rest), *(c for c in cuts if c < len(rest))})
    # what h11 reads from the same reads unrechunked: its words for a bad chunk footer
    # quote what it has of the footer so far, so they depend on where a read ends
    expected = h11_reads([held, *(rest[a:b] for a, b in itertools.pairwise(bounds))])
    assert expected[0] == h11_reads([raw])[0]
    out = [held]
    for start, stop in itertools.pairwise(bounds):
        out.append(rechunker.feed(rest[start:stop]))
    out.append(rechunker.at_eof())
    assert h11_reads(out) == expected


def test_a_read_of_many_chunks_becomes_one_chunk():
    events = [b"data: {\"n\": %d}\n\n" % i for i in range(500)]
    rechunker = rechunk.Rechunker()
    out = rechunker.feed(chunked(events, ext=False))
    assert out == b"%x\r\n%s" % (len(b"".join(events)), b"".join(events))  # its CRLF next


async def test_the_real_client_reads_a_rechunked_body_to_its_end():
    text = "word " * 3000
    server = DemoServer([Reply(text=text)] * 2)
    async with server as url:
        client = openai.AsyncOpenAI(base_url=url, api_key="k", max_retries=0)
        bodies: list[bytes] = []
        reads: list[int] = []
        for joined in (True, False):
            async with client.chat.completions.with_streaming_response.create(
                model="m", messages=[{"role": "user", "content": "hi"}], stream=True
            ) as response:
                raw = response.http_response
                handle = rechunk.rechunk(raw) if joined else None
                assert handle is not None or not joined  # the library's objects are as expected
                pieces: list[bytes] = []
                async for piece in raw.aiter_raw():
                    if not pieces:
                        # a busy app: the whole rest arrives before it reads again
                        await wait_until(lambda: server.streams_done > len(reads),
                                         what="the whole body sent")
                    pieces.append(piece)
                if handle is not None:
                    # h11 read the end of the body (DONE: a keep-alive connection is reused)
                    assert handle[0]._h11_state.their_state in (h11.DONE, h11.MUST_CLOSE)
                    rechunk.restore(handle)
                bodies.append(b"".join(pieces))
                reads.append(len(pieces))
        await client.close()
    first = bodies[0].decode()
    got = "".join(
        json.loads(line[6:])["choices"][0]["delta"].get("content", "")
        for line in first.split("\n\n") if line.startswith("data: {") and '"choices": [{' in line
    )
    assert got == text and first.endswith("data: [DONE]\n\n")
    assert bodies[0].replace(b"demo1", b"demo2").split(b'"created"')[0] == bodies[1].split(
        b'"created"')[0]
    assert reads[0] < 3000 // 4 < reads[1]  # 3,000 tokens came up as far fewer pieces


class ChunkedReader:
    """Named as h11's reader, its insides renamed as a new h11 might: each test below
    removes or breaks one thing ``rechunk`` reads."""

    def __init__(self) -> None:
        self._bytes_in_chunk = 0
        self._bytes_to_discard = b""
        self._reading_trailer = False


def fake_response(reader: object, trailing: object = (b"", False)) -> SimpleNamespace:
    """What ``rechunk`` reads of an httpx response, down to h11's reader."""
    state = SimpleNamespace(_reader=reader, trailing_data=trailing)
    connection = SimpleNamespace(_h11_state=state, _network_stream=object())
    inner = SimpleNamespace(_stream=SimpleNamespace(_connection=connection))
    return SimpleNamespace(stream=SimpleNamespace(_stream=SimpleNamespace(
        _httpcore_stream=inner)))


def without(name: str) -> ChunkedReader:
    reader = ChunkedReader()
    delattr(reader, name)
    return reader


@pytest.mark.parametrize("response", [
    fake_response(without("_bytes_in_chunk")),
    fake_response(without("_bytes_to_discard")),
    fake_response(without("_reading_trailer")),
    fake_response(ChunkedReader(), trailing=(b"", False, 0)),  # not a pair
    fake_response(ChunkedReader(), trailing=None),
    fake_response(ChunkedReader(), trailing=("3\r\nabc", False)),  # str, not bytes
    fake_response(ChunkedReader(), trailing=(None, False)),
], ids=["no bytes_in_chunk", "no bytes_to_discard", "no reading_trailer", "triple",
        "no trailing", "str held", "None held"])
def test_library_insides_not_as_known_leave_the_body_to_the_library(response):
    network = response.stream._stream._httpcore_stream._stream._connection._network_stream
    assert rechunk.rechunk(response) is None
    assert response.stream._stream._httpcore_stream._stream._connection._network_stream is network


def test_library_insides_as_known_are_wrapped():
    """The fakes above differ from a wrapped one only in what each breaks."""
    response = fake_response(ChunkedReader(), trailing=(b"3\r\nab", False))
    handle = rechunk.rechunk(response)
    assert handle is not None and type(handle[0]._network_stream) is rechunk._RechunkedStream
    rechunk.restore(handle)
    assert handle[0]._network_stream is handle[1]


class RenamedChunkedReader:
    """h11's chunked reader with its private attributes renamed (a future h11)."""

    def __init__(self) -> None:
        self._inner = h11_readers.ChunkedReader()

    def __call__(self, buf):
        return self._inner(buf)

    def read_eof(self):
        return self._inner.read_eof()


RenamedChunkedReader.__name__ = "ChunkedReader"


def record_rechunk(monkeypatch) -> list[object]:
    """Every answer ``rechunk`` gives the provider, in order (None: left to the library)."""
    answers: list[object] = []
    real = rechunk.rechunk

    def recorded(response):
        answers.append(real(response))
        return answers[-1]

    monkeypatch.setattr(rechunk, "rechunk", recorded)
    return answers


async def test_a_changed_h11_reads_the_exact_text_through_the_provider(monkeypatch):
    """The provider over real HTTP while h11's reader is not what ``rechunk`` knows: no
    error, the same text, the body read by the library."""
    monkeypatch.setitem(h11_readers.READERS[h11.SEND_BODY], "chunked", RenamedChunkedReader)
    results = record_rechunk(monkeypatch)
    text = "word \u00e9 " * 500
    async with DemoServer([Reply(text=text)]) as url:
        provider = Provider(ProviderConfig(base_url=url, model="m", max_retries=0,
                                           timeout_s=5.0))
        try:
            async with aclosing(provider.stream([{"role": "user", "content": "hi"}])) as stream:
                got = "".join([c.text async for c in stream if type(c) is TextChunk])
        finally:
            await provider.aclose()
    assert got == text
    assert results == [None]  # it was asked, and left the body to the library


async def test_a_kept_alive_connection_is_reused_rechunked_and_restored(monkeypatch):
    """Streams in a row on one client over a keep-alive server: one TCP connection, each
    body rechunked and read exactly, the connection's own stream put back after each; an
    abort mid-stream closes that connection and the next stream reads exactly on a new one."""
    handles = record_rechunk(monkeypatch)
    texts = ["first " * 400, "second \u00e9 " * 400, "slow " * 400, "fourth " * 300]
    script = [Reply(text=texts[0]), Reply(text=texts[1]),
              Reply(text=texts[2], tokens_per_s=200), Reply(text=texts[3])]
    server = DemoServer(script, keep_alive=True)
    async with server as url:
        provider = Provider(ProviderConfig(base_url=url, model="m", max_retries=0,
                                           timeout_s=5.0))

        async def text_of(stream, stop_after: int | None = None) -> str:
            got: list[str] = []
            async with aclosing(stream) as chunks:
                async for chunk in chunks:
                    if type(chunk) is TextChunk:
                        got.append(chunk.text)
                        if stop_after is not None and len(got) >= stop_after:
                            break  # the person pressed Esc: the stream is closed early
            return "".join(got)

        def messages() -> list[dict]:
            return [{"role": "user", "content": "hi"}]

        try:
            assert await text_of(provider.stream(messages())) == texts[0]
            first = handles[0]
            assert first is not None
            connection, network, _wrapped = first
            assert connection._network_stream is network  # restored after the body
            assert await text_of(provider.stream(messages())) == texts[1]
            second = handles[1]
            assert second is not None and second[0] is connection  # the same connection,
            assert second[1] is network  # wrapped again from its own stream
            assert connection._network_stream is network
            assert server.connections == 1 and server.streams_done == 2

            cut = await text_of(provider.stream(messages()), stop_after=1)
            assert cut and texts[2].startswith(cut) and cut != texts[2]
            third = handles[2]
            assert third is not None and third[0]._network_stream is third[1]
            assert await server.wait_disconnect()
            assert await text_of(provider.stream(messages())) == texts[3]
            assert handles[3] is not None
            assert server.connections == 2  # the aborted connection was not reused
        finally:
            await provider.aclose()
