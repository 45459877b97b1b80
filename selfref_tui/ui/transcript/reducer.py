"""Runtime events and stored history → display items, without a screen.

:class:`TranscriptModel` is the transcript's state: the items in order, the
answer being written, tool calls still running, the stored history not shown
yet. :meth:`TranscriptModel.apply` takes one runtime event; the view asks what
changed (:attr:`TranscriptModel.structure` for items added, moved or removed,
each item's ``version`` for a redraw) and draws. Live events and stored
history go through the same answer code, so history looks exactly as the live
answer did.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from selfref_tui.ui.transcript.answer import AnswerItem, Fence, RefInfo
from selfref_tui.ui.transcript.image import (
    ImageItem,
    content_images,
    image_items,
    multimodal_items,
)
from selfref_tui.ui.transcript.model import (
    DividerItem,
    ErrorItem,
    Item,
    RewoundItem,
    ToolItem,
    UserItem,
)

TAIL_ITEMS = 50

#: what a finish reason that is not an interruption leaves under the answer
FINISH_MARKERS = {
    "length": "■ cut off — the model reached its output limit",
    "content_filter": "■ stopped by the provider's content filter",
}

#: something a person can highlight and copy: a whole item, a ref or a code block
Target = Item | RefInfo | Fence

class TranscriptModel:
    """The transcript's items and the per-turn state a stream needs."""

    def __init__(self) -> None:
        self.items: list[Item] = []
        self.older: list[dict] = []
        #: the stored number of each of ``older`` (0: none)
        self._older_numbers: list[int] = []
        self.current: AnswerItem | None = None
        self.cards: dict[str, ToolItem] = {}
        #: bumped when items are added, removed or moved
        self.structure = 0
        #: each ref id's closed blocks that are not superseded (they hold one content)
        self._current: dict[str, list[RefInfo]] = {}
        #: an answer whose stream failed: the ErrorEvent that follows in its turn says why
        self._failing: AnswerItem | None = None
        #: the numbers of the messages the person pinned (items built later are marked too)
        self.pinned: frozenset[int] = frozenset()

    # ---------------------------------------------------------------- items

    def _add(self, item: Item) -> Item:
        self.items.append(item)
        self.structure += 1
        return item

    def add_user(self, text: str, *, queued: bool = False,
                 images: Sequence[tuple[str, str]] = ()) -> UserItem:
        """A person's message; ``images`` ((data URL, file name) pairs) are shown under it."""
        item = UserItem(text=text, queued=queued)
        self._add(item)
        for url, name in images:
            self._add(ImageItem(url=url, name=name, source="attached", owner=item))
        return item

    def add_error(self, message: str, kind: str = "internal", detail: str = "") -> ErrorItem:
        item = ErrorItem(message=message, error_kind=kind, detail=detail)
        return self._add(item)  # type: ignore[return-value]

    def of_kind(self, kind: str) -> list[Any]:
        return [item for item in self.items if item.kind == kind]

    def queued_messages(self) -> list[UserItem]:
        return [m for m in self.of_kind("user") if m.queued]

    def ref_blocks(self) -> list[RefInfo]:
        return [ref for answer in self.of_kind("answer") for ref in answer.refs]

    def targets(self) -> list[Target]:
        """What the highlight moves over, in reading order: items, and refs and fences inside."""
        out: list[Target] = []
        for item in self.items:
            if item.kind == "divider" or item.hidden:
                continue
            out.append(item)
            if isinstance(item, AnswerItem):
                seen: set[int] = set()
                for block in item.blocks:
                    if block.kind == "ref_top" and block.ref is not None:
                        if not block.ref.quoted:  # a quotation is no ref to step to
                            out.append(block.ref)
                    elif (
                        block.fence is not None and id(block.fence) not in seen
                        and all(frame.quoted for frame in block.frames)
                    ):
                        # a fence inside a ref is copied with its ref
                        seen.add(id(block.fence))
                        out.append(block.fence)
        return out

    def deliver(self, text: str) -> UserItem | None:
        """A queued message reached the model: un-mark it and move it to where it now sits."""
        for message in self.queued_messages():
            if message.text == text:
                message.queued = False
                message.started = True
                message.touch()
                if self.items[-1] is not message:
                    moved = [i for i in self.items if i is message or i.owner is message]
                    self.items = [i for i in self.items if i not in moved] + moved
                    self.structure += 1
                return message
        return None

    def unqueue(self, count: int) -> list[UserItem]:
        """The last ``count`` queued messages leave (a stop took them back, never sent),
        with the images shown under them; the ones taken out."""
        gone = self.queued_messages()[-count:] if count > 0 else []
        if gone:
            self.items = [i for i in self.items if i not in gone and i.owner not in gone]
            self.structure += 1
        return gone

    def _awaiting_start(self, text: str) -> bool:
        """The app already showed this message when it was sent (claimed once, oldest first)."""
        for item in self.of_kind("user"):
            if not item.queued and not item.started and item.text == text:
                item.started = True
                return True
        return False

    def last_answer(self) -> AnswerItem | None:
        for item in reversed(self.items):
            if isinstance(item, AnswerItem):
                return item
        return None

    # ----------------------------------------------------------------- refs

    def _closed(self, refs: list[RefInfo]) -> None:
        """Newly closed refs supersede the earlier ones with their id, unless they hold
        what those hold: a ref written again unchanged adds no version to the store
        (``FdTable.add_ref``), so the block that defined it is not shown as replaced."""
        current = self._current
        for ref in refs:
            blocks = current.get(ref.ref_id)
            if blocks and blocks[-1].content == ref.content:
                if blocks[-1] is not ref:
                    blocks.append(ref)
                continue
            for block in blocks or ():
                if block is not ref and not block.superseded:
                    block.superseded = True
                    block.version += 1
            current[ref.ref_id] = [ref]

    def _mark_superseded(self) -> None:
        """Every closed block marked again, in order, by the rule of :meth:`_closed`."""
        current: dict[str, list[RefInfo]] = {}
        closed = [ref for ref in self.ref_blocks() if ref.closed]
        for ref in closed:
            blocks = current.get(ref.ref_id)
            if blocks and blocks[-1].content == ref.content:
                blocks.append(ref)
            else:
                current[ref.ref_id] = [ref]
        kept = {id(ref) for blocks in current.values() for ref in blocks}
        for ref in closed:
            superseded = id(ref) not in kept
            if ref.superseded != superseded:
                ref.superseded = superseded
                ref.version += 1
        self._current = current

    # ---------------------------------------------------------------- live

    def _answer(self) -> AnswerItem:
        if self.current is None or self.current.finished:
            self.current = AnswerItem()
            self._add(self.current)
        return self.current

    def finish_answer(self, *, interrupted: bool = False, reason: str = "") -> None:
        current, self.current = self.current, None
        if current is not None:
            self._closed(current.finish(interrupted=interrupted, reason=reason))

    def apply(self, event: Any) -> bool:
        """Show one runtime event (types from :mod:`selfref_tui.agent.events`).

        False: nothing on screen changed (more arguments of a closed tool call:
        1 MB of them streams as hundreds of events), so no frame is drawn for it.
        """
        name = type(event).__name__
        handler = getattr(self, f"_on_{name}", None)
        if handler is not None:
            return handler(event) is not False
        return True

    def _on_TextDelta(self, event: Any) -> None:
        self._closed(self._answer().feed(event.text))

    def _on_ReasoningDelta(self, event: Any) -> None:
        self._answer().feed_reasoning(event.text)

    def _on_TurnStarted(self, event: Any) -> None:
        text = event.user_text
        if text and self.deliver(text) is None and not self._awaiting_start(text):
            self.add_user(text).started = True

    def _on_LLMCallEnded(self, event: Any) -> None:
        reason = event.finish_reason
        answer = self.current
        if reason == "error" and answer is not None and answer.text:
            self._failing = answer
        self.finish_answer(interrupted=reason == "aborted")
        if answer is not None and reason in FINISH_MARKERS:
            answer.mark(FINISH_MARKERS[reason])

    def _on_ToolCallStarted(self, event: Any) -> None:
        self.finish_answer()
        card = ToolItem(call_id=event.call_id, tool_name=event.name)
        self.cards[event.call_id] = card
        self._add(card)

    def _on_ToolCallArgumentsDelta(self, event: Any) -> bool:
        card = self.cards.get(event.call_id)
        if card is None:
            return False
        card.append_arguments(event.delta)
        return card.expanded  # a closed card shows its title only

    def _on_ToolCallEnded(self, event: Any) -> None:
        self._tool_end(event, "done", event.result)

    def _on_ToolCallError(self, event: Any) -> None:
        self._tool_end(event, "error", event.error)

    def _tool_end(self, event: Any, status: str, result: str) -> None:
        card = self.cards.pop(event.call_id, None)
        if card is None:
            card = ToolItem(call_id=event.call_id, tool_name=event.name)
            self._add(card)
        card.end(status, result, event.duration_s, event.arguments)
        images = image_items(getattr(event, "images", ()), source=f"tool {card.tool_name}",
                             owner=card)
        if images:  # shown under their call
            at = self.items.index(card) + 1
            self.items[at:at] = images
            self.structure += 1

    def _on_MessageFailed(self, event: Any) -> None:
        users = [m for m in self.of_kind("user") if not m.archived]
        if users:
            user = users[-1]
            user.failed = event.reason or "failed"
            # An error is said once: the block its turn showed below says the reason
            # (read back from the store there is no block, and the message says it).
            after = self.items[self.items.index(user) + 1:] if user in self.items else []
            user.failed_said_below = any(isinstance(item, ErrorItem) for item in after)
            user.touch()

    def _on_MessageRetried(self, event: Any) -> None:
        for message in self.of_kind("user"):
            if message.failed:
                message.failed = ""
                message.touch()

    def _on_QueuedMessageDelivered(self, event: Any) -> None:
        if self.deliver(event.text) is None:
            self.add_user(event.text).started = True

    def _on_Aborted(self, event: Any) -> None:
        self.finish_answer(interrupted=True, reason=event.reason)
        last = self._turn_answer()
        if last is not None and (last.interrupted or event.stage == "stream"):
            last.mark_interrupted(event.reason)
        self._cancel_cards(event.reason)

    def _turn_answer(self) -> AnswerItem | None:
        """The stopped turn's last answer: a live one after the person's last message.

        Not an earlier turn's (a stop before the first word of the answer), nor one
        drawn from the store (a rewind stops the turn and draws the transcript
        again before the stop is said).
        """
        for item in reversed(self.items):
            if isinstance(item, AnswerItem):
                return item if item.live else None
            if isinstance(item, UserItem) and not item.queued:
                return None
        return None

    def _on_ErrorEvent(self, event: Any) -> None:
        current = self.current
        self.finish_answer(
            interrupted=current is not None and bool(current.text), reason="stream failed"
        )
        failing, self._failing = self._failing, None
        if failing is not None:
            # The reason the runtime stores with it, so a reload reads the same.
            lost = event.kind in ("connection", "timeout")
            failing.mark_interrupted("connection lost" if lost else f"error: {event.message}")
        self.add_error(event.message, event.kind, getattr(event, "detail", "") or "")

    def _on_MessageStored(self, event: Any) -> bool:
        """A live item gets the number its message was stored under (actions take it)."""
        if event.person:
            for item in self.items:
                if isinstance(item, UserItem) and not item.number and not item.rewound \
                        and item.text == event.text:
                    item.number = event.n
                    return False
        elif event.role == "assistant":
            calls = set(event.call_ids)
            for item in self.items:
                if isinstance(item, ToolItem) and not item.number and item.call_id in calls:
                    item.number = event.n
            for item in reversed(self.items):
                if item.number:
                    break  # an answer before the last numbered item is not this one
                if isinstance(item, AnswerItem):
                    item.number = event.n
                    break
        return False  # nothing drawn changes

    def _on_CompactionApplied(self, event: Any) -> None:
        self.finish_answer()
        for item in self.items:
            if not item.archived:
                item.archived = True
                item.touch()
        self._add(DividerItem(summary=dict(event.summary), messages_before=event.messages_before))

    def _on_TurnEnded(self, event: Any) -> None:
        self.finish_answer(interrupted=event.outcome == "aborted")
        # Its ErrorEvent comes before the turn's end or not at all: a later turn's
        # error must not mark this turn's answer.
        self._failing = None
        self._cancel_cards("turn ended")

    def _cancel_cards(self, reason: str) -> None:
        for card in self.cards.values():
            card.cancel(reason)
        self.cards.clear()

    # ------------------------------------------------------------- history

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
