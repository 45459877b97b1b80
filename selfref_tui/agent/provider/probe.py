"""Small questions to a server whose answers are read as streams, never whole.

The openai client reads every body to its end (an error's too), so a server
whose answer never ends, or trickles a byte a second, could hold a question
forever or fill the memory. The look-ups that only want a status or a small
JSON answer (the window, "is the server there?") go through the HTTP client
the openai package carries (whichever: ``httpx`` or ``httpx2``), asked
directly, with a deadline for the whole question and a cap on what is read.
Redirects are followed here, not by the library: it reads a redirect's body
whole (decoded, so a gzip bomb inflates) before it follows the ``Location``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from selfref_tui.config import ProviderConfig

#: the most one answer may hold (OpenRouter's whole /models list is about 1 MB)
MAX_ANSWER_BYTES = 4 * 1024 * 1024


async def http_client(config: ProviderConfig, timeout_s: float) -> Any:
    """The openai package's own HTTP client (its defaults: proxies), built in a thread
    (the first build makes the process's TLS context, provider/tls.py: 70-140 ms the
    app's loop would stand still)."""
    import openai

    from .tls import tls_context

    timeout = openai.Timeout(timeout_s, connect=min(timeout_s, config.connect_timeout_s))
    return await asyncio.to_thread(
        lambda: openai.DefaultAsyncHttpxClient(timeout=timeout, verify=tls_context()))


def headers(config: ProviderConfig) -> dict[str, str]:
    """What every question carries: JSON, no compression (a bomb), the key if any."""
    out = {"Accept": "application/json", "Accept-Encoding": "identity"}
    if config.api_key:
        out["Authorization"] = f"Bearer {config.api_key}"
    return out


def http_errors(http: Any) -> tuple[type[BaseException], ...]:
    """The HTTP library's errors (``httpx`` or ``httpx2``, whichever openai carries), told
    by one of its objects: a client (openai's subclass of it) or a response."""
    home = next(c.__module__ for c in type(http).__mro__ if not c.__module__.startswith("openai"))
    library = sys.modules.get(home.split(".")[0])
    return tuple(error for error in (getattr(library, "HTTPError", None),
                                     getattr(library, "InvalidURL", None),
                                     getattr(library, "StreamError", None))
                 if isinstance(error, type) and issubclass(error, BaseException))


@asynccontextmanager
async def stream(http: Any, method: str, url: str, headers: dict[str, str],
                 body: Any = None) -> AsyncIterator[Any]:
    """``http.stream``, with redirects followed without reading a redirect's body.

    A redirect's body may never end: each is closed unread and its
    ``next_request`` (the library's own, so the key is dropped for another
    host) sent; past ``max_redirects`` the last redirect is the answer.
    """
    request = http.build_request(method, url, headers=headers, json=body)
    response = await http.send(request, stream=True, follow_redirects=False)
    try:
        for _ in range(http.max_redirects):
            if response.next_request is None:
                break
            await response.aclose()
            response = await http.send(response.next_request, stream=True,
                                       follow_redirects=False)
        yield response
    finally:
        await response.aclose()


async def read_json(http: Any, method: str, url: str, sent: dict[str, str], body: Any,
                    max_bytes: int, answered: list[int]) -> Any:
    """One JSON answer, read as it streams in and given up on past ``max_bytes``.

    A refusal, a whole answer and one that is too large count as answers: their
    status goes into ``answered``; an answer still arriving at a deadline does not.
    """
    async with stream(http, method, url, sent, body) as response:
        if response.status_code >= 300:
            answered.append(response.status_code)
            return None  # the body is not read: it may never end
        declared = response.headers.get("content-length", "")
        data = bytearray()
        if not (declared.isdigit() and int(declared) > max_bytes):
            async for chunk in response.aiter_raw():
                data += chunk
                if len(data) > max_bytes:
                    break
        answered.append(response.status_code)
        if not data or len(data) > max_bytes:
            return None
    return json.loads(data)


async def fetch_json(config: ProviderConfig, url: str, timeout_s: float,
                     max_bytes: int = MAX_ANSWER_BYTES) -> tuple[int | str, Any]:
    """``GET url``'s status (``"timeout"``, ``"connection"`` when none) and its JSON
    (None when it is not JSON, over ``max_bytes`` or a refusal), all within ``timeout_s``."""
    http = await http_client(config, timeout_s)
    answered: list[int] = []
    try:
        async with asyncio.timeout(timeout_s):
            payload = await read_json(http, "GET", url, headers(config), None, max_bytes,
                                      answered)
    except TimeoutError:
        return "timeout", None
    except (ValueError, RecursionError):  # not JSON
        return (answered or ["connection"])[0], None
    except (OSError, *http_errors(http)) as exc:
        return "timeout" if "Timeout" in type(exc).__name__ else "connection", None
    finally:
        await http.aclose()
    return answered[0], payload


async def status_of(config: ProviderConfig, timeout_s: float) -> int | str:
    """The status ``GET <base>/models`` answers within ``timeout_s``, its body unread;
    ``"timeout"`` or ``"connection"`` when there is none."""
    http = await http_client(config, timeout_s)
    try:
        async with asyncio.timeout(timeout_s):
            url = f"{config.base_url.rstrip('/')}/models"
            async with stream(http, "GET", url, headers(config)) as response:
                return int(response.status_code)
    except TimeoutError:
        return "timeout"
    except (OSError, *http_errors(http)) as exc:
        return "timeout" if "Timeout" in type(exc).__name__ else "connection"
    finally:
        await http.aclose()
