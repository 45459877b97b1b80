"""Small questions to a server whose answers are read as streams, never whole.

The openai client reads every body to its end (an error's too), so a server
whose answer never ends, or trickles a byte a second, could hold a question
forever or fill the memory. The look-ups that only want a status or a small
JSON answer (the window, "is the server there?") go through the HTTP client
the openai package carries (whichever: ``httpx`` or ``httpx2``), asked
directly, with a deadline for the whole question and a cap on what is read.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from selfref_tui.config import ProviderConfig


def http_client(config: ProviderConfig, timeout_s: float) -> Any:
    """The openai package's own HTTP client (its defaults: proxies, redirects)."""
    import openai

    return openai.DefaultAsyncHttpxClient(
        timeout=openai.Timeout(timeout_s, connect=min(timeout_s, config.connect_timeout_s)))


def headers(config: ProviderConfig) -> dict[str, str]:
    """What every question carries: JSON, no compression (a bomb), the key if any."""
    out = {"Accept": "application/json", "Accept-Encoding": "identity"}
    if config.api_key:
        out["Authorization"] = f"Bearer {config.api_key}"
    return out


def http_errors(http: Any) -> tuple[type[BaseException], ...]:
    """The HTTP library's errors (``httpx`` or ``httpx2``, whichever openai carries)."""
    library = sys.modules.get(type(http).__mro__[1].__module__.split(".")[0])
    return tuple(error for error in (getattr(library, "HTTPError", None),
                                     getattr(library, "InvalidURL", None),
                                     getattr(library, "StreamError", None))
                 if isinstance(error, type) and issubclass(error, BaseException))


async def status_of(config: ProviderConfig, timeout_s: float) -> int | str:
    """The status ``GET <base>/models`` answers within ``timeout_s``, its body unread;
    ``"timeout"`` or ``"connection"`` when there is none."""
    http = http_client(config, timeout_s)
    try:
        async with asyncio.timeout(timeout_s):
            url = f"{config.base_url.rstrip('/')}/models"
            async with http.stream("GET", url, headers=headers(config)) as response:
                return int(response.status_code)
    except TimeoutError:
        return "timeout"
    except (OSError, *http_errors(http)) as exc:
        return "timeout" if "Timeout" in type(exc).__name__ else "connection"
    finally:
        await http.aclose()
