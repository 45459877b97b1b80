"""The names MCP tools get in the model's tool list: ``mcp__<server>__<tool>``.

Providers accept function names matching ``[A-Za-z0-9_-]{1,64}``; MCP servers
may use dots, slashes and spaces, and two servers may offer the same tool.

The mapping depends on the configuration only, never on which server started
first, so a model that saw a name in an earlier turn finds the same tool
behind it after a restart:

* each server gets a *tag* from its name, assigned in config order
  (:func:`server_tags`): cleaned, underscore runs made single, ends stripped,
  long ones cut with a hash; a tag an earlier server already has gets ``_2``,
  ``_3``…. A tag never holds ``__``, so the first ``__`` after ``mcp__`` ends
  it, and tools of two servers can never share a name;
* within one server, tools whose names clean to the same text get ``_2``,
  ``_3``… in the server's own listing order.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

PREFIX = "mcp__"
MAX_LEN = 64
#: the longest server tag: the tool's part keeps at least half of the name
TAG_LEN = 24
_BAD = re.compile(r"[^A-Za-z0-9_-]")
_UNDERSCORES = re.compile(r"_{2,}")


def clean(part: str) -> str:
    """``part`` with every character outside ``[A-Za-z0-9_-]`` replaced by ``_``."""
    return _BAD.sub("_", part) or "_"


def _digest(*parts: str) -> str:
    return hashlib.sha1("\0".join(parts).encode()).hexdigest()[:8]


def server_tag(server: str) -> str:
    """The server's part of its tools' names (before uniqueness; see :func:`server_tags`)."""
    tag = _UNDERSCORES.sub("_", clean(server)).strip("_") or "server"
    if len(tag) > TAG_LEN:
        tag = f"{tag[: TAG_LEN - 9].rstrip('_')}_{_digest(server)}"
    return tag


def server_tags(servers: Iterable[str]) -> dict[str, str]:
    """Each configured server's tag, unique, decided in config order."""
    tags: dict[str, str] = {}
    used: set[str] = set()
    for server in servers:
        base = tag = server_tag(server)
        n = 1
        while tag in used:
            n += 1
            tag = f"{base}_{n}"
        used.add(tag)
        tags[server] = tag
    return tags


def exposed_name(server: str, tool: str, taken: set[str] | frozenset[str] = frozenset(),
                 *, tag: str | None = None) -> str:
    """A provider-safe name for ``tool`` on ``server``, not in ``taken`` (that server's
    names so far); ``tag`` is the server's from :func:`server_tags`.

    Too long → cut and given a short hash of the original pair, so two long names
    that share a prefix stay apart. Still taken (two originals clean to the same
    text) → ``_2``, ``_3``… within the length limit.
    """
    base = f"{PREFIX}{tag or server_tag(server)}__{clean(tool)}"
    if len(base) > MAX_LEN:
        base = f"{base[: MAX_LEN - 9]}_{_digest(server, tool)}"
    name, n = base, 1
    while name in taken:
        n += 1
        suffix = f"_{n}"
        name = base[: MAX_LEN - len(suffix)] + suffix
    return name
