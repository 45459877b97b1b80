"""The person's reading of the history fold: numbered messages, their states and times.

Mixed into :class:`~selfref_tui.context.history.HistoryBuilder`, which keeps,
for every message that entered, a *slot* (its latest dict and its state) and,
for a numbered one, the patch that brought it and the time of its record.
This part answers from those columns: one message by its number, every
entry, the columns a search cache is made of, what left the context and what
came back. A hidden number (a multimodal result's emptied owner) is left out
of every list and refused by every read by number.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

#: what a message (a slot) is now, for the person
WORKING, COMPACTED, REWOUND, HIDDEN = 0, 1, 2, 3


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


@dataclass(frozen=True, slots=True)
class CompactionMark:
    """Where a compaction happened, as the person reads it: the marker the transcript
    shows as its divider, placed by the numbers around it.

    ``after`` is the number of the last message that entered before it (0: none);
    ``summary`` the stored summary (empty for a replace, which has none);
    ``summarised`` how many messages it took out of the model's view; ``time`` the
    time of its record ("" when not known); ``rewound`` a rewind took it back.
    """

    after: int
    summary: dict[str, Any]
    summarised: int
    time: str
    rewound: bool = False


class NumberedReads:
    """Messages by number, and the lists the person, a search or a rewind read."""

    if TYPE_CHECKING:  # what the builder provides
        _msg: list[dict[str, Any]]
        _state: bytearray
        #: per number (index n - 1): its slot, the patch that brought it, that record's time
        _slot_of: list[int]
        _patch_of: list[int]
        _time_of: list[str]
        _markers: list[int]

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

    def compactions(self) -> list[CompactionMark]:
        """Every compaction marker, in order, each placed after the message before it.

        Read from the markers :meth:`history` holds (the transcript's dividers), so
        an export puts a compaction where the person saw it. A fold resumed from a
        cached state (``HistoryBuilder.resumed``) knows none before it.
        """
        state, msg, slot_of = self._state, self._msg, self._slot_of
        marks = []
        for sid in self._markers:
            marker = msg[sid]
            summary = marker.get("summary")
            time = marker.get("time", "")
            marks.append(CompactionMark(
                after=bisect_left(slot_of, sid),
                summary=summary if isinstance(summary, dict) else {},
                summarised=int(marker.get("messages_before") or 0),
                time=time if type(time) is str else "",
                rewound=state[sid] == REWOUND,
            ))
        return marks

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
