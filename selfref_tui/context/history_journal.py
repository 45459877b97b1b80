"""The history fold's journal: every change to the message list, with what undoes it.

Mixed into :class:`~selfref_tui.context.history.HistoryBuilder`.

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
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .history_reads import REWOUND, WORKING

if TYPE_CHECKING:
    from .mutations import ContextMutation

#: a journal entry: (undo function, *arguments); the function undoes it and
#: returns the entry that would redo it (an int: a push at that index, undone by a pop)
Entry = tuple[Any, ...]


class Segment:
    """A run of journal entries; it forks off its parent after ``at`` of the parent's.

    An entry on the current path holds what undoes it; one undone (off the
    path) holds what redoes it.
    """

    __slots__ = ("at", "entries", "parent")

    def __init__(self, parent: Segment | None = None, at: int = 0) -> None:
        self.parent = parent
        self.at = at
        self.entries: list[Any] = []

    def chain(self) -> list[Segment]:
        """The segments from the root down to this one."""
        out: list[Segment] = []
        node: Segment | None = self
        while node is not None:
            out.append(node)
            node = node.parent
        out.reverse()
        return out


class Journal:
    """Going back to any earlier patch's state, and forth again, along the journal."""

    if TYPE_CHECKING:  # what the builder provides
        messages: list[dict[str, Any]]
        slots: list[int]
        journal: list[Entry | int]
        marks: list[int]
        undoable: list[int]
        _root: Segment
        _segment: Segment
        _segments: list[tuple[int, Segment]]
        _batched_at: dict[int, tuple[ContextMutation, ...]]
        _went_to: tuple[int, int, Segment, int] | None
        _pending_experiences: list[ContextMutation]
        _msg: list[dict[str, Any]]
        _state: bytearray
        _open_idx: int | None
        _unresolved: list[Any]
        _answered: set[Any]
        _repeats: dict[Any, Any]

        def flush_experiences(self) -> None: ...
        def _find_open_block(self) -> None: ...
        def _keep_experience_ids(self) -> None: ...

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
            seg_t = Segment(seg_t, off_t)  # what comes next forks here
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

    def _route(self, seg_t: Segment, off_t: int
               ) -> tuple[list[Segment], list[Segment], int, int, int]:
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

    def _mark(self, patch: int) -> tuple[Segment, int]:
        """Where patch ``patch``'s mark is: its segment and the offset in it."""
        segment = self._root
        for first, seg in self._segments:
            if first > patch:
                break
            segment = seg
        return segment, self.marks[patch]

    def _undo(self, segment: Segment, start: int, end: int) -> None:
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

    def _redo(self, segment: Segment, start: int, end: int) -> None:
        entries = segment.entries
        for k in range(start, end):
            entry = entries[k]
            entries[k] = entry[0](entry)

    def journal_entry(self, undo: Callable[[Entry], Entry], *args: Any) -> None:
        """Record a change made outside the builder (the store's refs and summary)."""
        self.journal.append((undo, *args))

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
