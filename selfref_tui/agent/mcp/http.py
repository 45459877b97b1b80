"""Streamable HTTP MCP servers, with the same cap on a message as stdio ones.

The SDK's HTTP client reads a JSON answer whole (``aread``) however large it is.
Its client here counts response bodies as they arrive: a JSON body, or one
event of an event stream (counted from the last blank line, so a long-lived
stream of small events is fine), that passes ``max_bytes`` ends the read with
an error. The reason is kept on the connection's :class:`~.stdio.Link` and the
link is closed, so the manager marks the server failed and every call says why,
as it does for stdio.

The body is wrapped by a response hook, not by a transport of our own: a client
given a transport ignores the proxies the environment names (``HTTP_PROXY``…),
which the SDK's own client honours.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

from .stdio import Link

_BLANK_LINES = (b"\r\n\r\n", b"\n\n", b"\r\r")


def _after_last_blank_line(data: bytes) -> int | None:
    """Where the last event of ``data`` ends (after its blank line), None if none did."""
    ends = [data.rfind(sep) + len(sep) for sep in _BLANK_LINES if sep in data]
    return max(ends) if ends else None


class CappedBody:
    """A response body that stops at ``limit`` bytes (per event for an event stream)."""

    def __init__(self, inner: Any, limit: int, events: bool, over: Callable[[], Exception]):
        self.inner = inner
        self.limit = limit
        self.events = events
        self.over = over

    async def __aiter__(self) -> AsyncIterator[bytes]:
        count, tail = 0, b""
        async for chunk in self.inner:
            if self.events:
                seen = tail + chunk
                cut = _after_last_blank_line(seen)
                count = count + len(chunk) if cut is None else len(seen) - cut
                tail = seen[-3:]
            else:
                count += len(chunk)
            if count > self.limit:
                raise self.over()
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


@contextlib.asynccontextmanager
async def http_transport(url: str, headers: dict[str, str], link: Link, *, max_bytes: int,
                         setting: str = "max_message_mb") -> AsyncIterator[Any]:
    """The SDK's streamable HTTP transport over a client whose bodies are capped."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

    def over() -> Exception:
        link.failure = f"sent a message over the {max_bytes / 2**20:g} MB limit ({setting})"
        link.closed.set()
        return httpx2.StreamError(link.failure)

    class Body(CappedBody, httpx2.AsyncByteStream):
        pass

    async def capped(response: Any) -> None:  # before the body is read, whoever reads it
        kind = response.headers.get("content-type", "").lower()
        response.stream = Body(response.stream, max_bytes,
                               kind.startswith("text/event-stream"), over)

    timeout = httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT)
    async with httpx2.AsyncClient(headers=headers, timeout=timeout,
                                  event_hooks={"response": [capped]}) as http, \
            streamable_http_client(url, http_client=http,
                                   max_sse_event_size=2 * max_bytes) as streams:
        yield streams
