"""The tool calls of one assistant message, run as a batch.

A mixin of :class:`~selfref_tui.agent.turn.loop.Agent`: the tool sources (the
built-in tools, then ``tool_sources``) and one ``ToolBatch`` per message.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from ...context.images import RESULT_IMAGE_SHARE
from ..events import Aborted
from ..tools.batch import BuiltinTools, ToolBatch, ToolSource
from ..tools.builtin import ToolContext
from ..tools.history_recall import HistoryRecall
from .state import TurnState

if TYPE_CHECKING:
    from collections.abc import Callable

    from ...config import AgentSettings
    from ...context.mutations import ContextMutation
    from ...selfref.session import SelfRefSession
    from ..events import EventSink


class ToolRunning:
    """Run one message's tool calls; the sources they come from."""

    if TYPE_CHECKING:  # what the agent provides (loop.Agent)
        settings: AgentSettings
        emit: EventSink
        tool_clock: Callable[[], float]
        tool_sources: list[ToolSource]
        context_window: int
        _history_indexes: dict[str, Any]

        def memory(self, key: str) -> Any: ...
        async def ask(self, key: str, prompt: str, choices: tuple[str, ...],
                      default: str) -> str: ...
        def _commit(self, session: SelfRefSession, mutations: list[ContextMutation],
                    records: list[dict] | None = None) -> None: ...

    async def _run_tools(self, turn: TurnState, calls: list[dict], offered: frozenset[str]) -> str:
        from ...selfref.file_walk import write_roots

        key = turn.key
        roots = write_roots(self.settings.allowed_roots)

        def make_context(call_id: str) -> ToolContext:
            return ToolContext(
                key=key,
                session=turn.session,
                fds=turn.fds,
                forks=turn.forks,
                ask=lambda p, c, d: self.ask(key, p, c, d),
                roots=roots,
                call_id=call_id,
                allow_overwrite=self.settings.allow_overwrite,
                checkpoints=getattr(turn.memory, "checkpoints", None),
                clock=self.tool_clock,
                memory_writes=self.settings.memory_writes,
                allow_memory=self.settings.allow_memory,
                review_compaction=self.settings.review_compaction,
                history_index=self._history_index(key),
            )

        def stage() -> str:
            return "forks" if turn.forks is not None and turn.forks.running else "tools"

        batch = ToolBatch(
            key=key,
            sources=self._sources(forks=turn.forks is not None),
            emit=self.emit,
            commit=lambda mutations, records: self._commit(turn.session, mutations, records),
            make_context=make_context,
            fd_threshold_chars=self.settings.fd_threshold_chars,
            stage_probe=stage,
            offered=offered,
            image_tokens=int(self.context_window * RESULT_IMAGE_SHARE),
        )
        if await batch.run(calls, turn.abort) == "ok":
            return "ok"
        # Aborted with tools still running: they are cancelled, what finished is kept.
        if turn.forks is not None:
            await turn.forks.cancel_all(turn.abort.reason)
        self.emit(Aborted(key=key, reason=turn.abort.reason, stage=batch.abort_stage))
        return "aborted"

    def prepare_search(self, key: str) -> asyncio.Task[None] | None:
        """Take in ``key``'s stored history for ``search_history`` now, in a thread, when
        it is long and partly out of the model's view (``HistoryRecall.prepare``): the
        model's first search, soon after the key is opened or right after a compaction,
        then finds it done. The task (None: nothing to do, or no event loop runs)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return None
        return self._history_index(key).prepare(self.memory(key))

    def _history_index(self, key: str) -> HistoryRecall:
        """The key's search index (``search_history``), kept across turns."""
        recall = self._history_indexes.get(key)
        if recall is None:
            recall = self._history_indexes[key] = HistoryRecall()
        return recall

    def _sources(self, *, forks: bool) -> list[ToolSource]:
        return [BuiltinTools(forks=forks, refs=self.settings.refs_enabled), *self.tool_sources]
