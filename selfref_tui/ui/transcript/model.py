"""What the transcript shows, as plain data: the display items.

The view draws these; the reducer (:mod:`.reducer`) builds them from runtime
events and stored history. Nothing here imports Textual, so every rule about
what is shown (a ref's subtitle, where an answer is cut into blocks, what a
copy takes) is tested without a screen. Here: the items a message, an error,
a tool call, a compaction divider or a rewound section is shown as; an answer,
with its blocks, refs and fences, is :mod:`.answer`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from rich.cells import cell_len

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
            n = self.messages_before
            title += f" {n} message{'' if n == 1 else 's'}"  # not "1 messages"
        return title + " · above is archived, the model now sees this summary"

    @property
    def collapsed(self) -> bool:
        return not self.expanded

    @property
    def copy_text(self) -> str:
        """The summary as a person reads it (the export writes the same text)."""
        # here: importing selfref_tui.context would load the runtime's modules at start
        from selfref_tui.context.summary_text import summary_text

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
        return self._titles()[0]

    def title_within(self, width: int) -> str:
        """The title in at most ``width`` cells where it can be: fewer words when narrow
        (long message numbers at 80 columns wrapped the full one to a second line), but
        always what the line is and what a click does."""
        titles = self._titles()
        return next((title for title in titles if cell_len(title) <= width), titles[-1])

    def _titles(self) -> list[str]:
        """The title's wordings, longest first."""
        what = "1 message" if self.count == 1 else f"{self.count} messages"
        span = f" #{self.first}–#{self.last}" if self.last > self.first else (
            f" #{self.first}" if self.first else "")
        if self.expanded:
            return [f"⟲ Rewound{span} · the model no longer sees these · click to hide",
                    f"⟲ Rewound{span} · out of context · click to hide",
                    f"⟲ Rewound{span} · click to hide", "⟲ Rewound · click to hide"]
        return [f"⟲ Rewound{span} · {what} the model no longer sees · click to show",
                f"⟲ Rewound{span} · {what} out of context · click to show",
                f"⟲ Rewound{span} · {what} · click to show",
                f"⟲ Rewound{span} · click to show", "⟲ Rewound · click to show"]

    @property
    def end_title(self) -> str:
        return "⟲ end of the rewound messages"

    @property
    def copy_text(self) -> str:
        return self.title
