"""The demo server's strict mode refuses what llama.cpp and strict chat templates refuse.

Over real HTTP with the openai client: each refusal with the real server's
status code and error text, and the same bodies accepted by a lenient server.
"""

from __future__ import annotations

import openai
import pytest

from selfref_tui.demo import DemoServer, Reply

CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
SYSTEM = {"role": "system", "content": "sys"}


def client(url: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=url, api_key="x", max_retries=0, timeout=5)


REFUSED = {
    "null content beside tool calls": (
        [SYSTEM, {"role": "user", "content": "hi"},
         {"role": "assistant", "content": None, "tool_calls": [CALL]},
         {"role": "tool", "tool_call_id": "c1", "content": "ok"}],
        500, "7 validation errors:"),
    "two user messages in a row": (
        [SYSTEM, {"role": "user", "content": "a"}, {"role": "user", "content": "b"}],
        400, "Conversation roles must alternate"),
    "a system message after the start": (
        [SYSTEM, {"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
         {"role": "system", "content": "late"}, {"role": "user", "content": "c"}],
        400, "System message must be at the beginning"),
    "a tool result without its call": (
        [SYSTEM, {"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
         {"role": "tool", "tool_call_id": "c9", "content": "orphan"}],
        400, "must be a response to a preceeding message with 'tool_calls'"),
    "a tool result for another call": (
        [SYSTEM, {"role": "user", "content": "a"},
         {"role": "assistant", "content": "", "tool_calls": [CALL]},
         {"role": "tool", "tool_call_id": "c2", "content": "wrong id"}],
        400, "must be a response to a preceeding message with 'tool_calls'"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
async def test_strict_server_refuses_like_the_real_ones(case):
    messages, status, text = REFUSED[case]
    server = DemoServer([Reply(text="accepted")] * 2)
    async with server as url, client(url) as api:
        with pytest.raises(openai.APIStatusError) as info:
            await api.chat.completions.create(model="m", messages=messages, stream=True)
    assert info.value.status_code == status
    assert text in info.value.body["message"]
    # the same body is fine for a lenient server (OpenAI accepts all of these)
    async with DemoServer([Reply(text="accepted")], strict=False) as url, client(url) as api:
        done = await api.chat.completions.create(model="m", messages=messages)
    assert done.choices[0].message.content == "accepted"


async def test_strict_server_accepts_a_well_formed_conversation_with_tools():
    messages = [SYSTEM, {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "", "tool_calls": [CALL]},
                {"role": "tool", "tool_call_id": "c1", "content": "ok"},
                {"role": "assistant", "content": "done"}, {"role": "user", "content": "more"}]
    async with DemoServer([Reply(text="fine")]) as url, client(url) as api:
        done = await api.chat.completions.create(model="m", messages=messages)
    assert done.choices[0].message.content == "fine"


async def test_null_content_report_is_long_like_llama_cpp_pythons():
    messages, _, _ = REFUSED["null content beside tool calls"]
    async with DemoServer([Reply()]) as url, client(url) as api:
        with pytest.raises(openai.InternalServerError) as info:
            await api.chat.completions.create(model="m", messages=messages)
    text = info.value.body["message"]
    # the text llama-cpp-python 0.3.36 answered (scripts/real-server-test.sh), line for line
    assert text.startswith("7 validation errors:\n  {'type': 'literal_error'")
    assert ("'ChatCompletionRequestAssistantMessage', 'content'), "
            "'msg': 'Input should be a valid string'") in text
    assert info.value.body["type"] == "internal_server_error"
