"""An OpenAI-style HTTP server whose window answers are hostile.

``/v1/models``, llama.cpp's ``/props`` and Ollama's ``/api/show`` each answer as
their option says:

- ``endless``: a 200 whose chunked JSON body never ends (64 KB chunks, as fast
  as the client reads);
- ``trickle``: a 200 whose body arrives one byte every ``--interval`` seconds,
  forever (each read is quick, the answer never comes);
- ``absurd``: a 200 naming the window ``--n-ctx`` (any digits: 400 of them, or 1);
- ``redirect``: a 302 to ``/moved<path>`` whose body never ends (as ``endless``);
  ``/moved<path>`` answers as ``absurd`` does (a client that follows a redirect
  must not read the redirect's own body first: it may never end);
- ``missing`` (the default): 404.

``POST /v1/chat/completions`` answers as ``--chat`` says:

- ``ok`` (the default): a one-word answer ("ok") streamed, so ``ask`` can
  finish once the window is given up on;
- ``error-endless``: the status ``--chat-status`` (500 unless told) with a
  chunked error body that never ends (``{"error": {"message": "xxx…``, 64 KB
  chunks as fast as the client reads);
- ``error-trickle``: that status, its error body one byte every ``--interval``
  seconds, forever;
- ``error-gzip``: that status, its error body gzip-compressed ``x`` s that never
  end (about 1 MB of text in each 1 KB sent: a bomb for a client that decodes
  it whole);
- ``line-endless``: a 200 event stream whose first event never ends (one
  ``data:`` line growing forever, no newline);
- ``redirect``: a 307 to ``/moved/v1/chat/completions`` whose own body never
  ends; the moved path answers "ok" as ``ok`` does.

``GET /stats`` says, per path, of its last answer how
many body bytes were handed to the client, whether the answer is over
(``done``: the body ended or the client went away) and how many requests to
that path it answers (``request``: 1 for the first), so a test can wait for
that state and check how much a client read before it gave up.
``--stop-after-mb`` ends an endless body after that much (of text, for a
compressed one): a safety net, so a
client without a limit fails its test instead of eating the machine. Prints
``ready URL`` (the base URL, ``…/v1``) when it listens.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import zlib

MODES = ("endless", "trickle", "absurd", "redirect", "missing")
CHAT_MODES = ("ok", "error-endless", "error-trickle", "error-gzip", "line-endless", "redirect")
#: what one block of the gzip bomb holds once decoded
BOMB_BLOCK = 1 << 20
#: path → {"sent": body bytes written, "done": the answer is over, "request": its number}
STATS: dict[str, dict[str, int | bool]] = {}


def _head(status: str, kind: str, extra: str = "") -> bytes:
    return (f"HTTP/1.1 {status}\r\nContent-Type: {kind}\r\n{extra}"
            "Connection: close\r\n\r\n").encode()


def _sized(body: bytes) -> bytes:
    return _head("200 OK", "application/json", f"Content-Length: {len(body)}\r\n") + body


def _window_body(path: str, n_ctx: str) -> bytes:
    if path == "/v1/models":
        return (b'{"object":"list","data":[{"id":"hostile","object":"model","max_model_len":'
                + n_ctx.encode() + b"}]}")
    if path == "/props":
        return b'{"default_generation_settings":{"n_ctx":' + n_ctx.encode() + b"}}"
    return b'{"model_info":{"x.context_length":' + n_ctx.encode() + b"}}"


def _answer_chat(writer: asyncio.StreamWriter) -> None:
    writer.write(_head("200 OK", "text/event-stream"))
    for delta, finish in (({"role": "assistant", "content": "ok"}, None), ({}, "stop")):
        chunk = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "hostile",
                 "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        writer.write(f"data: {json.dumps(chunk)}\n\n".encode())
    writer.write(b"data: [DONE]\n\n")


def _chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


async def _endless(writer: asyncio.StreamWriter, stats: dict, stop_after: int,
                   status: str = "200 OK", extra: str = "", start: bytes = b'{"data": [ ',
                   kind: str = "application/json", filler: bytes = b" ") -> None:
    writer.write(_head(status, kind, f"{extra}Transfer-Encoding: chunked\r\n"))
    chunk = _chunk(filler * 65536)
    writer.write(_chunk(start))
    while not stop_after or stats["sent"] < stop_after:
        writer.write(chunk)
        stats["sent"] += 65536
        await writer.drain()
    writer.write(b"0\r\n\r\n")


async def _gzip_bomb(writer: asyncio.StreamWriter, stats: dict, stop_after: int,
                     status: str) -> None:
    """A gzip stream of ``x`` s that never ends: the same flushed deflate block again
    and again (it refers to nothing before it, so the repeat is valid)."""
    writer.write(_head(status, "application/json",
                       "Content-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n"))
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    header = packer.compress(b'{"error": {"message": "') + packer.flush(zlib.Z_FULL_FLUSH)
    block = _chunk(packer.compress(b"x" * BOMB_BLOCK) + packer.flush(zlib.Z_FULL_FLUSH))
    writer.write(_chunk(header))
    text = 0
    while not stop_after or text < stop_after:
        writer.write(block)
        stats["sent"] += len(block)
        text += BOMB_BLOCK
        await writer.drain()
    writer.write(b"0\r\n\r\n")


async def _trickle(writer: asyncio.StreamWriter, interval: float, stats: dict,
                   status: str = "200 OK") -> None:
    writer.write(_head(status, "application/json", "Transfer-Encoding: chunked\r\n"))
    writer.write(b"1\r\n{\r\n")
    await writer.drain()
    while True:
        await asyncio.sleep(interval)
        writer.write(b"1\r\n \r\n")
        stats["sent"] += 1
        await writer.drain()


async def _chat(writer: asyncio.StreamWriter, options: argparse.Namespace, stats: dict,
                moved: bool) -> None:
    """The chat request, answered as ``--chat`` says."""
    mode = options.chat
    stop_after = int(options.stop_after_mb * 1024 * 1024)
    status = f"{options.chat_status} Hostile"
    if mode == "ok" or (mode == "redirect" and moved):
        _answer_chat(writer)
    elif mode == "redirect":
        await _endless(writer, stats, stop_after, "307 Temporary Redirect",
                       "Location: /moved/v1/chat/completions\r\n")
    elif mode == "error-endless":
        await _endless(writer, stats, stop_after, status, start=b'{"error": {"message": "',
                       filler=b"x")
    elif mode == "error-trickle":
        await _trickle(writer, options.interval, stats, status)
    elif mode == "error-gzip":
        await _gzip_bomb(writer, stats, stop_after, status)
    else:  # line-endless
        await _endless(writer, stats, stop_after, start=b'data: {"id": "', filler=b"x",
                       kind="text/event-stream")


async def _serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 options: argparse.Namespace) -> None:
    stats: dict[str, int | bool] = {"sent": 0, "done": False, "request": 0}
    try:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, target = lines[0].split(" ")[:2]
        path = target.split("?", 1)[0]
        length = next((int(line.split(":", 1)[1]) for line in lines[1:]
                       if line.lower().startswith("content-length:")), 0)
        if length:
            await reader.readexactly(length)
        moved = path.startswith("/moved/")
        mode = {"/v1/models": options.models, "/props": options.props,
                "/api/show": options.show}.get(path.removeprefix("/moved"))
        if path != "/stats":
            stats["request"] = int(STATS.get(path, {}).get("request", 0)) + 1
            STATS[path] = stats
        if method == "POST" and path.removeprefix("/moved") == "/v1/chat/completions":
            await _chat(writer, options, stats, moved)
        elif path == "/stats":
            writer.write(_sized(json.dumps(STATS).encode()))
        elif mode == "redirect" and not moved:
            await _endless(writer, stats, int(options.stop_after_mb * 1024 * 1024),
                           "302 Found", f"Location: /moved{path}\r\n")
        elif mode == "endless":
            await _endless(writer, stats, int(options.stop_after_mb * 1024 * 1024))
        elif mode == "trickle":
            await _trickle(writer, options.interval, stats)
        elif mode == "absurd" or mode == "redirect":
            writer.write(_sized(_window_body(path.removeprefix("/moved"), options.n_ctx)))
        else:
            writer.write(_head("404 Not Found", "application/json", "Content-Length: 2\r\n")
                         + b"{}")
        await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError, ValueError):
        pass
    finally:
        writer.close()
        stats["done"] = True


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", choices=MODES, default="missing")
    parser.add_argument("--props", choices=MODES, default="missing")
    parser.add_argument("--show", choices=MODES, default="missing")
    parser.add_argument("--chat", choices=CHAT_MODES, default="ok")
    parser.add_argument("--chat-status", type=int, default=500)
    parser.add_argument("--n-ctx", default="4096", help="the digits an absurd answer names")
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--stop-after-mb", type=float, default=0.0)
    options = parser.parse_args()
    server = await asyncio.start_server(lambda r, w: _serve(r, w, options), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    print(f"ready http://127.0.0.1:{port}/v1", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
