"""Case-insensitive matching as people expect it, with offsets into the text as it is.

``str.lower()`` and ``re.IGNORECASE`` map one character to one, so "strasse"
never found "Straße", and ``"İ".lower()`` is two characters ("i" and a
combining dot), so a query or a text holding "İ" missed a plain "i" (and
"İstanbul" lower-cased no longer matched what a pattern found in the original
text, so the wrong span was shown). Both sides are folded here instead: full
Unicode case folding (``str.casefold``: "ß", "ẞ" and "SS" all become "ss", the
"ﬁ" ligature "fi"), with "İ" as a plain "i" (the Turkish capital of "i").

A folded text may be longer than the original, so a match in it is mapped back
(:func:`spans`) to the characters it came from: the find bar marks, and a
search's snippet shows, the span a person sees. The find bar, the recall index
(the model's ``search_history``) and ``selfref-tui search`` all match through
this module.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Protocol

#: the characters whose folded form holds ASCII (so a plain ASCII word may match text
#: that holds none of its letters as they are): ß, İ, ŉ, ſ, ǰ, ẖ–ẚ, ẞ, the Kelvin sign and
#: the Latin ligatures
TO_ASCII = ("\u00df\u0130\u0149\u017f\u01f0\u1e96\u1e97\u1e98\u1e99\u1e9a\u1e9e\u212a"
            "\ufb00\ufb01\ufb02\ufb03\ufb04\ufb05\ufb06")


def fold(text: str) -> str:
    """``text`` case-folded for matching (both the text and the query go through it)."""
    return text.replace("\u0130", "i").casefold()


class _Span(Protocol):
    def span(self) -> tuple[int, int]: ...


class Finder(Protocol):
    """What finds folded text: a compiled pattern, or the find bar's phrase."""

    def finditer(self, text: str, /) -> Iterator[_Span]: ...


def spans(found: Finder, text: str) -> Iterator[tuple[int, int]]:
    """Where ``found`` (a pattern of folded text) occurs in ``text``, as (start, end) in
    ``text`` itself, in order. Two matches inside one character's folded form (an "s"
    twice in "ß") are one occurrence: a person sees one character."""
    folded = fold(text)
    if len(folded) == len(text):  # every character folded to one: the same offsets
        for match in found.finditer(folded):
            yield match.span()
        return
    owner: list[int] = []
    for index, char in enumerate(text):
        owner += [index] * len(fold(char))
    last = 0
    for match in found.finditer(folded):
        start, end = match.span()
        if end == start or owner[start] < last:
            continue  # empty, or inside the character the previous occurrence ended in
        last = owner[end - 1] + 1
        yield owner[start], last


def literal(term: str) -> re.Pattern[str]:
    """A pattern that finds ``term`` (folded) in folded text, for :func:`spans`."""
    return re.compile(re.escape(fold(term)))
