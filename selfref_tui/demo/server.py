"""A small OpenAI-compatible HTTP/1.1 server on asyncio, for the demo and the tests.

No web framework: the point is to exercise the real ``openai`` client over real
HTTP (SSE streaming, chunked bodies, keep-alive, dropped connections) with
answers we control. It serves ``POST /v1/chat/completions`` and
``GET /v1/models`` on 127.0.0.1 and a free port, and, when it has a context
window, tells it the ways real servers do: llama.cpp's ``GET /props``,
Ollama's ``POST /api/show`` and a field of the ``/v1/models`` entry.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import threading
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from selfref_tui.demo.script import (
    Drop,
    Echo,
    Events,
    Hang,
    HttpError,
    Malformed,
    Overflow,
    Reply,
    Script,
    Stall,
    Step,
)
from selfref_tui.demo.strict import strict_refusal

_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found",
            405: "Method Not Allowed", 422: "Unprocessable Entity", 429: "Too Many Requests",
            500: "Internal Server Error",
            502: "Bad Gateway", 503: "Service Unavailable"}
_TOKEN_RE = re.compile(r"\s*\S+|\s+")


def split_text(text: str, chunk_chars: int | None) -> list[str]:
    """Word-sized tokens (None) or fixed-size pieces; joined they give ``text`` back."""
    if not text:
        return []
    if chunk_chars:
        return [text[i : i + chunk_chars] for i in range(0, len(text), chunk_chars)]
    pieces: list[str] = []
    for token in _TOKEN_RE.findall(text):
        pieces.extend(token[i : i + 12] for i in range(0, len(token), 12))
    return pieces


def _estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4) if text else 0


class _Disconnected(Exception):
    """The client went away mid-response (an abort): not an error for the server."""


class DemoServer:
    """Serve scripted answers; ``requests`` keeps every request body for assertions.

    ``api_key`` set → requests must carry ``Authorization: Bearer <api_key>`` (401
    otherwise); ``models`` set → other model names get OpenAI's 404 model_not_found.
    ``tokens_per_s`` None streams as fast as possible.

    ``strict`` (the default) refuses what the strictest real servers refuse
    (see :mod:`selfref_tui.demo.strict`), so every test over HTTP checks that
    our requests would pass on llama.cpp and strict chat templates.

    ``context_window`` is told through ``window_sources``: ``"props"``
    (llama.cpp's ``/props``), ``"ollama"`` (``/api/show``) and model-entry
    field names such as ``"max_model_len"`` (vLLM) or ``"context_length"``
    (OpenRouter, LM Studio). ``window_requests`` counts what was asked.
    ``enforce_window`` refuses a request whose estimated prompt (characters/4
    of its messages and tools) exceeds ``context_window``, the way
    llama-cpp-python does (:class:`~selfref_tui.demo.script.Overflow`),
    without using up a script step. ``refuse_images`` answers a request holding an
    ``image_url`` part as OpenAI does for a model without vision (400);
    ``check_images`` decodes each image (Pillow, imported then) and answers one it
    cannot read as OpenAI does ("You uploaded an unsupported image", 400).
    """

    def __init__(
        self,
        script: Script | None = None,
        *,
        tokens_per_s: float | None = None,
        api_key: str | None = None,
        models: Sequence[str] | None = None,
        reject_stream_options: bool = False,
        strict: bool = True,
        context_window: int | None = None,
        window_sources: Sequence[str] = ("props", "max_model_len"),
        enforce_window: bool = False,
        refuse_images: bool = False,
        check_images: bool = False,
        keep_alive: bool = False,
        host: str = "127.0.0.1",
        model_windows: Mapping[str, int] | None = None,
    ) -> None:
        self.script: Script = script if script is not None else []
        self.tokens_per_s = tokens_per_s
        self.api_key = api_key
        self.models = tuple(models) if models else None
        self.reject_stream_options = reject_stream_options
        self.strict = strict
        self.context_window = context_window
        self.window_sources = tuple(window_sources)
        self.window_requests: list[str] = []
        #: a window per model in its ``/v1/models`` entry (``max_model_len``), beside
        #: ``context_window`` for the others: a model switch learns another window
        self.model_windows = dict(model_windows or {})
        self.enforce_window = enforce_window
        self.refuse_images = refuse_images
        self.check_images = check_images
        #: streamed answers keep the connection open for the next request (as real
        #: servers do); False sends ``Connection: close`` after each stream
        self.keep_alive = keep_alive
        #: TCP connections accepted (a test of connection reuse counts them)
        self.connections = 0
        #: the address it listens on (tests of "a server on another machine" use another)
        self.host = host
        self.requests: list[dict] = []
        self.headers: list[dict[str, str]] = []
        self.disconnects = 0
        #: streamed answers written to their end (a test can wait for the whole body)
        self.streams_done = 0
        self.base_url = ""
        self._calls = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task] = set()
        self._disconnected = asyncio.Event()
        self._thread: threading.Thread | None = None
        self._thread_loop: asyncio.AbstractEventLoop | None = None

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> str:
        self._server = await asyncio.start_server(self._on_connect, self.host, 0)
        port = self._server.sockets[0].getsockname()[1]
        self.base_url = f"http://{self.host}:{port}/v1"
        return self.base_url

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    async def __aenter__(self) -> str:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def start_in_thread(self) -> str:
        """Run on a private event loop in a daemon thread (keeps the pace off a busy UI loop)."""
        ready = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._thread_loop = loop
            loop.run_until_complete(self.start())
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self.stop())
            loop.close()

        self._thread = threading.Thread(target=run, name="selfref-demo-server", daemon=True)
        self._thread.start()
        ready.wait(10)
        return self.base_url

    def stop_thread(self) -> None:
        if self._thread_loop is not None and self._thread is not None:
            self._thread_loop.call_soon_threadsafe(self._thread_loop.stop)
            self._thread.join(5)
            self._thread = None

    async def wait_disconnect(self, timeout: float = 5.0) -> bool:
        """True once some client has closed a connection mid-response (an abort)."""
        try:
            await asyncio.wait_for(self._disconnected.wait(), timeout)
        except TimeoutError:
            return False
        return True

    # ------------------------------------------------------------------ HTTP
    async def _on_connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self.connections += 1
        try:
            while await self._serve_one(reader, writer):
                pass
        except _Disconnected:
            self.disconnects += 1
            self._disconnected.set()
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        except asyncio.CancelledError:
            pass
        finally:
            self._tasks.discard(task)
            writer.close()
            # Swallow a stop()-time cancel too: asyncio logs tasks that end cancelled here.
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await writer.wait_closed()

    async def _serve_one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Answer one request; False when the connection should close."""
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return False
        lines = head.decode("latin-1").split("\r\n")
        try:
            method, target, _version = lines[0].split(" ", 2)
        except ValueError:
            await self._send_json(writer, 400, _error("malformed request line", "bad_request"))
            return False
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if ":" in line:
                name, value = line.split(":", 1)
                headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length") or 0)
        raw = await reader.readexactly(length) if length else b""
        path = target.split("?", 1)[0].rstrip("/")
        keep_alive = headers.get("connection", "").lower() != "close"

        if self.api_key is not None and headers.get("authorization") != f"Bearer {self.api_key}":
            await self._send_json(writer, 401, _error(
                "Incorrect API key provided.", "invalid_request_error", "invalid_api_key"))
            return keep_alive
        if method == "GET" and path.endswith("/models"):
            self.window_requests.append("models")
            names = self.models or ("selfref-demo",)
            extra = {f: self.context_window for f in self.window_sources
                     if f not in ("props", "ollama") and self.context_window}
            await self._send_json(writer, 200, {"object": "list", "data": [
                {"id": n, "object": "model", "created": 0, "owned_by": "selfref-tui", **extra,
                 **({"max_model_len": self.model_windows[n]} if n in self.model_windows
                    else {})}
                for n in names]})
            return keep_alive
        if (method == "GET" and path == "/props" and "props" in self.window_sources
                and self.context_window):
            self.window_requests.append("props")
            await self._send_json(writer, 200, {
                "default_generation_settings": {"n_ctx": self.context_window},
                "total_slots": 1, "model_path": "demo.gguf"})
            return keep_alive
        if (method == "POST" and path == "/api/show" and "ollama" in self.window_sources
                and self.context_window):
            self.window_requests.append("ollama")
            await self._send_json(writer, 200, {
                "model_info": {"general.architecture": "llama",
                               "llama.context_length": self.context_window},
                "parameters": "stop \"<|eot_id|>\""})
            return keep_alive
        if method != "POST" or not path.endswith("/chat/completions"):
            await self._send_json(writer, 404, _error(f"no route for {method} {path}",
                                                      "invalid_request_error", "not_found"))
            return keep_alive
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            await self._send_json(writer, 400, _error("request body is not JSON", "bad_request"))
            return keep_alive
        self.requests.append(body)
        self.headers.append(headers)
        model = body.get("model", "")
        if self.models is not None and model not in self.models:
            await self._send_json(writer, 404, _error(
                f"The model `{model}` does not exist or you do not have access to it.",
                "invalid_request_error", "model_not_found"))
            return keep_alive
        if self.reject_stream_options and "stream_options" in body:
            await self._send_json(writer, 400, _error(
                "Unknown field: stream_options", "invalid_request_error"))
            return keep_alive
        if self.refuse_images and (where := _image_part(body)) is not None:
            # OpenAI's answer when a model without vision is sent an image.
            await self._send_json(writer, 400, {"error": {
                "message": "Invalid content type. image_url is only supported by certain "
                           "models.", "type": "invalid_request_error", "param": where,
                "code": None}})
            return keep_alive
        if self.check_images and (where := _unreadable_image(body)) is not None:
            await self._send_json(writer, 400, {"error": {
                "message": "You uploaded an unsupported image. Please make sure your image "
                           "is valid.", "type": "invalid_request_error", "param": where,
                "code": "invalid_image_format"}})
            return keep_alive
        refusal = strict_refusal(body) if self.strict else None
        if refusal is not None:
            await self._send_json(writer, refusal.status, refusal.body())
            return keep_alive

        step = self._over_window(body) or self._next_step(body)
        if isinstance(step, Overflow) and not (body.get("stream")
                                               and step.style == "llama-cpp-python"):
            step = step.error()
        if isinstance(step, Hang):
            await self._hang(reader, writer, step)
            return False
        if isinstance(step, HttpError):
            payload = _error(step.message, step.type, step.code)
            await self._send_json(writer, step.status, payload, step.headers)
            return keep_alive
        if body.get("stream"):
            await self._stream(reader, writer, body, step)
            self.streams_done += 1
            return self.keep_alive and keep_alive
        await self._send_json(writer, 200, _completion(body, step))
        return keep_alive

    def _over_window(self, body: dict) -> Overflow | None:
        if not (self.enforce_window and self.context_window):
            return None
        tokens = _estimate_tokens(json.dumps([body.get("messages"), body.get("tools")]))
        if tokens <= self.context_window:
            return None
        return Overflow(window=self.context_window, tokens=tokens)

    async def _hang(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    step: Hang) -> None:
        """Accept and say nothing (headers at most) until ``step.event`` or the client leaves."""
        if step.headers:
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                         b"Connection: close\r\nTransfer-Encoding: chunked\r\n\r\n")
            await writer.drain()
        gone = asyncio.Event()
        watcher = asyncio.create_task(_watch_eof(reader, gone))
        try:
            await _SseWriter(writer, gone, None).wait_for(step.event)
            if step.headers:
                writer.write(b"0\r\n\r\n")
                await writer.drain()
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher

    def _next_step(self, body: dict) -> Step:
        index = self._calls
        self._calls += 1
        if callable(self.script):
            step = self.script(body, index)
        elif index < len(self.script):
            step = self.script[index]
        else:
            return HttpError(500, f"demo script has no step for call #{index + 1}")
        return step.reply(body) if isinstance(step, Echo) else step

    async def _send_json(self, writer: asyncio.StreamWriter, status: int, payload: Any,
                         extra: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        head = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}",
                "Content-Type: application/json", f"Content-Length: {len(data)}"]
        head += [f"{k}: {v}" for k, v in (extra or {}).items()]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + data)
        await writer.drain()

    # ------------------------------------------------------------------ streaming
    async def _stream(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                      body: dict, step: Step) -> None:
        """Stream one answer, then close unless ``keep_alive`` (the EOF watcher is
        cancelled as the body ends, before an HTTP/1.1 client sends its next request)."""
        close = b"" if self.keep_alive else b"Connection: close\r\n"
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                     b"Cache-Control: no-cache\r\n" + close +
                     b"Transfer-Encoding: chunked\r\n\r\n")
        await writer.drain()
        gone = asyncio.Event()
        watcher = asyncio.create_task(_watch_eof(reader, gone))
        out = _SseWriter(writer, gone, self._pace(step))
        try:
            if isinstance(step, Overflow):  # llama-cpp-python: the error is only in its log
                await out.end()
                return
            if isinstance(step, Events):
                for payload in step.payloads:
                    await out.raw(f"data: {payload}\n\n")
                await out.raw("data: [DONE]\n\n")
                await out.end()
                return
            model = body.get("model", "")
            base = {"id": f"chatcmpl-demo{self._calls}", "object": "chat.completion.chunk",
                    "created": int(time.time()), "model": model}
            await out.event({**base, "choices": [
                {"index": 0, "delta": {"role": "assistant", "content": ""},
                 "finish_reason": None}]})
            if isinstance(step, Drop):
                await self._send_text(out, base, step.text, step.chunk_chars)
                writer.transport.abort()
                return
            if isinstance(step, Malformed):
                await self._send_text(out, base, step.text_before, None)
                await out.raw(f"data: {step.payload}\n\n")
                await out.raw("data: [DONE]\n\n")
                await out.end()
                return
            if isinstance(step, Stall):
                await self._send_text(out, base, step.text_before, None)
                step.reached.set()
                await out.wait_for(step.event)
                await self._send_text(out, base, step.text_after, None)
                step = Reply(text=step.text_before + step.text_after)
            else:
                assert isinstance(step, Reply)
                await self._send_reply(out, base, step)
            await out.event({**base, "choices": [
                {"index": 0, "delta": {}, "finish_reason": step.finish}]})
            if (body.get("stream_options") or {}).get("include_usage"):
                await out.event({**base, "choices": [], "usage": _usage(body, step)})
            await out.raw("data: [DONE]\n\n")
            await out.end()
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher

    def _pace(self, step: Step) -> float | None:
        tps = getattr(step, "tokens_per_s", None) or self.tokens_per_s
        return 1.0 / tps if tps else None

    async def _send_text(self, out: _SseWriter, base: dict, text: str,
                         chunk_chars: int | None, field: str = "content") -> None:
        for piece in split_text(text, chunk_chars):
            await out.event({**base, "choices": [
                {"index": 0, "delta": {field: piece}, "finish_reason": None}]}, paced=True)

    async def _send_reply(self, out: _SseWriter, base: dict, step: Reply) -> None:
        await self._send_text(out, base, step.reasoning, step.chunk_chars, "reasoning_content")
        await self._send_text(out, base, step.text, step.chunk_chars)
        async for delta in _tool_call_deltas(step, base["id"]):
            await out.event({**base, "choices": [
                {"index": 0, "delta": {"tool_calls": [delta]}, "finish_reason": None}]},
                paced=True)


