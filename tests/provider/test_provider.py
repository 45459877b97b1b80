"""Provider over real HTTP (the real openai client) against the in-package DemoServer."""

from __future__ import annotations

import asyncio
import json
import time
from contextlib import aclosing

import pytest

from selfref_tui.agent.provider.chunks import (
    FinishChunk,
    ReasoningChunk,
    TextChunk,
    ToolCallChunk,
    UsageChunk,
)
from selfref_tui.agent.provider.client import Provider
from selfref_tui.agent.provider.errors import ProviderError
from selfref_tui.agent.provider.hosts import is_local, is_openai
from selfref_tui.config import ProviderConfig
from selfref_tui.demo import (
    DemoServer,
    Drop,
    Hang,
    HttpError,
    Malformed,
    Overflow,
    Reply,
    Stall,
    ToolCall,
)
from tests.agent.helpers import HANG_S, wait_until

MESSAGES = [{"role": "user", "content": "hello"}]


_OPEN: list[Provider] = []


def make(url: str, **kw) -> Provider:
    cfg = {"base_url": url, "model": "test-model", "max_retries": 0, "timeout_s": 5.0, **kw}
    provider = Provider(ProviderConfig(**cfg), backoff_base_s=0.01)
    _OPEN.append(provider)
    return provider


@pytest.fixture(autouse=True)
async def _close_providers():
    """An unclosed AsyncOpenAI schedules its close on a dead loop; close them in the test's."""
    yield
    while _OPEN:
        await _OPEN.pop().aclose()


async def collect(provider: Provider, tools=None, on_retry=None) -> list:
    out = []
    async with aclosing(provider.stream(MESSAGES, tools, on_retry=on_retry)) as chunks:
        async for chunk in chunks:
            out.append(chunk)
    return out


async def failure(provider: Provider, **kw) -> tuple[ProviderError, list]:
    seen: list = []
    with pytest.raises(ProviderError) as info:
        async for chunk in provider.stream(MESSAGES, **kw):
            seen.append(chunk)
    return info.value, seen


def text_of(chunks: list) -> str:
    return "".join(c.text for c in chunks if isinstance(c, TextChunk))


async def test_text_reasoning_usage_and_request_fields():
    answer = 'Here is <ref id="x">print(1)</ref> and more text.'
    server = DemoServer([Reply(text=answer, reasoning="thinking hard", chunk_chars=3)])
    async with server as url:
        provider = make(url, temperature=0.2, max_output_tokens=99)
        tools = [{"type": "function", "function": {"name": "remember", "parameters": {}}}]
        chunks = await collect(provider, tools)
        await provider.aclose()
    assert text_of(chunks) == answer
    assert len([c for c in chunks if isinstance(c, TextChunk)]) > 5  # really streamed
    assert "".join(c.text for c in chunks if isinstance(c, ReasoningChunk)) == "thinking hard"
    assert [c.reason for c in chunks if isinstance(c, FinishChunk)] == ["stop"]
    usage = [c for c in chunks if isinstance(c, UsageChunk)]
    assert usage and usage[0].usage["completion_tokens"] > 0
    body = server.requests[0]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["model"] == "test-model" and body["messages"] == MESSAGES
    assert body["tools"] == tools and body["temperature"] == 0.2 and body["max_tokens"] == 99


async def test_no_tools_key_when_no_tools_and_no_optional_settings():
    server = DemoServer([Reply(text="ok")])
    async with server as url:
        provider = make(url)
        await collect(provider)
    body = server.requests[0]
    assert "tools" not in body and "temperature" not in body and "max_tokens" not in body


