"""A refusal's body read with a cap, where the openai client would read it whole.

On an error status the openai client reads the body to its end (decoded: a gzip
bomb inflates) to build its exception. A server whose 500 never ends, or
trickles, would fill the memory while the request's deadline runs. The chat
client's HTTP client carries :func:`cap_refusal` as a response hook: it reads
such a body itself, at most :data:`MAX_REFUSAL_BYTES` of decoded text, closes
the connection and hands the library that text as the whole body, so the
client's own error (status, message, ``code``) is made as before from what
was kept. Time is the caller's: the provider wraps each request, body and all,
in its deadline (``first_byte_timeout_s`` from sending), not a per-read timeout.
"""

from __future__ import annotations

import contextlib
from typing import Any

from selfref_tui.agent.provider.probe import http_errors

#: the most of a refusal's text kept (an error text is a few hundred bytes; a
#: validation report that echoes a long request a few hundred KB at most)
MAX_REFUSAL_BYTES = 256 * 1024

#: headers that describe the body as sent; the body handed on is plain text
_AS_SENT = ("content-encoding", "content-length", "transfer-encoding")


async def cap_refusal(response: Any) -> None:
    """Read an error answer's body now, keeping its first ``MAX_REFUSAL_BYTES``.

    A response of the HTTP library the openai package carries (``httpx`` or
    ``httpx2``); a success is left alone (the stream reads it). The body is
    decoded by the library in bounded pieces through a second response over
    the same stream (so the first one's own decoder is never started), then
    replaced by what was kept. A body that breaks off keeps what came.
    """
    if response.status_code < 400:
        return
    reader = type(response)(response.status_code, headers=response.headers,
                            stream=response.stream, request=response.request)
    kept = bytearray()
    try:
        async with contextlib.aclosing(reader.aiter_bytes()) as pieces:
            async for piece in pieces:
                kept += piece[: MAX_REFUSAL_BYTES - len(kept)]
                if len(kept) >= MAX_REFUSAL_BYTES:
                    break
    except (OSError, *http_errors(response)):
        pass  # the status is the answer; its text is what arrived
    finally:
        await reader.aclose()
    read = type(response)(response.status_code, content=bytes(kept))
    response.stream = read.stream
    for name in _AS_SENT:
        response.headers.pop(name, None)
    response.headers["content-length"] = str(len(kept))
