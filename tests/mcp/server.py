"""An MCP server for the tests, built with the official SDK and run as a real subprocess.

Each tool exercises one result shape the client must map: plain text (``verbatim``
returns exactly the text given, which may read like an error), text long enough to
become an fd, an image, a tool error, mixed resources and audio, and a slow call
that only ends when it is cancelled. ``SELFREF_MCP_MARK`` names a file
the slow tool writes "cancelled" to when the client's cancellation reaches it,
so a test can tell a protocol cancel from a killed process. ``--crash`` fails at
start; ``--delay S`` waits S seconds before serving, ``--wait-for PATH`` until a test
creates PATH (a start that no machine's load can hurry or delay past); ``--http PORT`` serves
streamable HTTP instead of stdio (``--json``: answers as JSON bodies, not event
streams); ``--linger`` keeps running after its stdin closes, as a careless server would.
"""

from __future__ import annotations

import asyncio
import os
import struct
import sys
import time
import zlib
from pathlib import Path

from mcp.server.mcpserver import Audio, Context, Image, MCPServer
from mcp_types import EmbeddedResource, ResourceLink, TextContent, TextResourceContents

LONG_TEXT_CHARS = 20_000


def tiny_png(width: int = 2, height: int = 2) -> bytes:
    """A valid red PNG without any imaging library."""
    raw = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


server = MCPServer("selfref-test")


@server.tool(description="Echo the text back, prefixed with 'echo: '.")
def echo(text: str) -> str:
    return f"echo: {text}"


@server.tool(description="Return 20,000 characters of numbered lines.")
def long_text() -> str:
    lines, size, n = [], 0, 0
    while size < LONG_TEXT_CHARS:
        n += 1
        line = f"line {n:05d} " + "x" * 40 + "\n"
        lines.append(line)
        size += len(line)
    return "".join(lines)[:LONG_TEXT_CHARS]


@server.tool(description="Return a small red PNG with a caption.")
def picture() -> list:
    return ["a red square", Image(data=tiny_png(), format="png")]


@server.tool(description="Return the text exactly as given.")
def verbatim(text: str) -> str:
    return text


@server.tool(description="Always fails with a tool error.")
def fail(reason: str = "broken on purpose") -> str:
    raise ValueError(reason)


@server.tool(description="Return an embedded resource, a resource link and a sound.")
def mixed() -> list:
    return [
        EmbeddedResource(type="resource", resource=TextResourceContents(
            uri="file:///notes/readme.txt", mime_type="text/plain", text="resource body")),
        ResourceLink(type="resource_link", uri="https://example.com/doc", name="doc"),
        Audio(data=b"RIFF0000WAVE", format="wav"),
        TextContent(type="text", text="done"),
    ]


@server.tool(description="Wait up to `seconds` seconds, then answer 'slept'.")
async def slow(seconds: float = 30.0) -> str:
    mark = os.environ.get("SELFREF_MCP_MARK")
    if mark:
        Path(mark).write_text("started", encoding="utf-8")
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        if mark:
            Path(mark).write_text("cancelled", encoding="utf-8")
        raise
    return "slept"


@server.tool(description="The handler's own start and end (CLOCK_MONOTONIC), for benchmarks.")
async def stamp(payload: str = "") -> str:
    started = time.perf_counter()
    size = len(payload)
    return f"{started!r} {time.perf_counter()!r} {size}"


@server.tool(description="The Authorization header this call came with (HTTP only).")
def whoami(ctx: Context) -> str:
    headers = ctx.headers or {}
    return str(headers.get("authorization", "no authorization header"))


@server.tool(description="Return `mb` megabytes of text.")
def big(mb: float = 1.0) -> str:
    return "x" * int(mb * 2**20)


@server.tool(name="odd name.with/chars", description="A tool whose name needs sanitising.")
def odd() -> str:
    return "odd"


if __name__ == "__main__":
    if "--delay" in sys.argv:  # a server slow to start (seconds)
        time.sleep(float(sys.argv[sys.argv.index("--delay") + 1]))
    if "--wait-for" in sys.argv:  # a server that starts when the test says so
        gate = sys.argv[sys.argv.index("--wait-for") + 1]
        while not os.path.exists(gate):
            time.sleep(0.02)
    if "--crash" in sys.argv:
        sys.stderr.write("test server refuses to start\n")
        sys.exit(3)
    if "--http" in sys.argv:  # streamable HTTP on 127.0.0.1:PORT/mcp
        server.run("streamable-http", host="127.0.0.1",
                   port=int(sys.argv[sys.argv.index("--http") + 1]),
                   json_response="--json" in sys.argv)
        sys.exit(0)
    server.run("stdio")
    if "--linger" in sys.argv:
        # A server that does not exit when its stdin closes: only a signal stops it.
        time.sleep(120)
