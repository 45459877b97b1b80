"""The model's way back into its own history: search it, read it by number.

A compaction takes messages out of the model's view, never out of the store.
``search_history`` and ``read_history`` (the tools) answer from here, over a
key's numbered history entries (``MemoryKey.entries()``: every message ever
committed, compacted or not, each with a number that never changes).

Searching is plain and predictable: every word of the query (case-insensitive)
and every "quoted phrase" must occur in a message; matches come newest first.
:class:`HistoryIndex` keeps each entry's searchable text case-folded, extended
as the history grows, so a search over 100,000 messages is one pass of
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
from collections.abc import Iterable, Sequence
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


class HistoryIndex:
    """Lower-cased searchable text per message number, kept in step with the history.

    Numbers are stable and only grow (a rewind marks messages, never removes
    them; a compaction only takes them out of the model's view), so
    :meth:`update` reads just the messages numbered after the last one indexed
    rather than the whole history: numbering every entry again after each
    commit would cost more than the search at 100,000 messages. A store that
    lists them in bulk (``numbered_messages``) is read that way, with no entry
    made per message. Which numbers are rewound, or hidden (a message indexed
    before its only call's result took it out), is read again only when a
    rewind happened since (``last_rewind`` changed) or the count of hidden
    numbers did.

    Taking in a long history is most of a first search's cost, so it can be
    done ahead of need: :meth:`extend` reads only the messages, never which are
    rewound, and may run in a thread while the history grows.
    """

    def __init__(self) -> None:
        self._texts: list[str] = []
        self._numbers: list[int] = []
        #: call id -> tool name, as far as indexed (None: not known, see :meth:`of_texts`)
        self._tool_names: dict[str, str] | None = {}
        self._rewound: frozenset[int] = frozenset()
        self._hidden: frozenset[int] = frozenset()
        self._mark: Any = None

    @classmethod
    def of_texts(cls, history: HistorySource, numbers: Sequence[int], texts: Sequence[str],
                 rewound: Iterable[int]) -> HistoryIndex:
        """The index of ``history`` made from what a search cache keeps of it: each
        message's number and searchable text (:func:`searchable_text`, in order) and the
        numbers rewound; only case-folded here. Given more messages later, it indexes
        them all anew (it does not know the calls before them)."""
        index = cls()
        index._texts = _lowered(texts)
        index._numbers = list(numbers)
        index._tool_names = None
        index._rewound = frozenset(rewound)
        index._mark = _mark_of(history)
        return index

    def __len__(self) -> int:
        return len(self._texts)

    def behind(self, history: HistorySource) -> int:
        """How many numbers the store has that are not indexed yet."""
        return history.last_number - (self._numbers[-1] if self._numbers else 0)

    def extend(self, history: HistorySource | Sequence[EntryLike],
               upto: int | None = None) -> HistorySource:
        """Index the messages numbered after the last one indexed (up to ``upto`` when
        given); the history as a source. Which are rewound is left to :meth:`update`."""
        source = as_source(history)
        last = source.last_number if upto is None else min(upto, source.last_number)
        done = self._numbers[-1] if self._numbers else 0
        # another history (a key salvaged shorter), or one whose calls are not known: anew
        if done > last or (self._tool_names is None and last > done):
            self._texts, self._numbers, self._tool_names = [], [], {}
            done = 0
        names = self._tool_names
        if last <= done or names is None:
            return source
        numbers, messages = _new_messages(source, done, last)
        texts: list[str] = []
        add = texts.append
        # Written for speed (a first search of a long history indexes all of it): a
        # plain text message, by far the most common, skips searchable_text.
        for message in messages:
            content = message.get("content")
            if (type(content) is str and not message.get("tool_calls")
                    and message.get("role") != "tool"):
                add(content)
            else:
                add(searchable_text(message, names))
        self._texts += _lowered(texts)
        self._numbers += numbers
        return source

    def update(self, history: HistorySource | Sequence[EntryLike],
               upto: int | None = None) -> HistorySource:
        """:meth:`extend`, then which numbers are rewound or hidden, when that may have
        changed; the history as a source."""
        source = self.extend(history, upto)
        mark = _mark_of(source)
        if mark is not self._mark and mark != self._mark:
            if mark is None:
                self._rewound = self._hidden = frozenset()
            else:
                self._rewound, self._hidden = _rewound_and_hidden(source)
            self._mark = mark
            self._take_in_shown(source)
        return source

    def _take_in_shown(self, source: HistorySource) -> None:
        """Index the numbers skipped while they were hidden that a rewind shows again
        (:meth:`extend` never reads a hidden number, and never goes back).

        Cheap when there are none: the numbers indexed and those hidden now, counted,
        cover every number up to the last one indexed.
        """
        numbers = self._numbers
        done = numbers[-1] if numbers else 0
        hidden_apart = [n for n in self._hidden if n <= done and not _holds(numbers, n)]
        if len(numbers) + len(hidden_apart) >= done:
            return
        names = self._tool_names if self._tool_names is not None else {}
        for n in sorted(set(range(1, done + 1)).difference(numbers, self._hidden)):
            try:
                message = source.entry(n).message
            except IndexError:  # hidden after all (a history that does not say)
                continue
            at = bisect_left(numbers, n)
            numbers.insert(at, n)
            self._texts.insert(at, _lowered([searchable_text(message, names)])[0])

    def search(self, history: HistorySource | Sequence[EntryLike], query: str, *,
               limit: int | None = DEFAULT_LIMIT, before: int | None = None,
               include_rewound: bool = False, every: bool = False) -> SearchResult:
        """The newest ``limit`` messages holding every term of ``query`` (numbered below
        ``before`` when given), and how many match in all; ``every``: ``limit`` is not
        held to :data:`MAX_LIMIT`, and None means all of them (a person's search,
        ``selfref-tui search``)."""
        terms = parse_query(query)
        if not terms:
            raise RecallError("the query is empty; give one or more words, or a \"quoted "
                              "phrase\"")
        limit = (limit or 0) if every else _clamp(limit, DEFAULT_LIMIT, MAX_LIMIT, "limit")
        source = self.update(history)
        texts, numbers = self._texts, self._numbers
        end = len(texts)
        if before is not None:
            end = bisect_left(numbers, before)
        # Longest term first: it usually narrows most, and the others are tested on its
        # matches only, one term per pass (a pass is one tight comprehension). A phrase
        # is looked for by its longest word first, then checked on those matches only.
        first, *others = sorted(terms, key=len, reverse=True)
        word = max(first.split(" "), key=len)
        found = [i for i, text in enumerate(texts[:end] if end < len(texts) else texts)
                 if word in text]
        for term in [first, *others] if word != first else others:
            if " " in term:
                spread = _spread(term)
                found = [i for i in found if _holds_phrase(texts[i], term, spread)]
            else:
                found = [i for i in found if term in texts[i]]
        left_out = self._hidden if include_rewound else self._hidden | self._rewound
        if left_out:
            found = [i for i in found if numbers[i] not in left_out]
        chosen = found[-limit:] if limit else found
        hits = _hits(source, [numbers[i] for i in reversed(chosen)], terms[0])
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


def _new_messages(source: HistorySource, done: int, last: int
                  ) -> tuple[list[int], list[dict[str, Any]]]:
    """The numbers ``done + 1`` .. ``last`` and their messages (hidden numbers left out).

    A store that can list them in bulk (``numbered_messages``: no entry object built
    per message) is asked so; else one ``entry(n)`` each.
    """
    if isinstance(source, _EntryList):
        chosen = [e for e in source.entries() if done < e.n <= last]
        return [e.n for e in chosen], [e.message for e in chosen]
    bulk = getattr(source, "numbered_messages", None)
    if bulk is not None:
        return bulk(done + 1, last)
    numbers: list[int] = []
    messages: list[dict[str, Any]] = []
    for n in range(done + 1, last + 1):
        try:
            entry = source.entry(n)
        except IndexError:  # a number the store hides
            continue
        numbers.append(n)
        messages.append(entry.message)
    return numbers, messages


def _holds(numbers: list[int], n: int) -> bool:
    """Whether the sorted ``numbers`` hold ``n``."""
    at = bisect_left(numbers, n)
    return at < len(numbers) and numbers[at] == n


def _mark_of(source: HistorySource) -> Any:
    """What changes when the rewound or hidden numbers may have: the store's newest rewind,
    and how many numbers it hides (None: a source that never rewinds)."""
    rewind = getattr(source, "last_rewind", None)
    count = getattr(source, "message_count", None)
    hidden = source.last_number - count if type(count) is int else 0
    return None if rewind is None and not hidden else (rewind, hidden)


def _rewound_and_hidden(source: HistorySource) -> tuple[frozenset[int], frozenset[int]]:
    """The rewound numbers and the hidden ones: from the store in bulk when it can say,
    else from its entries (which leave hidden numbers out)."""
    rewound = getattr(source, "numbers_rewound", None)
    hidden = getattr(source, "numbers_hidden", None)
    if rewound is not None and hidden is not None:
        return frozenset(rewound()), frozenset(hidden())
    return frozenset(e.n for e in source.entries() if e.rewound), frozenset()


def _lowered(texts: Sequence[str]) -> list[str]:
    """Each text case-folded (``casefold.fold``), the common white space other than a space
    made a space: one text at a time (joining them to fold at once, then splitting, costs
    more at 100,000 texts). Runs of white space are left as they are (folding them in
    every text took a third of the time): :func:`_holds_phrase` reads them as one."""
    return [_spaced(fold(t)) for t in texts]


def _holds_phrase(text: str, phrase: str, spread: re.Pattern[str]) -> bool:
    """Whether ``text`` (:func:`_lowered`) holds ``phrase`` (words one space apart), every
    run of white space in it read as one space, as a query's phrase is (so a quoted phrase
    matches across a line break, a paragraph break, ``\\r\\n``, two spaces, or a space
    :func:`_spaced` leaves as it is: a CJK text's ideographic space, the narrow no-break
    space in "3:45 PM"). ``spread`` is :func:`_spread` of ``phrase``: looked for only when
    the text does not hold the phrase as it is and may hold such white space (a run of
    spaces, or any character outside ASCII)."""
    return phrase in text or (("  " in text or not text.isascii())
                              and spread.search(text) is not None)


def _spread(phrase: str) -> re.Pattern[str]:
    """``phrase``'s words with any run of white space between them (``\\s``: what
    ``str.split`` splits on), as a text that was not folded may hold them."""
    return re.compile(r"\s+".join(re.escape(word) for word in phrase.split(" ")))


def _spaced(text: str) -> str:
    """The common white space other than a space made a space (one C pass each)."""
    return text.replace("\r", " ").replace("\n", " ").replace("\t", " ").replace("\xa0", " ")


def _hits(source: HistorySource, numbers: Iterable[int], term: str) -> tuple[Hit, ...]:
    """The messages numbered ``numbers``, each with its snippet around ``term``.

    Written for speed (``selfref-tui search --limit 0`` makes one per match, 100,000 of
    them for a common word): a plain text message skips :func:`searchable_text`, and a text
    of plain ASCII, whose folded form is its lower case letter for letter, is looked in
    with one ``str.find`` rather than through :func:`casefold.spans` (same snippet).
    """
    folded = fold(term)
    pattern: re.Pattern[str] | None = None
    entry = source.entry
    hits: list[Hit] = []
    add = hits.append
    for n in numbers:
        found = entry(n)
        message = found.message
        content = message.get("content")
        if type(content) is str and not message.get("tool_calls"):
            text = " ".join(content.split())  # what searchable_text says of it
        else:
            text = " ".join(searchable_text(message, {}).split())
        if text.isascii():
            at = text.lower().find(folded)
            snippet = _head(text) if at < 0 else _window(text, at, at + len(folded))
        else:
            if pattern is None:
                pattern = literal(term)  # once, not per hit
            snippet = _snippet(text, pattern)
        add(Hit(found.n, found.role, found.time, snippet,
                bool(getattr(found, "compacted", False)), bool(getattr(found, "rewound", False))))
    return tuple(hits)


def _snippet(text: str, first_term: re.Pattern[str]) -> str:
    """The text around the first match of the first term (whitespace folded)."""
    found = next(spans(first_term, text), None)
    return _head(text) if found is None else _window(text, *found)


def _window(text: str, start: int, end: int) -> str:
    """``text[start:end]`` with :data:`SNIPPET_SIDE` characters each side, "…" where cut."""
    start = max(0, start - SNIPPET_SIDE)
    end = min(len(text), end + SNIPPET_SIDE)
    return ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")


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


def _head(text: str) -> str:
    """A snippet that has no match to show: the text's start."""
    return text[: 2 * SNIPPET_SIDE] + ("…" if len(text) > 2 * SNIPPET_SIDE else "")


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