async def test_interleaved_tool_calls_reassemble():
    calls = [ToolCall("remember", {"text": "the person likes tea " * 3}),
             ToolCall("forget", {"experience_id": "exp_002"}),
             ToolCall("fork_spawn", {"task": "a", "instruction": "b"})]
    async with DemoServer([Reply(text="ok", tool_calls=calls, chunk_chars=4)]) as url:
        chunks = await collect(make(url))
    deltas = [c for c in chunks if isinstance(c, ToolCallChunk)]
    indexes = [d.index for d in deltas if d.id is None]
    assert indexes[:3] == [0, 1, 2]  # interleaved across calls
    names, args, ids = {}, {}, {}
    for d in deltas:
        if d.id:
            ids[d.index], names[d.index] = d.id, d.name
        args[d.index] = args.get(d.index, "") + d.arguments
    assert names == {0: "remember", 1: "forget", 2: "fork_spawn"}
    assert len(set(ids.values())) == 3
    assert [json.loads(args[i]) for i in range(3)] == [c.arguments for c in calls]
    assert [c.reason for c in chunks if isinstance(c, FinishChunk)] == ["tool_calls"]


async def test_api_key_checked_and_401_is_actionable():
    async with DemoServer([Reply(text="ok")], api_key="sekrit") as url:
        assert text_of(await collect(make(url, api_key="sekrit"))) == "ok"
        error, _ = await failure(make(url, api_key="wrong", api_key_env="MY_KEY"))
    assert error.kind == "auth" and not error.partial
    assert f"API key rejected by {url}" in error.message and "MY_KEY" in error.message
    assert "sekrit" not in error.message and "wrong" not in error.message


async def test_unknown_model_named():
    async with DemoServer([Reply(text="ok")], models=("known",)) as url:
        error, _ = await failure(make(url, model="nope-7b"))
    assert error.kind == "model" and "nope-7b" in error.message and "--model" in error.message


async def test_429_honours_retry_after_then_succeeds():
    script = [HttpError(429, "slow down", {"Retry-After": "0.2"}), Reply(text="finally")]
    retries: list = []
    async with DemoServer(script) as url:
        started = time.monotonic()
        chunks = await collect(make(url, max_retries=2),
                               on_retry=lambda *a: retries.append(a))
        elapsed = time.monotonic() - started
    assert text_of(chunks) == "finally"
    assert len(retries) == 1 and retries[0][0] == 1 and retries[0][1] == pytest.approx(0.2)
    assert "429" in retries[0][2]
    assert elapsed >= 0.2


async def test_429_exhausted_retries_is_rate_limit_error():
    script = [HttpError(429, "slow down", {"Retry-After": "0"})] * 3
    retries: list = []
    async with DemoServer(script) as url:
        error, _ = await failure(make(url, max_retries=2), on_retry=lambda *a: retries.append(a))
    assert error.kind == "rate_limit" and url in error.message
    assert [r[0] for r in retries] == [1, 2]


async def test_5xx_retried_with_backoff_then_error():
    script = [HttpError(503, "overloaded"), Reply(text="recovered")]
    retries: list = []
    async with DemoServer(script) as url:
        chunks = await collect(make(url, max_retries=1), on_retry=lambda *a: retries.append(a))
    assert text_of(chunks) == "recovered" and retries[0][1] > 0
    async with DemoServer([HttpError(500, "boom")] * 2) as url:
        error, _ = await failure(make(url, max_retries=1))
    assert error.kind == "server" and "500" in error.message and url in error.message


async def test_400_is_bad_request_and_never_re_sent():
    bad = HttpError(400, "messages[1] is invalid", type="invalid_request_error")
    server = DemoServer([bad] * 3)
    async with server as url:
        provider = make(url, max_retries=3)
        error, _ = await failure(provider)
    assert error.kind == "bad_request" and "messages[1] is invalid" in error.message
    # not a stream_options refusal: no silent re-send, and usage stays on
    assert len(server.requests) == 1 and provider.stream_options_ok


async def test_connection_refused_names_url():
    server = DemoServer([])
    url = await server.start()
    await server.stop()
    retries: list = []
    error, _ = await failure(make(url, max_retries=1), on_retry=lambda *a: retries.append(a))
    assert error.kind == "connection" and f"cannot reach {url}" in error.message
    assert len(retries) == 1


async def test_timeout_before_output():
    never = asyncio.Event()
    async with DemoServer([Stall(never)]) as url:
        error, seen = await failure(make(url, timeout_s=0.3))
        never.set()
    assert error.kind == "timeout" and not error.partial and url in error.message
    assert seen == []


