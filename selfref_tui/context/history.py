"""The person's side of the log: numbered messages, and a fold that can go back.

Two folds of one log serve two readers. The model reads the working
transcript (``messages``); the person reads every message the key ever held,
numbered from 1 in the order they entered, each marked working, compacted (a
compaction took it out of the model's view) or rewound (a rewind did). Both
are kept here, by :class:`HistoryBuilder`, a :class:`TranscriptBuilder` that
records each change it makes to ``messages``.

The journal that makes a rewind cost what it undoes is
:mod:`~selfref_tui.context.history_journal`; the reads by number
:mod:`~selfref_tui.context.history_reads`; both are mixed into the builder.

Numbers: every message of role user, assistant or tool gets the next number
when it enters, except runtime notes and compaction summaries (not the
person's or the model's words). Numbers are never reused or changed: a rewind
keeps them, and messages after it continue from the highest. A message taken
out by a multimodal tool result (an empty assistant message whose only call
became a note) keeps its number but is hidden; numbers may therefore skip.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from .builder import MULTIMODAL_MARK, TranscriptBuilder
from .experiences import SEQ_KEY, last_seq
from .history_journal import Entry, Journal, Segment
from .history_reads import COMPACTED, HIDDEN, REWOUND, WORKING, HistoryEntry, NumberedReads
from .mutations import (
    EXPERIENCE_MUTATIONS,
    AssistantMessageMutation,
    ContextMutation,
    ContextReplaceMutation,
    ContextSummaryMutation,
    RewindMutation,
    UserMessageMutation,
)

#: roles that get a number
NUMBERED_ROLES = frozenset({"user", "assistant", "tool"})
#: the key a compaction summary message carries (see summary.py)
_SUMMARY_KEY = "compaction"
_RUNTIME_NOTE = "runtime_note"
_COMPACTING = frozenset({ContextSummaryMutation, ContextReplaceMutation})
_EXPERIENCE_TYPES = frozenset(EXPERIENCE_MUTATIONS)


class EntryLike(Protocol):
    """One numbered message of a key's history: what the pure readers of it need.

    :class:`HistoryEntry` provides it (``MemoryKey.entries()`` yields those);
    the export, the kept words and recall read only these fields, so a test
    or a caller may hand them any object that has them.
    """

    n: int
    role: str
    message: dict[str, Any]
    time: str


def unknown_number(key: str, n: int, last: int, hidden: bool) -> str:
    """The one line a front end says for message ``n`` that ``entry(n)`` refused.

    ``hidden``: ``n`` was handed out but names no message any more (see the
    module's docstring), so "numbered 1 to last" alone would contradict it.
    """
    from ..safety.inert import name_line  # "ma\u200bin" never reads as "main"

    key = name_line(key)
    if not last:
        return f"conversation '{key}' has no messages yet"
    if hidden:
        return (f"message {n} of conversation '{key}' is not shown: it held only a tool call, "
                "whose result with images follows as the next messages; see `selfref-tui history`")
    return (f"no message {n} in conversation '{key}': its messages are numbered 1 to {last}; "
            "see `selfref-tui history --all`")


def is_numbered(message: dict[str, Any]) -> bool:
    """Whether a message entering the transcript gets a number."""
    return (
        message.get("role") in NUMBERED_ROLES
        and not message.get(_RUNTIME_NOTE)
        and _SUMMARY_KEY not in message
    )


class HistoryBuilder(NumberedReads, Journal, TranscriptBuilder):
    """A transcript fold that numbers its messages and can rewind to any earlier patch.

    Each non-system message that enters has a *slot* (0-based, in order of
    entry) holding its latest dict and its state; a numbered one also has the
    patch that brought it and the time of that patch's record. Compaction
    markers are slots too (``add_marker``), so the person's history is the
    slots in order. ``stamp`` is the time the caller is folding (the store sets
    it per record).

    Written for load speed (a store folds every message of a key on open): a
    push, by far the most common change, is journaled as a bare int (its index)
    rather than a tuple, and only numbered messages carry per-number data.
    """

    def __init__(
        self, before_compaction: Callable[[ContextMutation], None] | None = None
    ) -> None:
        """``before_compaction`` runs before a summary or replace patch is folded, after
        its mark, so what it journals (the store's marker and summary) is undone with it."""
        self._before_compaction = before_compaction
        #: slot of each message in ``messages`` (-1 for the system message)
        self.slots: list[int] = []
        self._root = self._segment = Segment()
        #: the current segment's entries (the store's entries go here too)
        self.journal: list[Entry | int] = self._segment.entries
        #: length of its segment's entries before each patch (index: the patch's position)
        self.marks: list[int] = []
        #: (first patch position, segment) each time the current segment changed
        self._segments: list[tuple[int, Segment]] = [(0, self._root)]
        #: positions of the rewind patches folded, oldest first
        self.rewinds: list[int] = []
        #: positions of the rewinds an undo takes back, newest last (see _stack_rewind)
        self.undoable: list[int] = []
        #: experience patches still batched (not yet folded) at a patch's mark, by position
        self._batched_at: dict[int, tuple[ContextMutation, ...]] = {}
        #: the time of the record being folded (any JSON value a log holds; text is used)
        self.stamp: Any = ""
        self._msg: list[dict[str, Any]] = []
        self._state = bytearray()
        #: per number (index n - 1): its slot, the patch that brought it, that record's time
        self._slot_of: list[int] = []
        self._patch_of: list[int] = []
        self._time_of: list[str] = []
        #: the slot of each compaction marker, in order (see :meth:`compactions`)
        self._markers: list[int] = []
        #: the highest experience number ever handed out (ids are never reused,
        #: even when a rewind takes their experience away)
        self._exp_high = 0
        #: (patch, patches, segment, journal length) just after the latest rewind
        self._went_to: tuple[int, int, Segment, int] | None = None
        #: set by :meth:`resumed`: the patches before this builder are not known here
        self._resumed = False
        super().__init__()

    # ------------------------------------------------------------------ public

    @property
    def patch_count(self) -> int:
        """How many patches were folded (the next patch's position)."""
        return len(self.marks)

    @property
    def last_number(self) -> int:
        return len(self._slot_of)

    def apply(self, mutation: ContextMutation) -> None:
        kind = type(mutation)
        if kind is UserMessageMutation or kind is AssistantMessageMutation:
            # the common patches, dispatched here rather than by the base's chain of checks
            if self._pending_experiences:
                self.flush_experiences()
            self.marks.append(len(self.journal))
            if kind is UserMessageMutation:
                message = dict(mutation.message)  # type: ignore[union-attr]
                if message.setdefault("role", "user") == "user":
                    if self._open_idx is not None:
                        self._close_block()
                    self._push(message)  # what append_message does for a user message
                else:
                    self.append_message(message)
            elif mutation.tool_calls:  # type: ignore[union-attr]
                self._append_assistant(mutation)  # type: ignore[arg-type]
            else:  # what _append_assistant does for an answer without calls
                if self._open_idx is not None:
                    self._close_block()
                content = mutation.content  # type: ignore[union-attr]
                message = {"role": "assistant", "content": content if content is not None else ""}
                if mutation.reasoning_details:  # type: ignore[union-attr]
                    message["reasoning_details"] = list(mutation.reasoning_details)  # type: ignore[union-attr]
                self._push(message)
            return
        if kind in _EXPERIENCE_TYPES:
            if self._pending_experiences:
                self._batched_at[len(self.marks)] = tuple(self._pending_experiences)
            self.marks.append(len(self.journal))
            self._pending_experiences.append(mutation)
            return
        if self._pending_experiences:  # the batched ones belong before this patch's mark
            self.flush_experiences()
        if kind is RewindMutation:
            if self._resumed:
                raise ValueError("a resumed fold cannot rewind: it lacks the patches before "
                                 "it; fold the log from its start")
            self._stack_rewind(mutation.to_patch)  # type: ignore[union-attr]
        self.marks.append(len(self.journal))
        if kind is RewindMutation:
            self.rewinds.append(len(self.marks) - 1)
            target = mutation.to_patch  # type: ignore[union-attr]
            if target < len(self.marks) - 1:
                self.go_to(target)
                # what was batched then is batched again (folded at the batch's end)
                self._pending_experiences = list(self._batched_at.get(target, ()))
                self._went_to = (target, len(self.marks), self._segment, len(self.journal))
            return  # a rewind to a patch not in this log (a damaged one) changes nothing
        if kind in _COMPACTING and self._before_compaction is not None:
            self._before_compaction(mutation)
        super().apply(mutation)

    def resume_state(self) -> dict[str, Any]:
        """What :meth:`resumed` needs to go on folding patches appended after this point.

        A patch appended to a log reads little of the state before it: whether the
        working transcript starts with a system message (a second one becomes a
        person's line), the open tool block (the assistant message whose calls still
        wait for results, and the messages after it: where results go, which calls
        are answered or renamed) and the highest number handed out. That is this
        state, as plain data (JSON): ``last``, ``system``, ``block`` (``[number, time,
        message]`` from the block's assistant message on; number 0 for an unnumbered
        one), ``unresolved``, ``answered``, ``repeats`` and ``insert_at`` (counted from
        the block's start). Batched experience patches must have been flushed.
        """
        messages = self.messages
        state: dict[str, Any] = {
            "last": len(self._slot_of),
            "system": bool(messages) and messages[0].get("role") == "system",
            "block": [], "unresolved": [], "answered": [], "repeats": {}, "insert_at": 0,
        }
        start = self._open_idx
        if start is None:
            return state
        slots = self.slots[start:]
        low = min((sid for sid in slots if sid >= 0), default=len(self._msg))
        number_of = {sid: n for n, sid in enumerate(self._slot_of, 1) if sid >= low}
        state["block"] = [
            [number_of.get(sid, 0), self._time_of[number_of[sid] - 1] if sid in number_of
             else "", message] for sid, message in zip(slots, messages[start:], strict=True)
        ]
        state.update(unresolved=list(self._unresolved), answered=sorted(self._answered),
                     repeats={k: list(v) for k, v in self._repeats.items()},
                     insert_at=self._insert_at - start)
        return state

    @classmethod
    def resumed(cls, state: dict[str, Any]) -> HistoryBuilder:
        """A builder that goes on from a fold it did not make (``state``: :meth:`resume_state`).

        It numbers the messages of the patches it folds as the whole fold would
        and says how they change the block's messages (a result added, a call
        taken by a multimodal result, a compaction): its :meth:`entries` are the
        block's numbered messages and the new ones; the other numbers up to
        ``state["last"]`` are unknown here and left out. What it does not know, it
        does not pretend: a rewind raises ``ValueError``, the experiences start from
        an empty system message, and a failed turn marks only messages it holds.
        ``ValueError`` too for a state that does not hold together.
        """
        builder = cls()
        builder._resumed = True
        last = state["last"]
        block = state["block"]
        if type(last) is not int or last < 0 or type(block) is not list:
            raise ValueError("not a resume state")
        # slot 0 stands for every number handed out before: unknown here, read as hidden
        builder._msg.append({})
        builder._state.append(HIDDEN)
        builder._slot_of = [0] * last
        builder._patch_of = [-1] * last
        builder._time_of = [""] * last
        if state["system"]:
            builder.slots.append(-1)
            builder.messages.append({"role": "system", "content": ""})
        for n, time, message in block:
            if type(n) is not int or not 0 <= n <= last or type(message) is not dict:
                raise ValueError("not a resume state")
            sid = len(builder._msg)
            builder._msg.append(message)
            builder._state.append(WORKING)
            if n:
                if builder._slot_of[n - 1]:
                    raise ValueError("not a resume state")
                builder._slot_of[n - 1] = sid
                builder._time_of[n - 1] = time if type(time) is str else ""
            builder.slots.append(sid)
            builder.messages.append(message)
        if block:
            builder._open_idx = len(builder.messages) - len(block)
            builder._unresolved = list(state["unresolved"])
            builder._answered = set(state["answered"])
            builder._repeats = {k: list(v) for k, v in state["repeats"].items()}
            builder._insert_at = builder._open_idx + state["insert_at"]
        return builder

    def add_marker(self, marker: dict[str, Any]) -> None:
        """A compaction marker in the person's history, undone with its compaction."""
        sid = len(self._msg)
        self._markers.append(sid)
        self._msg.append(marker)
        self._state.append(WORKING)
        self.journal.append((self._undo_state, sid, REWOUND))

    # --------------------------------------------------------------- slots


    def _new_slot(self, message: dict[str, Any]) -> int:
        """A slot for a message entering the list (-1 for a system message)."""
        role = message.get("role")
        if role == "system":
            self._exp_high = max(self._exp_high, last_seq(message))
            return -1
        sid = len(self._msg)
        self._msg.append(message)
        self._state.append(WORKING)
        if role in NUMBERED_ROLES and _RUNTIME_NOTE not in message and _SUMMARY_KEY not in message:
            self._slot_of.append(sid)
            self._patch_of.append(len(self.marks) - 1)
            self._time_of.append(self.stamp)
        return sid

    # ---------------------------------------------------------- primitives

    def _push(self, message: dict[str, Any]) -> None:
        messages = self.messages
        role = message.get("role")
        if role == "system":
            self.slots.append(self._new_slot(message))
        else:  # _new_slot inlined: this runs once per message of every key loaded
            sid = len(self._msg)
            self._msg.append(message)
            self._state.append(WORKING)
            if (role in NUMBERED_ROLES and _RUNTIME_NOTE not in message
                    and _SUMMARY_KEY not in message):
                self._slot_of.append(sid)
                self._patch_of.append(len(self.marks) - 1)
                self._time_of.append(self.stamp)
            self.slots.append(sid)
        self.journal.append(len(messages))
        messages.append(message)

    def _insert(self, index: int, message: dict[str, Any]) -> None:
        self.slots.insert(index, self._new_slot(message))
        self.messages.insert(index, message)
        self.journal.append(index)

    def _set(self, index: int, message: dict[str, Any]) -> None:
        old = self.messages[index]
        self.messages[index] = message
        sid = self.slots[index]
        if sid >= 0:
            self._msg[sid] = message
        else:
            self._exp_high = max(self._exp_high, last_seq(message))
        self.journal.append((self._undo_set, index, old))

    def _delete(self, index: int) -> None:
        # only a multimodal result's emptied owner: its number stays, hidden
        message = self.messages.pop(index)
        sid = self.slots.pop(index)
        if sid >= 0:
            self._state[sid] = HIDDEN
        self.journal.append((self._undo_del, index, message, sid, WORKING))

    def _reset(self, messages: list[dict[str, Any]]) -> None:
        old, old_slots = list(self.messages), list(self.slots)
        states = bytes(self._state[s] for s in old_slots if s >= 0)
        for sid in old_slots:
            if sid >= 0:
                self._state[sid] = COMPACTED
        self.messages[:] = []
        self.slots[:] = []
        for message in messages:
            self.slots.append(self._new_slot(message))
            self.messages.append(message)
        self.journal.append((self._undo_swap, old, old_slots, states, None))

    # ------------------------------------------------------------- helpers

    def _keep_experience_ids(self) -> None:
        """After a rewind, the experience counter stays at the highest id handed out.

        Eagerly, on the stored system message (an empty one if the key had none
        then: it renders as none), so the session's forecast of the next id reads
        the same counter the fold will use.
        """
        if not self._exp_high:
            return
        messages = self.messages
        if messages and messages[0].get("role") == "system":
            if last_seq(messages[0]) < self._exp_high:
                self._set(0, {**messages[0], SEQ_KEY: self._exp_high})
        else:
            self._insert(0, {"role": "system", "content": "", SEQ_KEY: self._exp_high})


def rewound_tail(entries: Sequence[HistoryEntry]) -> list[HistoryEntry]:
    """The rewound entries, in order (for a front end's "what left the context")."""
    return [e for e in entries if e.rewound]


def is_person_message(message: dict[str, Any]) -> bool:
    """A message the person wrote (not a tool's image result, a note or a summary)."""
    return (
        message.get("role") == "user"
        and MULTIMODAL_MARK not in message
        and not message.get(_RUNTIME_NOTE)
        and _SUMMARY_KEY not in message
    )
