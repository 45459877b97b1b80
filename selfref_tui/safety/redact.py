"""Secrets never shown: the configured key, bearer tokens and URL userinfo.

Applied where text leaves the process for a person (errors, events,
notifications, log lines). A proxy that echoes the ``Authorization`` header in
its error body, or a base URL written as ``https://user:key@host/v1``, must
not put the key on the screen or in a terminal's scrollback.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_BEARER = re.compile(r"(?i)\b(bearer|basic)(\s+)([A-Za-z0-9._~+/=\-]{6,})")
_ASSIGNED = re.compile(
    r"(?i)\b((?:access_?|api_?)?token|api_?key|secret)(\s*[=:]\s*\"?)([^\"\s,&}]{6,})"
)
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s@?#]+@")
_KEYLIKE = re.compile(r"\b(sk-[A-Za-z0-9_\-]{16,}|sk-ant-[A-Za-z0-9_\-]{16,})")
_HEADER = re.compile(r'(?i)("?(?:authorization|x-api-key|api-key)"?\s*[:=]\s*"?)([^"\s,}]{6,})')

MASK = "***"
#: shorter configured "keys" are placeholders, not secrets (see :func:`redact`)
MIN_SECRET = 8


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with every secret replaced by ``***``.

    ``secrets`` are values known to be secret (the configured API key);
    values shorter than 8 characters are ignored: they are placeholders for
    servers that want none (``"test"``, ``"ollama"``), and masking them
    everywhere would garble paths and words while protecting nothing.
    Patterns also catch what a server may echo back: ``Bearer …`` tokens,
    ``Authorization:`` headers, ``sk-…`` keys and the userinfo part of URLs
    (``https://***@host/``).
    """
    if not isinstance(text, str):
        text = str(text)
    for secret in sorted({s for s in secrets if s and len(s) >= MIN_SECRET}, key=len, reverse=True):
        text = text.replace(secret, MASK)
    text = _USERINFO.sub(lambda m: m.group(1) + MASK + "@", text)
    text = _BEARER.sub(lambda m: m.group(1) + m.group(2) + MASK, text)
    text = _ASSIGNED.sub(lambda m: m.group(1) + m.group(2) + MASK, text)
    text = _HEADER.sub(lambda m: m.group(1) + MASK, text)
    return _KEYLIKE.sub(MASK, text)
