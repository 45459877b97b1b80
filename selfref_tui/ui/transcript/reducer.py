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
    image_items,
)
from selfref_tui.ui.transcript.model import (
    DividerItem,
    ErrorItem,
    Item,
    ToolItem,
    UserItem,
)
from selfref_tui.ui.transcript.stored_history import StoredHistory

#: what a finish reason that is not an interruption leaves under the answer
FINISH_MARKERS = {
    "length": "■ cut off — the model reached its output limit",
    "content_filter": "■ stopped by the provider's content filter",
}

#: something a person can highlight and copy: a whole item, a ref or a code block
Target = Item | RefInfo | Fence

class TranscriptModel(StoredHistory):
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
