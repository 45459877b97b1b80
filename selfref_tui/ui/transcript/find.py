"""Find in the conversation on screen: where a text occurs, without a screen.

Everything the transcript holds is searched, shown or not: collapsed tool
calls (their arguments and results), reasoning, compaction summaries, an
error's full text, and the older messages still behind the "earlier
messages" banner. A hit says which item (or which older message) and which
occurrence in it, and whether that occurrence sits in a part drawn only when
the item is opened — the view opens it before showing the hit.

A rewound section not opened yet holds its messages unbuilt: they are
searched as stored, and the view opens the section before showing the hit.

Matching is case-insensitive (full case folding: "strasse" finds "Straße",
``context/casefold.py``) and literal (the person types text, not a
pattern), except where lines break: a space in the query matches any run of
spaces and line breaks, and a line break may fall between any two of its
characters. So an occurrence that wrapping split over two drawn lines is
still one occurrence, found and marked on both. Each item's text is listed in
the order it is drawn, so the n-th occurrence in the text is, as far as
drawing keeps the words, the n-th one on its drawn lines.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from selfref_tui.context.casefold import fold, spans
from selfref_tui.context.summary_text import summary_text
from selfref_tui.ui.transcript.answer import AnswerItem
from selfref_tui.ui.transcript.model import (
    DividerItem,
    ErrorItem,
    Item,
    RewoundItem,
    ToolItem,
    UserItem,
    pretty_arguments,
)


@dataclass(frozen=True)
class Hit:
    """One occurrence: in ``item``, or in ``model.older[older]`` when not shown yet."""

    item: Item | None
    #: index into the older messages (``item`` is None), -1 for a shown item
    older: int
    #: which occurrence in the item (or message), from 0, in drawing order
    occurrence: int
    #: inside a part drawn only when the item is opened (a collapsed call, reasoning…)
    hidden: bool = False
    #: in a rewound section's messages not built yet (``item`` is the section)
    sealed: bool = False


def _lone_breaks(text: str) -> list[int]:
    """Where a line break may fall inside a word: one alone between two characters that
    are not spaces (a line folded in a word; between two words it is also their space).
    Found with ``str.find``: a pattern looking around each place took ten times longer."""
    found: list[int] = []
    at = text.find("\n", 1)
    while 0 < at < len(text) - 1:
        if not text[at - 1].isspace() and not text[at + 1].isspace():
            found.append(at)
        at = text.find("\n", at + 1)
    return found


class Span(tuple):
    """(start, end) of an occurrence, read as a match is (``span()``) by ``casefold.spans``."""

    def span(self) -> tuple[int, int]:
        return self[0], self[1]


#: a text's length times the query's past which trying every place could be slow (a
#: few milliseconds) …
_NEAR_MISSES = 1 << 20
#: … if the words (glued) are longer than this: shorter, the expression gives up at a
#: place within as many characters, 7 ms over 100 KB at worst
_SHORT = 32

#: a run of spaces before a character, in a text whose characters are all "0"
_RUN_THEN_CHAR = re.compile(r"\s+0")
#: the same, but not a lone line break (which may fall inside a word)
_WIDE_RUN_THEN_CHAR = re.compile(r"\s\s+0|[^\S\n]0")


def _zero_after(skeleton: str, at: int, count: int) -> int:
    """Where the ``count``-th "0" after the one at ``at`` is in ``skeleton`` (a glued
    character's place in the text): counted in spans with ``str.count``, as many
    places as "0"s still to pass, a span of none skipped to the next "0"."""
    while count:
        found = skeleton.count("0", at + 1, at + 1 + count)
        if not found:
            at = skeleton.find("0", at + 1) - 1
            continue
        at, count = at + count, count - found
    return at  # the span ended on the last "0" it had to pass (it held nothing else)


def _aligned(words: Sequence[str], text: str) -> Iterator[Span]:
    """What the words' expression finds in ``text``, tried at every place at once.

    Every occurrence is the glued words (``"".join(words)``) in the text with its
    spaces taken out, with, before each of its characters but the first, what the
    expression allows there: before a word, a run of spaces or line breaks; inside
    one, nothing or one line break. Each character of the glued text gets bits
    (in an int, one per character): is it this character, may it start a word,
    may it continue one. An occurrence may start at g when, for every i, the
    glued text's character g+i is allowed as the words' i-th: the words' length
    of shifts and ANDs over the whole text, where the expression took the words'
    length at each place that nearly matched.

    The occurrences are then taken from the left, each after the end of the one
    before, as ``finditer`` takes them.
    """
    solid = "".join(text.split())
    glued = "".join(words)
    if glued not in solid:
        return  # not even glued: nowhere spaced
    bits: dict[int, str] = dict.fromkeys(map(ord, set(solid)), "0")
    skeleton = text.strip().translate(bits)
    # read backwards: the int's lowest bit is the glued text's first character
    starts_word = int(_RUN_THEN_CHAR.sub("1", skeleton)[::-1], 2)
    in_word = int(_WIDE_RUN_THEN_CHAR.sub("x", skeleton).replace("\n0", "1")
                  .translate({ord("0"): "1", ord("x"): "0"})[::-1], 2)
    chars: dict[str, int] = {}
    for char in set(glued):
        bits[ord(char)] = "1"
        chars[char] = int(solid.translate(bits)[::-1], 2)
        bits[ord(char)] = "0"
    seams = set(accumulate(len(word) for word in words[:-1]))
    allowed: dict[tuple[str, bool], int] = {}
    found = chars[glued[0]]
    for i in range(1, len(glued)):
        key = (glued[i], i in seams)
        mask = allowed.get(key)
        if mask is None:
            mask = allowed[key] = chars[key[0]] & (starts_word if key[1] else in_word)
        found &= mask >> i
        if not found:
            return
    places = bin(found)[:1:-1]
    lead = len(text) - len(text.lstrip())
    at, glued_at, where = places.find("1"), 0, skeleton.find("0")
    while at != -1:
        start = _zero_after(skeleton, where, at - glued_at)
        where, glued_at = _zero_after(skeleton, start, len(glued) - 1), at + len(glued) - 1
        yield Span((lead + start, lead + where + 1))
        at = places.find("1", at + len(glued))


#: occurrences of the glued words in the text without its spaces up to which each is
#: tried where it stands, not every place at once
_FEW = 64


def _glued_starts(text: str, glued: str) -> list[int] | None:
    """Where in ``text`` each place begins whose characters, spaces left out, are the glued
    words: every occurrence of the words begins at one. None past :data:`_FEW` of them
    (a text that holds them often, or a repeating one: every place at once is faster)."""
    solid = "".join(text.split())
    found: list[int] = []
    at = solid.find(glued)
    while at != -1:
        if len(found) == _FEW:
            return None
        found.append(at)
        at = solid.find(glued, at + 1)
    if not found:
        return found
    skeleton = text.strip().translate(dict.fromkeys(map(ord, set(solid)), "0"))
    lead = len(text) - len(text.lstrip())
    starts, where, solid_at = [], skeleton.find("0"), 0
    for at in found:
        where, solid_at = _zero_after(skeleton, where, at - solid_at), at
        starts.append(lead + where)
    return starts


class Phrase:
    """The find text: its words (case-folded), matched literally in folded text, a space
    between them standing for any run of spaces and line breaks, and a line break
    allowed between any two characters of a word (see the module's docstring).

    Why not only one regular expression with an optional line break after each
    character: the engine then has no literal start to skip ahead with, and
    tries the query at every place of the text, as far as it matches there. A
    long pasted query over a long run of one character took the text's length
    times the query's, 6 s of CPU for 3,000 characters over 100 KB, on the UI
    thread. So one word is looked for as plain text (the engine's literal
    search, linear in the text) in the text with its line breaks that may fall
    inside a word taken out. Several words keep the expression (a line break
    there may be a word's seam or the space between two words) while the text
    is short or the words are; a long text and long words are matched all
    places at once (:func:`_aligned`), in time linear in the text times the
    words' length over an integer's bits: the glued words over a 100 KB text
    that held them glued and nearly spaced everywhere took 1.1 s in the
    expression, 20 ms so.
    """

    def __init__(self, words: Sequence[str]) -> None:
        self.words = tuple(words)
        #: the same query, whatever spaces were typed between the words
        self.pattern = " ".join(self.words)
        #: the words with nothing between: in every text that holds the phrase, once
        #: its spaces and line breaks are taken out
        self._glued = "".join(self.words)
        if len(self.words) == 1:
            self._found = re.compile(re.escape(self._glued))
        else:
            seam = "\\n?"  # a line folded inside a word
            self._found = re.compile("\\s+".join(seam.join(re.escape(c) for c in word)
                                                for word in self.words))

    def finditer(self, text: str) -> Iterator[Span]:
        """Every occurrence in folded ``text``, in order, not overlapping (as a pattern's
        ``finditer``): where each starts and ends in ``text`` itself."""
        if len(self.words) > 1:
            if len(self._glued) > _SHORT and len(text) * len(self._glued) > _NEAR_MISSES:
                starts = _glued_starts(text, self._glued)
                if starts is None:
                    yield from _aligned(self.words, text)
                    return
                end = 0  # each from the left, after the one before, as ``finditer``
                for start in starts:
                    match = self._found.match(text, start) if start >= end else None
                    if match is not None:
                        end = match.end()
                        yield Span(match.span())
                return
            for match in self._found.finditer(text):
                yield Span(match.span())
            return
        breaks = _lone_breaks(text)
        if not breaks:
            for match in self._found.finditer(text):
                yield Span(match.span())
            return
        # the text without them; where each was, as an offset in what is left
        joined = "".join(text[a + 1:b] for a, b in zip([-1, *breaks], [*breaks, len(text)],
                                                       strict=True))
        cuts = [at - n for n, at in enumerate(breaks)]
        for match in self._found.finditer(joined):
            start, end = match.span()
            yield Span((start + bisect_right(cuts, start), end + bisect_right(cuts, end - 1)))

    def search(self, text: str) -> Span | None:
        """The first occurrence in folded ``text``, or None."""
        return next(self.finditer(text), None)


def pattern(query: str) -> Phrase | None:
    """The query as a :class:`Phrase`; None for an empty (or blank) one. It matches
    folded text: ``casefold.spans`` finds it in a text and says where, in that
    text's own offsets."""
    words = fold(query).split()
    return Phrase(words) if words else None


def item_parts(item: Item) -> Iterator[tuple[str, bool]]:
    """(text, hidden until opened) of ``item``, in the order they are drawn."""
    if isinstance(item, UserItem):
        yield item.text, False
    elif isinstance(item, AnswerItem):
        yield item.reasoning, True
        yield item.text, False
        yield item.marker, False
    elif isinstance(item, ToolItem):
        yield item.title, False
        yield pretty_arguments(item.arguments), True
        yield item.result or "", True
    elif isinstance(item, ErrorItem):
        yield item.message, False
        yield item.detail if item.has_detail else "", True
    elif isinstance(item, DividerItem):
        yield item.title, False
        yield item.copy_text, True
    else:  # an image's title; another kind of item: its title, and what copying it takes
        title = str(getattr(item, "title", "") or "")
        yield title, False
        text = item.copy_text
        if text and text != title:
            yield text, not getattr(item, "expanded", True)


def message_text(message: dict[str, Any]) -> str:
    """What of a stored message the transcript would show (for messages not shown yet)."""
    from selfref_tui.context.images import text_of

    role = message.get("role")
    if role == "compaction":
        return summary_text(dict(message.get("summary") or {}))
    if role == "user" and (message.get("compaction") is not None
                           or message.get("runtime_note")):
        return ""  # never shown as a message (the summary has its divider)
    reasoning = message.get("reasoning_details") or message.get("reasoning_content")
    if isinstance(reasoning, list):  # as the transcript shows it (stored_history._stored_answer)
        reasoning = "\n".join(str(r.get("text", "")) if isinstance(r, dict) else str(r)
                              for r in reasoning)
    parts = [str(reasoning or ""), text_of(message.get("content"))]
    for call in message.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            parts.append(f"{function.get('name', '')} {function.get('arguments', '')}")
    return "\n".join(p for p in parts if p)


def find_hits(items: Sequence[Item], older: Sequence[dict], found: Phrase
              ) -> list[Hit]:
    """Every occurrence, in reading order: the older messages first, then the items."""
    hits: list[Hit] = []
    for index, message in enumerate(older):
        count = sum(1 for _ in spans(found, message_text(message)))
        hits += [Hit(None, index, k) for k in range(count)]
    for item in items:
        k = 0
        for text, hidden in item_parts(item):
            if not text:
                continue
            for _span in spans(found, text):
                hits.append(Hit(item, -1, k, (hidden and _closed(item)) or item.hidden))
                k += 1
        if isinstance(item, RewoundItem) and item.stored is not None:
            for message in item.stored[0]:
                for _span in spans(found, message_text(message)):
                    hits.append(Hit(item, -1, k, True, sealed=True))
                    k += 1
    return hits


def _closed(item: Item) -> bool:
    if isinstance(item, AnswerItem):
        return not item.reasoning_expanded
    return not getattr(item, "expanded", True)


def open_for(item: Item) -> None:
    """Open what hides a hit in ``item`` (a call's card, reasoning, a summary, the detail)."""
    if isinstance(item, AnswerItem):
        item.reasoning_expanded = True
    elif isinstance(item, (ToolItem, DividerItem, ErrorItem)):
        item.expanded = True
    item.touch()


def line_marks(lines: Sequence[tuple[str, bool]], found: Phrase
               ) -> list[list[tuple[int, int, int]]]:
    """Where each occurrence sits on a row's drawn lines, given as (text, continues the
    line above): for each line, (start, end, which occurrence in the row) of every
    piece of one, so one split by wrapping is marked on both of its lines.

    A line that continues the one above (a folded code line) is joined to it as
    is, any other with a line break, which the pattern lets stand for a space or
    fall inside a word.
    """
    joined: list[str] = []
    starts: list[int] = []
    at = 0
    for index, (text, cont) in enumerate(lines):
        if index and not cont:
            joined.append("\n")
            at += 1
        starts.append(at)
        joined.append(text)
        at += len(text)
    marks: list[list[tuple[int, int, int]]] = [[] for _ in lines]
    for number, (start, end) in enumerate(spans(found, "".join(joined))):
        line = bisect_right(starts, start) - 1
        while line < len(lines) and starts[line] < end:
            lo = max(start, starts[line]) - starts[line]
            hi = min(end, starts[line] + len(lines[line][0])) - starts[line]
            if hi > lo:
                marks[line].append((lo, hi, number))
            line += 1
    return marks