async def test_stream_dropped_midway_is_partial_connection_lost():
    async with DemoServer([Drop("partial answer that gets cut")]) as url:
        error, seen = await failure(make(url))
    assert error.kind == "connection" and error.partial
    assert "connection lost" in error.message
    assert text_of(seen) == "partial answer that gets cut"


async def test_malformed_chunk_is_protocol_error():
    async with DemoServer([Malformed("some text")]) as url:
        error, seen = await failure(make(url))
    assert error.kind == "protocol" and error.partial and url in error.message
    assert text_of(seen) == "some text"


async def test_server_rejecting_stream_options_gets_a_second_try_without():
    server = DemoServer([Reply(text="one"), Reply(text="two")], reject_stream_options=True)
    notices: list = []
    async with server as url:
        provider = make(url)
        first = [c async for c in provider.stream(MESSAGES, on_notice=lambda *n: notices.append(n))]
        second = await collect(provider)
    assert text_of(first) == "one" and text_of(second) == "two"
    assert not any(isinstance(c, UsageChunk) for c in first)
    # rejected once, said once, then remembered for the next call
    assert ["stream_options" in r for r in server.requests] == [True, False, False]
    assert len(notices) == 1 and "stream_options" in notices[0][0] and url in notices[0][0]
    assert notices[0][1] == "warning"


@pytest.mark.parametrize(("url", "openai_host"), [
    ("https://api.openai.com/v1", True),
    ("https://API.OpenAI.com./v1/", True),
    ("https://api.openai.com:443/v1", True),
    ("https://api.openai.com.evil.example/v1", False),
    ("https://evil.example/api.openai.com/v1", False),
    ("https://eu.api.openai.com.proxy.example/v1", False),
    ("https://openrouter.ai/api/v1", False),
    ("http://127.0.0.1:8080/v1", False),
])
def test_only_openais_own_api_is_asked_to_leave_out_obfuscation(url, openai_host):
    """OpenAI pads each chunk with a random ``obfuscation`` field (delta_scan then never
    matches) unless told not to; other servers may refuse the unknown option."""
    assert is_openai(url) is openai_host and not is_openai("http://[::1")  # not a URL
    provider = Provider(ProviderConfig(base_url=url, model="m", api_key="k"))
    wanted = {"include_usage": True, **({"include_obfuscation": False} if openai_host else {})}
    assert provider._request(MESSAGES, None)["stream_options"] == wanted
    # a server that refused stream_options is asked without any, OpenAI's too
    provider._no_stream_options.add(url)
    assert "stream_options" not in provider._request(MESSAGES, None)


async def test_a_422_naming_stream_options_also_turns_it_off():
    script = [HttpError(422, "body.stream_options: extra fields not permitted",
                        type="invalid_request_error"), Reply(text="fine")]
    server = DemoServer(script)
    async with server as url:
        provider = make(url)
        assert text_of(await collect(provider)) == "fine"
    assert ["stream_options" in r for r in server.requests] == [True, False]
    assert not provider.stream_options_ok


async def test_server_error_text_is_kept_in_full():
    long = "the real cause is at the end: " + "x" * 300 + " — tool_call_id missing"
    async with DemoServer([HttpError(400, long, type="invalid_request_error")]) as url:
        error, _ = await failure(make(url))
    assert len(error.message) < 300 and error.detail == long


async def test_error_texts_never_show_the_key():
    key = "sk-proj-abcdefghijklmnopqrstuvwxyz"
    echo = HttpError(400, f"bad header Authorization: Bearer {key}", type="invalid_request_error")
    async with DemoServer([echo]) as url:
        error, _ = await failure(make(url, api_key=key))
    assert key not in error.message and key not in error.detail


