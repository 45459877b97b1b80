"""Server-sent events read a backlog at a time: exact at any chunking, errors in order."""

from __future__ import annotations

import asyncio
import json
from contextlib import aclosing

import pytest

from selfref_tui.agent.provider import sse
from selfref_tui.agent.provider.chunks import (
    FinishChunk,
    ReasoningChunk,
    TextChunk,
    ToolCallChunk,
    UsageChunk,
)
from selfref_tui.agent.provider.client import Provider
from selfref_tui.agent.provider.errors import ProviderError
from selfref_tui.config import ProviderConfig
from selfref_tui.demo import DemoServer, Malformed, Reply, ToolCall
from selfref_tui.demo.server import split_text

STREAM = (
    b": keep-alive comment\n\n"
    b'data: {"a": 1}\n\n'
    b'event: message\ndata: {"b": "two\\nlines"}\nid: 7\n\n'
    b"data:{\"c\": 3}\n\n"  # no space after the colon
    b'data: {"d":\ndata: 4}\n\n'  # one value over two data lines
    b"retry: 100\n\n"  # no data: no event
    b'data: {"e": "\xc3\xa9"}\n\n'
    b"data: [DONE]\n\n"
    b'data: {"after": "done"}\n\n'
)
EXPECTED = [{"a": 1}, {"b": "two\nlines"}, {"c": 3}, {"d": 4}, {"e": "é"}]


def parse(pieces: list[bytes]) -> tuple[list[str], bool]:
    parser = sse.SseParser()
    out: list[str] = []
    for piece in pieces:
        out += parser.feed(piece)
    return out, parser.done


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"])
def test_every_split_point_gives_the_same_events(newline):
    stream = STREAM.replace(b"\n", newline)
    whole, done = parse([stream])
    assert [json.loads(p) for p in whole] == EXPECTED and done
    for cut in range(1, len(stream)):
        assert parse([stream[:cut], stream[cut:]]) == (whole, True), cut
    # one byte at a time: a CRLF split across reads is one line end, not two
    assert parse([stream[i : i + 1] for i in range(len(stream))]) == (whole, True)


def test_an_unfinished_event_waits_for_its_blank_line():
    parser = sse.SseParser()
    assert parser.feed(b'data: {"a": 1}\n') == []
    assert parser.feed(b"\n") == ['{"a": 1}']
    assert not parser.done


@pytest.mark.parametrize("ended", [True, False])
def test_an_event_over_the_cap_ends_the_stream_at_any_split(ended):
    """The events before it come out; the big one (ended or still growing) and all
    after it do not, and what was held of it is let go."""
    big = b"data: " + b"x" * 60 + (b"\n\n" if ended else b"")
    stream = b'data: {"a": 1}\n\n' + big + (b'data: {"b": 2}\n\n' if ended else b"")
    splits = [[stream], *([stream[:cut], stream[cut:]] for cut in range(1, len(stream)))]
    for pieces in splits:
        parser = sse.SseParser(limit=64)
        out = [payload for piece in pieces for payload in parser.feed(piece)]
        assert out == ['{"a": 1}'] and parser.too_large and not parser._held, pieces
        assert parser.feed(b'data: {"c": 3}\n\n') == []


def test_an_event_of_the_cap_is_read_however_it_arrives():
    event = b"data: " + b"y" * 58  # 64 bytes: the cap itself
    parser = sse.SseParser(limit=64)
    out = [p for i in range(0, len(event), 5) for p in parser.feed(event[i : i + 5])]
    out += parser.feed(b"\n\ndata: [DONE]\n\n")
    assert out == ["y" * 58] and parser.done and not parser.too_large


def test_decode_keeps_the_values_before_a_bad_one_and_names_it():
    values, error = sse.decode(['{"a": 1}', ' {"b": 2} ', '{"c": ', '{"d": 4}'])
    assert values == [{"a": 1}, {"b": 2}]
    assert isinstance(error, sse.SseError)
    for bad in ["", "1 2", '{"a": 1}{"b": 2}', "nope"]:
        values, error = sse.decode([bad])
        assert values == [] and isinstance(error, sse.SseError), bad
    assert sse.decode(['"x"', "[1, 2]", "null"]) == (["x", [1, 2], None], None)


async def _source(pieces: list[bytes], error: Exception | None = None):
    for piece in pieces:
        yield piece
    if error is not None:
        raise error


