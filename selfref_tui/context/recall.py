"""The model's way back into its own history: search it, read it by number.

A compaction takes messages out of the model's view, never out of the store.
``search_history`` and ``read_history`` (the tools) answer from here, over a
key's numbered history entries (``MemoryKey.entries()``: every message ever
committed, compacted or not, each with a number that never changes).

Searching is plain and predictable: every word of the query (case-insensitive)
and every "quoted phrase" must occur in a message; matches come newest first.
``recall_index.HistoryIndex`` keeps each entry's searchable text case-folded,
extended as the history grows, so a search over 100,000 messages is one pass of
substring tests in C rather than a re-read of the history.

Two kinds of entry are never searched: the results of the recall tools
themselves and the model's messages that call them. Otherwise every search
would find the last search's output and the message that asked for it ("let
me search for X" holds X), and each new result would quote the previous ones.

Pure: no files, no I/O. Rendering for the model is here too, in the tag format
the summary uses for verbatim messages (:func:`.kept_words.tagged`).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from ..refs.parser import quote_refs
from .casefold import fold, literal, spans
from .history import EntryLike
from .images import text_of
from .kept_words import Said, said_text, tagged
from .numbers import whole_number

#: the model's recall tools: their calls and results are left out of the index
RECALL_TOOLS = frozenset({"search_history", "read_history"})
DEFAULT_LIMIT = 20
MAX_LIMIT = 100
DEFAULT_COUNT = 10
MAX_COUNT = 100
#: characters of context a snippet shows around its match (each side)
SNIPPET_SIDE = 80
_QUOTED = re.compile(r'"([^"]*)"')


class RecallError(ValueError):
    """A query or range the model can fix (the tool turns it into an error it reads)."""


def parse_query(query: str) -> list[str]:
    """The terms of ``query``, case-folded (``casefold.fold``): each "quoted phrase" whole,
    then each other word.

    >>> parse_query('Deploy "the blue button" now')
    ['the blue button', 'deploy', 'now']
    """
    phrases = [" ".join(fold(p).split()) for p in _QUOTED.findall(query)]
    rest = _QUOTED.sub(" ", query).replace('"', " ")
    words = [fold(w) for w in rest.split()]
    terms = [t for t in phrases if t] + words
    # a term inside another adds nothing to the test
    return [t for i, t in enumerate(terms) if t not in terms[:i]]


def searchable_text(message: dict[str, Any], tool_names: dict[str, str]) -> str:
    """What of a message a search looks at (before case folding): its text, and the
    names and arguments of its tool calls, recall tools left out.

    ``tool_names`` maps call ids to names, filled from assistant messages as
    they are met, so a later tool result knows which tool it answers.
    """
    role = message.get("role")
    if role == "tool":
        if tool_names.get(str(message.get("tool_call_id", ""))) in RECALL_TOOLS:
            return ""
        return text_of(message.get("content"))
    text = text_of(message.get("content"))
    calls = message.get("tool_calls")
    if not calls:
        return text
    parts = [text] if text else []
    recalls = False
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            continue
        name = str(function.get("name", ""))
        tool_names[str(call.get("id", ""))] = name
        if name in RECALL_TOOLS:
            recalls = True
        else:
            parts.append(f"{name} {function.get('arguments', '')}")
    return "" if recalls else "\n".join(parts)


class Hit(NamedTuple):
    """One matching message (a tuple: a person's search may make 100,000 of them, and a
    frozen dataclass costs several times as much to make)."""

    n: int
    role: str
    time: str
    snippet: str
    compacted: bool = False
    rewound: bool = False


@dataclass(frozen=True)
class SearchResult:
    terms: tuple[str, ...]
    hits: tuple[Hit, ...]
    #: every match (hits is at most ``limit`` of them)
    total: int


class HistorySource(Protocol):
    """A key's numbered history as the store gives it (``MemoryKey``): the highest number,
    one entry by number (IndexError when there is none), and every entry."""

    @property
    def last_number(self) -> int: ...

    def entry(self, n: int) -> EntryLike: ...

    def entries(self) -> Sequence[EntryLike]: ...


class _EntryList:
    """A plain sequence of entries seen as a :class:`HistorySource` (tests, one-shot CLIs)."""

    def __init__(self, entries: Sequence[EntryLike]) -> None:
        self._entries = entries
        self.last_number = entries[-1].n if entries else 0
        #: a rewind mark that changes whenever the list does (its flags are read each time)
        self.last_rewind = object()

    def entry(self, n: int) -> EntryLike:
        index = bisect_left(self._entries, n, key=lambda e: e.n)
        if index == len(self._entries) or self._entries[index].n != n:
            raise IndexError(f"no message {n}")
        return self._entries[index]

    def entries(self) -> Sequence[EntryLike]:
        return self._entries


def as_source(history: HistorySource | Sequence[EntryLike]) -> HistorySource:
    """The store's key as it is, or a sequence of entries wrapped to look like one."""
    if isinstance(history, Sequence):
        return _EntryList(history)
    return history


