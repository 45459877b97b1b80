"""The person's side of the log: numbered messages, and a fold that can go back.

Two folds of one log serve two readers. The model reads the working
transcript (``messages``); the person reads every message the key ever held,
numbered from 1 in the order they entered, each marked working, compacted (a
compaction took it out of the model's view) or rewound (a rewind did). Both
are kept here, by :class:`HistoryBuilder`, a :class:`TranscriptBuilder` that
records each change it makes to ``messages``.

Why a record of changes (a journal) rather than snapshots: a rewind must give
back the state as of any earlier patch — messages, experiences, refs and their
versions, the summary — and must cost what it undoes, not what the key holds.
Every change to the message list is journaled with what undoes it (and undoing
it yields what redoes it). The journal is a tree of segments: the states the
key has been in are its positions, each patch's mark is one, and the current
state is the end of one path from the root. Going to a mark undoes along the
path up to where the two meet and redoes down to the mark, so a rewind into a
rewound stretch, or to the mark of a rewind (which undoes that rewind), costs
the distance between the two states, however often the person went back and
forth. The store adds entries of its own (refs, the summary) to the journal.

Numbers: every message of role user, assistant or tool gets the next number
when it enters, except runtime notes and compaction summaries (not the
person's or the model's words). Numbers are never reused or changed: a rewind
keeps them, and messages after it continue from the highest. A message taken
out by a multimodal tool result (an empty assistant message whose only call
became a note) keeps its number but is hidden; numbers may therefore skip.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .builder import MULTIMODAL_MARK, TranscriptBuilder
from .experiences import SEQ_KEY, last_seq
from .mutations import (
    EXPERIENCE_MUTATIONS,
    AssistantMessageMutation,
    ContextMutation,
    ContextReplaceMutation,
    ContextSummaryMutation,
    RewindMutation,
    UserMessageMutation,
)

#: what a message (a slot) is now, for the person
WORKING, COMPACTED, REWOUND, HIDDEN = 0, 1, 2, 3
#: roles that get a number
NUMBERED_ROLES = frozenset({"user", "assistant", "tool"})
#: the key a compaction summary message carries (see summary.py)
_SUMMARY_KEY = "compaction"
_RUNTIME_NOTE = "runtime_note"
_COMPACTING = frozenset({ContextSummaryMutation, ContextReplaceMutation})
_EXPERIENCE_TYPES = frozenset(EXPERIENCE_MUTATIONS)

#: a journal entry: (undo function, *arguments); the function undoes it and
#: returns the entry that would redo it (an int: a push at that index, undone by a pop)
Entry = tuple[Any, ...]


class _Segment:
    """A run of journal entries; it forks off its parent after ``at`` of the parent's.

    An entry on the current path holds what undoes it; one undone (off the
    path) holds what redoes it.
    """

    __slots__ = ("at", "entries", "parent")

    def __init__(self, parent: _Segment | None = None, at: int = 0) -> None:
        self.parent = parent
        self.at = at
        self.entries: list[Any] = []

    def chain(self) -> list[_Segment]:
        """The segments from the root down to this one."""
        out: list[_Segment] = []
        node: _Segment | None = self
        while node is not None:
            out.append(node)
            node = node.parent
        out.reverse()
        return out


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


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One numbered message as the person reads it.

    ``message`` is the stored dict (images as ``data:`` URLs): treat it as
    read-only. ``time`` is the ISO-8601 UTC time of the record that committed
    it ("" when not known).
    """

    n: int
    role: str
    message: dict[str, Any]
    time: str
    rewound: bool = False
    compacted: bool = False
    pinned: bool = False


def unknown_number(key: str, n: int, last: int, hidden: bool) -> str:
    """The one line a front end says for message ``n`` that ``entry(n)`` refused.

    ``hidden``: ``n`` was handed out but names no message any more (see the
    module's docstring), so "numbered 1 to last" alone would contradict it.
    """
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


