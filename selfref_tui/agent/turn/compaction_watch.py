"""Whether a compaction the runtime asked for came, and what follows a compaction.

A mixin of :class:`~selfref_tui.agent.turn.loop.Agent`. The loop notes in the
turn's state which note asked the model to compact (``compaction_asked``); this
decides, from what the model then did, what the person is told and what the
model is asked next:

* the model answered without calling ``compact``, or its call was invalid: the
  person is told once (``CompactionFailed``) and the runtime does not ask again
  in that turn; after ``COMPACT_TRIES`` invalid calls the tool is withdrawn for
  the rest of the turn, rather than answered with the same error until the step
  limit;
* a compaction that leaves the context still past the reminder's point ends the
  crossing: the note after it is stored as the crossing's reminder (no compact,
  still full, compact again … loop), and the person is told once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...context.tool_errors import failure_reason, tool_failed
from ..events import CompactionFailed, Notice
from ..tools.builtin import JUST_COMPACTED
from ..tools.offer import COMPACT_TOOL
from .compaction import STILL_FULL
from .state import TurnState

if TYPE_CHECKING:
    from ...context.mutations import UserMessageMutation
    from ..events import EventSink
    from .compaction import CompactionPolicy
    from .planning import RequestPlan

#: invalid ``compact`` calls a turn allows before the tool is withdrawn for the rest of it
COMPACT_TRIES = 2
#: why a compaction the runtime asked for did not happen (``CompactionFailed.reason``)
NOT_CALLED = "the model answered without compacting (it did not call `compact`)"
INVALID_CALL = "the model's `compact` call was invalid ({error}); nothing was compacted"


class CompactionWatch:
    """What follows a request to compact: the compaction, or one word that it failed."""

    if TYPE_CHECKING:  # what the agent provides (loop.Agent)
        emit: EventSink
        compaction: CompactionPolicy
        context_window: int

        def _plan(self, key: str, base: list[dict], pending: list, tools: list[dict],
                  budget: int | None = None, *, breakdown: bool = False) -> RequestPlan: ...

    def _can_compact(self, turn: TurnState, offered: bool) -> bool:
        """``compact`` is offered and not withdrawn from this turn."""
        return offered and turn.compact_failures < COMPACT_TRIES

    def _after_compaction(self, turn: TurnState, pending: list, after: UserMessageMutation,
                          plan: RequestPlan, tools: list[dict], budget: int) -> RequestPlan:
        """A compaction that left the context past the reminder's point ends the crossing:
        the note after it becomes the crossing's reminder, and the person is told once."""
        full = self.compaction.still_full(after, plan.tokens, self.context_window)
        if full is None:
            return plan
        pending[pending.index(after)] = full
        window = self.context_window
        self.emit(Notice(key=turn.key, severity="warning", message=STILL_FULL.format(
            percent=round(100 * plan.tokens / max(window, 1)), tokens=plan.tokens,
            window=window)))
        return self._plan(turn.key, turn.memory.messages, pending, tools, budget)

    def _check_compact_calls(self, turn: TurnState, calls: list[dict]) -> None:
        """After a tool batch: a ``compact`` call that queued nothing was invalid, unless
        the person cancelled it (the review): then nothing is awaited any more."""
        ids = [str(c.get("id", "")) for c in calls
               if (c.get("function") or {}).get("name") == COMPACT_TOOL]
        if not ids:
            return
        if turn.session.has_pending_compaction:
            turn.compact_error = ""
            return
        error: str | None = None  # the call's failure, None when it did not fail
        for message in reversed(turn.memory.messages):
            if message.get("role") == "tool" and message.get("tool_call_id") == ids[-1]:
                if tool_failed(message):
                    error = " ".join(failure_reason(message).split())
                break
        # the person's decision (a review cancelled), or a compaction already done: no failure
        if error is None or error.startswith(JUST_COMPACTED):
            turn.compaction_asked = turn.compact_error = ""
            return
        turn.compact_failures += 1
        turn.compact_error = error[:300]

    def _compaction_failed(self, turn: TurnState) -> None:
        """Say once that a compaction the runtime asked for, or the model tried, did not
        happen; the runtime does not ask again in this turn (nor, for the automatic
        reminder, before the next compaction: the reminder stays stored)."""
        if turn.session.has_pending_compaction or not (turn.compaction_asked
                                                       or turn.compact_error):
            return
        reason = (INVALID_CALL.format(error=turn.compact_error) if turn.compact_error
                  else NOT_CALLED)
        self.emit(CompactionFailed(key=turn.key, reason=reason,
                                   asked=turn.compaction_asked or "model"))
        turn.compaction_asked = turn.compact_error = ""