def render_search(result: SearchResult, query: str, *, before: int | None = None) -> str:
    """The search result as the model reads it: one line per message, newest first."""
    shown, total = len(result.hits), result.total
    scope = f" before message {before}" if before is not None else ""
    if not total:
        return (f"No stored message{scope} contains all of: "
                + ", ".join(f'"{t}"' for t in result.terms)
                + ". Try fewer or other words.")
    head = (f"{total} message{'s' if total != 1 else ''}{scope} match {query.strip()!r}, "
            f"newest first")
    if shown < total:
        oldest = result.hits[-1].n
        head += (f"; showing {shown}: search again with before={oldest} for older ones, "
                 "or add words")
    lines = [head + ". read_history(start=N) returns a message whole."]
    for hit in result.hits:
        flags = "".join(f" ({f})" for f, on in (("compacted", hit.compacted),
                                                 ("rewound", hit.rewound)) if on)
        # ref tags quoted, as read_history shows them (kept_words.tagged)
        lines.append(f"#{hit.n} {hit.role} {_short_time(hit.time)}{flags}: "
                     f"{quote_refs(hit.snippet)}")
    return "\n".join(lines)


def read_history(history: HistorySource | Sequence[EntryLike], start: int,
                 count: int | None = DEFAULT_COUNT, *, include_rewound: bool = False) -> str:
    """Messages ``start`` .. ``start + count - 1`` verbatim, in the summary's tag format.

    Read by number (``entry(n)``), so its cost is the messages it returns, however
    long the history.
    """
    start = whole_number(start)  # type: ignore[assignment]
    if start is None or start < 1:
        raise RecallError("start must be a message number (1 or more)")
    count = _clamp(count, DEFAULT_COUNT, MAX_COUNT, "count")
    source = as_source(history)
    last = source.last_number
    if start > last:
        raise RecallError(f"there is no message {start}: the history holds messages 1–{last}"
                          if last else "the history is empty")
    end = min(start + count - 1, last)
    tool_names: dict[str, str] = {}
    blocks: list[str] = []
    skipped = 0
    # the message before the range may hold the calls its first results answer
    for n in range(max(1, start - 1), end + 1):
        try:
            entry = source.entry(n)
        except IndexError:  # a number the store hides
            continue
        message = entry.message
        for call in message.get("tool_calls") or ():
            if isinstance(call, dict) and isinstance(call.get("function"), dict):
                tool_names[str(call.get("id", ""))] = str(call["function"].get("name", ""))
        if n < start:
            continue
        if getattr(entry, "rewound", False) and not include_rewound:
            skipped += 1
            continue
        flags: dict[str, str] = {}
        if entry.role == "tool":
            name = tool_names.get(str(message.get("tool_call_id", "")))
            if name:
                flags["tool"] = name
        if getattr(entry, "compacted", False):
            flags["compacted"] = "true"
        if getattr(entry, "rewound", False):
            flags["rewound"] = "true"
        blocks.append(tagged(Said(entry.n, entry.role, said_text(message), entry.time), **flags))
    head = f"Messages {start}–{end} of {last}" if end > start else f"Message {start} of {last}"
    if skipped:
        head += f" ({skipped} rewound left out: include_rewound=true shows them)"
    if end < last:
        head += f"; read_history(start={end + 1}) continues"
    return "\n".join([head + ".", *blocks])


def fit_snippet(snippet: str, query: str, width: int) -> str:
    """``snippet`` (a search's, its match in the middle of up to 160 characters) cut to
    ``width`` characters around the match of ``query``'s first term, "…" where cut.

    Cut at its end only, a row narrower than the snippet showed the text before the
    match and never the match. No match in it (a snippet of a message's start): as given.
    """
    if len(snippet) <= width:
        return snippet
    terms = parse_query(query)
    found = next(spans(literal(terms[0]), snippet), None) if terms else None
    if found is None:
        return snippet
    start, end = found
    room = max(width - 2, 1)  # a "…" each side
    begin = max(0, start - max(room - (end - start), 0) // 2)
    stop = min(len(snippet), begin + room)
    begin = max(0, stop - room)
    return ("…" if begin > 0 else "") + snippet[begin:stop] + ("…" if stop < len(snippet)
                                                             else "")


def _short_time(iso: str) -> str:
    """``2025-05-01T10:02:03.123+00:00`` → ``2025-05-01 10:02 UTC`` (times are stored in UTC)."""
    return f"{iso[:10]} {iso[11:16]} UTC" if len(iso) >= 16 else iso


def _clamp(value: Any, default: int, most: int, name: str) -> int:
    if value is None:
        return default
    number = whole_number(value)
    if number is None or number < 1:
        raise RecallError(f"{name} must be a whole number from 1 to {most}")
    return min(number, most)
