"""Deltas read by template (``delta_scan``) give exactly what parsing every event gives."""

from __future__ import annotations

import json
from contextlib import aclosing

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from selfref_tui.agent.provider import delta_scan, sse
from selfref_tui.agent.provider.chunks import (
    ReasoningChunk,
    TextChunk,
    ToolCallChunk,
    _batch_chunks,
    _classify,
)
from selfref_tui.agent.provider.client import Provider
from selfref_tui.agent.provider.errors import ProviderError
from selfref_tui.config import ProviderConfig
from selfref_tui.demo import DemoServer, Events
from tests.hostile import CORPUS

BASE = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}


def event(delta: dict, finish: str | None = None, ascii_only: bool = True, **extra) -> str:
    return json.dumps({**BASE, **extra, "choices": [
        {"index": 0, "delta": delta, "finish_reason": finish}]}, ensure_ascii=ascii_only)


def args(index: int, text: str, **kw) -> str:
    return event({"tool_calls": [{"index": index, "function": {"arguments": text}}]}, **kw)


def head(index: int, name: str) -> str:
    return event({"tool_calls": [{"index": index, "id": f"call_{index}", "type": "function",
                                  "function": {"name": name, "arguments": ""}}]})


TEMPLATE = args(0, "x")
USAGE = json.dumps({**BASE, "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 4}})
PREFIX, SUFFIX = TEMPLATE.split('"x"')
#: odd events; several look like a template's events and are not
ODD = [
    event({"role": "assistant", "content": ""}),
    event({"content": "plain "}),
    event({"content": 'he said "hi" \\ back\\slash'}),
    event({"content": "caf\u00e9 \U0001f600 \u2028"}),  # \u escapes, a surrogate pair
    event({"content": "caf\u00e9 \U0001f600"}, ascii_only=False),  # raw UTF-8
    event({"content": "two\nlines\ttab"}),
    event({"content": ""}),
    event({"content": None}),
    event({"reasoning_content": "think "}),
    event({"reasoning": "also thinking "}),
    event({"reasoning_content": "", "reasoning": "the other field"}),
    head(0, "remember"),
    head(1, "forget"),
    args(0, '{"text": "'),
    args(0, 'tea \\"quoted\\" '),
    args(0, "\u00e9\\u00e9 "),
    args(1, '{"id": "e1"}'),
    args(0, ""),
    TEMPLATE,
    args(0, "random pad", obfuscation="a1"),
    args(0, "random pad", obfuscation="b22"),
    event({"content": "a", "tool_calls": [{"index": 0, "function": {"arguments": "b"}}]}),
    USAGE,
    event({}, finish="tool_calls"),
    '{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"compact"}}]}}]}',
    '{"choices":[{"delta":{"content":"dup one","content":"dup two"}}]}',
    '  {"choices": [{"delta": {"content": "spaced"}}]}  ',
    PREFIX + '"' + delta_scan._PROBES[0] + '"' + SUFFIX,
    # the first string equal to the text is not where the text comes from
    event({"reasoning": "same", "reasoning_content": "same"}),
    event({"reasoning": "other", "reasoning_content": "same"}),
    '{"extra": {"content": "same"}, "choices": [{"delta": {"content": "same"}}]}',
    '{"extra": {"content": "other"}, "choices": [{"delta": {"content": "same"}}]}',
    *(event({"content": text}) for _, text in CORPUS),
    # a template's prefix and suffix around what is not one JSON string
    PREFIX + '"a"b"' + SUFFIX,
    PREFIX + '"raw\x01control"' + SUFFIX,
    PREFIX + '"bad \\x escape"' + SUFFIX,
    PREFIX + '"lone \\ud800 surrogate"' + SUFFIX,
    PREFIX + '"a", "arguments": "b"' + SUFFIX,
    event({"content": 7}),
    '{"choices": [{"delta": {"tool_calls": "not a list"}}]}',
    '{"error": {"message": "overloaded"}}',
    "[1, 2]",
    '{"choices": [ {"delta": ',
    "",
]


def through(payload_batches: list[list[str]], scan: bool) -> list:
    """What the provider makes of these backlogs: the chunks, then the error, if any."""
    decode = delta_scan.DeltaScanner(sse.decode, _classify).decode if scan else sse.decode
    out: list = []
    for batch in payload_batches:
        values, error = decode(batch)
        chunks, failure = _batch_chunks(values)
        out += chunks
        if error is not None or failure is not None:
            return [*out, str(error or failure)]
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.sampled_from(ODD), max_size=12), max_size=8))
def test_any_mix_of_odd_events_reads_the_same_as_parsing_each(batches):
    assert through(batches, scan=True) == through(batches, scan=False)


