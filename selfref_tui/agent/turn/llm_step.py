"""One LLM call of a turn: stream it, fold it, commit what it said.

A mixin of :class:`~selfref_tui.agent.turn.loop.Agent`. The stream is consumed
in a task of its own, so the abort signal cancels it (and closes the response)
at once; what arrived is kept, marked, whatever ends the stream.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from ...context.apply import unique_call_ids
from ...context.images import person_images, suspect_tool_images
from ...context.mutations import AssistantMessageMutation, AssistantTruncatedMutation
from ..events import (
    ENDING_MARKERS,
    Aborted,
    ErrorEvent,
    LLMCallEnded,
    LLMCallStarted,
    Notice,
    ReasoningDelta,
    RefClosed,
    RefOpened,
    Retrying,
    TextDelta,
)
from ..tools.builtin import now_iso
from .overflow import is_context_overflow
from .state import TurnState
from .stream import StreamAssembler

if TYPE_CHECKING:
    from ...context.mutations import ContextMutation
    from ...selfref.session import SelfRefSession
    from ..events import EventSink
    from ..protocols import ProviderLike
    from .planning import RequestPlan

#: the longest the stream consumer runs without letting the event loop in (see _consume)
BURST_S = 0.01

#: a ref rewritten by an answer right after the model read it quoted from its history:
#: most often a copy of what it read (cut short or changed), not a change it meant
RECALLED_REWRITE = ("ref {ref_id} was rewritten right after the model read it quoted from "
                    "the history: if that was a copy, the earlier version is kept (the refs "
                    "list shows it as old)")


#: stored ``abort_reason`` of answers the server ended early (shown by every front end)
CUT_OFF_REASON = ENDING_MARKERS["length"]


FILTERED_REASON = ENDING_MARKERS["content_filter"]


#: finish_reason -> (turn outcome, stored marker, what the person reads)
UNFINISHED = {
    "length": ("cut_off", CUT_OFF_REASON,
               "the answer was cut off at the output limit; it is kept, marked — ask the model "
               "to continue, or raise the server's output limit (max_tokens)"),
    "content_filter": ("filtered", FILTERED_REASON,
                       "the answer was stopped by the provider's filter; what arrived is kept, "
                       "marked — rephrase the request"),
}


EMPTY_ANSWER = ("the model sent an empty answer (no text and no tool calls); nothing was "
                "stored — /retry to ask again, or rephrase")


class LlmStep:
    """One LLM call: stream, assemble, commit, and what its ending means."""

    if TYPE_CHECKING:  # what the agent provides (loop.Agent)
        provider: ProviderLike
        emit: EventSink
        model: str
        _unreadable_images: set[str]

        def _observe_usage(self, plan: RequestPlan, reported: int) -> None: ...
        def _commit(self, session: SelfRefSession, mutations: list[ContextMutation],
                    records: list[dict] | None = None) -> None: ...
        def _tell_images_left_out(self, key: str, base: list[dict], *,
                                  refused: bool = False) -> None: ...

    async def _llm_step(self, turn: TurnState, plan: RequestPlan) -> tuple[str, list]:
        from ..provider.errors import ProviderError

        messages, tools = plan.messages, plan.tools

        key, step = turn.key, turn.step
        self.emit(LLMCallStarted(key=key, step=step, model=self.model))
        started = time.perf_counter()
        state = StreamAssembler(key, step, self.emit)
        message_index = turn.memory.history_length
        consume = asyncio.create_task(self._consume(turn, messages, tools, state, message_index))
        unhook = turn.abort.on_fire(consume.cancel)
        try:
            await asyncio.wait({consume})
        except asyncio.CancelledError:
            # The turn's task itself was cancelled (app shutdown, a cancelled
            # worker): close the stream and still keep what arrived.
            consume.cancel()
            await asyncio.wait({consume})
            self._commit(
                turn.session,
                [AssistantTruncatedMutation(state.content, turn.abort.reason or "cancelled")],
                state.ref_records,
            )
            raise
        finally:
            unhook()
        duration = time.perf_counter() - started

        def ended(finish: str | None) -> None:
            self.emit(LLMCallEnded(key=key, step=step, duration_s=duration, usage=state.usage,
                                   finish_reason=finish))

        if consume.cancelled():
            # Aborted mid-stream: keep what arrived, marked, and nothing half-made.
            ended("aborted")
            self._commit(
                turn.session,
                [AssistantTruncatedMutation(state.content, turn.abort.reason)],
                state.ref_records,
            )
            self.emit(Aborted(key=key, reason=turn.abort.reason, stage="stream"))
            return "aborted", []
        error = consume.exception()
        if error is not None:
            ended("error")
            if is_context_overflow(error) and not state.content:
                turn.overflow_error = error  # _steps names it, compacts and retries once
                return "overflow", []
            if (getattr(error, "bad_image", False) and not state.content
                    and not turn.images_omitted):
                # The server takes images but not one of these: it is not a model
                # without vision. Which one was bad, the server does not say; the tools'
                # images it has not read before are left out and the step is tried once
                # more (see suspect_tool_images).
                left = suspect_tool_images(turn.memory.messages) - self._unreadable_images
                if left:
                    turn.images_omitted = True
                    self._unreadable_images |= left
                    self.emit(Notice(key=key, severity="warning", message=(
                        f"{error.message.split(' — ')[0]}: "
                        f"{'a tool image is' if len(left) == 1 else f'{len(left)} tool images are'}"
                        " left out of this request and later ones (the transcript keeps "
                        f"{'it' if len(left) == 1 else 'them'})")))
                    return "images", []
            if (getattr(error, "images_refused", False) and not state.content
                    and not turn.images_omitted and not person_images(turn.memory.messages)):
                # Only tools' images: the provider now remembers this server refuses
                # them, so _plan leaves them out; the step is tried once more.
                turn.images_omitted = True
                self._tell_images_left_out(key, turn.memory.messages, refused=True)
                return "images", []
            if isinstance(error, ProviderError):
                message, kind = error.message, error.kind
            else:
                message, kind = f"internal error: {error}", "internal"
            lost = kind in ("connection", "timeout")
            if state.content or getattr(error, "partial", False):
                reason = "connection lost" if lost else f"error: {message}"
                self._commit(
                    turn.session,
                    [AssistantTruncatedMutation(state.content, reason)],
                    state.ref_records,
                )
            turn.failure = message
            self.emit(ErrorEvent(key=key, message=message, kind=kind,
                                 detail=getattr(error, "detail", "")))
            return "error", []
        ended(state.finish)
        reported = int((state.usage or {}).get("prompt_tokens") or 0)
        if reported > 0:
            self._observe_usage(plan, reported)
        unfinished = UNFINISHED.get(state.finish or "")
        if unfinished is not None:
            # Kept and marked; tool calls of a cut-off answer may be incomplete, so none run.
            outcome, marker, note = unfinished
            self._commit(turn.session, [AssistantTruncatedMutation(state.content, marker)],
                         state.ref_records)
            self.emit(Notice(key=key, message=note, severity="warning"))
            return outcome, []
        calls = unique_call_ids(state.tool_calls())  # each result must find its own call
        if not calls and not state.content:
            turn.failure = "empty answer"
            self.emit(Notice(key=key, message=EMPTY_ANSWER, severity="warning"))
            return "empty", []
        content: str | None = state.content
        if calls and not content:
            content = None
        reasoning = (
            [{"type": "reasoning", "text": state.reasoning_text}] if state.reasoning else []
        )
        answer = AssistantMessageMutation(
            content=content, tool_calls=calls, reasoning_details=reasoning
        )
        self._commit(turn.session, [answer], state.ref_records)
        return "ok", calls

    async def _consume(
        self,
        turn: TurnState,
        messages: list[dict],
        tools: list[dict],
        state: StreamAssembler,
        message_index: int,
    ) -> None:
        from ...refs.parser import StreamingRefParser
        from ..provider.chunks import ReasoningChunk, TextChunk, ToolCallChunk, UsageChunk

        key, emit = turn.key, self.emit
        parser = StreamingRefParser()
        recalled = _recalled_quotes(messages)

        retries = getattr(getattr(self.provider, "config", None), "max_retries", 0)

        def on_retry(attempt: int, delay: float, reason: str) -> None:
            emit(Retrying(key=key, attempt=attempt, delay_s=delay, reason=reason, of=retries))

        def on_notice(message: str, severity: str) -> None:  # the provider's notices
            from ..events import Notice

            emit(Notice(key=key, message=message, severity=severity))

        stream = self.provider.stream(messages, tools or None, on_retry=on_retry,
                                      on_notice=on_notice)
        clock = time.perf_counter
        yield_at = clock() + BURST_S
        try:
            async for chunk in stream:
                if clock() > yield_at:
                    # Chunks the socket already buffered come without a pause; a slow
                    # front end falls behind and then gets thousands at once. Let
                    # the loop run between them, so key presses are not held up.
                    await asyncio.sleep(0)
                    yield_at = clock() + BURST_S
                if isinstance(chunk, TextChunk):
                    state.text.append(chunk.text)
                    emit(TextDelta(key=key, text=chunk.text))
                    self._ref_segments(turn, parser, parser.feed(chunk.text), state,
                                       message_index, recalled)
                elif isinstance(chunk, ReasoningChunk):
                    state.reasoning.append(chunk.text)
                    emit(ReasoningDelta(key=key, text=chunk.text))
                elif isinstance(chunk, ToolCallChunk):
                    state.tool_delta(chunk.index, chunk.id, chunk.name, chunk.arguments)
                elif isinstance(chunk, UsageChunk):
                    state.usage = dict(chunk.usage)
                else:  # FinishChunk
                    state.finish = getattr(chunk, "reason", None)
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()
            self._ref_segments(turn, parser, parser.finish(), state, message_index, recalled)

    def _ref_segments(
        self, turn: TurnState, parser: Any, segments: list, state: StreamAssembler, index: int,
        recalled: frozenset[str] = frozenset(),
    ) -> None:
        for segment in segments:
            if segment.kind == "ref_open":
                self.emit(RefOpened(key=turn.key, ref_id=segment.ref_id or ""))
            elif segment.kind == "ref_close" and state.refs_seen < len(parser.refs):
                ref = parser.refs[state.refs_seen]
                state.refs_seen += 1
                record = turn.fds.add_ref(ref.id, ref.content, now_iso(), message_index=index)
                if record is not None:  # None: the ref's content already, nothing to store
                    state.ref_records.append(record)
                    if ref.id in recalled:
                        self.emit(Notice(key=turn.key, severity="warning",
                                         message=RECALLED_REWRITE.format(ref_id=ref.id)))
                self.emit(RefClosed(key=turn.key, ref_id=ref.id, content=ref.content))


def _recalled_quotes(messages: list[dict]) -> frozenset[str]:
    """The refs quoted in the tool results this request carries since the person's last
    message: what the model has just read back from its history (``read_history``,
    ``search_history``, a page of such a result's fd)."""
    from ...refs.parser import quoted_ids

    ids: set[str] = set()
    for message in reversed(messages):
        role = message.get("role")
        if role == "user":
            break
        content = message.get("content")
        if role == "tool" and isinstance(content, str):
            ids |= quoted_ids(content)
    return frozenset(ids)
