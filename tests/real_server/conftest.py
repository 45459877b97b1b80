"""A real OpenAI-compatible server, when one is there (scripts/real-server-test.sh starts it).

Skipped unless ``SELFREF_REAL_SERVER_URL`` points at a reachable server, so CI
(which has none) passes them by. Models: ``SELFREF_REAL_SERVER_MODEL`` (an
ordinary window, default ``smol-4k``) and ``SELFREF_REAL_SERVER_SMALL_MODEL``
(a 1,024-token window, default ``smol-1k``). ``SELFREF_REAL_SERVER_PYTHON`` and
``SELFREF_REAL_SERVER_GGUF`` (the server's interpreter and model file) let a test
run llama.cpp's grammar parser without the server's fallback.
"""

from __future__ import annotations

import os
import urllib.request

import pytest

URL = os.environ.get("SELFREF_REAL_SERVER_URL", "")
MODEL = os.environ.get("SELFREF_REAL_SERVER_MODEL", "smol-4k")
SMALL_MODEL = os.environ.get("SELFREF_REAL_SERVER_SMALL_MODEL", "smol-1k")
#: the server's own Python and model file, for what its llama.cpp does outside a request
SERVER_PYTHON = os.environ.get("SELFREF_REAL_SERVER_PYTHON", "")
GGUF = os.environ.get("SELFREF_REAL_SERVER_GGUF", "")


def _reachable(url: str) -> bool:
    if not url:
        return False
    try:
        with urllib.request.urlopen(f"{url.rstrip('/')}/models", timeout=2):
            return True
    except OSError:
        return False


def pytest_collection_modifyitems(config, items):
    if _reachable(URL):
        return
    skip = pytest.mark.skip(reason="no real server: set SELFREF_REAL_SERVER_URL "
                                   "(scripts/real-server-test.sh does)")
    for item in items:
        if "real_server" in str(item.fspath):
            item.add_marker(skip)
