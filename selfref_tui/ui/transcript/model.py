"""What the transcript shows, as plain data: display items and the blocks of an answer.

The view draws these; the reducer (:mod:`.reducer`) builds them from runtime
events and stored history. Nothing here imports Textual, so every rule about
what is shown (a ref's subtitle, where an answer is cut into blocks, what a
copy takes) is tested without a screen.

An answer is cut into :class:`Block` s as its text arrives: a Markdown block
ends at a blank line outside a fence, a fence is a block of its own, a ref
opens with a ``ref_top`` block and ends with a ``ref_bottom`` one, and a block
that grows past :data:`MAX_PART` characters is cut into parts. The view renders
and caches each block on its own, so a finished block is rendered once per
width, streaming touches only the last block, and one huge answer (10,000 refs,
1 MB on one line) costs only the blocks on screen.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Any

#: a block longer than this (characters) is cut, so no single render is large
MAX_PART = 2_000

_FENCE_OPEN = re.compile(r"^\s*(`{3,}|~{3,})(.*)$")
_serial = itertools.count(1)


@dataclass(eq=False)
class Item:
    """One thing in the conversation, in the order shown."""

    archived: bool = False
    highlighted: bool = False
    #: bumped on every change the view must redraw
    version: int = 0
    serial: int = field(default_factory=lambda: next(_serial))
    #: the stored message's number (``history``'s N; a tool card: its call's message), 0
    #: while not known (a live item before its message is stored)
    number: int = 0
    #: out of the model's context by a rewind (shown in a :class:`RewoundItem`'s section)
    rewound: bool = False
    #: the person pinned this message: every compaction keeps it verbatim (a user message
    #: and an answer say so under them)
    pinned: bool = False

    kind = "item"
    #: the item this one is part of (an image under its message or call), moved with it
    owner: Item | None = None
    #: the rewound section this item is in (hidden while the section is collapsed)
    section: RewoundItem | None = None

    @property
    def hidden(self) -> bool:
        """In a rewound section that is collapsed: not drawn, not highlighted."""
        return self.section is not None and not self.section.expanded

    def touch(self) -> None:
        self.version += 1

    @property
    def copy_text(self) -> str:
        """What copying this item puts on the clipboard."""
        return ""


@dataclass(eq=False)
class UserItem(Item):
    text: str = ""
    queued: bool = False
    #: a turn has reported starting with this message (claimed once)
    started: bool = False
    #: its turn failed before any answer (the reason; "" when it did not): not sent
    #: again unless retried (``MessageFailed`` / ``MessageRetried``)
    failed: str = ""
    #: the error block under it says why (live): the reason is not said twice
    failed_said_below: bool = False

    kind = "user"

    @property
    def copy_text(self) -> str:
        return self.text


@dataclass(eq=False)
class ErrorItem(Item):
    message: str = ""
    error_kind: str = "internal"
    #: the server's full text, when the one-line message had to shorten it
    detail: str = ""
    expanded: bool = False

    kind = "error"

    @property
    def has_detail(self) -> bool:
        return bool(self.detail) and self.detail.strip() != self.message.strip()

    @property
    def copy_text(self) -> str:
        return f"{self.message}\n\n{self.detail}" if self.has_detail else self.message


_TOOL_STATUS = {
    "running": "⋯ running",
    "done": "✓ done",
    "error": "✖ error",
    "cancelled": "■ cancelled",
}


@dataclass(eq=False)
class ToolItem(Item):
    """A tool call; its arguments are kept as chunks (1 MB of streamed arguments stays linear)."""

    call_id: str = ""
    tool_name: str = "tool"
    status: str = "running"
    result: str | None = None
    duration_s: float | None = None
    expanded: bool = False
    _args: list[str] = field(default_factory=list)

    kind = "tool"

    @property
    def arguments(self) -> str:
        if len(self._args) > 1:
            self._args = ["".join(self._args)]
        return self._args[0] if self._args else ""

    @arguments.setter
    def arguments(self, value: str) -> None:
        self._args = [value] if value else []

    def append_arguments(self, delta: str) -> None:
        self._args.append(delta)
        if self.expanded:
            self.touch()

    @property
    def title(self) -> str:
        parts = [f"⚙ {self.tool_name}", _TOOL_STATUS.get(self.status, self.status)]
        if self.duration_s is not None:
            parts.append(f"{self.duration_s:.2f}s")
        return "  ".join(parts)

    @property
    def collapsed(self) -> bool:
        return not self.expanded

    def end(
        self, status: str, result: str, duration_s: float | None, arguments: str | None = None
    ) -> None:
        self.status = status
        self.result = result
        self.duration_s = duration_s
        if arguments is not None:
            self.arguments = arguments
        self.touch()

    def cancel(self, reason: str = "") -> None:
        if self.status == "running":
            self.end("cancelled", reason or "cancelled", None)

    @property
    def copy_text(self) -> str:
        return f"{self.title}\narguments:\n{self.arguments}\nresult:\n{self.result or ''}"


#: what a pinned message says under it
PINNED_LINE = "◆ pinned · every compaction keeps it verbatim"


def pretty_arguments(arguments: str) -> str:
    """A tool call's JSON arguments indented for reading (as they are when not JSON)."""
    import json

    try:
        return json.dumps(json.loads(arguments), indent=2, ensure_ascii=False)
    except (ValueError, TypeError):
        return arguments


