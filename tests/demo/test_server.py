"""DemoServer over real HTTP with the openai client, and the demo model's choices."""

from __future__ import annotations

import asyncio
import json

import openai
import pytest

from selfref_tui.agent.provider.chunks import TextChunk, ToolCallChunk
from selfref_tui.agent.provider.client import Provider
from selfref_tui.agent.tools.schemas import tool_schemas
from selfref_tui.demo import (
    DEMO_MODEL,
    DEMO_SCRIPT,
    DemoServer,
    HttpError,
    Reply,
    Stall,
    ToolCall,
    demo_provider,
    demo_server,
)
from selfref_tui.demo.script import DEMO_TAG
from selfref_tui.demo.server import split_text
from tests.agent.helpers import HANG_S

TOOLS = tool_schemas()


def client(url: str, key: str = "x") -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=url, api_key=key, max_retries=0, timeout=5)


async def test_non_streaming_completion_and_models():
    step = Reply(text="plain", tool_calls=[ToolCall("remember", {"text": "t"})])
    async with DemoServer([step], models=("m1",)) as url:
        api = client(url)
        done = await api.chat.completions.create(model="m1", messages=[
            {"role": "user", "content": "hi"}])
        models = await api.models.list()
        await api.close()
    message = done.choices[0].message
    assert message.content == "plain" and done.choices[0].finish_reason == "tool_calls"
    assert json.loads(message.tool_calls[0].function.arguments) == {"text": "t"}
    assert done.usage.total_tokens > 0
    assert [m.id for m in models.data] == ["m1"]


async def test_error_json_is_shaped_like_openai():
    async with DemoServer([HttpError(429, "too many", {"Retry-After": "3"}, code="rate")]) as url:
        api = client(url)
        with pytest.raises(openai.RateLimitError) as info:
            await api.chat.completions.create(model="m", messages=[])
        await api.close()
    assert info.value.code == "rate" and "too many" in info.value.message
    assert info.value.response.headers["retry-after"] == "3"


async def test_exhausted_script_fails_loudly():
    async with DemoServer([]) as url:
        api = client(url)
        with pytest.raises(openai.InternalServerError) as info:
            await api.chat.completions.create(model="m", messages=[])
        await api.close()
    assert "no step for call #1" in info.value.message


async def test_records_bodies_and_headers():
    server = DemoServer([Reply(text="a"), Reply(text="b")], api_key="k1")
    async with server as url:
        api = client(url, "k1")
        for _ in range(2):
            stream = await api.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "q"}], stream=True)
            async for _chunk in stream:
                pass
        await api.close()
    assert len(server.requests) == 2 and server.requests[0]["messages"][0]["content"] == "q"
    assert server.headers[0]["authorization"] == "Bearer k1"


async def test_client_disconnect_while_paced_is_not_an_error():
    server = DemoServer([Reply(text="word " * 500)], tokens_per_s=200)
    async with server as url:
        api = client(url)
        stream = await api.chat.completions.create(model="m", messages=[], stream=True)
        received = 0
        async for chunk in stream:
            received += len(chunk.choices[0].delta.content or "") if chunk.choices else 0
            if received > 20:
                break
        await stream.close()
        assert await server.wait_disconnect(HANG_S)
        await api.close()
    assert server.disconnects == 1


async def test_stop_while_a_stream_is_stalled():
    server = DemoServer([Stall(asyncio.Event(), text_before="x")])
    url = await server.start()
    api = client(url)
    stream = await api.chat.completions.create(model="m", messages=[], stream=True)
    first = await anext(stream)
    assert first.choices[0].delta.role == "assistant"
    await server.stop()
    with pytest.raises(openai.APIConnectionError):
        async for _chunk in stream:
            pass
    await api.close()


def test_split_text_round_trips():
    text = 'Hello <ref id="a">x</ref>\n\n  done'
    assert "".join(split_text(text, None)) == text
    assert "".join(split_text(text, 3)) == text and len(split_text(text, 3)) == 11


# ------------------------------------------------------------------ the demo model

def ask(prompt: str, *, system: str = "", tools=TOOLS) -> Reply:
    body = {"messages": [{"role": "system", "content": system},
                         {"role": "user", "content": prompt}], "tools": tools}
    step = DEMO_SCRIPT(body, 0)
    assert isinstance(step, Reply)
    return step