def test_a_run_of_argument_events_is_read_without_parsing_them():
    pieces = ['{"code": "print(\\"hi\\")\\n', *(f"line {i} \u00e9 " for i in range(300)), '"}']
    payloads = [head(0, "run"), *(args(0, p) for p in pieces), event({}, finish="tool_calls")]
    scanner = delta_scan.DeltaScanner(sse.decode, _classify)
    values, error = scanner.decode(payloads)
    assert error is None
    assert len(values) < 10  # 300 events came out as a few runs, not 300 parsed dicts
    assert _batch_chunks(values) == _batch_chunks(sse.decode(payloads)[0])
    chunks = _batch_chunks(values)[0]
    assert [type(c) for c in chunks[:1]] == [ToolCallChunk]
    assert json.loads(chunks[0].arguments)["code"].startswith('print("hi")\nline 0 é')


def test_a_stream_where_no_two_events_are_alike_stops_trying_templates():
    payloads = [args(0, f"piece {i}", obfuscation="x" * (i % 17)) for i in range(500)]
    scanner = delta_scan.DeltaScanner(sse.decode, _classify)
    looked: list = []
    scanner._classify = lambda value: looked.append(value) or _classify(value)  # count them
    values, error = scanner.decode(payloads)
    assert error is None and _batch_chunks(values) == _batch_chunks(sse.decode(payloads)[0])
    assert len(looked) <= delta_scan.TRIES * 3  # each try: the event, then two probes


def test_templates_that_never_matched_are_dropped_and_the_rest_is_parsed_plainly():
    payloads = [args(0, f"piece {i}", obfuscation=f"pad{i}") for i in range(200)]
    scanner = delta_scan.DeltaScanner(sse.decode, _classify)
    values, error = scanner.decode(payloads[:100])
    assert error is None and scanner._templates == []  # each event differs: none kept
    more, error = scanner.decode(payloads[100:])
    assert error is None
    assert _batch_chunks(values + more) == _batch_chunks(sse.decode(payloads)[0])


# --------------------------------------------------------------------------- over HTTP


def joined(chunks: list) -> list:
    """Neighbours joined as the provider joins a backlog (backlogs differ run to run)."""
    out: list = []
    for chunk in chunks:
        last = out[-1] if out else None
        if type(chunk) in (TextChunk, ReasoningChunk) and type(last) is type(chunk):
            out[-1] = type(chunk)(last.text + chunk.text)
        elif (type(chunk) is ToolCallChunk and type(last) is ToolCallChunk
              and chunk.index == last.index and chunk.id is None and chunk.name is None):
            out[-1] = ToolCallChunk(last.index, last.id, last.name,
                                    last.arguments + chunk.arguments)
        else:
            out.append(chunk)
    return out


async def read(url: str, scan: bool) -> tuple[list, ProviderError | None]:
    provider = Provider(ProviderConfig(base_url=url, model="m", max_retries=0, timeout_s=5.0),
                        fast_reads=scan)
    chunks: list = []
    failure = None
    try:
        async with aclosing(provider.stream([{"role": "user", "content": "hi"}])) as stream:
            async for chunk in stream:
                chunks.append(chunk)
    except ProviderError as exc:
        failure = exc
    finally:
        await provider.aclose()
    return joined(chunks), failure


HOSTILE_STREAMS = {
    "interleaved calls with escapes": [
        ODD[0], head(0, "remember"), head(1, "forget"),
        *(args(i % 2, f'{i} \\"q\\" \u00e9 \\\\ ') for i in range(200)),
        event({"content": "between"}), *(args(0, "tail ") for _ in range(50)),
        event({}, finish="tool_calls"), USAGE],
    "text, reasoning, hostile text": [
        *(event({"reasoning_content": "think "}) for _ in range(80)),
        *(event({"content": text}) for _, text in CORPUS * 10),
        *(event({"content": 'say "\u00e9" \U0001f600 '}) for _ in range(80)),
        event({}, finish="stop"), USAGE],
    "malformed after a run": [
        head(0, "remember"), *(args(0, "x y ") for _ in range(100)), '{"choices": [ {"delta": '],
    "a template look-alike that is not JSON": [
        head(0, "remember"), *(args(0, "x y ") for _ in range(100)), PREFIX + '"a"b"' + SUFFIX],
}


@pytest.mark.parametrize("name", HOSTILE_STREAMS)
async def test_the_real_client_reads_odd_streams_the_same_either_way(name):
    async with DemoServer([Events(tuple(HOSTILE_STREAMS[name]))] * 2) as url:
        fast = await read(url, scan=True)
        slow = await read(url, scan=False)
    assert fast[0] == slow[0] and fast[0]
    if name.startswith(("malformed", "a template")):
        assert fast[1] is not None and slow[1] is not None
        assert (fast[1].kind, fast[1].message) == (slow[1].kind, slow[1].message)
        assert fast[1].kind == "protocol" and "malformed stream chunk" in fast[1].message
        assert fast[0][-1].arguments.endswith("x y " * 5)  # what came before is kept
    else:
        assert fast[1] is None and slow[1] is None
