"""The glue between the history tools and a key's search index (``HistoryRecall``).

Apart from the handlers (``builtin``) because its job is the index's life, not a tool
call's: the agent keeps one per key across turns (``turn/tool_run.py``) and takes a long
history in ahead of need, in a thread, so the model's first ``search_history`` finds it
done; a handler only uses it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

#: a history with more than this many messages not indexed yet is indexed in a thread
THREAD_AT = 5_000


@dataclass
class HistoryRecall:
    """A key's search index (``context.recall_index.HistoryIndex``) and the lock that keeps two
    searches of one tool batch (or a search and :meth:`prepare`) from updating it at once.

    Taking in a long history is most of a first search's cost (~0.15 s at 100,000
    messages), and the first search the model makes is the one right after a
    compaction or soon after the key is opened: :meth:`prepare` does it then, in a
    thread, so the search finds it done.
    """

    index: Any = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    #: the thread taking in the history ahead of need, while it runs
    preparing: asyncio.Task[None] | None = None

    def __post_init__(self) -> None:
        if self.index is None:
            from ...context.recall_index import HistoryIndex

            self.index = HistoryIndex()

    def worth_preparing(self, memory: Any) -> bool:
        """Whether ``memory`` has a long history out of the model's view (compacted or
        rewound) that is not indexed yet: what the model would search first."""
        out_of_view = (getattr(memory, "last_compacted", 0)
                       or getattr(memory, "last_rewind", None) is not None)
        return bool(out_of_view) and self.index.behind(memory) > THREAD_AT

    def prepare(self, memory: Any) -> asyncio.Task[None] | None:
        """Index ``memory``'s history in a thread, now, when it is worth it (see
        :meth:`worth_preparing`); the task doing it (None: nothing to do). Needs a
        running event loop."""
        if self.preparing is not None and not self.preparing.done():
            return self.preparing
        if not self.worth_preparing(memory):
            return None
        self.preparing = asyncio.get_running_loop().create_task(self.catch_up(memory))
        return self.preparing

    async def catch_up(self, memory: Any) -> None:
        """Bring the index up to ``memory``'s messages; a long way in a thread, so the
        app keeps drawing. Numbers up to today's last only: their messages are complete,
        whatever the loop commits meanwhile."""
        async with self.lock:
            if self.index.behind(memory) > THREAD_AT:
                await asyncio.to_thread(self.index.extend, memory, memory.last_number)