async def test_backlog_joins_what_arrived_meanwhile_and_raises_after_it():
    pieces = [b"a", b"b", b"c", b"d"]
    got: list[bytes] = []
    with pytest.raises(ConnectionError):
        async with aclosing(sse.backlog(_source(pieces, ConnectionError("gone")))) as batches:
            async for batch in batches:
                got.append(batch)
                await asyncio.sleep(0.01)  # a busy consumer: the reader runs ahead
    assert b"".join(got) == b"abcd"
    assert len(got) < len(pieces)


async def test_closing_the_backlog_stops_its_reader():
    stopped = asyncio.Event()

    async def endless():
        try:
            while True:
                yield b"x"
                await asyncio.sleep(0)
        finally:
            stopped.set()

    async with aclosing(sse.backlog(endless())) as batches:
        async for _ in batches:
            break
    assert stopped.is_set()


# --------------------------------------------------------------------------- over HTTP


def make(url: str) -> Provider:
    return Provider(ProviderConfig(base_url=url, model="m", max_retries=0, timeout_s=5.0))


async def slow_collect(provider: Provider) -> list:
    """Read like a busy app: the first chunk, then a pause while the rest arrives."""
    out: list = []
    async with aclosing(provider.stream([{"role": "user", "content": "hi"}])) as chunks:
        async for chunk in chunks:
            if not out:
                await asyncio.sleep(0.3)
            out.append(chunk)
    await provider.aclose()
    return out


async def test_a_backlog_of_tokens_arrives_as_few_chunks_with_the_exact_text():
    text = "".join(f"Word {i}, <ref id=\"r{i}\">x{i}</ref>\n\n" for i in range(300))
    reasoning = "first think, then answer " * 20
    async with DemoServer([Reply(text=text, reasoning=reasoning)]) as url:
        chunks = await slow_collect(make(url))
    texts = [c for c in chunks if isinstance(c, TextChunk)]
    assert "".join(c.text for c in texts) == text
    assert "".join(c.text for c in chunks if isinstance(c, ReasoningChunk)) == reasoning
    # reasoning, then text, then the end: their order is kept while neighbours join
    kinds = [type(c).__name__ for c in chunks]
    assert kinds.index("TextChunk") > max(i for i, k in enumerate(kinds) if k == "ReasoningChunk")
    assert kinds[-2:] == ["FinishChunk", "UsageChunk"]
    # joined: a chunk holds several of the server's tokens (each at most 12 characters)
    assert len(texts) < len(split_text(text, None)) and max(len(c.text) for c in texts) > 12


async def test_a_backlog_of_tool_arguments_joins_per_call():
    calls = [ToolCall("remember", {"text": "tea " * 200}), ToolCall("forget", {"id": "e1"})]
    async with DemoServer([Reply(tool_calls=calls, chunk_chars=3)]) as url:
        chunks = await slow_collect(make(url))
    deltas = [c for c in chunks if isinstance(c, ToolCallChunk)]
    assert max(len(d.arguments) for d in deltas) > 3  # pieces of 3 characters joined
    args: dict[int, str] = {}
    for delta in deltas:
        args[delta.index] = args.get(delta.index, "") + delta.arguments
    assert [json.loads(args[i]) for i in range(2)] == [c.arguments for c in calls]
    heads = [(d.index, d.name) for d in deltas if d.id]
    assert heads == [(0, "remember"), (1, "forget")]
    assert [c.reason for c in chunks if isinstance(c, FinishChunk)] == ["tool_calls"]
    assert any(isinstance(c, UsageChunk) for c in chunks)


async def test_a_whole_tool_call_of_a_few_mb_in_one_event_is_read():
    """Some servers send a tool call whole in one event: a long one stays under the cap."""
    call = ToolCall("write_file", {"path": "a.txt", "text": 'line "é"\n' * 200_000})
    async with DemoServer([Reply(tool_calls=[call], chunk_chars=10_000_000)]) as url:
        chunks = await slow_collect(make(url))
    arguments = "".join(c.arguments for c in chunks if isinstance(c, ToolCallChunk))
    assert len(arguments) > 2 * 1024 * 1024 and json.loads(arguments) == call.arguments


async def test_a_bad_event_after_a_backlog_keeps_the_text_before_it():
    before = "some text that arrived " * 30
    async with DemoServer([Malformed(before)]) as url:
        provider = make(url)
        seen: list = []
        with pytest.raises(ProviderError) as info:
            async for chunk in provider.stream([{"role": "user", "content": "hi"}]):
                if not seen:
                    await asyncio.sleep(0.3)  # the bad event joins the backlog
                seen.append(chunk)
        await provider.aclose()
    assert info.value.kind == "protocol" and info.value.partial
    assert "".join(c.text for c in seen if isinstance(c, TextChunk)) == before
