"""The model's way back into its own history: search it, read it by number.

A compaction takes messages out of the model's view, never out of the store.
``search_history`` and ``read_history`` (the tools) answer from here, over a
key's numbered history entries (``MemoryKey.entries()``: every message ever
committed, compacted or not, each with a number that never changes).

Searching is plain and predictable: every word of the query (case-insensitive)
and every "quoted phrase" must occur in a message; matches come newest first.
:class:`HistoryIndex` keeps each entry's searchable text lower-cased, extended
as the history grows, so a search over 100,000 messages is one pass of
substring tests in C rather than a re-read of the history.

Two kinds of entry are never searched: the results of the recall tools
themselves and the model's calls to them. Otherwise every search would find
the last search's output (and the query it was called with), and each new
result would quote the previous ones.

Pure: no files, no I/O. Rendering for the model is here too, in the tag format
the summary uses for verbatim messages (:func:`.kept_words.tagged`).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .images import text_of
from .kept_words import EntryLike, Said, said_text, tagged

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
    """The terms of ``query``, lower-cased: each "quoted phrase" whole, then each other word.

    >>> parse_query('Deploy "the blue button" now')
    ['the blue button', 'deploy', 'now']
    """
    phrases = [" ".join(p.split()).lower() for p in _QUOTED.findall(query)]
    rest = _QUOTED.sub(" ", query).replace('"', " ")
    words = [w.lower() for w in rest.split()]
    terms = [t for t in phrases if t] + words
    # a term inside another adds nothing to the test
    return [t for i, t in enumerate(terms) if t not in terms[:i]]


def searchable_text(message: dict[str, Any], tool_names: dict[str, str]) -> str:
    """What of a message a search looks at (before lower-casing): its text, and the
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
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            continue
        name = str(function.get("name", ""))
        tool_names[str(call.get("id", ""))] = name
        if name not in RECALL_TOOLS:
            parts.append(f"{name} {function.get('arguments', '')}")
    return "\n".join(parts)


@dataclass(frozen=True)
class Hit:
    """One matching message."""

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


class HistoryIndex:
    """Lower-cased searchable text per history entry, kept in step with the entries.

    Entries only ever grow (numbers are stable; a rewind marks, never removes),
    so :meth:`update` indexes just the new ones; a history that does not start
    as the indexed one did (another key, a damaged log salvaged) is indexed anew.
    """

    def __init__(self) -> None:
        self._texts: list[str] = []
        self._numbers: list[int] = []
        self._tool_names: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self._texts)

    def update(self, entries: Sequence[EntryLike]) -> None:
        done = len(self._texts)
        if done > len(entries) or (done and entries[done - 1].n != self._numbers[-1]):
            self._texts, self._numbers, self._tool_names = [], [], {}
            done = 0
        if done == len(entries):
            return
        names = self._tool_names
        texts: list[str] = []
        # Written for speed (the first search of a long history indexes all of it): a
        # plain text message, by far the most common, skips searchable_text.
        for entry in entries[done:]:
            message = entry.message
            content = message.get("content")
            if type(content) is str and entry.role != "tool" and not message.get("tool_calls"):
                texts.append(content)
            else:
                texts.append(searchable_text(message, names))
        self._texts += _lowered(texts)
        self._numbers += [entry.n for entry in entries[done:]]

    def search(self, entries: Sequence[EntryLike], query: str, *, limit: int = DEFAULT_LIMIT,
               before: int | None = None, include_rewound: bool = False,
               every: bool = False) -> SearchResult:
        """The newest ``limit`` entries holding every term of ``query`` (numbered below
        ``before`` when given), and how many match in all; ``every``: all of them, no
        limit (a person's search, ``selfref-tui search``)."""
        terms = parse_query(query)
        if not terms:
            raise RecallError("the query is empty; give one or more words, or a \"quoted "
                              "phrase\"")
        limit = 0 if every else _clamp(limit, DEFAULT_LIMIT, MAX_LIMIT, "limit")
        self.update(entries)
        texts = self._texts
        end = len(texts)
        if before is not None:
            end = bisect_left(self._numbers, before)
        # Longest term first: it usually narrows most, and the others are tested on its
        # matches only, one term per pass (a pass is one tight comprehension).
        first, *others = sorted(terms, key=len, reverse=True)
        found = [i for i, text in enumerate(texts[:end] if end < len(texts) else texts)
                 if first in text]
        for term in others:
            found = [i for i in found if term in texts[i]]
        if not include_rewound:
            found = [i for i in found if not getattr(entries[i], "rewound", False)]
        hits = tuple(_hit(entries[i], terms) for i in reversed(found[-limit:] if limit
                                                                else found))
        return SearchResult(tuple(terms), hits, len(found))


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
        lines.append(f"#{hit.n} {hit.role} {_short_time(hit.time)}{flags}: {hit.snippet}")
    return "\n".join(lines)