_SECTIONS = (
    ("goal", "Goal"),
    ("instruction", "Instruction"),
    ("current_status", "Current status"),
    ("likely_next_work", "Likely next work"),
    ("discoveries", "Discoveries"),
    ("completed", "Completed"),
    ("relevant_files_directories", "Relevant files"),
    ("errors_and_fixes", "Errors and fixes"),
    ("constraints_and_preferences", "Constraints and preferences"),
    ("pending_tasks", "Pending tasks"),
    ("remember", "Remembered"),
)


def summary_text(summary: dict[str, Any]) -> str:
    """A compaction summary as readable lines, then what it kept of your words."""
    lines: list[str] = []
    for key, title in _SECTIONS:
        value = summary.get(key)
        if not value:
            continue
        if isinstance(value, (list, tuple)):
            lines.append(f"{title}:")
            lines.extend(f"  • {item}" for item in value)
        else:
            lines.append(f"{title}: {value}")
    lines += kept_lines(summary.get("verbatim"))
    return "\n".join(lines) or "(empty summary)"


def kept_lines(verbatim: Any) -> list[str]:
    """What the summary carries word for word (``compaction["verbatim"]``), by number."""
    from selfref_tui.context.summary import number_ranges  # here: the app's import stays light

    if not isinstance(verbatim, dict):
        return []

    def numbers(name: str) -> list[int]:
        value = verbatim.get(name)
        return sorted(n for n in value if isinstance(n, int)) if isinstance(value, list) else []

    kept = sorted(set(numbers("person")) | set(numbers("exchange")) | set(numbers("pinned")))
    lines = [f"Kept word for word: {number_ranges(kept)}"] if kept else []
    if numbers("left_out"):
        lines.append(f"Left out (the model can read them back): "
                     f"{number_ranges(numbers('left_out'))}")
    return lines


@dataclass(eq=False)
class DividerItem(Item):
    """Where the conversation was compacted; everything above is archived."""

    summary: dict[str, Any] = field(default_factory=dict)
    messages_before: int = 0
    expanded: bool = False

    kind = "divider"

    @property
    def title(self) -> str:
        title = "Compacted"
        if self.messages_before:
            title += f" {self.messages_before} messages"
        return title + " · above is archived, the model now sees this summary"

    @property
    def collapsed(self) -> bool:
        return not self.expanded

    @property
    def copy_text(self) -> str:
        return summary_text(self.summary)


@dataclass(eq=False)
class RewoundItem(Item):
    """A run of rewound messages: one collapsed line that opens to show them, marked.

    They stay readable (nothing is deleted), out of the model's context; the
    person undoes the rewind or branches from them.
    """

    first: int = 0
    last: int = 0
    count: int = 0
    expanded: bool = False
    #: the stored messages (and numbers) until the section is first opened
    stored: tuple[list[dict], list[int]] | None = None

    kind = "rewound"

    @property
    def title(self) -> str:
        what = "1 message" if self.count == 1 else f"{self.count} messages"
        span = f" #{self.first}–#{self.last}" if self.last > self.first else (
            f" #{self.first}" if self.first else "")
        if self.expanded:
            return f"⟲ Rewound{span} · the model no longer sees these · click to hide"
        return f"⟲ Rewound{span} · {what} the model no longer sees · click to show"

    @property
    def end_title(self) -> str:
        return "⟲ end of the rewound messages"

    @property
    def copy_text(self) -> str:
        return self.title


@dataclass(eq=False)
class RefInfo:
    """A ``<ref>`` block of an answer: its frame, state and text."""

    ref_id: str
    depth: int = 0
    #: False for stored history (no "streaming…" while it is rebuilt)
    live: bool = True
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
        return f"ref:{self.ref_id}"

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

        self._parser = StreamingRefParser()
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
        """Refs opened and not closed yet, outermost first."""
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
        # Nothing is fed after the end: the parser's closed refs (each one's content is on
        # its RefInfo) would only be more objects for every later pass of the collector.
        self._parser.refs.clear()
        self._splitter.flush()
        while self._stack:
            ref = self._stack.pop()
            ref.unfinished = True
            ref.version += 1
            self._splitter.add(Block("ref_bottom", frames=tuple(self._stack), ref=ref))
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
                for ref in self._stack:
                    ref._parts.append(seg.text)
                splitter.write(seg.text)
            elif seg.kind == "ref_open":
                splitter.flush()
                ref = RefInfo(seg.ref_id or "", depth=len(self._stack), live=self.live)
                self.refs.append(ref)
                splitter.add(Block("ref_top", frames=tuple(self._stack), ref=ref, gap=1))
                self._stack.append(ref)
            elif seg.kind == "ref_close" and self._stack:
                splitter.flush()
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
