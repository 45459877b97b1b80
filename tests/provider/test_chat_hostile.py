"""The chat request against hostile servers: every answer bounded in time and size.

The servers are real processes on 127.0.0.1 (``tests/hostile_servers``), asked
through the real ``Provider`` and its openai client. Each server stops an
endless body after 64 MB (a safety net): a client without a cap reads all of it,
so what was sent, kept or allocated tells the two apart.
"""

from __future__ import annotations

import asyncio
import tracemalloc
from contextlib import aclosing

import pytest

from selfref_tui.agent.provider.chunks import TextChunk
from selfref_tui.agent.provider.client import Provider
from selfref_tui.agent.provider.errors import ProviderError
from selfref_tui.agent.provider.refusal import MAX_REFUSAL_BYTES, REFUSAL_READ_S
from selfref_tui.agent.provider.sse import MAX_EVENT_BYTES
from selfref_tui.config import ProviderConfig
from tests.hostile_servers import spawn, stats, wait_done

#: a guard, not a goal: only a read without a total bound gets near it
GUARD_S = 60
CHAT = "/v1/chat/completions"


async def ask(url: str, **kw) -> list:
    """One streamed answer from ``url`` (no retries unless told), its chunks."""
    config = ProviderConfig(base_url=url, api_key="k", model="hostile",
                            **{"max_retries": 0, "timeout_s": 30.0, **kw})
    messages = [{"role": "user", "content": "hi"}]
    async with (Provider(config, backoff_base_s=0.01) as provider,
                aclosing(provider.stream(messages)) as chunks):
        return [chunk async for chunk in chunks]


async def test_an_error_body_that_never_ends_is_cut_and_its_status_still_said():
    with spawn("http_window", "--chat", "error-endless", "--chat-status", "400",
               "--stop-after-mb", "64") as url:
        with pytest.raises(ProviderError) as raised:
            await asyncio.wait_for(ask(url), GUARD_S)
        sent = (await asyncio.wait_for(wait_done(url, CHAT), GUARD_S))["sent"]
    error = raised.value
    assert error.kind == "bad_request" and error.status == 400
    assert "rejected the request (400" in error.message
    # the client stopped reading at the cap: what the server wrote beyond it sat
    # in socket buffers (a few MB at most), not 64 MB read
    assert sent < 16 * 1024 * 1024


async def test_a_gzip_bomb_of_an_error_is_decoded_only_up_to_the_cap():
    """1 KB on the wire is 1 MB of text: the cap is on the text, not on what was sent."""
    with spawn("http_window", "--chat", "error-gzip", "--stop-after-mb", "64") as url:
        tracemalloc.start()
        try:
            with pytest.raises(ProviderError) as raised:
                await asyncio.wait_for(ask(url), GUARD_S)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    error = raised.value
    assert error.kind == "server" and error.status == 500
    # 64 MB of text decoded whole is 64 MB held at least (twice, joined); the
    # cap's text and a decoded piece (1 MB) are a few MB
    assert peak < 8 * MAX_REFUSAL_BYTES + 8 * 1024 * 1024


async def test_a_trickling_error_body_ends_at_the_requests_deadline():
    """Each byte comes quickly, the body never ends: the request's deadline
    (first_byte_timeout_s from sending) covers the body, not each read, and
    ends it when it is shorter than the wait for an error's text."""
    with spawn("http_window", "--chat", "error-trickle", "--interval", "0.05") as url:
        with pytest.raises(ProviderError) as raised:
            await asyncio.wait_for(ask(url, first_byte_timeout_s=1.0, max_retries=2), GUARD_S)
        trickled = stats(url)[CHAT]["sent"]
    assert raised.value.kind == "timeout" and "first_byte_timeout_s" in raised.value.message
    assert trickled > 0  # it did trickle: every read was quick, the answer never came


async def test_a_trickling_error_body_is_cut_after_a_few_seconds_and_not_asked_again():
    """The deadline (30 s here) is not what bounds it: the text is waited for
    ``REFUSAL_READ_S``, then the status is said, and the request is not retried
    (each retry would wait as long again)."""
    with spawn("http_window", "--chat", "error-trickle", "--interval", "0.05") as url:
        with pytest.raises(ProviderError) as raised:
            await asyncio.wait_for(ask(url, max_retries=3), GUARD_S)
        entry = stats(url)[CHAT]
    error = raised.value
    assert error.kind == "server" and error.status == 500
    assert f"still arriving after {REFUSAL_READ_S:g} s" in error.message
    assert entry["request"] == 1 and entry["sent"] > 0


async def test_a_redirect_whose_body_never_ends_is_followed_without_reading_it():
    """A 307 is followed (a proxy that moved the endpoint keeps working), its own
    body closed unread: the library would read it whole first."""
    with spawn("http_window", "--chat", "redirect", "--stop-after-mb", "64") as url:
        chunks = await asyncio.wait_for(ask(url), GUARD_S)
        sent = (await asyncio.wait_for(wait_done(url, CHAT), GUARD_S))["sent"]
        moved = stats(url)["/moved" + CHAT]
    assert "".join(c.text for c in chunks if type(c) is TextChunk) == "ok"
    assert moved["request"] == 1 and moved["done"]
    # what was written before the client closed sat in socket buffers, not 64 MB read
    assert sent < 16 * 1024 * 1024


async def test_an_event_that_never_ends_ends_the_request_past_the_event_cap():
    with spawn("http_window", "--chat", "line-endless", "--stop-after-mb", "64") as url:
        with pytest.raises(ProviderError) as raised:
            await asyncio.wait_for(ask(url), GUARD_S)
        sent = (await asyncio.wait_for(wait_done(url, CHAT), GUARD_S))["sent"]
    error = raised.value
    assert error.kind == "protocol" and not error.partial
    assert error.message.startswith(f"{url} sent one stream event of more than 8 MB")
    assert "\n" not in error.message
    # read up to the cap (and what socket buffers held), not the 64 MB the server had
    assert MAX_EVENT_BYTES <= sent < MAX_EVENT_BYTES + 16 * 1024 * 1024
