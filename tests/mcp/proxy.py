"""A plain HTTP forward proxy on 127.0.0.1 that notes every request it forwards.

Enough of one for an HTTP MCP server reached through ``HTTP_PROXY``: each
request arrives with an absolute URL, goes on to that host with the path
alone, and the answers (JSON bodies or event streams) flow back as they come.
A request body is read by its ``Content-Length`` (what httpx sends for JSON).
"""

from __future__ import annotations

import asyncio
import contextlib
from urllib.parse import urlsplit


class ForwardProxy:
    def __init__(self) -> None:
        #: (method, path) of every request forwarded, in order
        self.requests: list[tuple[str, str]] = []
        self._server: asyncio.Server | None = None

    async def start(self) -> str:
        """Listen; the proxy's URL."""
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def aclose(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream: asyncio.StreamWriter | None = None
        answers: asyncio.Task | None = None
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                first, _, headers = head.partition(b"\r\n")
                method, target, version = first.split(b" ", 2)
                url = urlsplit(target.decode())
                self.requests.append((method.decode(), url.path))
                if upstream is None:
                    back, upstream = await asyncio.open_connection(url.hostname, url.port)
                    answers = asyncio.create_task(_pipe(back, writer))
                length = 0
                for line in headers.split(b"\r\n"):
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                body = await reader.readexactly(length) if length else b""
                path = (url.path or "/") + (f"?{url.query}" if url.query else "")
                upstream.write(b" ".join([method, path.encode(), version]) + b"\r\n" + headers
                               + body)
                await upstream.drain()
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            pass
        finally:
            if answers is not None:
                answers.cancel()
            for stream in (upstream, writer):
                if stream is not None:
                    stream.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    writer.close()