def names(step: Reply) -> list[str]:
    return [c.name for c in step.tool_calls]


def test_demo_model_picks_answers_from_the_conversation():
    refs = ask("show me some code")
    assert '<ref id="fib_recursive">' in refs.text and '<ref id="fib_iterative">' in refs.text
    assert "```python" in refs.text
    assert names(ask("remember that I like tea")) == ["remember"]
    assert ask("remember that I like tea").tool_calls[0].arguments["text"].endswith("I like tea")
    forget = ask("forget that", system="<experiences>exp_004: likes tea</experiences>")
    assert names(forget) == ["forget"]
    assert forget.tool_calls[0].arguments == {"experience_id": "exp_004"}
    assert names(ask("forget that")) == []  # nothing stored yet
    assert names(ask("fork two helpers")) == ["fork_spawn", "fork_spawn"]
    assert names(ask("fork two helpers", tools=tool_schemas(forks=False))) == []
    assert names(ask("please compact the context")) == ["compact"]
    assert len(ask("write something long").text) > 8_000
    assert "Try one of these" in ask("hi").text


def test_demo_model_follows_up_after_tool_results():
    spawn = ask("fork two helpers")
    calls = [{"id": f"c{i}", "type": "function",
              "function": {"name": c.name, "arguments": c.arguments_json()}}
             for i, c in enumerate(spawn.tool_calls)]
    base = [{"role": "user", "content": "fork two helpers"},
            {"role": "assistant", "content": spawn.text, "tool_calls": calls},
            {"role": "tool", "tool_call_id": "c0", "content": '{"fork_id": "fork_1"}'},
            {"role": "tool", "tool_call_id": "c1", "content": '{"fork_id": "fork_2"}'}]
    gather = DEMO_SCRIPT({"messages": base, "tools": TOOLS}, 1)
    assert names(gather) == ["fork_gather_all"]
    gather_call = {"id": "g", "type": "function",
                   "function": {"name": "fork_gather_all", "arguments": "{}"}}
    gathered = [*base, {"role": "assistant", "content": "", "tool_calls": [gather_call]},
                {"role": "tool", "tool_call_id": "g", "content": "fork_1: memo tables"}]
    final = DEMO_SCRIPT({"messages": gathered, "tools": TOOLS}, 2)
    assert names(final) == [] and "memo tables" in final.text
    child = DEMO_SCRIPT({"messages": [{"role": "user", "content": spawn.tool_calls[0]
                                       .arguments["task"]}], "tools": []}, 0)
    assert "child agent" in child.text


@pytest.mark.parametrize("prompt", ["hi", "show me some code", "remember x", "fork two",
                                    "compact", "write something long", "forget that"])
def test_every_demo_answer_says_it_is_the_demo_model(prompt):
    assert ask(prompt).text.startswith(DEMO_TAG)


async def test_demo_server_end_to_end_through_provider():
    server = demo_server(tokens_per_s=None)
    async with server as url, Provider(demo_provider(url)) as provider:
        chunks = [c async for c in provider.stream(
            [{"role": "user", "content": "remember that I use vim"}], TOOLS)]
    assert server.requests[0]["model"] == DEMO_MODEL
    text = "".join(c.text for c in chunks if isinstance(c, TextChunk))
    assert text.startswith(DEMO_TAG)
    args = "".join(c.arguments for c in chunks if isinstance(c, ToolCallChunk))
    assert json.loads(args) == {"text": "The person said: I use vim"}


def test_demo_server_in_a_thread():
    server = demo_server(tokens_per_s=None)
    url = server.start_in_thread()
    try:
        import urllib.request

        with urllib.request.urlopen(urllib.request.Request(
                url + "/models", headers={"Authorization": "Bearer demo"}), timeout=5) as r:
            assert json.loads(r.read())["data"][0]["id"] == DEMO_MODEL
    finally:
        server.stop_thread()


def test_demo_model_answers_the_runtime_note_after_a_compaction_briefly():
    """It used to read "selfref" in the note as "ref" and post its code answer again."""
    from selfref_tui.agent.turn.loop import AFTER_COMPACT_NOTE

    reply = ask(AFTER_COMPACT_NOTE)
    assert names(reply) == [] and "<ref" not in reply.text
    assert "compacted" in reply.text
    assert "Try one of these" in ask("tell me about selfref").text  # whole words only
    assert "<ref id=" in ask("list the refs").text
