"""One TLS context for every HTTP client of the process, built once, off the app's loop.

The HTTP library the openai package carries (``httpx`` or ``httpx2``) builds a
TLS context for each client it makes, and each build reads the whole CA bundle:
70-140 ms of CPU. The provider's client made one on the app's loop as the
runtime started (and again at each model switch), standing the loop still, and
every small question (the window, the model list, "is the server there?") made
another. An ``ssl.SSLContext`` is made to be shared by connections and threads,
so the context is built once, by the library's own ``create_ssl_context`` with
its defaults (the same CA bundle; ``SSL_CERT_FILE`` and ``SSL_CERT_DIR``
honoured as the library honours them), and handed to every client as its
``verify``. The runtime's import thread builds it (``startup._preload_runtime``).
"""

from __future__ import annotations

import functools
import sys
from typing import Any


@functools.cache
def tls_context() -> Any:
    """The process's TLS context for the openai client's HTTP library; ``True`` (each
    client builds its own, as the library does by default) when that library has no
    ``create_ssl_context`` to build it with."""
    import openai

    client = openai.DefaultAsyncHttpxClient
    home = next((c.__module__ for c in client.__mro__
                 if not c.__module__.startswith("openai")), "")
    library = sys.modules.get(home.split(".")[0])
    create = getattr(library, "create_ssl_context", None)
    return create() if callable(create) else True
