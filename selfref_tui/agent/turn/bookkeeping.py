"""Per key: its memory, commits and their events, its fd table, its failure
marks, and what the person was last told about its requests.

A mixin of :class:`~selfref_tui.agent.turn.loop.Agent` (the dicts it keeps per
key are made in ``Agent.__init__``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ...context.apply import MULTIMODAL_MARK
from ...context.history import is_person_message
from ...context.images import text_of, without_tool_images
from ...context.mutations import ContextMutation, TurnFailedMutation
from ...selfref.session import CommitReport, SelfRefSession
from ..events import (
    CompactionApplied,
    ExperienceEdited,
    ExperienceForgotten,
    ExperienceRemembered,
    MessageFailed,
    MessageStored,
    Notice,
)
from ..protocols import MemoryLike
from ..tools.offer import ToolOffer
from .compaction import RUNTIME_NOTE
from .state import TurnState

if TYPE_CHECKING:
    from ...config import AgentSettings
    from ..events import EventSink
    from ..protocols import ProviderLike, StoreLike
    from .compaction import CompactionPolicy
    from .compile_cache import IncrementalCompile

T = TypeVar("T")

#: said once per server when a tool's image goes as "[image omitted: …]" (see _tell_images_left_out)
IMAGES_LEFT_OUT = ("model '{model}' does not accept images: a tool's image is left out of its "
                   "requests (kept in the conversation) — pick a vision model to show it")


class KeyBookkeeping:
    """A key's memory and commits, and the notices given once per change."""

    if TYPE_CHECKING:  # what the agent provides (loop.Agent)
        selfref: StoreLike
        provider: ProviderLike
        settings: AgentSettings
        emit: EventSink
        model: str
        compaction: CompactionPolicy
        _sessions: dict[str, SelfRefSession]
        _compilers: dict[str, IncrementalCompile]
        _history_indexes: dict[str, Any]
        _fd_tables: dict[str, Any]
        _last_tokens: dict[str, int]
        _left_out: dict[str, int]
        _offered: dict[str, tuple[int, int]]
        _images_told: set[str]

        def prepare_search(self, key: str) -> Any: ...

    def memory(self, key: str) -> MemoryLike:
        """The loaded memory key (read-only use: history, experiences, refs, forks)."""
        return self.selfref.open(key)

    def release(self, key: str) -> bool:
        """Let go of an idle key and its forks' keys, so another window can write them.

        False, and nothing released, while a turn runs under any of them.
        """
        related = [
            k for k in self.selfref.open_keys() if k == key or k.startswith(f"{key}::fork::")
        ]
        if any(k in self._sessions for k in related):
            return False
        for k in related:
            self._compilers.pop(k, None)
            self._history_indexes.pop(k, None)
            self._fd_tables.pop(k, None)
            self._last_tokens.pop(k, None)
            self.compaction.forget(k)
            self.selfref.release(k)
        return True

    def remember_experience(self, key: str, text: str) -> str:
        """The person adds an experience; queued into a running turn, else committed now."""
        return self._change_experiences(key, lambda session: session.remember(text))

    def forget_experience(self, key: str, exp_id: str) -> bool:
        """The person removes an experience; same queueing as :meth:`remember_experience`."""
        return self._change_experiences(key, lambda session: session.forget(exp_id))

    def edit_experience(self, key: str, exp_id: str, text: str) -> bool:
        """The person corrects an experience's text; same queueing as :meth:`remember_experience`.
        False when there is no such experience (or the text is empty)."""
        return self._change_experiences(key, lambda session: session.edit(exp_id, text))

    def _change_experiences(self, key: str, change: Callable[[SelfRefSession], T]) -> T:
        """``change`` made in the running turn's session (it commits with the turn), else in
        a session of its own, committed now; what ``change`` returned."""
        session = self._sessions.get(key)
        if session is not None:
            return change(session)
        session = SelfRefSession(self.memory(key))
        result = change(session)
        self._commit(session, session.collect_context_mutations())
        return result

    def failed_message(self, key: str) -> str | None:
        """The person's message of ``key``'s failed last turn, or None (nothing to retry)."""
        messages = self.memory(key).messages
        for message in reversed(messages):
            if message.get("role") != "user" or not message.get("failed"):
                return None
            if not message.get(RUNTIME_NOTE):
                content = message.get("content")
                return content if isinstance(content, str) else ""
        return None

    def unanswered_message(self, key: str) -> str | None:
        """The person's message ``key``'s working transcript ends with, no answer after it
        and not marked failed, or None. Only a process killed before any answer was stored
        (``kill -9``) or a branch made just after a message leaves one: a retry answers it
        as it stands, rather than sending a copy."""
        messages = self.memory(key).messages
        if not messages:
            return None
        last = messages[-1]
        if not is_person_message(last) or last.get("failed"):
            return None
        return text_of(last.get("content"))

    def _mark_failed(self, turn: TurnState) -> None:
        """A turn that ended with no answer after the person's message marks it failed.

        Left in the request, it would be followed by the next message as a run
        of user messages (strict chat templates refuse that) and answered twice.
        """
        # Only a message the person wrote: a tool's image result and a runtime note
        # also ride in user messages, but marking them would leave the model a call
        # without its result and the person a failure they did not cause.
        for message in reversed(turn.memory.messages):
            if (message.get("role") != "user" or "compaction" in message
                    or MULTIMODAL_MARK in message or message.get("failed")):
                return
            if not message.get(RUNTIME_NOTE):
                break
        else:
            return
        reason = turn.failure or "the turn failed"
        try:
            self._commit(turn.session, [TurnFailedMutation(reason)])
        except Exception:  # the store refused: the error event already told the person
            return
        self.emit(MessageFailed(key=turn.key, reason=reason))

    def _commit(self, session: SelfRefSession, mutations: list[ContextMutation],
                records: list[dict] | None = None) -> None:
        if not mutations and not records:
            return
        memory = session.memory
        before = getattr(memory, "last_number", 0)
        self._report(session.key, session.commit(mutations, records or ()))
        self._stored(session.key, memory, before)

    def _stored(self, key: str, memory: Any, before: int) -> None:
        """``MessageStored`` for each message a commit numbered (front ends tie items to it)."""
        for n in range(before + 1, getattr(memory, "last_number", 0) + 1):
            try:
                message = memory.entry(n).message
            except IndexError:  # hidden at once (its only call's result had images)
                continue
            person = is_person_message(message)
            calls = tuple(str(c.get("id", "")) for c in message.get("tool_calls") or ()
                          if isinstance(c, dict))
            self.emit(MessageStored(key=key, n=n, role=str(message.get("role", "")),
                                    call_ids=calls, person=person,
                                    text=text_of(message.get("content")) if person else ""))

    def context_changed(self, key: str) -> None:
        """The key's context was changed outside a turn (a rewind): what was derived from it
        (the fd table's refs, the compile cache, the last count) is built again."""
        self._compilers.pop(key, None)
        self._fd_tables.pop(key, None)
        self._last_tokens.pop(key, None)
        self.compaction.forget(key)

    def _report(self, key: str, report: CommitReport) -> None:
        for exp_id in report.forgotten:
            self.emit(ExperienceForgotten(key=key, experience_id=exp_id))
        for exp_id, text in report.remembered:
            self.emit(ExperienceRemembered(key=key, experience_id=exp_id, text=text))
        for exp_id, text in report.edited:
            self.emit(ExperienceEdited(key=key, experience_id=exp_id, text=text))
        for summary in report.compactions:
            self.compaction.forget(key)
            self.emit(CompactionApplied(key=key, summary=summary,
                                        messages_before=report.messages_before))
        if report.compactions:
            # the model's next search is likely soon, and about what it no longer sees
            self.prepare_search(key)

    def _fd_table(self, key: str, memory: Any) -> Any:
        from ...refs.fds import FdTable, namespace_for_key

        table = self._fd_tables.get(key)
        if table is None:
            # A fork's key keeps its fork namespace, so its new fds never alias the parent's.
            table = FdTable.from_store(
                memory.refs,
                memory.fds,
                namespace=namespace_for_key(key),
                threshold=self.settings.fd_threshold_chars,
            )
            self._fd_tables[key] = table
        return table

    def _note_offer(self, key: str, offer: ToolOffer) -> None:
        """Tell the person when the tool set is reduced (or whole again), once per change."""
        counts = (len(offer.tools), offer.total)
        before = self._offered.get(key, (offer.total, offer.total))
        self._offered[key] = counts
        if counts == before or (not offer.reduced and before[0] == before[1]):
            return  # the same, or whole before and now (tools that joined are no news)
        said = offer.notice()
        if said is None:
            said = f"the full tool set is offered again ({offer.total} tools)"
        self.emit(Notice(key=key, severity="warning" if offer.reduced else "information",
                         message=said, topic="tool-offer"))

    def _note_left_out(self, key: str, left_out: int) -> None:
        if left_out and left_out != self._left_out.get(key, 0):
            self.emit(Notice(key=key, severity="warning", message=(
                f"the {left_out} oldest messages are left out of this request (they stay "
                "stored): the conversation no longer fits the model's window"),
                topic="left-out"))
        self._left_out[key] = left_out

    def _tell_images_left_out(self, key: str, base: list[dict], *,
                              refused: bool = False) -> None:
        """Say once per server that tools' images go to it as "[image omitted: …]".

        Why: once a server refused images (a tool's, or the person's own attachment),
        every later request to it carries the placeholder instead, so the model no
        longer sees what the transcript shows; without a word the person would think
        it did. ``refused``: this step's request was just refused for a tool's image.
        """
        server = str(getattr(self.provider, "base_url", ""))
        if server in self._images_told:
            return
        if not refused and (getattr(self.provider, "images_ok", True)
                            or without_tool_images(base, "") is base):
            return  # images go as they are, or none of the tools' would be left out
        self._images_told.add(server)
        self.emit(Notice(key=key, severity="warning",
                         message=IMAGES_LEFT_OUT.format(model=self.model)))