class _SseWriter:
    """Chunked SSE output that notices a client going away while it writes or waits."""

    def __init__(self, writer: asyncio.StreamWriter, gone: asyncio.Event,
                 delay: float | None) -> None:
        self.writer = writer
        self.gone = gone
        self.delay = delay
        #: when the next paced chunk is due: pacing keeps to a schedule, since
        #: a sleep per chunk overshoots (~1 ms) and would halve a 2,000 tok/s pace
        self._due: float | None = None

    async def raw(self, text: str) -> None:
        if self.gone.is_set() or self.writer.is_closing():
            raise _Disconnected
        data = text.encode()
        self.writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        try:
            await self.writer.drain()
        except ConnectionError:
            raise _Disconnected from None

    async def event(self, payload: dict, *, paced: bool = False) -> None:
        await self.raw(f"data: {json.dumps(payload)}\n\n")
        if paced and self.delay:
            now = asyncio.get_running_loop().time()
            self._due = max(self._due or now, now - 0.05) + self.delay
            if self._due > now:
                await self._sleep(self._due - now)
            else:
                await asyncio.sleep(0)
        elif paced:
            await asyncio.sleep(0)

    async def _sleep(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.gone.wait(), seconds)
        if self.gone.is_set():
            raise _Disconnected

    async def wait_for(self, event: asyncio.Event) -> None:
        waiter = asyncio.create_task(event.wait())
        gone = asyncio.create_task(self.gone.wait())
        try:
            await asyncio.wait({waiter, gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()
            gone.cancel()
        if self.gone.is_set():
            raise _Disconnected

    async def end(self) -> None:
        self.writer.write(b"0\r\n\r\n")
        try:
            await self.writer.drain()
        except ConnectionError:
            raise _Disconnected from None


async def _watch_eof(reader: asyncio.StreamReader, gone: asyncio.Event) -> None:
    """HTTP/1.1 clients send nothing while reading a response: any EOF means they left."""
    with contextlib.suppress(ConnectionError):
        while await reader.read(1024):
            pass
    gone.set()


async def _tool_call_deltas(step: Reply, prefix: str) -> AsyncIterator[dict]:
    """OpenAI-style deltas: a head per call (id, name), then argument pieces."""
    heads = []
    pieces: list[list[str]] = []
    for index, call in enumerate(step.tool_calls):
        call_id = call.id or f"call_{prefix.removeprefix('chatcmpl-')}_{index}"
        heads.append({"index": index, "id": call_id, "type": "function",
                      "function": {"name": call.name, "arguments": ""}})
        args = call.arguments_json()
        size = step.chunk_chars or 7
        pieces.append([args[i : i + size] for i in range(0, len(args), size)])
    if step.interleave:
        for head in heads:
            yield head
        longest = max((len(p) for p in pieces), default=0)
        for i in range(longest):
            for index, call_pieces in enumerate(pieces):
                if i < len(call_pieces):
                    yield {"index": index, "function": {"arguments": call_pieces[i]}}
    else:
        for index, head in enumerate(heads):
            yield head
            for piece in pieces[index]:
                yield {"index": index, "function": {"arguments": piece}}


def _image_part(body: dict) -> str | None:
    """Where the first ``image_url`` part of a request is (OpenAI's ``param``), or None."""
    for i, message in enumerate(body.get("messages") or []):
        content = message.get("content") if isinstance(message, dict) else None
        for j, part in enumerate(content if isinstance(content, list) else []):
            if isinstance(part, dict) and part.get("type") == "image_url":
                return f"messages.[{i}].content.[{j}].type"
    return None


def _unreadable_image(body: dict) -> str | None:
    """Where the first image a decoder cannot read is (OpenAI's ``param``), or None."""
    import io

    from PIL import Image

    from selfref_tui.context.images import parse_data_url, part_url

    for i, message in enumerate(body.get("messages") or []):
        content = message.get("content") if isinstance(message, dict) else None
        for j, part in enumerate(content if isinstance(content, list) else []):
            url = part_url(part)
            parsed = parse_data_url(url) if url else None
            if url is None or (parsed is None and not url.startswith("data:")):
                continue
            try:
                with Image.open(io.BytesIO(parsed[1] if parsed else b"")) as image:
                    image.verify()
            except Exception:
                return f"messages.[{i}].content.[{j}].image_url"
    return None


def _error(message: str, type_: str, code: str | None = None) -> dict:
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


def _usage(body: dict, step: Reply) -> dict[str, int]:
    if step.usage is not None:
        return dict(step.usage)
    # Tool schemas are part of the prompt, as real servers count it.
    prompt = _estimate_tokens(json.dumps([body.get("messages") or [], body.get("tools") or []]))
    completion = _estimate_tokens(step.text + step.reasoning) + sum(
        _estimate_tokens(c.arguments_json()) + 3 for c in step.tool_calls)
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion}


def _completion(body: dict, step: Step) -> dict:
    """The ``stream: false`` answer (failure steps degrade to their text)."""
    if not isinstance(step, Reply):
        text = getattr(step, "text", "") or getattr(step, "text_before", "")
        step = Reply(text=text)
    message: dict[str, Any] = {"role": "assistant", "content": step.text or None}
    if step.reasoning:
        message["reasoning_content"] = step.reasoning
    if step.tool_calls:
        message["tool_calls"] = [
            {"id": c.id or f"call_demo_{i}", "type": "function",
             "function": {"name": c.name, "arguments": c.arguments_json()}}
            for i, c in enumerate(step.tool_calls)]
    return {"id": "chatcmpl-demo", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", ""), "usage": _usage(body, step),
            "choices": [{"index": 0, "message": message, "finish_reason": step.finish}]}
