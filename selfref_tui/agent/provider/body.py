"""The response body read as batches of parsed events (the fast path of a stream).

``_EventBatches`` replaces the client's per-event stream: ``sse`` splits a backlog of
events at once, ``delta_scan`` reads the usual delta by template, ``rechunk`` hands
h11 one chunk per socket read. The client still does the HTTP, auth and status errors.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import AsyncIterator
from typing import Any

import openai

from selfref_tui.agent.provider import delta_scan, rechunk, sse
from selfref_tui.agent.provider.chunks import _classify


class _EventBatches(openai.AsyncStream[object]):
    """The stream as lists of parsed JSON events, one list per backlog (see ``sse``).

    Plain dicts, not pydantic ``ChatCompletionChunk`` s (~120 µs each), and not
    the client's event-at-a-time SSE decoder (~25 µs an event with its
    ``json.loads`` and generator hops): a 1 MB answer is ~150,000 events. The
    client still does the HTTP, auth, status errors and timeouts; this class
    only reads the body, raising what the client's own stream would raise: a
    transport failure as ``APITimeoutError`` / ``APIConnectionError``, an
    ``{"error": …}`` event as ``APIError``, bad JSON after the events before it,
    and an event over ``sse.MAX_EVENT_BYTES`` as ``sse.EventTooLarge`` (after them too).
    """

    #: read the usual deltas by template (``delta_scan``); False: every event parsed
    scan_deltas = True
    #: join the body's HTTP chunks per socket read (``rechunk``); False: as the library reads
    rechunk_body = True

    async def __stream__(self) -> AsyncIterator[Any]:  # type: ignore[override]
        response = self.response
        parser = sse.SseParser()
        decode = (delta_scan.DeltaScanner(sse.decode, _classify).decode if self.scan_deltas
                  else sse.decode)
        # Without a content encoding the raw body is the body: two generator hops
        # per HTTP chunk fewer than aiter_bytes.
        encoding = response.headers.get("content-encoding", "").strip().lower()
        plain = encoding in ("", "identity")
        body = response.aiter_raw() if plain else response.aiter_bytes()
        # The server's chunk per token joined per socket read, below the HTTP library.
        source = sse.backlog(body)
        rechunked = None
        try:
            rechunked = rechunk.rechunk(response) if plain and self.rechunk_body else None
            try:
                async for data in source:
                    events, error = decode(parser.feed(data))
                    for index, event in enumerate(events):
                        if type(event) is dict and event.get("error"):
                            if index:
                                yield events[:index]
                            raise _stream_error(event["error"], response)
                    if events:
                        yield events
                    if error is not None:
                        raise error
                    if parser.too_large:
                        raise sse.EventTooLarge(f"one event over {parser.limit} bytes")
                    if parser.done:
                        await sse.drain(source)
                        return
            except _transport_errors()[0] as exc:
                raise openai.APITimeoutError(request=response.request) from exc
            except _transport_errors()[1] as exc:
                raise openai.APIConnectionError(request=response.request) from exc
        finally:
            await source.aclose()
            if rechunked is not None:
                rechunk.restore(rechunked)
            await response.aclose()

    async def close(self) -> None:
        """Finish ``__stream__`` now: a stream closed early (Esc) runs its ``finally`` (the
        connection's own network stream put back) here, not when the collector finds
        the generator; the client's ``close`` only closes the response."""
        try:
            await self._iterator.aclose()
        finally:
            await super().close()  # the response is closed whatever happened above



def _stream_error(error: Any, response: Any) -> openai.APIError:
    """An ``{"error": …}`` event mid-stream, as the client's own stream raises it."""
    message = error.get("message") if isinstance(error, dict) else None
    if not message or not isinstance(message, str):
        message = "An error occurred during streaming"
    return openai.APIError(message=message, request=response.request, body=error)



@functools.cache
def _transport_errors() -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
    """(timeouts, other request failures) of the HTTP library under the client."""
    import ssl

    timeouts: list[type[BaseException]] = []
    failures: list[type[BaseException]] = [ssl.SSLError]
    for name in ("httpx2", "httpx"):
        module = sys.modules.get(name)
        if module is not None:
            timeouts.append(module.TimeoutException)
            failures.append(module.RequestError)
    anyio = sys.modules.get("anyio")
    if anyio is not None:
        failures.append(anyio.EndOfStream)
    return tuple(timeouts), tuple(failures)



class _ParsedEventBatches(_EventBatches):
    """Every event through the JSON parse, every HTTP chunk through the HTTP library:
    what ``delta_scan`` and ``rechunk`` must equal (tests)."""

    scan_deltas = False
    rechunk_body = False
