"""The search index over a key's numbered history (:class:`HistoryIndex`).

Each entry's searchable text kept case-folded and extended as the history grows, so a
search over 100,000 messages is one pass of substring tests in C rather than a re-read
of the history; the hits found in it, each with its snippet. Apart from ``recall``
(the query's rules, the result, what the model reads) because this is the part that
holds state across searches: the agent keeps one per key (``agent/tools/history_recall``)
and a conversation search builds one from a cache (``selfref/conversation_search``).

Pure: no files, no I/O.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from typing import Any

from .casefold import fold, literal, spans
from .history import EntryLike
from .recall import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    SNIPPET_SIDE,
    HistorySource,
    Hit,
    RecallError,
    SearchResult,
    _clamp,
    _EntryList,
    as_source,
    parse_query,
    searchable_text,
)


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


def _head(text: str) -> str:
    """A snippet that has no match to show: the text's start."""
    return text[: 2 * SNIPPET_SIDE] + ("…" if len(text) > 2 * SNIPPET_SIDE else "")
