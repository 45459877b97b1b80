"""When the model is asked to compact its context, and with which words.

Three notes reach the model as runtime user messages (marked ``runtime_note``
in the store, so the transcript can tell them from the person's words):

* the person asked (``/compact``, ``selfref-tui compact``): at the next compile
  boundary, unless a compaction is already queued;
* the context crossed ``auto_compact_ratio`` of the window: once per threshold.
  "Once" is remembered in the store, not in the process: the note itself is
  stored with ``runtime_note: "auto_compact"`` in the working transcript, and a
  compaction replaces that transcript, so the next crossing asks again while
  two ``ask`` processes in a row do not both ask (the overflow note, when a
  request no longer fits the window at all, is stored the same way and counts
  as the same crossing's reminder). A reminder whose ``compact`` call never
  got a result — the process was killed while it ran, a review dialog open —
  or was cancelled by the program's end (the app quit, ``ask`` ended by a
  signal) is not spent: nobody decided against compacting, so the next
  request asks again (a call the person stopped or refused stays their
  decision);
* a compaction was applied: continue from the summary.

The automatic reminder comes early enough for the compaction call itself to
fit: at ``auto_compact_ratio`` of the window, or sooner when that would leave
less than ``COMPACTION_RESERVE`` tokens for the note and the summary the model
writes (``context.breakdown.threshold``, which ``context show`` quotes too).
A compaction that leaves the context still past that point (a large system
prompt, many experiences, long kept words) ends the crossing anyway: the note
after it is stored as the crossing's reminder, so the model is not asked to
compact again and again (each summary the same size).

Each note says what the summary must hold (:data:`SUMMARY_GUIDE`) and that the
runtime keeps the person's words and the history itself.

The policy holds no I/O; the loop passes it the stored messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...context.builder import NO_RESULT_TEXT
from ...context.compaction_point import threshold
from ...context.mutations import ContextMutation, ContextSummaryMutation, UserMessageMutation
from ..abort import closing
from ..tools.offer import COMPACT_TOOL

RUNTIME_NOTE = "runtime_note"
#: the ``runtime_note`` value of the automatic reminder (other notes store ``True``)
AUTO_NOTE_KIND = "auto_compact"

#: what every compaction note asks for (the compact tool's description says the same)
SUMMARY_GUIDE = (
    "Fill every field concretely, errors and fixes, constraints and preferences and pending "
    "tasks included. The person's messages are kept verbatim beside it and all messages stay "
    "searchable (search_history), so do not copy them."
)
AUTO_COMPACT_NOTE = (
    "[selfref-tui runtime] Your context now holds about {tokens} of {window} tokens "
    "({percent}%). Call the `compact` tool now with a concrete summary of the conversation "
    "so far, then continue with the task. " + SUMMARY_GUIDE
)
REQUESTED_COMPACT_NOTE = (
    "[selfref-tui runtime] The person asked you to compact your context. Call the `compact` "
    "tool now with a concrete summary of the conversation so far; after it is applied, say "
    "in one sentence that the context was compacted. " + SUMMARY_GUIDE
)
#: added to the requested note when the person gave a focus (``/compact FOCUS``)
FOCUS_NOTE = " The person asked the summary to focus on: {focus}"
# Deliberately free of the word "compact", so a model that pattern-matches on it
# does not compact again in a loop.
AFTER_COMPACT_NOTE = (
    "[selfref-tui runtime] Your summary has replaced the earlier conversation. Continue the "
    "work from it; if nothing is left to do, tell the person so in one sentence."
)
#: added to the note after a compaction that left the context past the reminder's point
STILL_FULL_NOTE = (
    " The context still holds about {tokens} of {window} tokens: another summary would not "
    "make it smaller, so go on with the work."
)
#: what the person reads then (once per crossing)
STILL_FULL = ("the context is still {percent}% full after compaction ({tokens:,} of {window:,} "
              "tokens: the system prompt, experiences, tools and the summary); it will not be "
              "compacted again until it grows — forget experiences or start a new key to free "
              "more")


def runtime_note(text: str, kind: Any = True) -> UserMessageMutation:
    """A user message written by the runtime, not the person."""
    return UserMessageMutation({"role": "user", "content": text, RUNTIME_NOTE: kind})


def is_runtime_note(mutation: ContextMutation) -> bool:
    return isinstance(mutation, UserMessageMutation) and bool(mutation.message.get(RUNTIME_NOTE))


class CompactionPolicy:
    """Decides which compaction notes go into the next request of each key."""

    def __init__(self, ratio: float) -> None:
        #: auto-compaction threshold as a share of the window; 0 turns it off
        self.ratio = ratio
        #: per key, the person's focus for the requested compaction ("" when none)
        self._requested: dict[str, str] = {}
        # Per key: (the stored message list itself, messages scanned, note found),
        # so the store is scanned once per message rather than once per step.
        self._scan: dict[str, tuple[Sequence[dict] | None, int, _Reminded]] = {}

    def threshold(self, window: int) -> int:
        """The count at which the model is reminded to compact (0: auto-compaction is off);
        ``context show`` and the context view say the same figure."""
        return threshold(self.ratio, window)

    # ---------------------------------------------------------- person asks

    def request(self, key: str, focus: str = "") -> None:
        """The person asked for a compaction: the next compile asks the model.

        ``focus`` (``/compact FOCUS``) goes into the note the model reads; a
        second request before the first is taken keeps the newer focus.
        """
        self._requested[key] = " ".join(focus.split())

    def is_requested(self, key: str) -> bool:
        return key in self._requested

    def requested_note(self, key: str) -> UserMessageMutation:
        """The note the requested compaction sends (what a preview shows, too)."""
        focus = self._requested.get(key, "")
        return runtime_note(REQUESTED_COMPACT_NOTE
                            + (FOCUS_NOTE.format(focus=focus) if focus else ""))

    def take_request(self, key: str, compaction_queued: bool) -> UserMessageMutation | None:
        """The requested note, once; kept for later while a compaction is already queued."""
        if key not in self._requested or compaction_queued:
            return None
        note = self.requested_note(key)
        del self._requested[key]
        return note

    # --------------------------------------------------------- at a boundary

    @staticmethod
    def after_compaction(pending: Sequence[ContextMutation]) -> UserMessageMutation | None:
        """The "continue from your summary" note when ``pending`` applies a compaction."""
        if any(isinstance(m, ContextSummaryMutation) for m in pending):
            return runtime_note(AFTER_COMPACT_NOTE)
        return None

    def auto_note(
        self,
        key: str,
        tokens: int,
        window: int,
        stored: Sequence[dict],
        pending: Sequence[ContextMutation],
    ) -> UserMessageMutation | None:
        """The reminder when ``tokens`` crossed the threshold and it was not given yet.

        ``stored`` is the key's working transcript (``MemoryKey.messages``); a
        reminder already in it means this threshold was already reminded of.
        No reminder is stacked on another runtime note in the same request.
        """
        at = self.threshold(window)
        if not at or tokens < at:
            return None
        if any(is_runtime_note(m) for m in pending):
            return None
        if self.already_reminded(key, stored):
            return None
        percent = round(100 * tokens / max(window, 1))
        return runtime_note(
            AUTO_COMPACT_NOTE.format(tokens=tokens, window=window, percent=percent),
            AUTO_NOTE_KIND,
        )

    def still_full(self, after: UserMessageMutation, tokens: int,
                   window: int) -> UserMessageMutation | None:
        """The note after a compaction, when the context is still past the reminder's point:
        stored as this crossing's reminder (so none follows), and saying why to the model."""
        threshold = self.threshold(window)
        if not threshold or tokens < threshold:
            return None
        text = str(after.message.get("content", ""))
        return runtime_note(text + STILL_FULL_NOTE.format(tokens=tokens, window=window),
                            AUTO_NOTE_KIND)

    def already_reminded(self, key: str, stored: Sequence[dict]) -> bool:
        """Whether the working transcript already holds an automatic reminder."""
        # The list itself, not its id(): a new list may reuse a freed one's address.
        seen, scanned, state = self._scan.get(key, (None, 0, None))
        if seen is not stored or scanned > len(stored) or state is None:
            scanned, state = 0, _Reminded()
        for message in stored[scanned:]:
            state.read(message)
        self._scan[key] = (stored, len(stored), state)
        return state.spent

    def forget(self, key: str) -> None:
        """Drop what is cached for ``key`` (released, or compacted)."""
        self._scan.pop(key, None)


