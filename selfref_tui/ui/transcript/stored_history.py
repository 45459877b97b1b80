"""Stored history → display items: the tail shown first, older messages on demand.

A mixin of :class:`~selfref_tui.ui.transcript.reducer.TranscriptModel` (its state lives
there): a key's stored messages made into items (a run of rewound messages as one
collapsed section, built when first opened; a call whose result never came as over, not
running), the last ``TAIL_ITEMS`` shown and the rest kept for :meth:`load_older`, and the
pinned messages marked. Apart from the live events because it reads what was stored,
once, where the reducer follows a turn as it happens; both end in the same answer items,
so history looks as the live answer did.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from selfref_tui.ui.transcript.answer import AnswerItem, RefInfo
from selfref_tui.ui.transcript.image import content_images, multimodal_items
from selfref_tui.ui.transcript.model import (
    DividerItem,
    Item,
    RewoundItem,
    ToolItem,
    UserItem,
)

TAIL_ITEMS = 50


class StoredHistory:
    """Load, page in and mark the stored history's items."""

    if TYPE_CHECKING:  # the model's state (reducer.TranscriptModel)
        items: list[Item]
        older: list[dict]
        _older_numbers: list[int]
        current: AnswerItem | None
        cards: dict[str, ToolItem]
        structure: int
        _current: dict[str, list[RefInfo]]
        _failing: AnswerItem | None
        pinned: frozenset[int]

        def _mark_superseded(self) -> None: ...

    def reset(self) -> None:
        self.items = []
        self.older = []
        self._older_numbers = []
        self.current = None
        self.cards = {}
        self._current = {}
        self._failing = None
        self.structure += 1

    def load_history(self, history: Sequence[dict], *, tail: int = TAIL_ITEMS,
                     numbers: Sequence[int] = ()) -> None:
        """Show the last ``tail`` stored messages; keep the rest for :meth:`load_older`.

        ``numbers`` (the store's ``history_numbers()``) gives each its number.
        """
        pairs = [(m, numbers[i] if i < len(numbers) else 0) for i, m in enumerate(history)
                 if m.get("role") != "system"]
        messages = [m for m, _ in pairs]
        cut = _cut(messages, _tail_start(messages, tail))
        self.older = list(messages[:cut])
        self._older_numbers = [n for _, n in pairs[:cut]]
        self.items.extend(self._build(messages[cut:], [n for _, n in pairs[cut:]]))
        self.structure += 1
        self._mark_superseded()

    def load_older(self, count: int = TAIL_ITEMS) -> int:
        """Put the next ``count`` older stored messages above; how many."""
        if not self.older:
            return 0
        cut = _cut(self.older, _tail_start(self.older, count))
        batch, self.older = self.older[cut:], self.older[:cut]
        numbers, self._older_numbers = self._older_numbers[cut:], self._older_numbers[:cut]
        self.items[:0] = self._build(batch, numbers)
        self.structure += 1
        self._mark_superseded()
        return len(batch)

    def _build(self, messages: Sequence[dict], numbers: Sequence[int] = ()) -> list[Item]:
        """Items for stored messages; each run of rewound ones is one collapsed section,
        whose items are built when it is first opened (a rewind far back leaves
        thousands of them, and opening the key must not pay for them)."""
        items: list[Item] = []
        start = 0
        while start < len(messages):
            rewound = bool(messages[start].get("rewound"))
            end = start
            while end < len(messages) and bool(messages[end].get("rewound")) == rewound:
                end += 1
            run, run_numbers = messages[start:end], list(numbers[start:end])
            if rewound:
                items.append(_section(run, run_numbers))
            else:
                items += self._build_items(run, run_numbers)
            start = end
        return items

    def open_section(self, section: RewoundItem) -> None:
        """Build a rewound section's items (the first time it is opened), under its line."""
        if section.stored is None:
            return
        messages, numbers = section.stored
        section.stored = None
        built = self._build_items(messages, numbers)
        for item in built:
            item.section = section
        at = self.items.index(section) + 1
        self.items[at:at] = built
        self.structure += 1
        self._mark_superseded()

    def _build_items(self, messages: Sequence[dict], numbers: Sequence[int]) -> list[Item]:
        # here: the app's import stays light
        from selfref_tui.context.builder import NO_RESULT_TEXT
        from selfref_tui.context.images import text_of
        from selfref_tui.context.tool_errors import failure_reason, tool_failed

        items: list[Item] = []
        cards: dict[str, ToolItem] = {}
        for index, message in enumerate(messages):
            role = message.get("role")
            rewound = bool(message.get("rewound"))
            archived = bool(message.get("archived")) or rewound
            start = len(items)
            number = numbers[index] if index < len(numbers) else 0
            if message.get("multimodal_for"):  # a tool's result with images
                items += multimodal_items(message, cards, archived)
            elif role == "compaction":
                items.append(
                    DividerItem(
                        summary=dict(message.get("summary") or {}),
                        messages_before=int(message.get("messages_before") or 0),
                    )
                )
            elif role == "user":
                if message.get("compaction") is not None or message.get("runtime_note"):
                    continue  # the summary (shown by its divider) or the runtime's own prompt
                text = text_of(message.get("content"))
                items.append(UserItem(text=text, started=True, archived=archived,
                                      failed=str(message.get("failed") or "")))
                items += content_images(message.get("content"), source="attached",
                                        archived=archived, owner=items[-1])
            elif role == "assistant":
                items.append(_stored_answer(message, archived))
                for call in message.get("tool_calls") or []:
                    fn = call.get("function") or {}
                    card = ToolItem(
                        call_id=str(call.get("id", "")),
                        tool_name=str(fn.get("name", "tool")),
                        archived=archived,
                    )
                    card.arguments = str(fn.get("arguments", ""))
                    cards[card.call_id] = card
                    items.append(card)
            elif role == "tool":
                call_id = str(message.get("tool_call_id", ""))
                card = cards.get(call_id)
                if card is None:
                    card = ToolItem(
                        call_id=call_id,
                        tool_name=str(message.get("name") or "tool"),
                        archived=archived,
                    )
                    cards[call_id] = card
                    items.append(card)
                content = str(message.get("content") or "")
                duration = message.get("duration_s")
                took = float(duration) if duration is not None else None
                if message.get("cancelled"):
                    card.end("cancelled", str(message.get("abort_reason") or content), None)
                elif tool_failed(message):  # the runtime's flag (an older record: its prefix)
                    card.end("error", failure_reason(message), took)
                else:
                    card.end("done", content, took)
            for item in items[start:]:
                item.rewound = rewound
                if not item.number:
                    item.number = number
                item.pinned = _pinnable(item) and item.number in self.pinned
        # A stored call with no result is from a run that ended before it did (the app
        # was killed mid-call): it is over, not "running" for ever; the model read the
        # same words in its place.
        for card in cards.values():
            if card.status == "running":
                card.end("cancelled", NO_RESULT_TEXT, None)
        return items

    def set_pinned(self, numbers: frozenset[int]) -> list[Item]:
        """Mark the items of pinned messages (and unmark the rest); the items that changed."""
        self.pinned = frozenset(numbers)
        changed = []
        for item in self.items:
            pinned = _pinnable(item) and bool(item.number) and item.number in self.pinned
            if item.pinned != pinned:
                item.pinned = pinned
                changed.append(item)
        return changed


