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
import functools
import json
import random
import re
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any

import openai
from openai.types.chat import ChatCompletion

from selfref_tui.agent.provider import delta_scan, rechunk, sse
from selfref_tui.agent.provider.sse import SseError
from selfref_tui.agent.provider.think import ThinkSplitter
from selfref_tui.config import ProviderConfig
from selfref_tui.context.images import image_urls
from selfref_tui.safety import redact


@dataclass(frozen=True, slots=True)
class TextChunk:
    text: str


@dataclass(frozen=True, slots=True)
class ReasoningChunk:
    """``reasoning_content`` deltas: shown apart, never sent back to the model."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCallChunk:
    """One tool-call delta: ``id`` and ``name`` on its first delta, ``arguments`` in pieces."""

    index: int
    id: str | None
    name: str | None
    arguments: str


@dataclass(frozen=True, slots=True)
class UsageChunk:
    usage: dict[str, int]


@dataclass(frozen=True, slots=True)
class FinishChunk:
    reason: str | None


Chunk = TextChunk | ReasoningChunk | ToolCallChunk | UsageChunk | FinishChunk
#: ``on_retry(attempt, delay_s, reason)``: reason is short, e.g. "rate limited (429)"
RetryFn = Callable[[int, float, str], None]
#: ``on_notice(message, severity)``: something the person should know, not an error
NoticeFn = Callable[[str, str], None]


class ProviderError(Exception):
    """A failure a person can act on.

    ``message`` is one line naming the URL or model and what to do; ``detail``
    is the server's own error text in full (a pydantic report runs to dozens
    of lines; its cause is rarely in the first 160 characters), for
    ``ask --verbose`` and the app's expandable error. ``kind`` is one of
    :attr:`KINDS`; ``context_overflow`` means the request does not fit the
    model's window, with ``tokens`` and ``window`` when the server said them.
    """

    KINDS = ("auth", "model", "rate_limit", "server", "connection", "timeout", "protocol",
             "bad_request", "context_overflow")

    def __init__(self, kind: str, message: str, *, partial: bool = False,
                 status: int | None = None, detail: str = "", tokens: int | None = None,
                 window: int | None = None, images_refused: bool = False) -> None:
        # trust boundary: no bearer token or URL userinfo, ever
        message, detail = redact(message), redact(detail)
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.partial = partial
        self.status = status
        self.detail = detail
        self.tokens = tokens
        self.window = window
        #: the server refused the request's images (it carried ``image_url`` parts)
        self.images_refused = images_refused

    def __repr__(self) -> str:
        return f"ProviderError({self.kind!r}, {self.message!r}, partial={self.partial})"


class _Retryable(Exception):
    def __init__(self, error: ProviderError, delay: float | None, reason: str) -> None:
        super().__init__(error.message)
        self.error = error
        self.delay = delay
        self.reason = reason


MAX_RETRY_AFTER_S = 120.0
#: What ``chat.completions.create`` passes as request options: the bearer key only.
_REQUEST_OPTIONS: dict[str, Any] = {"security": {"bearer_auth": True}}


class _EventBatches(openai.AsyncStream[object]):
    """The stream as lists of parsed JSON events, one list per backlog (see ``sse``).

    Plain dicts, not pydantic ``ChatCompletionChunk`` s (~120 µs each), and not
    the client's event-at-a-time SSE decoder (~25 µs an event with its
    ``json.loads`` and generator hops): a 1 MB answer is ~150,000 events. The
    client still does the HTTP, auth, status errors and timeouts; this class
    only reads the body, raising what the client's own stream would raise: a
    transport failure as ``APITimeoutError`` / ``APIConnectionError``, an
    ``{"error": …}`` event as ``APIError``, bad JSON after the events before it.
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
        self._client = openai.AsyncOpenAI(
            base_url=config.base_url or None,
            api_key=config.api_key or "not-needed",
            max_retries=0,
            timeout=openai.Timeout(backstop, connect=config.connect_timeout_s),
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
        """Model ids the server offers (for a model picker); ProviderError on failure."""
        try:
            async with asyncio.timeout(self.config.first_byte_timeout):
                page = await self._client.models.list()
        except TimeoutError:
            raise self._first_byte_timeout() from None
        except Exception as exc:  # mapped below
            raise self._map(exc, partial=False) from None
        return [m.id for m in page.data]

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
            raise self._first_byte_timeout() from None
        except openai.APIStatusError as exc:
            error = self._map(exc, images=carries_images(messages))
            if error.images_refused:
                self._no_images.add(self.base_url)
            if error.kind in ("rate_limit", "server"):
                raise _Retryable(error, _retry_after(exc), _reason(exc)) from None
            raise error from None
        except openai.APITimeoutError as exc:
            if not _is_connect_timeout(exc):
                raise self._first_byte_timeout() from None
            raise _Retryable(self._map(exc), None, _reason(exc)) from None
        except openai.APIConnectionError as exc:
            raise _Retryable(self._map(exc), None, _reason(exc)) from None

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
                raise self._first_byte_timeout() from None
            raise self._error("timeout", f"the stream from {self.base_url} stopped: nothing for "
                              f"{idle:g} s (idle_timeout_s) — what arrived is kept; try again, or "
                              "raise idle_timeout_s for a slow server", partial=produced) from None
        except (json.JSONDecodeError, SseError, openai.APIResponseValidationError,
                _MalformedChunk) as exc:
            raise self._error(
                "protocol", f"{self.base_url} sent a malformed stream chunk ({_short(exc)}) "
                "— is it really OpenAI-compatible?", partial=produced, detail=str(exc)) from None
        except openai.APIError as exc:
            raise self._map(exc, partial=produced, midway=True) from None
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

    def _first_byte_timeout(self) -> ProviderError:
        seconds = self.config.first_byte_timeout
        return self._error("timeout", f"{self.base_url} accepted the request but sent nothing "
                           f"for {seconds:g} s (first_byte_timeout_s) — the model may still be "
                           "loading or reading a long prompt; try again (it was not re-sent), "
                           "or raise first_byte_timeout_s")

    async def _diagnose(self, messages: list[dict],
                        tools: list[dict] | None) -> ProviderError | None:
        """Why a server sent an empty stream, asked without streaming; None if it will not say."""
        request = self._request(messages, tools)
        request.pop("stream_options", None)
        request["stream"] = False
        request["max_tokens"] = 1
        try:
            async with asyncio.timeout(self.config.first_byte_timeout):
                await self._client.post("/chat/completions", body=request,
                                        options=_REQUEST_OPTIONS, cast_to=object)
        except TimeoutError:
            return None
        except openai.APIStatusError as exc:
            error = self._map(exc, images=carries_images(messages))
            return error if error.kind == "context_overflow" else None
        except openai.APIError:
            return None
        return None

    def _backoff(self, attempt: int) -> float:
        return self.backoff_base_s * (2 ** (attempt - 1)) * (1 + random.random() * 0.25)

    def _error(self, kind: str, message: str, *, detail: str = "", **extra: Any) -> ProviderError:
        """The one place a ProviderError is made: a server may echo the key, so both
        texts pass through ``redact`` with the configured key."""
        secrets = [self.config.api_key]
        return ProviderError(kind, redact(message, secrets), detail=redact(detail, secrets),
                             **extra)

    def _map(self, exc: BaseException, *, partial: bool = False,
             midway: bool = False, images: bool = False) -> ProviderError:
        """The error for ``exc`` (made by ``_error``: the key masked wherever it was echoed).

        ``images``: the request carried ``image_url`` parts. Only then is a refusal
        that names images read as "this model has no vision": without them, a
        validation report echoing a message about "an image" is a validation
        report, and a 5xx about a "vision encoder" is a server failure.
        """
        url = self.base_url or "the provider"
        model = self.config.model
        error = self._error
        if isinstance(exc, openai.APITimeoutError):
            if _is_connect_timeout(exc):
                return error("timeout", f"cannot connect to {url} within "
                             f"{self.config.connect_timeout_s:g} s (connect_timeout_s) — is the "
                             "server running and reachable?", partial=partial)
            if midway and partial:
                return error("timeout", f"the stream from {url} stopped: nothing for "
                             f"{self.config.idle_timeout:g} s (idle_timeout_s)", partial=partial)
            return self._first_byte_timeout()
        if isinstance(exc, openai.APIConnectionError):
            if midway and partial:
                return error("connection", f"connection lost: the stream from {url} "
                             "dropped midway", partial=partial)
            if midway:
                return error("connection", f"connection lost: {url} closed the stream "
                             "before answering — try again")
            return error("connection", f"cannot reach {url} — is the server running?",
                         partial=partial)
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            full = _api_message(exc)
            detail = _short(full)
            if _is_overflow(full, exc.code):
                tokens, window = _overflow_figures(full)
                figures = f" ({tokens} of {window} tokens)" if tokens and window else ""
                return error("context_overflow", "the conversation no longer fits the "
                             f"model's window{figures} — {url} refused it for length",
                             detail=full, status=status, tokens=tokens, window=window)
            if images and _refuses_images(status, full):
                return error("bad_request", f"model '{model}' does not accept images — remove "
                             "the attachment (send the message again without it) or pick a "
                             f"vision model ({url} answered {status})", status=status,
                             detail=full, images_refused=True)
            if status in (401, 403):
                env = self.config.api_key_env or "OPENAI_API_KEY"
                return error("auth", f"API key rejected by {url} ({status}) — check "
                             f"{env} (or the profile's api_key_env)", status=status,
                             detail=full)
            if status == 404:
                if exc.code == "model_not_found" or "model" in detail.lower():
                    return error("model", f"model '{model}' not found at {url} — pick "
                                 "another with `selfref-tui --model NAME` or set `model` "
                                 "in config.toml", status=status, detail=full)
                return error("model", f"{url} answered 404 for model '{model}' — check "
                             "the base URL (it usually ends in /v1) and the model name "
                             "(`--model`)", status=status, detail=full)
            if status == 429:
                return error("rate_limit", f"rate limited by {url} (429) — wait a moment "
                             f"and try again ({detail})", status=status, detail=full)
            if status >= 500 and not _VALIDATION.search(full):
                return error("server", f"{url} failed with {status} ({detail}) — try "
                             "again; if it persists, check the server's logs",
                             status=status, partial=partial, detail=full)
            # 4xx, and a 500 that is a validation report (llama-cpp-python answers
            # a body its request model refuses with 500): the same request would
            # fail the same way, so it is not retried.
            return error("bad_request", f"{url} rejected the request ({status}: "
                         f"{detail})", status=status, detail=full)
        if isinstance(exc, openai.APIError):
            text = _overflow_text(exc)
            if text is not None:
                tokens, window = _overflow_figures(text)
                figures = f" ({tokens} of {window} tokens)" if tokens and window else ""
                return error("context_overflow", "the conversation no longer fits the "
                             f"model's window{figures} — {url} refused it for length",
                             detail=text, partial=partial, tokens=tokens, window=window)
            return error("server", f"{url} reported an error mid-stream: "
                         f"{_short(exc.message)}", partial=partial, detail=str(exc.message))
        return error("protocol", f"unexpected answer from {url}: {_short(exc)}",
                     partial=partial, detail=str(exc))


def _dumps(value: Any) -> str:
    # The client's own JSON settings (openai._utils._json.openapi_dumps).
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


class _EncodedMessages:
    """The request body, re-encoding only messages that changed since an earlier call.

    Every call sends the whole history; at 1,000 messages encoding it is
    ~1.3 ms, at 10,000 ~13 ms, all but the last few messages unchanged. Each
    slot keeps one earlier call's messages as decoded copies of their JSON
    (deep copies, so a caller changing a message in place is noticed) and
    their encodings; the slot whose start equals (``==``) the new messages the
    longest is reused from there on. A few slots, so that forks streaming
    next to their parent do not evict each other. Same bytes as ``json.dumps``
    of the whole body, up to key order at the top level.
    """

    SLOTS = 4

    def __init__(self) -> None:
        # most recently used last; each slot: (copies, UTF-8 encodings)
        self._slots: list[tuple[list[Any], list[bytes]]] = []

    def body(self, request: dict[str, Any]) -> bytes:
        messages = request["messages"]
        best, same = None, 0
        for slot in self._slots:
            n = 0
            for old, new in zip(slot[0], messages, strict=False):
                if old != new:
                    break
                n += 1
            if best is None or n > same:
                best, same = slot, n
        if best is not None and same == len(best[0]):
            self._slots.remove(best)  # this history again, grown: extend it in place
            slot = best
        else:  # another history (a fork, or after a compaction): keep the old one too
            slot = (best[0][:same], best[1][:same]) if best is not None else ([], [])
            if len(self._slots) >= self.SLOTS:
                del self._slots[0]
        self._slots.append(slot)
        copies, encoded = slot
        for message in messages[same:]:
            text = _dumps(message)
            encoded.append(text.encode())  # bytes: joining them is a plain copy
            copies.append(json.loads(text))
        head = _dumps({k: v for k, v in request.items() if k != "messages"}).encode()
        sep = b"," if head != b"{}" else b""
        return b"".join((head[:-1], sep, b'"messages":[', b",".join(encoded), b"]}"))


class _MalformedChunk(ValueError):
    """Valid JSON of the wrong shape for a chat completion chunk."""


def _field(obj: dict, name: str, kind: type) -> Any:
    """``obj[name]`` when it has type ``kind``; None when absent or null; else malformed."""
    value = obj.get(name)
    if value is None or type(value) is kind:
        return value
    raise _MalformedChunk(f"{name!r} is {type(value).__name__}, not {kind.__name__}")


def _choice_chunks(choice: Any) -> list[Chunk]:
    """The typed chunks of one streamed choice, read off the parsed JSON."""
    if type(choice) is not dict:
        raise _MalformedChunk("a choice is not an object")
    out: list[Chunk] = []
    delta = _field(choice, "delta", dict)
    if delta:
        # llama.cpp / vLLM / DeepSeek put thinking in reasoning_content (or reasoning).
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            out.append(ReasoningChunk(reasoning))
        content = _field(delta, "content", str)
        if content:
            out.append(TextChunk(content))
        for call in _field(delta, "tool_calls", list) or ():
            if type(call) is not dict:
                raise _MalformedChunk("a tool call is not an object")
            index = _field(call, "index", int)
            fn = _field(call, "function", dict) or {}
            out.append(ToolCallChunk(
                index=index if index is not None else 0,
                id=_field(call, "id", str) or None,
                name=_field(fn, "name", str) or None,
                arguments=_field(fn, "arguments", str) or "",
            ))
    finish = _field(choice, "finish_reason", str)
    if finish:
        out.append(FinishChunk(finish))
    return out


def _batch_chunks(batch: list[Any]) -> tuple[list[Chunk], _MalformedChunk | None]:
    """The typed chunks of a batch of events, neighbours of one kind joined.

    A backlog of 400 one-token events becomes one ``TextChunk`` (and a call's
    argument pieces one ``ToolCallChunk``): everything after the provider (the
    loop, the ref parser, the events, the transcript) then pays per batch, not
    per token. What a malformed event is preceded by is returned with its
    error, so the part that arrived is kept.
    """
    out: list[Chunk] = []
    parts: list[str] = []  # the texts of the run out[-1] heads, joined once at its end
    run: Any = None  # what a chunk must be to join the run: a type, or ("call", index)

    def close_run() -> None:
        if len(parts) > 1:
            head = out[-1]
            if type(head) is ToolCallChunk:
                out[-1] = ToolCallChunk(head.index, head.id, head.name, "".join(parts))
            else:
                out[-1] = type(head)("".join(parts))  # type: ignore[call-arg]
        parts.clear()

    try:
        for event in batch:
            if type(event) is not dict:
                if type(event) in _SCANNED:  # a run of events delta_scan read
                    chunks: Any = ((event,),)
                else:
                    raise _MalformedChunk(f"a chunk is {type(event).__name__}, not an object")
            else:
                chunks = map(_choice_chunks, _field(event, "choices", list) or ())
            for produced in chunks:
                for chunk in produced:
                    kind = type(chunk)
                    if kind is ToolCallChunk:
                        joins = (run == ("call", chunk.index)  # type: ignore[union-attr]
                                 and chunk.id is None and chunk.name is None)  # type: ignore[union-attr]
                        key: Any = ("call", chunk.index)  # type: ignore[union-attr]
                        text = chunk.arguments  # type: ignore[union-attr]
                    else:
                        joins = kind is run
                        key = kind if kind is TextChunk or kind is ReasoningChunk else None
                        text = getattr(chunk, "text", "")
                    if joins:
                        parts.append(text)
                        continue
                    close_run()
                    out.append(chunk)
                    run = key
                    if key is not None:
                        parts.append(text)
            usage = event.get("usage") if type(event) is dict else None
            if type(usage) is dict:
                close_run()
                run = None
                out.append(UsageChunk(_usage_dict(usage)))
    except _MalformedChunk as exc:
        close_run()
        return out, exc
    close_run()
    return out, None


#: the chunks ``delta_scan`` makes: text that neighbours join
_SCANNED = (TextChunk, ReasoningChunk, ToolCallChunk)


def _classify(event: Any) -> tuple[Callable[[str], Chunk], str] | None:
    """One event read as one chunk of text that joins its neighbours: its maker and text.

    ``delta_scan`` learns its templates from this (None: not such an event). An
    ``{"error": …}`` event is never one: the stream raises it.
    """
    if type(event) is not dict or event.get("error"):
        return None
    chunks, failure = _batch_chunks([event])
    if failure is not None or len(chunks) != 1:
        return None
    chunk = chunks[0]
    if type(chunk) is ToolCallChunk:
        if chunk.id is not None or chunk.name is not None or not chunk.arguments:
            return None
        return functools.partial(ToolCallChunk, chunk.index, None, None), chunk.arguments
    if (type(chunk) is TextChunk or type(chunk) is ReasoningChunk) and chunk.text:
        return type(chunk), chunk.text
    return None


def _usage_dict(usage: dict) -> dict[str, int]:
    return {k: v for k, v in usage.items() if type(v) is int}


def _retry_after(exc: openai.APIStatusError) -> float | None:
    """Seconds from Retry-After / retry-after-ms, capped; None when absent or unreadable."""
    headers = exc.response.headers
    ms = headers.get("retry-after-ms")
    if ms:
        with contextlib.suppress(ValueError):
            return min(max(float(ms) / 1000, 0.0), MAX_RETRY_AFTER_S)
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return min(max(float(value), 0.0), MAX_RETRY_AFTER_S)
    except ValueError:
        pass
    try:
        import datetime as _dt

        when = parsedate_to_datetime(value)
        delta = (when - _dt.datetime.now(when.tzinfo)).total_seconds()
        return min(max(delta, 0.0), MAX_RETRY_AFTER_S)
    except (TypeError, ValueError):
        return None


def _api_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return inner["message"]
        if isinstance(body.get("message"), str):
            return body["message"]
    return exc.message


#: what servers say when a request does not fit the model's window: OpenAI's code,
#: vLLM/OpenAI's "maximum context length", llama.cpp's "exceed(s) context window" /
#: "exceeds the available context size", Anthropic-style "prompt is too long", LM
#: Studio's "context length", Ollama/TGI's "too many tokens" / "input is too long"
_OVERFLOW = re.compile(
    r"context_length_exceeded|exceed_context_size|maximum context length|"
    r"exceeds? (?:the )?(?:available )?context (?:window|size|length)|"
    r"context (?:window|size|length) (?:of \d+ )?(?:has been |was |is )?exceeded|"
    r"prompt is too long|too many (?:input )?tokens|input is too long|"
    r"longer than the (?:model's )?context",
    re.IGNORECASE)
_WINDOW_FIGURE = re.compile(r"(?:maximum context length is|context window of|"
                            r"context size(?: of)?|n_ctx(?:_slot)?\s*=?)\s*\(?(\d+)",
                            re.IGNORECASE)
_TOKENS_FIGURE = re.compile(r"(?:requested|Requested tokens|prompt has|resulted in|"
                            r"n_prompt_tokens\s*=?)\s*\(?(\d+)", re.IGNORECASE)
#: pydantic's report: the request body's shape was refused, whatever the status
_VALIDATION = re.compile(r"\d+ validation errors?(?::| for )", re.IGNORECASE)


def _is_overflow(text: str, code: object = None) -> bool:
    return code in ("context_length_exceeded", "exceed_context_size_error") or bool(
        _OVERFLOW.search(text))


def _overflow_text(exc: openai.APIError) -> str | None:
    """The error text of a mid-stream error event when it is a length refusal."""
    body = exc.body
    text = exc.message
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            text = inner["message"]
            if _is_overflow(text, inner.get("code")):
                return text
    return text if _is_overflow(str(text)) else None


def _overflow_figures(text: str) -> tuple[int | None, int | None]:
    """(requested tokens, window) when the server's text says them."""
    window = _WINDOW_FIGURE.search(text)
    tokens = _TOKENS_FIGURE.search(text)
    return (int(tokens.group(1)) if tokens else None, int(window.group(1)) if window else None)


#: a refusal that names images: OpenAI's "image_url is only supported by certain models",
#: vLLM's "… is not a multimodal model", llama.cpp's "image input is not supported" (mmproj)
_IMAGES_REFUSED = re.compile(r"image|vision|multi-?modal|mmproj", re.IGNORECASE)
#: what a 5xx must say to be read as images refused rather than a failure worth a retry:
#: llama.cpp's "image input is not supported … mmproj", "… is not a multimodal model"
_IMAGE_INPUT_REFUSED = re.compile(
    r"image_url|image input|mmproj|not a multi-?modal model|"
    r"(?:images?|vision) (?:input )?(?:is |are )?not supported|"
    r"(?:does not|doesn't|cannot|can't) (?:support|accept|take) (?:images?|vision)",
    re.IGNORECASE)


def _refuses_images(status: int, text: str) -> bool:
    """Whether a refusal of a request carrying images is about the images."""
    if status in (400, 415, 422):
        return bool(_IMAGES_REFUSED.search(text))
    # a 5xx validation report echoes the request, image_url parts and all: not about them
    return (status in (500, 501) and bool(_IMAGE_INPUT_REFUSED.search(text))
            and not _VALIDATION.search(text))


def carries_images(messages: list[dict]) -> bool:
    """Whether a request's messages hold an ``image_url`` part (read on errors only)."""
    return any(isinstance(m, dict) and image_urls(m.get("content")) for m in messages)


def _names_stream_options(error: ProviderError) -> bool:
    """A 400/422 whose text names stream_options: the one refusal worth a re-send."""
    return error.status in (400, 422) and "stream_options" in (error.detail or error.message)


def _split_think(pieces: list[tuple[str, str]]) -> list[Chunk]:
    return [ReasoningChunk(text) if kind == "reasoning" else TextChunk(text)
            for kind, text in pieces]


def _host(base_url: str) -> str:
    """The host ``base_url`` names, lower case without a trailing dot ("" if none)."""
    from urllib.parse import urlsplit

    try:
        return (urlsplit(base_url).hostname or "").rstrip(".").lower()
    except ValueError:
        return ""


def is_openai(base_url: str) -> bool:
    """True when ``base_url`` is OpenAI's own API (``api.openai.com``), the one server
    known to take ``stream_options.include_obfuscation``."""
    return _host(base_url) == "api.openai.com"


def is_local(base_url: str) -> bool:
    """True when ``base_url`` names this machine (``localhost``, a loopback address).

    Only such a server is asked a second time to learn why its stream was empty:
    a request to it costs nothing, while a remote one may be billed.
    """
    import ipaddress

    host = _host(base_url)
    if not host:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or (mapped is not None and mapped.is_loopback)


def _is_connect_timeout(exc: BaseException) -> bool:
    """A timeout while connecting (nothing was sent), told by the HTTP library's exception."""
    cause = exc.__cause__
    return cause is not None and "Connect" in type(cause).__name__


def _reason(exc: BaseException) -> str:
    """A retry's reason, short: "rate limited (429)", "server error (503)", "cannot connect"."""
    if isinstance(exc, openai.APIStatusError):
        if exc.status_code == 429:
            return "rate limited (429)"
        return f"server error ({exc.status_code})"
    if isinstance(exc, openai.APITimeoutError):
        return "connect timeout"
    return "cannot connect"


def _short(value: object, limit: int = 160) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
