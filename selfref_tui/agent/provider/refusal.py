"""A refusal's body read with a cap, where the openai client would read it whole.

On an error status the openai client reads the body to its end (decoded: a gzip
bomb inflates) to build its exception. A server whose 500 never ends, or
trickles, would fill the memory while the request's deadline runs. The chat
client's HTTP client carries :func:`cap_refusal` as a response hook: it reads
such a body itself, at most :data:`MAX_REFUSAL_BYTES` of decoded text for at
most :data:`REFUSAL_READ_S`, closes the connection and hands the library that
text as the whole body, so the client's own error (status, message, ``code``)
is made as before from what was kept. The request's deadline
(``first_byte_timeout_s`` from sending) still covers all of it.

A redirect is followed, as the openai client does by default: a proxy or a
gateway that moves the endpoint (``http`` to ``https``, a new path) keeps
working, and the library drops the key when the redirect leads to another
host. But the library reads a redirect's body whole before it follows the
``Location``, and that body may never end: here it is closed unread (nobody
reads a redirect's text) and the library sees an empty one.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from selfref_tui.agent.provider.probe import http_errors

#: the most of a refusal's text kept (an error text is a few hundred bytes; a
#: validation report that echoes a long request a few hundred KB at most)
MAX_REFUSAL_BYTES = 256 * 1024

#: the longest a refusal's text is waited for: it comes with its status in
#: practice (one packet); 5 s lets the whole cap arrive over a ~50 KB/s link.
#: A text still arriving then is cut, and the refusal is not retried (a
#: server that trickles its error would make each retry wait as long).
REFUSAL_READ_S = 5.0

#: set in a response's ``extensions`` when its text was cut at ``REFUSAL_READ_S``
SLOW_REFUSAL = "selfref_tui.slow_refusal"

#: headers that describe the body as sent; the body handed on is plain text
_AS_SENT = ("content-encoding", "content-length", "transfer-encoding")


async def cap_refusal(response: Any) -> None:
    """Read an error answer's body now, keeping its first ``MAX_REFUSAL_BYTES``.

    A response of the HTTP library the openai package carries (``httpx`` or
    ``httpx2``); a success is left alone (the stream reads it), a redirect's
    body is closed unread. The body is decoded by the library in bounded
    pieces through a second response over the same stream (so the first
    one's own decoder is never started), then replaced by what was kept. A
    body that breaks off keeps what came; one still arriving after
    ``REFUSAL_READ_S`` keeps what came and is marked :data:`SLOW_REFUSAL`.
    """
    if response.is_success:
        return
    if response.has_redirect_location:
        with contextlib.suppress(OSError, *http_errors(response)):
            await response.stream.aclose()
        _replace(response, b"")
        return
    reader = type(response)(response.status_code, headers=response.headers,
                            stream=response.stream, request=response.request)
    kept = bytearray()
    try:
        async with (asyncio.timeout(REFUSAL_READ_S),
                    contextlib.aclosing(reader.aiter_bytes()) as pieces):
            async for piece in pieces:
                kept += piece[: MAX_REFUSAL_BYTES - len(kept)]
                if len(kept) >= MAX_REFUSAL_BYTES:
                    break
    except TimeoutError:
        response.extensions[SLOW_REFUSAL] = True
    except (OSError, *http_errors(response)):
        pass  # the status is the answer; its text is what arrived
    finally:
        await reader.aclose()
    _replace(response, bytes(kept))


def is_slow(response: Any) -> bool:
    """Whether ``response``'s error text was cut at :data:`REFUSAL_READ_S`."""
    return bool(getattr(response, "extensions", {}).get(SLOW_REFUSAL))


def _replace(response: Any, body: bytes) -> None:
    """``body`` as the whole of ``response``'s body, described as plain bytes."""
    read = type(response)(response.status_code, content=body)
    response.stream = read.stream
    for name in _AS_SENT:
        response.headers.pop(name, None)
    response.headers["content-length"] = str(len(body))
