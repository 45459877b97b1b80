"""Tools a server lists that are left out before the SDK reads the listing.

A tool whose schema nests absurdly deep cannot be offered: the SDK's own check
of the listing fails on it (pydantic's serialisation depth) and takes every
other tool of the server with it; and a provider given such a schema refuses
the request, so every turn would fail. Such tools are taken out of the
``tools/list`` answer as it arrives, and their names kept to tell the person.
"""

from __future__ import annotations

from typing import Any

#: a tool whose input or output schema nests deeper than this (JSON levels) is left out
MAX_SCHEMA_DEPTH = 64


def nested_deeper(value: Any, limit: int) -> bool:
    """Whether JSON data ``value`` nests more than ``limit`` levels (iterative: no recursion)."""
    todo = [(value, 1)]
    while todo:
        item, depth = todo.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            todo.extend((child, depth + 1) for child in children)
    return False


def prune_listing(message: Any) -> list[str]:
    """Take over-deep tools out of a ``tools/list`` answer in place; their names.

    ``message`` is the SDK's ``SessionMessage``; anything that is not an answer
    shaped like a tool listing is left alone.
    """
    result = getattr(getattr(message, "message", None), "result", None)
    tools = result.get("tools") if isinstance(result, dict) else None
    if not isinstance(tools, list):
        return []
    kept, left_out = [], []
    for tool in tools:
        schemas = [tool.get(k) for k in ("inputSchema", "outputSchema")] \
            if isinstance(tool, dict) else []
        if any(nested_deeper(s, MAX_SCHEMA_DEPTH) for s in schemas):
            left_out.append(str(tool.get("name", "?")))
        else:
            kept.append(tool)
    if left_out:
        result["tools"] = kept
    return left_out