async def test_content_null_refusal_from_a_strict_server_is_not_retried_and_kept_in_full():
    # what llama-cpp-python answers a body its pydantic model refuses: 500 + the report
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    messages = [{"role": "user", "content": "hi"},
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "c1", "content": "ok"}]
    server = DemoServer([Reply(text="never")] * 3)
    async with server as url:
        provider = make(url, max_retries=2)
        with pytest.raises(ProviderError) as info:
            async for _ in provider.stream(messages):
                pass
    error = info.value
    assert error.kind == "bad_request" and error.status == 500 and len(server.requests) == 1
    assert "7 validation errors:" in error.message
    assert error.detail.count("\n") == 7 and "'input': None" in error.detail


@pytest.mark.parametrize("refusal", [
    HttpError(400, "This model's maximum context length is 4096 tokens. However, you requested "
              "5000 tokens (5000 in the messages, 0 in the completion).",
              type="BadRequestError"),  # vLLM
    HttpError(400, "Your input exceeds the context window of this model.",
              code="context_length_exceeded", type="invalid_request_error"),  # OpenAI
    HttpError(400, "the request exceeds the available context size, try increasing it",
              code="exceed_context_size_error", type="exceed_context_size_error"),  # llama.cpp
    HttpError(400, "prompt is too long: 210000 tokens > 200000 maximum",
              type="invalid_request_error"),
])
async def test_length_refusals_are_context_overflow(refusal):
    server = DemoServer([refusal] * 3)
    async with server as url:
        error, _ = await failure(make(url, max_retries=2))
    assert error.kind == "context_overflow" and len(server.requests) == 1
    assert "no longer fits the model's window" in error.message
    assert error.detail == refusal.message


async def test_overflow_figures_are_read_off_the_server_text():
    async with DemoServer([Overflow(window=4096, tokens=5000, style="vllm")]) as url:
        error, _ = await failure(make(url))
    assert (error.tokens, error.window) == (5000, 4096)
    assert "(5000 of 4096 tokens)" in error.message


async def test_empty_stream_after_a_length_error_is_named_an_overflow():
    # llama-cpp-python: 200, then nothing; asked once without streaming, it says why
    server = DemoServer(lambda body, i: Overflow(window=1024, tokens=1500))
    async with server as url:
        error, seen = await failure(make(url))
    assert seen == [] and error.kind == "context_overflow"
    assert (error.tokens, error.window) == (1500, 1024)
    assert [r["stream"] for r in server.requests] == [True, False]
    assert server.requests[1]["max_tokens"] == 1


def test_only_a_server_on_this_machine_counts_as_local():
    for url in ("http://localhost:8080/v1", "http://127.0.0.1:9/v1", "http://127.8.9.1/v1",
                "http://[::1]:8000/v1", "http://[::ffff:127.0.0.1]:1/v1", "http://LOCALHOST./v1",
                "http://api.localhost/v1"):
        assert is_local(url), url
    for url in ("https://api.openai.com/v1", "http://192.168.1.20:8000/v1", "http://[fd00::2]/v1",
                "http://localhost.example.com/v1", "http://10.0.0.1/v1", "not a url", ""):
        assert not is_local(url), url