class _Reminded:
    """Whether the working transcript's automatic reminder is spent, read message by
    message (the loop asks at every step of a long turn; each message is read once).

    Spent once given, unless the ``compact`` call that answered it has "no result was
    recorded" for a result, or was cancelled by the program's end: the process ended
    while it ran (killed, or quit, with a review dialog open, say), and nobody decided
    against compacting.
    """

    __slots__ = ("calls", "spent")

    def __init__(self) -> None:
        self.spent = False
        self.calls: set[str] = set()  # the ids of compact calls since the reminder

    def read(self, message: dict) -> None:
        if message.get(RUNTIME_NOTE) == AUTO_NOTE_KIND:
            self.spent, self.calls = True, set()
        elif not self.spent:
            return
        elif message.get("role") == "assistant":
            self.calls.update(str(c.get("id", "")) for c in message.get("tool_calls") or ()
                              if (c.get("function") or {}).get("name") == COMPACT_TOOL)
        elif message.get("role") == "tool" and message.get("tool_call_id") in self.calls:
            self.spent = not _ended_unanswered(message)


def _ended_unanswered(result: dict) -> bool:
    """A compact call's result that says the program ended before it finished."""
    return result.get("content") == NO_RESULT_TEXT or bool(
        result.get("cancelled") and closing(str(result.get("abort_reason", ""))))
