"""Streaming Chat Completions over any OpenAI-compatible server.

The official ``openai`` client does the HTTP and SSE work; this module adds
what the runtime needs on top: typed chunks, our own visible retries (the
client's are switched off so that every wait can be shown as an event), one
actionable line per failure, and a stream that closes its HTTP response the
moment the consumer stops (an abort must not leave the server generating).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
from collections.abc import AsyncIterator
from typing import Any

import openai
from openai.types.chat import ChatCompletion

from selfref_tui.agent.protocols import NoticeFn, RetryFn
from selfref_tui.agent.provider.body import _EventBatches, _ParsedEventBatches
from selfref_tui.agent.provider.chunks import (
    Chunk,
    FinishChunk,
    TextChunk,
    UsageChunk,
    _batch_chunks,
    _MalformedChunk,
    _split_think,
)
from selfref_tui.agent.provider.encode import _EncodedMessages, encoded_once
from selfref_tui.agent.provider.errors import (
    ProviderError,
    _is_connect_timeout,
    _names_stream_options,
    _reason,
    _retry_after,
    _Retryable,
    _short,
    carries_images,
    first_byte_timeout,
    map_error,
    provider_error,
)
from selfref_tui.agent.provider.hosts import is_local, is_openai
from selfref_tui.agent.provider.refusal import cap_refusal, is_slow
from selfref_tui.agent.provider.sse import MAX_EVENT_BYTES, EventTooLarge, SseError
from selfref_tui.agent.provider.think import ThinkSplitter
from selfref_tui.agent.provider.tls import tls_context
from selfref_tui.config import ProviderConfig

#: What ``chat.completions.create`` passes as request options: the bearer key only.
_REQUEST_OPTIONS: dict[str, Any] = {"security": {"bearer_auth": True}}


class Provider:
    """One endpoint + model. Create once per app; ``stream`` once per LLM call."""

    def __init__(self, config: ProviderConfig, *, backoff_base_s: float = 0.5,
                 fast_reads: bool = True) -> None:
        """``fast_reads`` False turns off both fast paths of reading a stream: every
        event goes through the JSON parse (no ``delta_scan``) and every HTTP chunk
        through the HTTP library (no ``rechunk``); tests compare the two ways."""
        self.config = config
        self._stream_cls = _EventBatches if fast_reads else _ParsedEventBatches
        self.backoff_base_s = backoff_base_s
        #: servers (base URLs) that refused ``stream_options``: asked without it from then on
        self._no_stream_options: set[str] = set()
        #: servers (base URLs) that refused images: the agent then leaves tools' images out
        self._no_images: set[str] = set()
        self._encoded = _EncodedMessages()
        # Connect is bounded by the HTTP library; the first event and the gaps
        # between events by our own timers (_read), since a server that sends
        # SSE keep-alive comments never trips a socket read timeout. The read
        # timeout here is only a backstop for requests without those timers.
        backstop = max(config.first_byte_timeout, config.idle_timeout)
        # An error's body is read with a cap in size and time, a redirect's not
        # at all (refusal.py); each request's deadline (_open, _diagnose) covers
        # the body too.
        self._client = openai.AsyncOpenAI(
            base_url=config.base_url or None,
            api_key=config.api_key or "not-needed",
            max_retries=0,
            timeout=openai.Timeout(backstop, connect=config.connect_timeout_s),
            http_client=openai.DefaultAsyncHttpxClient(
                verify=tls_context(), event_hooks={"response": [cap_refusal]}),
        )

    @property
    def base_url(self) -> str:
        return self.config.base_url

    @property
    def model(self) -> str:
        return self.config.model

    async def aclose(self) -> None:
        await self._client.close()

    async def __aenter__(self) -> Provider:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def list_models(self) -> list[str]:
        """Model ids the server offers (for a model picker); ProviderError on failure.

        Read with the window look-up's bounds (provider/probe.py), not through the
        openai client: a list that never ends is given up on past the answer cap.
        """
        from .probe import fetch_json

        url = f"{self.config.base_url.rstrip('/')}/models"
        status, payload = await fetch_json(self.config, url, self.config.first_byte_timeout)
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list):
            kind = {"timeout": "timeout", 401: "auth", 403: "auth"}.get(status, "connection")
            raise ProviderError(kind, f"{url} did not list its models ({status})")
        return [e["id"] for e in data if isinstance(e, dict) and isinstance(e.get("id"), str)]

    @property
    def stream_options_ok(self) -> bool:
        """False once this server refused ``stream_options`` (usage is then not reported)."""
        return self.base_url not in self._no_stream_options

    @property
    def images_ok(self) -> bool:
        """False once this server refused a request's images (its model has no vision)."""
        return self.base_url not in self._no_images

    async def stream(self, messages: list[dict], tools: list[dict] | None = None, *,
                     on_retry: RetryFn | None = None,
                     on_notice: NoticeFn | None = None) -> AsyncIterator[Chunk]:
        """Yield typed chunks of one streamed completion.

        Retries (429, 5xx, connection errors) happen only before the first chunk
        is yielded; after that a failure is a ``ProviderError(partial=True)``.
        Cancelling the consuming task or calling ``aclose()`` closes the HTTP
        response at once. Only a 400/422 that names ``stream_options`` makes
        this server be asked without it (said through ``on_notice``); any other
        refusal is raised as it is, never silently re-sent.
        """
        attempt = 0
        while True:
            # first_byte_timeout counts from sending: the headers and the first
            # event share it (a server that sends its headers at once and then
            # reads the prompt for minutes is still bounded)
            deadline = asyncio.get_running_loop().time() + self.config.first_byte_timeout
            try:
                stream = await self._open(messages, tools, deadline)
            except _Retryable as retry:
                attempt += 1
                if attempt > self.config.max_retries:
                    raise retry.error from None
                delay = retry.delay if retry.delay is not None else self._backoff(attempt)
                if on_retry is not None:
                    on_retry(attempt, delay, retry.reason)
                await asyncio.sleep(delay)
                continue
            except ProviderError as error:
                if not (self.stream_options_ok and _names_stream_options(error)):
                    raise
                self._no_stream_options.add(self.base_url)
                if on_notice is not None:
                    on_notice(f"{self.base_url} refused stream_options ({error.status}); asking "
                              "it without from now on — token usage will not be reported",
                              "warning")
                continue
            break
        async with contextlib.aclosing(self._read(stream, deadline, messages, tools)) as chunks:
            async for chunk in chunks:
                yield chunk

    # ------------------------------------------------------------------ internals
    def _request(self, messages: list[dict], tools: list[dict] | None) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"model": self.config.model, "messages": messages,
                                  "stream": True}
        if self.stream_options_ok:
            kwargs["stream_options"] = {"include_usage": True}
            if is_openai(self.base_url):
                # OpenAI pads every chunk with a random "obfuscation" field unless told
                # not to: the chunks then never match delta_scan's templates (each one
                # is parsed). Only there: strict local servers refuse unknown options.
                kwargs["stream_options"]["include_obfuscation"] = False
        if tools:
            kwargs["tools"] = tools
        if self.config.temperature is not None:
            kwargs["temperature"] = self.config.temperature
        if self.config.max_output_tokens is not None:
            kwargs["max_tokens"] = self.config.max_output_tokens
        return kwargs

    async def _open(self, messages: list[dict], tools: list[dict] | None,
                    deadline: float) -> Any:
        # Why not ``chat.completions.create``: it first runs ``maybe_transform`` over
        # the messages, walking every message against the TypedDict annotations
        # (~200 ms per call at 1,000 messages, on every LLM call). Our payload is
        # already plain JSON-ready dicts with no aliased keys, so that walk would
        # return it unchanged; ``post`` is exactly what ``create`` calls next, and
        # keeps the client's HTTP, auth, timeout, headers, SSE parsing and errors.
        try:
            request = self._request(messages, tools)
            try:
                content: bytes | None = self._encoded.body(request)
            except (TypeError, ValueError):  # not plain JSON: let the client encode it
                content = None
            async with asyncio.timeout_at(deadline):
                return await self._client.post(
                    "/chat/completions",
                    body=request if content is None else None,
                    content=content,
                    options=_REQUEST_OPTIONS,
                    cast_to=ChatCompletion,
                    stream=True,
                    stream_cls=self._stream_cls,
                )
        except TimeoutError:
            # Connected and sent: the server has the request. Sending it again
            # would queue a second generation behind the first; say so instead.
            raise first_byte_timeout(self.config) from None
        except openai.APIStatusError as exc:
            error = map_error(self.config, exc, images=carries_images(messages))
            if error.images_refused:
                self._no_images.add(self.base_url)
            # a refusal whose text trickled is not asked again: each retry would wait as long
            if error.kind in ("rate_limit", "server") and not is_slow(exc.response):
                raise _Retryable(error, _retry_after(exc), _reason(exc)) from None
            raise error from None
        except openai.APITimeoutError as exc:
            if not _is_connect_timeout(exc):
                raise first_byte_timeout(self.config) from None
            raise _Retryable(map_error(self.config, exc), None, _reason(exc)) from None
        except openai.APIConnectionError as exc:
            raise _Retryable(map_error(self.config, exc), None, _reason(exc)) from None

    async def _read(self, stream: Any, deadline: float, messages: list[dict],
                    tools: list[dict] | None) -> AsyncIterator[Chunk]:
        produced = False
        finished = False
        events = 0
        loop = asyncio.get_running_loop()
        idle = self.config.idle_timeout
        think = ThinkSplitter()  # <think>…</think> in content is reasoning (think.py)
        try:
            # The first event before the first-byte deadline, then none of the
            # gaps over idle_timeout. The timer is off while the consumer holds
            # a chunk: its time is not the server's.
            async with asyncio.timeout_at(deadline) as timer:
                async for batch in stream:
                    events += len(batch)
                    timer.reschedule(None)
                    chunks, failure = _batch_chunks(batch)
                    for chunk in chunks:
                        if type(chunk) is TextChunk and not think.passthrough:
                            for piece in _split_think(think.feed(chunk.text)):
                                produced = True
                                yield piece
                            continue
                        if type(chunk) is FinishChunk:
                            finished = True
                            for piece in _split_think(think.flush()):
                                yield piece
                        if type(chunk) is not UsageChunk:
                            produced = True
                        yield chunk
                    if failure is not None:
                        raise failure
                    timer.reschedule(loop.time() + idle)
        except TimeoutError:
            if events == 0:
                raise first_byte_timeout(self.config) from None
            raise self._error("timeout", f"the stream from {self.base_url} stopped: nothing for "
                              f"{idle:g} s (idle_timeout_s) — what arrived is kept; try again, or "
                              "raise idle_timeout_s for a slow server", partial=produced) from None
        except EventTooLarge:
            raise self._error(
                "protocol", f"{self.base_url} sent one stream event of more than "
                f"{MAX_EVENT_BYTES // (1024 * 1024)} MB without its end — not an answer (a "
                "broken server or proxy?): the request was ended"
                + ("; what arrived before it is kept" if produced else ""),
                partial=produced) from None
        except (json.JSONDecodeError, SseError, openai.APIResponseValidationError,
                _MalformedChunk) as exc:
            raise self._error(
                "protocol", f"{self.base_url} sent a malformed stream chunk ({_short(exc)}) "
                "— is it really OpenAI-compatible?", partial=produced, detail=str(exc)) from None
        except openai.APIError as exc:
            raise map_error(self.config, exc, partial=produced, midway=True) from None
        finally:
            with contextlib.suppress(Exception):
                await stream.close()
        for piece in _split_think(think.flush()):
            produced = True
            yield piece
        if not finished:
            if produced:
                raise self._error("connection", f"connection lost: {self.base_url} ended the "
                                  "stream before the answer was finished", partial=True)
            if events == 0 and is_local(self.base_url):
                # llama.cpp's Python server fails after the 200 (the prompt is read
                # lazily): a length error leaves an empty stream. Asking once without
                # streaming gets the error itself, so an overflow is named as one.
                # Only a server on this machine is asked: elsewhere it may be a paid
                # API, and a second request is a second bill.
                reason = await self._diagnose(messages, tools)
                if reason is not None:
                    raise reason
                raise self._error("protocol", f"{self.base_url} ended the stream without an "
                                  "answer — check that it supports streaming chat completions")
            raise self._error("protocol", f"{self.base_url} ended the stream without an answer "
                              "or an error — check its log: a conversation too long for the "
                              "model's window does this on some servers (try /compact), or it "
                              "may not support streaming chat completions")

    async def _diagnose(self, messages: list[dict],
                        tools: list[dict] | None) -> ProviderError | None:
        """Why a server sent an empty stream, asked without streaming; None if it will not say."""
        request = self._request(messages, tools)
        request.pop("stream_options", None)
        request["stream"] = False
        request["max_tokens"] = 1
        try:
            async with asyncio.timeout(self.config.first_byte_timeout):
                # encoded here: the client's encoder fails on half a surrogate pair
                content = encoded_once(request)
                await self._client.post("/chat/completions",
                                        body=request if content is None else None,
                                        content=content, options=_REQUEST_OPTIONS,
                                        cast_to=object)
        except TimeoutError:
            return None
        except openai.APIStatusError as exc:
            error = map_error(self.config, exc, images=carries_images(messages))
            return error if error.kind == "context_overflow" else None
        except openai.APIError:
            return None
        return None

    def _error(self, kind: str, message: str, **extra: Any) -> ProviderError:
        """A ``ProviderError`` with the configured key masked (see ``errors.provider_error``)."""
        return provider_error(self.config, kind, message, **extra)

    def _backoff(self, attempt: int) -> float:
        return self.backoff_base_s * (2 ** (attempt - 1)) * (1 + random.random() * 0.25)