def _pinnable(item: Item) -> bool:
    """Whether an item shows that its message is pinned: a person's message or an answer
    (not its images, nor a tool card, which carries its call's number)."""
    return item.owner is None and item.kind in ("user", "answer")


def _section(messages: list[dict], numbers: list[int]) -> RewoundItem:
    """A collapsed section for a run of rewound messages (their items built on opening)."""
    numbered = [n for n in numbers if n]
    return RewoundItem(first=min(numbered, default=0), last=max(numbered, default=0),
                       count=len(numbered) or len(messages), stored=(messages, numbers))


def _tail_start(messages: Sequence[dict], count: int) -> int:
    """Where the last ``count`` shown messages start; a rewound run is shown as one line."""
    start, shown = len(messages), 0
    while start > 0 and shown < count:
        start -= 1
        rewound = messages[start].get("rewound")
        if not rewound or start + 1 == len(messages) or not messages[start + 1].get("rewound"):
            shown += 1
    while start > 0 and messages[start].get("rewound") and messages[start - 1].get("rewound"):
        start -= 1  # a rewound run stays whole: one section
    return start


def _stored_answer(message: dict, archived: bool) -> AnswerItem:
    from selfref_tui.context.images import text_of  # here: the app's import stays light

    answer = AnswerItem(live=False, archived=archived)
    reasoning = message.get("reasoning_details") or message.get("reasoning_content")
    if isinstance(reasoning, list):
        reasoning = "\n".join(
            str(r.get("text", "")) if isinstance(r, dict) else str(r) for r in reasoning
        )
    if reasoning:
        answer.feed_reasoning(str(reasoning))
    answer.feed(text_of(message.get("content")))
    answer.finish(
        interrupted=bool(message.get("truncated")),
        reason=str(message.get("abort_reason") or ""),
    )
    return answer


def _cut(messages: Sequence[dict], cut: int) -> int:
    """Never split an assistant message from its tool results (images included)."""
    cut = max(0, cut)
    while 0 < cut < len(messages) and (
        messages[cut].get("role") == "tool"
        or (messages[cut].get("role") == "user" and messages[cut].get("multimodal_for"))
    ):
        cut -= 1
    return cut