def _address_off_loopback() -> str:
    """This machine's address on a real interface (no packet is sent), or skip."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))
            address = probe.getsockname()[0]
        except OSError:
            address = ""
    if not address or address.startswith("127."):
        pytest.skip("no network interface besides loopback")
    return address


async def test_an_empty_stream_from_another_machine_is_not_asked_again():
    # a second, non-streamed request could be billed on a paid API: one request only
    server = DemoServer(lambda body, i: Overflow(window=1024, tokens=1500),
                        host=_address_off_loopback())
    async with server as url:
        error, seen = await failure(make(url))
    assert seen == [] and [r["stream"] for r in server.requests] == [True]
    assert error.kind == "protocol"
    assert "ended the stream without an answer or an error — check its log" in error.message
    assert "too long for the model's window" in error.message


async def test_empty_stream_for_another_reason_stays_a_protocol_error():
    script = [Overflow(), Reply(text="a non-streamed answer")]
    async with DemoServer(script) as url:
        error, _ = await failure(make(url))
    assert error.kind == "protocol" and "without an answer" in error.message


async def test_server_enforcing_its_window_refuses_long_requests_only():
    server = DemoServer([Reply(text="short is fine")], context_window=200, enforce_window=True)
    async with server as url:
        assert text_of(await collect(make(url))) == "short is fine"
        long = [{"role": "user", "content": "word " * 400}]
        with pytest.raises(ProviderError) as info:
            async for _ in make(url).stream(long):
                pass
    assert info.value.kind == "context_overflow" and info.value.window == 200


async def test_cancelling_the_consumer_closes_the_http_stream_at_once():
    release = asyncio.Event()
    stall = Stall(release, text_before="first words ", text_after="never sent")
    server = DemoServer([stall])
    async with server as url:
        provider = make(url)
        got: list = []

        async def consume():
            async for chunk in provider.stream(MESSAGES):
                got.append(chunk)

        task = asyncio.create_task(consume())
        await asyncio.wait_for(stall.reached.wait(), HANG_S)
        await asyncio.sleep(0.05)
        task.cancel()
        started = time.monotonic()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await server.wait_disconnect(HANG_S)
        # The stall never ends by itself: any bound tells "at once" from "never",
        # and a generous one holds on a loaded machine.
        assert time.monotonic() - started < 10
        assert server.disconnects == 1
        assert text_of(got) == "first words "


async def test_aclose_closes_the_http_stream():
    release = asyncio.Event()
    stall = Stall(release, text_before="hello ")
    server = DemoServer([stall, Reply(text="next call works")])
    async with server as url:
        provider = make(url)
        gen = provider.stream(MESSAGES)
        first = await anext(gen)
        while not isinstance(first, TextChunk):
            first = await anext(gen)
        await gen.aclose()
        assert await server.wait_disconnect(HANG_S)
        assert text_of(await collect(provider)) == "next call works"


async def test_paced_stream_takes_time():
    async with DemoServer([Reply(text="one two three four five six seven eight nine ten")],
                          tokens_per_s=100) as url:
        started = time.monotonic()
        await collect(make(url))
    assert time.monotonic() - started >= 0.09  # ten tokens at 100/s


async def test_list_models():
    async with DemoServer([], models=("alpha", "beta")) as url:
        assert await make(url).list_models() == ["alpha", "beta"]


async def test_request_is_what_chat_completions_create_would_send():
    """We post our plain payload ourselves (create()'s TypedDict walk costs ~200 ms at
    1,000 messages): the server must see the same body and headers as from create()."""
    import openai

    history = [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "ünïcode ✓ and \"quotes\""},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "remember", "arguments": '{"text": "tea"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    ]
    tools = [{"type": "function", "function": {"name": "remember", "parameters": {}}}]
    # the provider sends what it is given (shaping is the render's job): a lenient server
    server = DemoServer([Reply(text="a"), Reply(text="b")], api_key="sk-same", strict=False)
    async with server as url:
        provider = make(url, api_key="sk-same", temperature=0.5, max_output_tokens=7)
        chunks = []
        async for chunk in provider.stream(history, tools):
            chunks.append(chunk)
        client = openai.AsyncOpenAI(base_url=url, api_key="sk-same", max_retries=0, timeout=5.0)
        try:
            stream = await client.chat.completions.create(
                model="test-model", messages=history, tools=tools, stream=True,
                stream_options={"include_usage": True}, temperature=0.5, max_tokens=7)
            async for _ in stream:
                pass
        finally:
            await client.close()
    assert text_of(chunks) == "a"
    assert server.requests[0] == server.requests[1]
    assert server.requests[0]["messages"] == history
    ours, theirs = server.headers
    assert ours == theirs and ours["authorization"] == "Bearer sk-same"
    assert ours["x-stainless-read-timeout"] == "5.0"


@pytest.mark.parametrize("payload", [
    '{"choices": "nope"}',
    '[1, 2]',
    '{"choices": [{"index": 0, "delta": {"content": 5}, "finish_reason": null}]}',
    '{"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"name": 3}}]}}]}',
    '{"choices": [{"delta": {"tool_calls": ["x"]}}]}',
    '{"choices": [{"delta": "text", "finish_reason": "stop"}]}',
])
async def test_json_of_the_wrong_shape_is_a_protocol_error(payload):
    async with DemoServer([Malformed("before ", payload=payload)]) as url:
        error, seen = await failure(make(url))
    assert error.kind == "protocol" and error.partial and "malformed" in error.message
    assert text_of(seen) == "before "


async def test_nulls_reasoning_key_and_nested_usage_are_read_leniently():
    last = ('{"choices":[{"index":0,"delta":{"content":null,"tool_calls":null,'
            '"reasoning":"hmm"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,'
            '"completion_tokens":1,"total_tokens":4,"completion_tokens_details":'
            '{"reasoning_tokens":0}}}')
    async with DemoServer([Malformed("text ", payload=last)]) as url:
        chunks = await collect(make(url))
    assert text_of(chunks) == "text "
    assert [c.text for c in chunks if isinstance(c, ReasoningChunk)] == ["hmm"]
    assert [c.reason for c in chunks if isinstance(c, FinishChunk)] == ["stop"]
    assert [c.usage for c in chunks if isinstance(c, UsageChunk)] == [
        {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}]


async def test_history_changed_in_place_between_calls_is_sent_as_it_is_now():
    """The body encoder reuses earlier encodings of unchanged messages only."""
    history = [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        {"role": "user", "content": "second ✓"},
    ]
    # hand-built history (null content, user after user): a lenient server
    server = DemoServer([Reply(text="a"), Reply(text="b"), Reply(text="c"), Reply(text="d")],
                        strict=False)
    async with server as url:
        provider = make(url)
        for _ in range(2):
            async for _chunk in provider.stream(history):
                pass
        history[1]["tool_calls"][0]["function"]["arguments"] = '{"x": 1}'  # nested, in place
        history.append({"role": "user", "content": "third"})
        async for _chunk in provider.stream(history):
            pass
        del history[1:]  # a compaction: shorter than before
        async for _chunk in provider.stream(history):
            pass
    sent = [r["messages"] for r in server.requests]
    assert sent[0] == sent[1]
    assert sent[2][1]["tool_calls"][0]["function"]["arguments"] == '{"x": 1}'
    assert sent[2][-1] == {"role": "user", "content": "third"} and len(sent[2]) == 5
    assert sent[3] == [{"role": "user", "content": "first"}]


def test_body_encoder_keeps_a_long_image_url_once_not_as_encoded_bytes_too():
    """The encodings kept between calls hold a long image URL as the message's own
    string (27 MB more per attached 20 MB picture otherwise); the body is still exact,
    fork slots too, and a URL the JSON escapes stays in the bytes."""
    from selfref_tui.agent.provider.encode import _EncodedMessages
    from selfref_tui.context.images import data_url, image_part

    first = data_url("image/png", b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 400)
    second = data_url("image/gif", b"GIF89a" + bytes(range(256)) * 300)
    odd = "data:image/png;base64," + '"\\é' * 70_000  # escaped: not shared
    history = [{"role": "system", "content": "base ✓"},
               {"role": "user", "content": [{"type": "text", "text": "two ✓"},
                                            image_part(first), image_part(second)]},
               {"role": "assistant", "content": "seen"},
               {"role": "user", "content": [image_part(odd)]}]
    encoder = _EncodedMessages()
    for step in range(3):
        history.append({"role": "user", "content": f"more {step}"})
        request = {"model": "m", "messages": history}
        assert encoder.body(request) == json.dumps(
            request, ensure_ascii=False, separators=(",", ":")).encode()
    fork = [*history[:3], {"role": "user", "content": [image_part(first)]}]
    assert json.loads(encoder.body({"messages": fork})) == {"messages": fork}
    for _, encoded in encoder._slots:
        kept = [piece for item in encoded for piece in
                ((item,) if isinstance(item, bytes) else item)]
        assert not [b for b in kept if isinstance(b, bytes)
                    and (first.encode() in b or second.encode() in b)]
        assert any(piece is first for piece in kept)


def test_body_encoder_interleaving_histories_stays_exact():
    """Forks stream next to their parent: each history keeps its own encodings."""
    from selfref_tui.agent.provider.encode import _EncodedMessages

    encoder = _EncodedMessages()
    parent = [{"role": "system", "content": "base ✓"}] + [
        {"role": "user", "content": f"m{i}"} for i in range(20)]
    fork = [*parent[:10], {"role": "user", "content": "the fork's task"}]
    for step in range(6):
        for history in (parent, fork):
            history.append({"role": "assistant", "content": f"step {step}"})
            request = {"model": "m", "messages": history, "stream": True}
            assert json.loads(encoder.body(request)) == request
    assert [len(copies) for copies, _ in encoder._slots] == [len(parent), len(fork)]
    assert json.loads(encoder.body({"messages": []})) == {"messages": []}


async def test_a_server_that_accepts_and_never_answers_hits_the_first_byte_timeout():
    # the headers never come: bounded, named, and not re-sent (the server has it)
    for headers in (False, True):
        server = DemoServer([Hang(headers=headers)] * 4)
        async with server as url:
            error, _ = await failure(make(url, max_retries=3, first_byte_timeout_s=0.3))
            # On a loaded machine the client may give up before this server (on the
            # same loop) has read the request: wait until it read every connection's.
            await wait_until(lambda s=server: len(s.requests) >= s.connections >= 1,
                             what="the server reading the request")
        assert error.kind == "timeout" and "first_byte_timeout_s" in error.message
        assert "0.3 s" in error.message and url in error.message
        assert server.connections == 1 and len(server.requests) == 1


async def test_a_stream_that_goes_silent_hits_the_idle_timeout_and_keeps_the_part():
    never = asyncio.Event()
    async with DemoServer([Stall(never, text_before="half an ans")]) as url:
        error, seen = await failure(make(url, idle_timeout_s=0.3, first_byte_timeout_s=5))
    assert error.kind == "timeout" and error.partial and "idle_timeout_s" in error.message
    assert text_of(seen) == "half an ans"


async def test_slow_consumer_time_does_not_count_as_server_silence():
    async with DemoServer([Reply(text="one two three", tokens_per_s=None)]) as url:
        provider = make(url, idle_timeout_s=0.2)
        out = []
        async for chunk in provider.stream(MESSAGES):
            out.append(chunk)
            await asyncio.sleep(0.3)  # the consumer is slow, the server is not
    assert text_of(out) == "one two three"


async def test_cancelling_a_wait_for_the_first_byte_is_immediate():
    hang = Hang(headers=True)
    server = DemoServer([hang])
    async with server as url:
        provider = make(url, first_byte_timeout_s=60)
        task = asyncio.create_task(collect(provider))
        await asyncio.sleep(0.3)
        started = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # Well under the 60 s it must not wait for, and generous for a loaded machine.
        assert time.monotonic() - started < 20
        assert await server.wait_disconnect(5)


async def test_retry_notes_have_a_short_reason():
    script = [HttpError(429, "slow down", headers={"retry-after": "0"}), Reply(text="ok")]
    retries: list = []
    async with DemoServer(script) as url:
        await collect(make(url, max_retries=3), on_retry=lambda *a: retries.append(a))
    assert retries == [(1, 0.0, "rate limited (429)")]


async def test_think_tags_in_content_arrive_as_reasoning_over_http():
    step = Reply(text="<think>first the plan</think>\n\nThe answer.", chunk_chars=3)
    async with DemoServer([step]) as url:
        chunks = await collect(make(url))
    reasoning = "".join(c.text for c in chunks if isinstance(c, ReasoningChunk))
    assert reasoning == "first the plan" and text_of(chunks) == "The answer."
    assert isinstance(chunks[-1], (FinishChunk, UsageChunk))


IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
WITH_IMAGE = [{"role": "user", "content": [{"type": "text", "text": "look"}, IMAGE]}]


async def test_a_validation_report_echoing_an_image_is_not_read_as_images_refused():
    # llama-cpp-python's 500 report echoes the refused message: a tool argument that
    # speaks of "an image" must not turn it into "the model does not accept images"
    call = {"id": "c1", "type": "function",
            "function": {"name": "draw", "arguments": '{"what": "an image of a cat"}'}}
    messages = [{"role": "user", "content": "draw"},
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "c1", "content": "ok"}]
    server = DemoServer([Reply(text="never")], refuse_images=True)
    async with server as url:
        provider = make(url)
        with pytest.raises(ProviderError) as info:
            async for _ in provider.stream(messages):
                pass
    error = info.value
    assert error.kind == "bad_request" and error.status == 500
    assert "validation errors:" in error.message and "an image of a cat" in error.detail
    assert "does not accept images" not in error.message and not error.images_refused
    assert provider.images_ok


@pytest.mark.parametrize("messages", [MESSAGES, WITH_IMAGE], ids=["text", "image"])
async def test_a_5xx_that_speaks_of_vision_is_a_server_failure_and_retried(messages):
    server = DemoServer([HttpError(500, "vision encoder crashed"), Reply(text="fine")])
    async with server as url:
        provider = make(url, max_retries=1)
        async with aclosing(provider.stream(messages)) as chunks:
            assert text_of([c async for c in chunks]) == "fine"
    assert len(server.requests) == 2 and provider.images_ok


async def test_a_400_naming_multimodal_without_images_sent_is_a_plain_refusal():
    refusal = HttpError(400, "unknown tool 'multimodal_search'", type="invalid_request_error")
    async with DemoServer([refusal]) as url:
        error, _ = await failure(make(url))
    assert error.kind == "bad_request" and "does not accept images" not in error.message
    assert "multimodal_search" in error.message and not error.images_refused


async def test_a_5xx_naming_image_input_of_a_request_with_images_is_images_refused():
    # llama.cpp without --mmproj answers an image this way
    refusal = HttpError(500, "image input is not supported - hint: if this is unexpected, "
                        "you may need to provide the mmproj")
    server = DemoServer([refusal] * 2)
    async with server as url:
        provider = make(url, max_retries=1)
        with pytest.raises(ProviderError) as info:
            async for _ in provider.stream(WITH_IMAGE):
                pass
    error = info.value
    assert error.images_refused and error.kind == "bad_request"
    assert error.message.startswith("model 'test-model' does not accept images")
    assert len(server.requests) == 1 and not provider.images_ok


def test_body_encoder_keeps_an_images_url_not_a_copy():
    """An attached 20 MB picture is a 27 MB data URL: the copy the encoder compares with
    shares it (a decoded copy of its JSON was 27 MB more per image)."""
    from selfref_tui.agent.provider.encode import _EncodedMessages
    from selfref_tui.context.images import data_url

    url = data_url("image/png", b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 64)
    message = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}
    encoder = _EncodedMessages()
    assert json.loads(encoder.body({"messages": [message]})) == {"messages": [message]}
    [copy] = encoder._slots[0][0]
    assert copy == message and copy is not message
    assert copy["content"][0]["image_url"]["url"] is url
    message["content"].append({"type": "text", "text": "changed in place"})
    assert b"changed in place" in encoder.body({"messages": [message]})


async def test_an_empty_stream_is_diagnosed_for_a_history_holding_half_a_surrogate_pair():
    """The question asked without streaming carries the same history: half an emoji's
    pair in it (a JSON escape an earlier answer held) is sent escaped there too, and
    the overflow is named, not an encoding error."""
    messages = [{"role": "assistant", "content": "cut in two: \ud83d"}, *MESSAGES]
    server = DemoServer(lambda body, i: Overflow(window=1024, tokens=1500))
    async with server as url:
        with pytest.raises(ProviderError) as info:
            async for _ in make(url).stream(messages):
                pass
    assert info.value.kind == "context_overflow"
    assert [r["stream"] for r in server.requests] == [True, False]
    assert server.requests[1]["messages"][0]["content"] == "cut in two: \ud83d"
