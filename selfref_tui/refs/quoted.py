"""Where a quoted ref begins and ends in text that streams in, for showing it.

The recall tools show a ref of old history as ``<quoted_ref id="…">…</quoted_ref>``
(:func:`~selfref_tui.refs.parser.quote_refs`), and a model that repeats what it
read copies the tags. The ref grammar never reads them (a quotation defines
nothing); this finds them so the transcript can frame a quotation as one, set
apart from a live ref. It only cuts text: what a tag means is the caller's
(inside a fence it is code, and a closing tag with no quotation open is text).

Tags follow the ref grammar's shape: ``<quoted_ref`` + attributes, exactly one
``id``, + ``>``; ``</quoted_ref>``; on one line, at most ``MAX_TAG_LEN``
characters. A chunk may end inside a tag: only the part that may still become
one is held back, so the work is linear in the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from selfref_tui.refs.parser import MAX_TAG_LEN, QUOTED_TAG, tag_id

_OPEN_RE = re.compile(
    rf"""<{QUOTED_TAG}((?:\s+[A-Za-z_:][A-Za-z0-9_:.\-]*\s*=\s*(?:"[^"<>]*"|'[^'<>]*'))+)\s*>"""
)
_CLOSE_RE = re.compile(rf"</{QUOTED_TAG}\s*>")
#: where a tag may start: "<q", "</q", or a "<" or "</" that ends the text so far (code is
#: full of "<" that is none: they are passed over without a look)
_CANDIDATE = re.compile(r"</?(?:q|\Z)")
_OPEN_HEAD = f"<{QUOTED_TAG}"
_CLOSE_HEAD = f"</{QUOTED_TAG}"


@dataclass(frozen=True)
class Piece:
    """``kind`` "text", "open" (``ref_id`` set) or "close"; ``text`` is what was written."""

    kind: str
    text: str
    ref_id: str = ""


class QuoteScanner:
    """Feed chunks, get text and quotation tags in order (:meth:`finish` at the end)."""

    def __init__(self) -> None:
        self._held = ""

    def feed(self, chunk: str) -> list[Piece]:
        text = self._held + chunk
        self._held = ""
        if "<" not in text:
            return [Piece("text", text)] if text else []
        pieces: list[Piece] = []
        plain_from = 0
        found = _CANDIDATE.search(text)
        while found is not None:
            at = found.start()
            tag, whole = self._tag_at(text, at)
            if tag is None and not whole:  # it may still become a tag: wait for more
                self._held = text[at:]
                text = text[:at]
                break
            if tag is not None:
                if at > plain_from:
                    pieces.append(Piece("text", text[plain_from:at]))
                pieces.append(tag)
                plain_from = at + len(tag.text)
            found = _CANDIDATE.search(text, plain_from if tag is not None else at + 1)
        if len(text) > plain_from:
            pieces.append(Piece("text", text[plain_from:]))
        return pieces

    def finish(self) -> list[Piece]:
        """What was held back, as text (a tag never completed)."""
        held, self._held = self._held, ""
        return [Piece("text", held)] if held else []

    @staticmethod
    def _tag_at(text: str, at: int) -> tuple[Piece | None, bool]:
        """The tag that starts at ``at`` (or None), and whether that is settled."""
        rest = text[at: at + MAX_TAG_LEN]
        for head in (_CLOSE_HEAD, _OPEN_HEAD):
            if len(rest) < len(head):
                if head.startswith(rest):
                    return None, False  # "<quo" at the end of what came
                continue
            if not rest.startswith(head):
                continue
            end = rest.find(">")
            newline = rest.find("\n")
            if end == -1:
                # no ">" yet: still a tag while on one line and short enough
                return None, newline != -1 or len(rest) >= MAX_TAG_LEN or (
                    len(rest) > len(head) and not rest[len(head)].isspace()
                    and not (head == _CLOSE_HEAD and rest[len(head)] == ">"))
            if newline != -1 and newline < end:
                return None, True
            tag = rest[: end + 1]
            if head == _CLOSE_HEAD:
                return (Piece("close", tag) if _CLOSE_RE.fullmatch(tag) else None), True
            match = _OPEN_RE.fullmatch(tag)
            ref_id = tag_id(match.group(1)) if match else None
            return (Piece("open", tag, ref_id) if ref_id else None), True
        return None, True


__all__ = ["Piece", "QuoteScanner"]