class HistoryBuilder(TranscriptBuilder):
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
        self._root = self._segment = _Segment()
        #: the current segment's entries (the store's entries go here too)
        self.journal: list[Entry | int] = self._segment.entries
        #: length of its segment's entries before each patch (index: the patch's position)
        self.marks: list[int] = []
        #: (first patch position, segment) each time the current segment changed
        self._segments: list[tuple[int, _Segment]] = [(0, self._root)]
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
        #: the highest experience number ever handed out (ids are never reused,
        #: even when a rewind takes their experience away)
        self._exp_high = 0
        #: (patch, patches, segment, journal length) just after the latest rewind
        self._went_to: tuple[int, int, _Segment, int] | None = None
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

    def go_to(self, patch: int) -> None:
        """The state as it was just before patch ``patch`` (an earlier position)."""
        self.flush_experiences()
        seg_t, off_t = self._mark(patch)
        here, there, common, now, want = self._route(seg_t, off_t)
        meet = here[common - 1]  # the root is common to every path
        for index in range(len(here) - 1, common - 1, -1):
            segment = here[index]
            # a segment on the path is applied up to where the next one forks off it
            end = here[index + 1].at if index + 1 < len(here) else len(segment.entries)
            self._undo(segment, 0, end)
        if want < now:
            self._undo(meet, want, now)
        elif want > now:
            self._redo(meet, now, want)
        for index in range(common, len(there)):
            segment = there[index]
            end = there[index + 1].at if index + 1 < len(there) else off_t
            self._redo(segment, 0, end)
        if off_t < len(seg_t.entries):
            seg_t = _Segment(seg_t, off_t)  # what comes next forks here
        self._segment, self.journal = seg_t, seg_t.entries
        self._segments.append((len(self.marks), seg_t))
        self._open_idx = None
        self._unresolved, self._answered, self._repeats = [], set(), {}
        self._keep_experience_ids()  # may put a system message first: before the block is found
        self._find_open_block()

    def _stack_rewind(self, target: int) -> None:
        """Keep :attr:`undoable` as a rewind patch (not yet marked) is folded.

        A rewind back to the newest undoable rewind's own patch, with nothing
        changed since that rewind, undoes it: it leaves the stack, and the next
        undo takes the one before it. Any other rewind is one more to undo
        (an undo after the person went on is one too: undoing it brings back
        what they sent since).
        """
        stack = self.undoable
        if stack and target == stack[-1] and (
                target + 1 == len(self.marks) or self.is_at(target + 1)):
            stack.pop()
        else:
            stack.append(len(self.marks))

    def is_at(self, patch: int) -> bool:
        """Whether the state now is the state just before patch ``patch``: a rewind there
        would change nothing (no change lies between the two on the journal's paths)."""
        if self._pending_experiences or patch in self._batched_at:
            return False
        if self._went_to == (patch, len(self.marks), self._segment, len(self.journal)):
            return True  # rewound there, and nothing since (what the rewind journaled too)
        seg_t, off_t = self._mark(patch)
        here, there, common, now, want = self._route(seg_t, off_t)
        if now != want:
            return False
        for path, last in ((here, len(self._segment.entries)), (there, off_t)):
            for index in range(common, len(path)):
                if (path[index + 1].at if index + 1 < len(path) else last):
                    return False
        return True

    def _route(self, seg_t: _Segment, off_t: int
               ) -> tuple[list[_Segment], list[_Segment], int, int, int]:
        """The way from the state now to offset ``off_t`` of segment ``seg_t``.

        ``here`` and ``there``: the segments from the root to the current one and
        to ``seg_t``; ``common``: how many they share (the root at least); ``now``
        and ``want``: how far the last shared one is applied now, and how far the
        target needs it.
        """
        here = self._segment.chain()
        there = seg_t.chain()
        common = 0
        while common < min(len(here), len(there)) and here[common] is there[common]:
            common += 1
        now = here[common].at if common < len(here) else len(here[-1].entries)
        want = there[common].at if common < len(there) else off_t
        return here, there, common, now, want

    def _mark(self, patch: int) -> tuple[_Segment, int]:
        """Where patch ``patch``'s mark is: its segment and the offset in it."""
        segment = self._root
        for first, seg in self._segments:
            if first > patch:
                break
            segment = seg
        return segment, self.marks[patch]

    def _undo(self, segment: _Segment, start: int, end: int) -> None:
        entries, messages, slots, state = segment.entries, self.messages, self.slots, self._state
        undo_del, undo_push = self._undo_del, self._undo_push
        for k in range(end - 1, start - 1, -1):
            entry = entries[k]
            if type(entry) is int and entry == len(messages) - 1:
                # a push undone (the common case, inlined: a rewind far back undoes thousands)
                message, sid = messages.pop(), slots.pop()
                before = WORKING
                if sid >= 0:
                    before = state[sid]
                    state[sid] = REWOUND
                entries[k] = (undo_del, entry, message, sid, before)
            else:
                entries[k] = undo_push(entry) if type(entry) is int else entry[0](entry)

    def _redo(self, segment: _Segment, start: int, end: int) -> None:
        entries = segment.entries
        for k in range(start, end):
            entry = entries[k]
            entries[k] = entry[0](entry)

    def journal_entry(self, undo: Callable[[Entry], Entry], *args: Any) -> None:
        """Record a change made outside the builder (the store's refs and summary)."""
        self.journal.append((undo, *args))

    def patch_of(self, n: int) -> int:
        """The position of the patch that brought message ``n`` (IndexError when none)."""
        self._check(n)
        return self._patch_of[n - 1]

    def entry(self, n: int) -> HistoryEntry:
        """Message ``n`` as the person reads it (IndexError when there is none).

        A hidden number raises too: :meth:`entries` leaves it out, and a reader
        by number (``read_history``, a pin) must see the same messages.
        """
        self._check_shown(n)
        return self._entry(n)

    def message(self, n: int) -> dict[str, Any]:
        """Message ``n``'s latest dict (IndexError when there is none, or it is hidden)."""
        self._check_shown(n)
        return self._msg[self._slot_of[n - 1]]

    def is_hidden(self, n: int) -> bool:
        """Whether ``n`` was handed out and is hidden now (a multimodal result's emptied
        owner): a point in the log (a rewind or a branch may go there), not a message."""
        return 1 <= n <= len(self._slot_of) and self._state[self._slot_of[n - 1]] == HIDDEN

    def entries(self) -> list[HistoryEntry]:
        """Every numbered message, in order, hidden ones left out."""
        state, slot_of, make = self._state, self._slot_of, self._entry
        return [make(n) for n in range(1, len(slot_of) + 1) if state[slot_of[n - 1]] != HIDDEN]

    def numbered_messages(self, first: int = 1, last: int | None = None
                          ) -> tuple[list[int], list[dict[str, Any]]]:
        """The numbers ``first`` .. ``last`` (default: the highest) and their stored dicts,
        hidden ones left out: :meth:`entries` without an entry made per message.

        What a search index reads when it takes in a long history at once. It may
        run in a thread while the loop adds messages: numbers up to ``last`` are
        complete, and the lists it reads only grow.
        """
        slot_of, state, msg = self._slot_of, self._state, self._msg
        end = len(slot_of) if last is None else min(last, len(slot_of))
        first = max(first, 1)
        if first > end:
            return [], []
        sids = slot_of[first - 1:end]
        if state.find(HIDDEN) < 0:
            return list(range(first, end + 1)), [msg[sid] for sid in sids]
        kept = [i for i, sid in enumerate(sids) if state[sid] != HIDDEN]
        return [first + i for i in kept], [msg[sids[i]] for i in kept]

    def numbered_columns(self) -> tuple[list[int], list[dict[str, Any]], list[str], bytes]:
        """:meth:`entries` as columns, no entry made per message: the numbers, their stored
        dicts, their times (text), and their states (a byte each: ``WORKING``,
        ``COMPACTED`` or ``REWOUND``), hidden ones left out. What a search cache is
        made of when a search folds a whole log."""
        numbers, messages = self.numbered_messages()
        state, slot_of, time_of = self._state, self._slot_of, self._time_of
        sids = [slot_of[n - 1] for n in numbers] if len(numbers) < len(slot_of) else slot_of
        times = [time_of[n - 1] for n in numbers] if len(numbers) < len(slot_of) else time_of
        return (numbers, messages, [t if type(t) is str else "" for t in times],
                bytes(map(state.__getitem__, sids)))

    def numbers_rewound(self) -> list[int]:
        """The numbers of the messages a rewind took out of the model's view, in order."""
        return self._numbers_in(REWOUND)

    def numbers_hidden(self) -> list[int]:
        """The numbers handed out to messages that are hidden now (see :meth:`is_hidden`)."""
        return self._numbers_in(HIDDEN)

    def _numbers_in(self, code: int) -> list[int]:
        state = self._state
        if state.find(code) < 0:
            return []
        return [n for n, sid in enumerate(self._slot_of, 1) if state[sid] == code]

    def is_working(self, n: int) -> bool:
        self._check(n)
        return self._state[self._slot_of[n - 1]] == WORKING

    def history(self) -> list[dict[str, Any]]:
        """What the person reads, in order: every slot's message, marked when not working.

        Compacted messages carry ``archived: True``, rewound ones ``rewound: True``
        (copies; working messages are the stored dicts). Markers are
        ``{"role": "compaction", ...}`` dicts.
        """
        return [message for _, message in self.numbered_history()]

    def history_length(self) -> int:
        """``len(self.history())`` without building it (only a hidden slot is left out)."""
        return len(self._msg) - self._state.count(HIDDEN)

    def numbered_history(self) -> list[tuple[int, dict[str, Any]]]:
        """:meth:`history` with each message's number (0 for unnumbered ones and markers)."""
        out: list[tuple[int, dict[str, Any]]] = []
        add = out.append
        state, slot_of = self._state, self._slot_of
        n = 0
        numbered = len(slot_of)
        for sid, message in enumerate(self._msg):
            number = 0
            if n < numbered and slot_of[n] == sid:
                n += 1
                number = n
            s = state[sid]
            if s == WORKING:
                add((number, message))
            elif s == COMPACTED:
                add((number, {**message, "archived": True}))
            elif s == REWOUND:
                add((number, {**message, "rewound": True}))
        return out

    def states(self) -> bytes:
        """A snapshot of every slot's state, for :meth:`moved_since`."""
        return bytes(self._state)

    def moved_since(self, before: bytes) -> tuple[list[int], list[int]]:
        """Numbers that left the context since ``before`` (now rewound), and that came back.

        Compacted counts as in the context here: a compaction does not take the
        person's messages away, and a rewind past one brings them back.
        """
        state, left, back = self._state, [], []
        for n, sid in enumerate(self._slot_of, 1):
            old = before[sid] if sid < len(before) else WORKING
            new = state[sid]
            if old != new:
                if new == REWOUND and old != HIDDEN:
                    left.append(n)
                elif old == REWOUND and new != HIDDEN:
                    back.append(n)
        return left, back

    def count_rewound(self) -> int:
        """Numbered messages out of the context by a rewind."""
        state = self._state
        return sum(1 for sid in self._slot_of if state[sid] == REWOUND)

    def count_readable(self) -> int:
        """Numbered messages the person can read (rewound and compacted included)."""
        # only a numbered message is ever hidden (a multimodal result's emptied owner)
        return len(self._slot_of) - self._state.count(HIDDEN)

    def add_marker(self, marker: dict[str, Any]) -> None:
        """A compaction marker in the person's history, undone with its compaction."""
        sid = len(self._msg)
        self._msg.append(marker)
        self._state.append(WORKING)
        self.journal.append((self._undo_state, sid, REWOUND))

    # --------------------------------------------------------------- slots

    def _check(self, n: int) -> None:
        if not 1 <= n <= len(self._slot_of):
            raise IndexError(f"no message {n}")

    def _check_shown(self, n: int) -> None:
        self._check(n)
        if self._state[self._slot_of[n - 1]] == HIDDEN:
            raise IndexError(f"message {n} is hidden")

    def _entry(self, n: int) -> HistoryEntry:
        sid = self._slot_of[n - 1]
        message = self._msg[sid]
        s = self._state[sid]
        time = self._time_of[n - 1]
        return HistoryEntry(
            n=n, role=str(message.get("role", "")), message=message,
            time=time if type(time) is str else "", rewound=s == REWOUND, compacted=s == COMPACTED,
        )

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

    # ---------------------------------------------------------------- undo

    def _undo_push(self, index: int) -> Entry:
        return self._undo_ins((None, index, REWOUND))

    def _undo_ins(self, entry: Entry) -> Entry:
        _, index, state = entry
        message = self.messages.pop(index)
        sid = self.slots.pop(index)
        before = WORKING
        if sid >= 0:
            before = self._state[sid]
            self._state[sid] = state
        return (self._undo_del, index, message, sid, before)

    def _undo_del(self, entry: Entry) -> Entry:
        _, index, message, sid, state = entry
        self.messages.insert(index, message)
        self.slots.insert(index, sid)
        before = REWOUND
        if sid >= 0:
            before = self._state[sid]
            self._state[sid] = state
            self._msg[sid] = message
        return (self._undo_ins, index, before)

    def _undo_set(self, entry: Entry) -> Entry:
        _, index, message = entry
        current = self.messages[index]
        self.messages[index] = message
        sid = self.slots[index]
        if sid >= 0:
            self._msg[sid] = message
        return (self._undo_set, index, current)

    def _undo_swap(self, entry: Entry) -> Entry:
        """Put a whole earlier list back; the messages it replaces get ``removed`` states.

        ``states`` are the restored messages' states, ``removed`` those of the
        messages taken away (None: rewound). The inverse carries the states
        both sides have now, so redoing a compaction marks its messages
        compacted again.
        """
        _, messages, slots, states, removed = entry
        state = self._state
        current, current_slots = list(self.messages), list(self.slots)
        current_before = bytes(state[s] for s in current_slots if s >= 0)
        restored_before = bytes(state[s] for s in slots if s >= 0)
        given = iter(removed) if removed is not None else None
        for sid in current_slots:
            if sid >= 0:
                state[sid] = next(given, REWOUND) if given is not None else REWOUND
        restored = iter(states)
        for sid, message in zip(slots, messages, strict=True):
            if sid >= 0:
                state[sid] = next(restored, WORKING)
                self._msg[sid] = message
        self.messages[:] = messages
        self.slots[:] = slots
        return (self._undo_swap, current, current_slots, current_before, restored_before)

    def _undo_state(self, entry: Entry) -> Entry:
        _, sid, state = entry
        before = self._state[sid]
        self._state[sid] = state
        return (self._undo_state, sid, before)

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