def read_history(entries: Sequence[EntryLike], start: int, count: int = DEFAULT_COUNT, *,
                 include_rewound: bool = False) -> str:
    """Messages ``start`` .. ``start + count - 1`` verbatim, in the summary's tag format."""
    if not isinstance(start, int) or isinstance(start, bool) or start < 1:
        raise RecallError("start must be a message number (1 or more)")
    count = _clamp(count, DEFAULT_COUNT, MAX_COUNT, "count")
    last = entries[-1].n if entries else 0
    if start > last:
        raise RecallError(f"there is no message {start}: the history holds messages 1–{last}"
                          if last else "the history is empty")
    tool_names = _tool_names_before(entries, start)
    index = bisect_left(entries, start, key=lambda e: e.n)
    blocks: list[str] = []
    skipped: list[int] = []
    for entry in entries[index:]:
        if entry.n >= start + count:
            break
        message = entry.message
        for call in message.get("tool_calls") or ():
            if isinstance(call, dict) and isinstance(call.get("function"), dict):
                tool_names[str(call.get("id", ""))] = str(call["function"].get("name", ""))
        if getattr(entry, "rewound", False) and not include_rewound:
            skipped.append(entry.n)
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
    end = min(start + count - 1, last)
    head = f"Messages {start}–{end} of {last}" if end > start else f"Message {start} of {last}"
    if skipped:
        head += (f" ({len(skipped)} rewound left out: include_rewound=true shows them)")
    if end < last:
        head += f"; read_history(start={end + 1}) continues"
    return "\n".join([head + ".", *blocks])


def _tool_names_before(entries: Sequence[EntryLike], start: int) -> dict[str, str]:
    """Call id → tool name for the calls just before ``start`` (a range may begin with
    results whose call came in the message before it)."""
    index = bisect_left(entries, start, key=lambda e: e.n)
    names: dict[str, str] = {}
    for entry in entries[max(0, index - 1):index]:
        for call in entry.message.get("tool_calls") or ():
            if isinstance(call, dict) and isinstance(call.get("function"), dict):
                names[str(call.get("id", ""))] = str(call["function"].get("name", ""))
    return names


def _lowered(texts: list[str]) -> list[str]:
    """Each text lower-cased, line breaks and tabs as spaces (so a quoted phrase matches
    across a line break): lowered as one string, which is faster than one call each."""
    sep = "\x00"
    joined = sep.join(texts)
    if joined.count(sep) == len(texts) - 1:
        out = joined.lower().replace("\n", " ").replace("\t", " ").split(sep)
        if len(out) == len(texts):
            return out
    return [t.lower().replace("\n", " ").replace("\t", " ") for t in texts]


def _hit(entry: EntryLike, terms: list[str]) -> Hit:
    text = " ".join(searchable_text(entry.message, {}).split())
    return Hit(entry.n, entry.role, entry.time, _snippet(text, terms),
               bool(getattr(entry, "compacted", False)), bool(getattr(entry, "rewound", False)))


def _snippet(text: str, terms: list[str]) -> str:
    """The text around the first match of the first term (whitespace folded)."""
    match = re.search(re.escape(terms[0]), text, re.IGNORECASE)
    if match is None:
        return text[: 2 * SNIPPET_SIDE] + ("…" if len(text) > 2 * SNIPPET_SIDE else "")
    start = max(0, match.start() - SNIPPET_SIDE)
    end = min(len(text), match.end() + SNIPPET_SIDE)
    return ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")


def _short_time(iso: str) -> str:
    """``2025-05-01T10:02:03.123+00:00`` → ``2025-05-01 10:02 UTC`` (times are stored in UTC)."""
    return f"{iso[:10]} {iso[11:16]} UTC" if len(iso) >= 16 else iso


def _clamp(value: Any, default: int, most: int, name: str) -> int:
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise RecallError(f"{name} must be a whole number from 1 to {most}")
    return min(value, most)
