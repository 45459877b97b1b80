"""Which tools the next request offers: all of them, unless the window is small.

Tool schemas ride in every request: the built-in ones alone cost about 1,600
tokens. On a 1,024-token server they do not fit by themselves, so no request
can be sent at all and overflow recovery is impossible. When the schemas
would take more than :data:`TOOL_SHARE` of the window, the request offers the
longest run of tools, most essential first, that fits in that share; the rest
of the window is left to the conversation.

Why 45 %: the full built-in set is ~1,590 tokens (~1,800 by the four-characters
estimate used until tiktoken has loaded), about two fifths of a 4,096-token
window (llama.cpp's usual default). 45 % keeps every tool there whichever count
is in use, still leaving ~2,250 tokens for the conversation; 40 % (enough before
the recall tools) would drop the forks there before tiktoken loads and offer
them after, so the set would change under the person. On 1,024 tokens 45 %
holds ``compact`` (~340 tokens, ~400 estimated) and nothing else.

Most essential first, and why:

1. ``compact`` — the runtime's own ways out of a full window (the overflow
   note, the auto-compaction reminder, ``/compact``) ask the model to call it.
   Without it those are skipped and the oldest messages are left out of the
   request instead, which works on any window.
2. ``search_history``, ``read_history`` — a small window compacts often, and
   the summary points to them for everything it left out: without them the
   compacted conversation is out of the model's reach.
3. ``remember``, ``forget`` — durable memory is what outlives a small window.
4. ``inspect_context`` — the model's view of its own budget.
5. ``list_refs``, ``get_ref``, ``read_fd`` — reading refs and large outputs back.
6. ``fd_to_file`` — writing them out.
7. ``fork_spawn``, ``fork_gather_all`` — a child agent has no room to work on
   a window this small; the two only make sense together.
8. every other source's tools (MCP servers), in their order.

A prefix, not a best fit: a later tool is never offered while a more
essential one is left out, and a group (a spawn without its gather) is never
split. The offered tools keep their original order in the request.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

#: the largest share of the window the tool schemas may take before the set is reduced
TOOL_SHARE = 0.45
#: built-in tools, most essential first; each group is offered whole or not at all
ESSENTIAL_GROUPS: tuple[tuple[str, ...], ...] = (
    ("compact",),
    ("search_history", "read_history"),
    ("remember", "forget"),
    ("inspect_context",),
    ("list_refs", "get_ref", "read_fd"),
    ("fd_to_file",),
    ("fork_spawn", "fork_gather_all"),
)
COMPACT_TOOL = "compact"
#: why a compaction cannot be asked for on this window (/compact refused, a queued request dropped)
COMPACT_REFUSED = ("cannot compact: the window is too small to offer the compact tool; the "
                   "oldest messages are left out of requests instead (they stay stored)")


def tool_name(schema: dict) -> str:
    return str((schema.get("function") or {}).get("name", ""))


@dataclass(frozen=True)
class ToolOffer:
    """The tools of the next request, and how many there would be on a large window."""

    tools: list[dict]
    #: every tool the sources have for this key
    total: int
    window: int = 0

    @property
    def reduced(self) -> bool:
        return len(self.tools) < self.total

    @property
    def names(self) -> frozenset[str]:
        return frozenset(tool_name(t) for t in self.tools)

    @property
    def compact_offered(self) -> bool:
        return COMPACT_TOOL in self.names

    def notice(self) -> str | None:
        """What the person reads when the set is reduced (None when it is not)."""
        if not self.reduced:
            return None
        return (f"window too small for the full tool set: offering {len(self.tools)} of "
                f"{self.total} tools (their schemas may take {round(TOOL_SHARE * 100)}% of the "
                f"{self.window:,}-token window; set context_window if the model has a larger one)")


def offer_tools(
    tools: Sequence[dict],
    count: Callable[[Sequence[dict]], int],
    window: int,
    share: float = TOOL_SHARE,
) -> ToolOffer:
    """The tools to offer on ``window``: all of ``tools`` when ``count(tools)`` fits
    ``share`` of it, else the longest most-essential-first run that does (see above).
    """
    tools = list(tools)
    budget = share * window
    if not tools or count(tools) <= budget:
        return ToolOffer(tools, len(tools), window)
    by_name: dict[str, list[int]] = {}
    for index, schema in enumerate(tools):
        by_name.setdefault(tool_name(schema), []).append(index)
    groups: list[list[int]] = []
    grouped: set[int] = set()
    for names in ESSENTIAL_GROUPS:
        indexes = [i for name in names for i in by_name.get(name, ())]
        if indexes:
            groups.append(indexes)
            grouped.update(indexes)
    groups += [[i] for i in range(len(tools)) if i not in grouped]
    chosen: set[int] = set()
    for group in groups:
        candidate = chosen | set(group)
        if count([tools[i] for i in sorted(candidate)]) > budget:
            break
        chosen = candidate
    return ToolOffer([tools[i] for i in sorted(chosen)], len(tools), window)
