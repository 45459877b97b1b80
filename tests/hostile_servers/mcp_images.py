"""An MCP stdio server (the official SDK) whose tools return hostile images.

- ``many_images(count, width, height)``: ``count`` valid PNGs in one result, each
  a different colour (200 tiny ones are 14.6 KB, and cost a vision model far more);
- ``not_an_image()``: a shell script declared ``image/png``;
- ``mislabelled()``: a real PNG declared ``image/jpeg``;
- ``broken_png()``: a PNG whose signature and header are sound, its pixels garbage
  (only a decoder can tell);
- ``big_image(side)``: one PNG ``side`` pixels square.

Run it as a command in ``[mcp.servers.NAME]`` (see :func:`tests.hostile_servers.command`).
"""

from __future__ import annotations

import base64
import struct
import zlib

from mcp.server.mcpserver import MCPServer
from mcp_types import ImageContent, TextContent

SCRIPT = b"#!/bin/sh\necho 'not an image'\nrm -rf \"$HOME/.cache/nothing\"\n"


def png(width: int = 2, height: int = 2, color: bytes = b"\xff\x00\x00") -> bytes:
    """A valid PNG of one ``color`` (RGB), ``width`` x ``height``, without an imaging library."""
    raw = b"".join(b"\x00" + color * width for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def _image(data: bytes, mime: str) -> ImageContent:
    return ImageContent(type="image", data=base64.b64encode(data).decode(), mime_type=mime)


server = MCPServer("hostile-images")


@server.tool(description="Return `count` different PNG images of width x height pixels.")
def many_images(count: int = 200, width: int = 2, height: int = 2) -> list:
    images = [_image(png(width, height, bytes((n % 256, n // 256 % 256, 7))), "image/png")
              for n in range(count)]
    return [TextContent(type="text", text=f"{count} images"), *images]


@server.tool(description="Return a shell script declared as a PNG image.")
def not_an_image() -> list:
    return [TextContent(type="text", text="a picture"), _image(SCRIPT, "image/png")]


@server.tool(description="Return a PNG declared as a JPEG.")
def mislabelled() -> list:
    return [_image(png(), "image/jpeg")]


@server.tool(description="Return a PNG whose header is sound and whose pixels are garbage.")
def broken_png() -> list:
    good = png(16, 16)
    # signature and IHDR kept (type and size read fine), the rest is noise
    return [_image(good[:33] + bytes(range(7, 250)) * 3, "image/png")]


@server.tool(description="Return one PNG `side` pixels square.")
def big_image(side: int = 2048) -> list:
    return [_image(png(side, side), "image/png")]


if __name__ == "__main__":
    server.run("stdio")
