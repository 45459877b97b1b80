"""An answer as plain data: its blocks, refs and fences, cut as its text streams in.

An answer is cut into :class:`Block` s as its text arrives: a Markdown block
ends at a blank line outside a fence, a fence is a block of its own, a ref
opens with a ``ref_top`` block and ends with a ``ref_bottom`` one, and a block
that grows past :data:`MAX_PART` characters is cut into parts. The view renders
and caches each block on its own, so a finished block is rendered once per
width, streaming touches only the last block, and one huge answer (10,000 refs,
1 MB on one line) costs only the blocks on screen.

Apart from the other display items (:mod:`.model`) because this is where an
answer's streaming lives: the ref parser feeding it and the splitter cutting
it. Nothing here imports Textual either.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from selfref_tui.ui.transcript.model import Item

#: a block longer than this (characters) is cut, so no single render is large
MAX_PART = 2_000

_FENCE_OPEN = re.compile(r"^\s*(`{3,}|~{3,})(.*)$")


@dataclass(eq=False)
class RefInfo:
    """A ``<ref>`` block of an answer: its frame, state and text."""

    ref_id: str
    depth: int = 0
    #: False for stored history (no "streaming…" while it is rebuilt)
    live: bool = True
    #: a quotation of a ref (``<quoted_ref>``, copied from recalled history): framed apart,
    #: never a definition (not in the answer's refs, nor a place the highlight stops)
    quoted: bool = False
    content: str | None = None
    unfinished: bool = False
    superseded: bool = False
    highlighted: bool = False
    _parts: list[str] = field(default_factory=list)
    version: int = 0

    @property
    def closed(self) -> bool:
        return self.content is not None

    @property
    def text_so_far(self) -> str:
        """What has arrived (the content once closed), for copying a ref still streaming."""
        if self.content is not None:
            return self.content
        return "".join(self._parts)

    @property
    def title(self) -> str:
        return f"quoted ref:{self.ref_id}" if self.quoted else f"ref:{self.ref_id}"

    @property
    def subtitle(self) -> str:
        if self.unfinished:
            return "unfinished"
        if self.content is None:
            return "streaming…" if self.live else ""
        lines = self.content.count("\n") + 1 if self.content else 0
        label = f"{lines} ln · {len(self.content)} ch"
        return label + " · superseded" if self.superseded else label

    @property
    def copy_text(self) -> str:
        return self.text_so_far


@dataclass(eq=False)
class Fence:
    """One fenced code block, which may be drawn as several parts."""

    lang: str = ""
    highlighted: bool = False
    _parts: list[str] = field(default_factory=list)

    @property
    def code(self) -> str:
        return "".join(self._parts).removesuffix("\n")

    @property
    def copy_text(self) -> str:
        return self.code


@dataclass(eq=False)
class Block:
    """A unit the view renders and caches on its own."""

    #: "md" | "code" | "ref_top" | "ref_bottom"
    kind: str
    text: str = ""
    #: enclosing refs, outermost first (their frames are drawn around the block)
    frames: tuple[RefInfo, ...] = ()
    #: ref_top / ref_bottom: the ref they open or close
    ref: RefInfo | None = None
    fence: Fence | None = None
    #: blank lines above the block
    gap: int = 0
    #: still growing (the streaming tail)
    open: bool = False
    version: int = 0


@dataclass(eq=False)
class AnswerItem(Item):
    """An answer: reasoning (collapsed), its blocks, and how it ended."""

    live: bool = True
    blocks: list[Block] = field(default_factory=list)
    refs: list[RefInfo] = field(default_factory=list)
    finished: bool = False
    interrupted: bool = False
    #: "■ interrupted — …", "■ cut off — …": shown under the answer
    marker: str = ""
    reasoning_expanded: bool = False
    _text: list[str] = field(default_factory=list)
    _reasoning: list[str] = field(default_factory=list)
    reasoning_words: int = 0
    _splitter: Any = None

    kind = "answer"

    def __post_init__(self) -> None:
        from selfref_tui.refs.parser import StreamingRefParser
        from selfref_tui.refs.quoted import QuoteScanner

        self._parser = StreamingRefParser()
        self._quotes = QuoteScanner()
        self._stack: list[RefInfo] = []
        self._splitter = _Splitter(self)

    @property
    def text(self) -> str:
        """The raw answer text received so far (tags included)."""
        if len(self._text) > 1:
            self._text = ["".join(self._text)]
        return self._text[0] if self._text else ""

    @property
    def reasoning(self) -> str:
        if len(self._reasoning) > 1:
            self._reasoning = ["".join(self._reasoning)]
        return self._reasoning[0] if self._reasoning else ""

    @property
    def reasoning_title(self) -> str:
        words = self.reasoning_words
        return f"Reasoning · {words} words" if words else "Reasoning"

    @property
    def copy_text(self) -> str:
        return self.text

    @property
    def open_refs(self) -> list[RefInfo]:
        """Refs (and quotations) opened and not closed yet, outermost first."""
        return self._stack

    def fences(self) -> list[Fence]:
        seen: list[Fence] = []
        for block in self.blocks:
            if block.fence is not None and (not seen or seen[-1] is not block.fence):
                seen.append(block.fence)
        return seen

    # ------------------------------------------------------------ feeding

    def feed(self, text: str) -> list[RefInfo]:
        """A text delta; returns the refs it closed."""
        if self.finished or not text:
            return []
        self._text.append(text)
        return self._apply(self._parser.feed(text))

    def feed_reasoning(self, text: str) -> None:
        if not text:
            return
        last = self._reasoning[-1] if self._reasoning else ""
        # Words are counted as they arrive: a word split across deltas counts once.
        joined = last[-1:] + text
        self.reasoning_words += len(joined.split()) - (1 if last[-1:].strip() else 0)
        self._reasoning.append(text)
        self.touch()

    def finish(self, *, interrupted: bool = False, reason: str = "") -> list[RefInfo]:
        """The end of the stream: flush, mark refs never closed as unfinished."""
        if self.finished:
            if interrupted:
                self.mark_interrupted(reason)
            return []
        closed = self._apply(self._parser.finish())
        for piece in self._quotes.finish():
            self._show(piece)
        # Nothing is fed after the end: the parser's closed refs (each one's content is on
        # its RefInfo) would only be more objects for every later pass of the collector.
        self._parser.refs.clear()
        self._splitter.flush()
        while self._stack:
            self._end_open(self._stack.pop())
        self.finished = True
        if interrupted:
            self.mark_interrupted(reason)
        self.touch()
        return closed

    def mark_interrupted(self, reason: str = "") -> None:
        self.interrupted = True
        self.marker = "■ interrupted" + (f" — {reason}" if reason else "")
        self.touch()

    def mark(self, marker: str) -> None:
        """A note under the answer (cut off, filtered) that is not an interruption."""
        self.marker = marker
        self.touch()

    def _apply(self, segments: list[Any]) -> list[RefInfo]:
        closed: list[RefInfo] = []
        splitter = self._splitter
        for seg in segments:
            if seg.kind in ("text", "ref_text"):
                for piece in self._quotes.feed(seg.text):
                    self._show(piece)
                continue
            for piece in self._quotes.finish():  # a tag of the ref grammar ends any held back
                self._show(piece)
            if seg.kind == "ref_open":
                splitter.flush()
                ref = RefInfo(seg.ref_id or "", depth=len(self._stack), live=self.live)
                self.refs.append(ref)
                splitter.add(Block("ref_top", frames=tuple(self._stack), ref=ref, gap=1))
                self._stack.append(ref)
            elif seg.kind == "ref_close" and any(not r.quoted for r in self._stack):
                splitter.flush()
                while self._stack[-1].quoted:  # a quotation left open inside the ref ends here
                    self._end_open(self._stack.pop())
                ref = self._stack.pop()
                ref.content = next(
                    (r.content for r in reversed(self._parser.refs) if r.id == ref.ref_id),
                    ref.text_so_far,
                )
                ref.version += 1
                splitter.add(Block("ref_bottom", frames=tuple(self._stack), ref=ref))
                closed.append(ref)
        if segments:
            self.touch()
        return closed

    def _show(self, piece: Any) -> None:
        """Text of the answer, or a quotation's tag (``refs/quoted.py``): a quotation is
        framed like a ref, marked quoted, and defines nothing. An opening tag in code (a
        fenced block, or after an odd number of backticks on its line) is code; a closing
        tag with no quotation open is text."""
        splitter = self._splitter
        line = splitter.line  # the line so far, before the tag
        opens = piece.kind == "open" and splitter.fence is None and not (
            line.lstrip().startswith(("```", "~~~")) or line.count("`") % 2)
        # a quotation opens outside any fence, so a fence open at its end began inside it:
        # the closing tag ends both (as a ref's does)
        closes = piece.kind == "close" and bool(self._stack) and self._stack[-1].quoted
        if opens or closes:
            splitter.flush()
            if piece.kind == "open":
                for ref in self._stack:
                    ref._parts.append(piece.text)  # an enclosing ref's content keeps the tag
                shown = RefInfo(piece.ref_id, depth=len(self._stack), live=self.live,
                                quoted=True)
                splitter.add(Block("ref_top", frames=tuple(self._stack), ref=shown, gap=1))
                self._stack.append(shown)
            else:
                shown = self._stack.pop()
                shown.content = shown.text_so_far.removeprefix("\n").removesuffix("\n")
                shown.version += 1
                splitter.add(Block("ref_bottom", frames=tuple(self._stack), ref=shown))
                for ref in self._stack:
                    ref._parts.append(piece.text)
            return
        for ref in self._stack:
            ref._parts.append(piece.text)
        splitter.write(piece.text)

    def _end_open(self, ref: RefInfo) -> None:
        """A ref or quotation never closed: its frame ends here, marked unfinished."""
        ref.unfinished = True
        ref.version += 1
        self._splitter.add(Block("ref_bottom", frames=tuple(self._stack), ref=ref))


class _Splitter:
    """Cuts an answer's text into blocks as it streams (linear: each line is looked at once)."""

    def __init__(self, answer: AnswerItem) -> None:
        self.answer = answer
        self.buf = ""  # the open block's complete lines
        self.line = ""  # the line still arriving
        self.fence: Fence | None = None
        self.marker = ""  # the fence's opening run (``` or ~~~~)
        self.block: Block | None = None
        self.gap = 0  # blank lines seen since the last block (0 → 1 gap)
        self.joined = False  # the next block continues a cut one (no gap)

    @property
    def frames(self) -> tuple[RefInfo, ...]:
        return tuple(self.answer._stack)

    def add(self, block: Block) -> None:
        blocks = self.answer.blocks
        if block.kind == "ref_bottom":
            block.gap = 0
        elif not blocks or (blocks[-1].kind == "ref_top" and block.kind != "ref_top"):
            block.gap = 0  # the first thing of an answer or of a ref
        blocks.append(block)
        self.gap = 0
        self.joined = False

    def write(self, text: str) -> None:
        lines = (self.line + text).split("\n")
        self.line = lines.pop()
        for line in lines:
            self._complete(line)
        while len(self.line) > MAX_PART:
            self._cut_line()
        self._show()

    def _complete(self, line: str) -> None:
        if self.fence is not None:
            stripped = line.strip()
            run = stripped[: len(stripped) - len(stripped.lstrip(self.marker[0]))]
            if len(run) >= len(self.marker) and not stripped[len(run) :].strip():
                self._end_block()
                self.fence = None
                return
            self.buf += line + "\n"
            if len(self.buf) > MAX_PART:
                self._end_block(cut=True)
            return
        m = _FENCE_OPEN.match(line)
        if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
            self._end_block()
            self.fence = Fence(lang=(m.group(2).split() or [""])[0])
            self.marker = m.group(1)
            self.block = Block("code", frames=self.frames, fence=self.fence, gap=1, open=True)
            self.add(self.block)
            return
        if not line.strip():
            if self.buf.strip():
                self._end_block()
            return
        self.buf += line + "\n"
        if len(self.buf) > MAX_PART:
            self._end_block(cut=True)

    def _cut_line(self) -> None:
        """A line longer than a part: cut at a space if there is one (or hard)."""
        head = self.line[:MAX_PART]
        cut = head.rfind(" ", MAX_PART // 2) + 1 if self.fence is None else 0
        if cut <= 0:
            cut = MAX_PART
        piece, self.line = self.line[:cut], self.line[cut:]
        if self.fence is not None:
            self.buf += piece + "\n"
        else:
            self.buf += piece
        self._end_block(cut=True)

    def _show(self) -> None:
        shown = self.buf + self.line
        if self.block is None:
            if not shown.strip():
                return
            head = self.line.lstrip()
            if not self.buf and (set(head) <= set("`~") or head.startswith(("```", "~~~"))):
                return  # maybe the start of a fence: wait for the line to end
            kind = "code" if self.fence is not None else "md"
            gap = 0 if self.joined else 1
            self.block = Block(kind, frames=self.frames, fence=self.fence, gap=gap, open=True)
            self.add(self.block)
        self.block.text = shown
        self.block.version += 1

    def _end_block(self, *, cut: bool = False) -> None:
        """The open block is complete (``cut``: the next block continues it)."""
        if self.block is None and (self.buf.strip() or (self.fence is not None and self.buf)):
            self._show()
        block = self.block
        if block is not None:
            block.text = self.buf
            block.open = False
            block.version += 1
            if block.fence is not None:
                block.fence._parts.append(self.buf)
        self.buf = ""
        self.block = None
        self.joined = cut

    def flush(self) -> None:
        """End whatever is open (a ref tag, or the end of the answer, comes next)."""
        if self.line:
            line, self.line = self.line, ""
            self._complete(line)
        if self.buf.strip() or self.block is not None:
            if self.block is None:
                self._show()
            self._end_block()
        self.buf = ""
        self.fence = None
        self.joined = False
