"""The names MCP tools get in the model's tool list: ``mcp__<server>__<tool>``.

Providers accept function names matching ``[A-Za-z0-9_-]{1,64}``; MCP servers
may use dots, slashes and spaces, and two servers may offer the same tool. The
mapping is deterministic (config order, then the server's order), so a model
that saw a name in an earlier turn finds the same tool behind it after a restart.
"""

from __future__ import annotations

import hashlib
import re

PREFIX = "mcp__"
MAX_LEN = 64
_BAD = re.compile(r"[^A-Za-z0-9_-]")


def clean(part: str) -> str:
    """``part`` with every character outside ``[A-Za-z0-9_-]`` replaced by ``_``."""
    return _BAD.sub("_", part) or "_"


def exposed_name(server: str, tool: str, taken: set[str] | frozenset[str] = frozenset()) -> str:
    """A provider-safe, unique name for ``tool`` on ``server``, not in ``taken``.

    Too long → cut and given a short hash of the original pair, so two long names
    that share a prefix stay apart. Still taken (two originals clean to the same
    text) → ``_2``, ``_3``… within the length limit.
    """
    base = f"{PREFIX}{clean(server)}__{clean(tool)}"
    if len(base) > MAX_LEN:
        digest = hashlib.sha1(f"{server}\0{tool}".encode()).hexdigest()[:8]
        base = f"{base[: MAX_LEN - 9]}_{digest}"
    name, n = base, 1
    while name in taken:
        n += 1
        suffix = f"_{n}"
        name = base[: MAX_LEN - len(suffix)] + suffix
    return name
