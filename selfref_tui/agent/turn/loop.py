"""The runtime loop: compile → stream → tools, until the model answers.

Every fact a turn produces becomes a typed patch and is committed (appended
and fsynced) the moment it exists: the person's message when the turn starts,
session patches and queued messages at each compile boundary, the assistant
message when its stream ends, each tool result as its tool finishes, and the
abort patches when the signal fires. A crash therefore loses at most the step
in flight, and an abort leaves a transcript that is valid as it stands.

The abort signal cancels the task that consumes the HTTP stream from inside
``fire()``, so the response is closed at once rather than at the next chunk.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ...config import AgentSettings
from ...context.apply import MULTIMODAL_MARK, unique_call_ids
from ...context.breakdown import Breakdown, auto_compact_line
from ...context.compile import InvocationConfig
from ...context.images import (
    RESULT_IMAGE_SHARE,
    images_once,
    omitted_text,
    person_images,
    text_of,
    tool_image_urls,
    without_tool_images,
)
from ...context.mutations import (
    AssistantMessageMutation,
    AssistantTruncatedMutation,
    ContextMutation,
    TurnFailedMutation,
    UserMessageMutation,
)
from ...context.tokens import Calibration
from ...selfref.session import CommitReport, SelfRefSession
from ..abort import AbortSignal
from ..events import (
    ENDING_MARKERS,
    Aborted,
    CompactionApplied,
    ContextUsage,
    ErrorEvent,
    EventSink,
    ExperienceEdited,
    ExperienceForgotten,
    ExperienceRemembered,
    LLMCallEnded,
    LLMCallStarted,
    MessageFailed,
    MessageRetried,
    Notice,
    QueuedMessageDelivered,
    ReasoningDelta,
    RefClosed,
    RefOpened,
    Retrying,
    TextDelta,
    TurnEnded,
    TurnStarted,
    discard,
)
from ..protocols import MemoryLike, ProviderLike, StoreLike
from ..tools.batch import NO_FD_TOOLS, BuiltinTools, ToolBatch, ToolSource, schemas_of
from ..tools.builtin import ToolContext, now_iso
from ..tools.offer import COMPACT_REFUSED, ToolOffer, offer_tools
from .compaction import (
    AFTER_COMPACT_NOTE,
    AUTO_COMPACT_NOTE,
    REQUESTED_COMPACT_NOTE,
    RUNTIME_NOTE,
    CompactionPolicy,
    is_runtime_note,
    runtime_note,
)
from .compile_cache import IncrementalCompile
from .inbox import Inbox
from .overflow import (
    OVERFLOW_COMPACT_NOTE,
    fit_request,
    is_context_overflow,
    overflow_message,
    window_named_in,
)
from .questions import QuestionBroker
from .state import TurnState
from .stream import StreamAssembler

#: the longest the stream consumer runs without letting the event loop in (see _consume)
BURST_S = 0.01
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
#: what stands in a request for a tool's image the server could not read
UNREADABLE_IMAGE = "[image omitted: the server could not read it]"
#: said once per server when a tool's image goes as "[image omitted: …]" (see _tell_images_left_out)
IMAGES_LEFT_OUT = ("model '{model}' does not accept images: a tool's image is left out of its "
                   "requests (kept in the conversation) — pick a vision model to show it")
EMPTY_ANSWER = ("the model sent an empty answer (no text and no tool calls); nothing was "
                "stored — /retry to ask again, or rephrase")
__all__ = [
    "AFTER_COMPACT_NOTE",
    "AUTO_COMPACT_NOTE",
    "NO_FD_TOOLS",
    "REQUESTED_COMPACT_NOTE",
    "RUNTIME_NOTE",
    "Agent",
    "ToolSource",
]


@dataclass
class RequestPlan:
    """The next request of a key: exactly what is sent, and what it costs."""

    messages: list[dict]
    tools: list[dict]
    #: the whole conversation's count (calibrated estimate), even when some is left out
    tokens: int
    #: our own count of what is sent (what calibration compares with the server's report)
    counted: int
    #: the oldest working messages left out of this request to fit the window (0: none)
    left_out: int = 0
    #: False when even the last message does not fit
    fits: bool = True
    #: no server report has calibrated the count yet
    estimated: bool = True
    #: how many tools there are in all; more than ``len(tools)`` when a small window
    #: gets a reduced set (see ``tool_offer``); 0 when not known
    tools_total: int = 0
    #: ``tokens`` by part (system prompt, experiences, tool schemas, summary, messages,
    #: images), adding up to ``tokens``; only for previews (``preview_request``)
    breakdown: Breakdown | None = None
    #: where auto-compaction reminds the model (0: off), and whether this crossing's
    #: reminder was already given; only for previews
    compacts_at: int = 0
    compaction_asked: bool = False
    #: the same in words ("compacts at 80 %: 25,600 tokens (…to go)")
    compaction: str = ""


class Agent:
    """Runs turns for any number of memory keys over one provider."""

    def __init__(
        self,
        selfref: StoreLike,
        provider: ProviderLike,
        settings: AgentSettings,
        emit: EventSink = discard,
        *,
        model: str = "",
        context_window: int = 128_000,
    ) -> None:
        from ...context.compile import InvocationConfig
        from ...context.tokens import TokenCounter

        self.selfref = selfref
        self.provider = provider
        self.settings = settings
        self.emit = emit
        self.model = model
        self.context_window = context_window
        # The sink is looked up on every event: a front end may replace ``emit``.
        self.questions = QuestionBroker(lambda event: self.emit(event))
        self.compaction = CompactionPolicy(settings.auto_compact_ratio)
        #: tool sources besides the built-in tools (MCP servers, say); asked in order
        self.tool_sources: list[ToolSource] = []
        self.config = InvocationConfig(
            base_system_prompt=settings.base_system_prompt, refs_enabled=settings.refs_enabled
        )
        self.tokens = TokenCounter()
        self._encoder_task: asyncio.Task | None = None
        self._sessions: dict[str, SelfRefSession] = {}
        self._fd_tables: dict[str, Any] = {}
        self._turn_seq = 0
        self.calibration = Calibration()
        #: the last request a server reported usage for: (messages, tools, prompt_tokens,
        #: whether it was counted with the real encoding) — see _calibrate
        self._sample: tuple[list[dict], list[dict], int, bool | None] | None = None
        self._left_out: dict[str, int] = {}
        #: per key, the (offered, total) tool counts the person was last told about
        self._offered: dict[str, tuple[int, int]] = {}
        self._last_tokens: dict[str, int] = {}
        self._compilers: dict[str, IncrementalCompile] = {}
        #: servers the person was told leave tools' images out (once per server)
        self._images_told: set[str] = set()
        #: tools' images a server could not read: left out of every later request
        self._unreadable_images: set[str] = set()

    @property
    def interactive(self) -> bool:
        """Set by a front end that can answer ``QuestionAsked``; otherwise tools get the default."""
        return self.questions.interactive

    @interactive.setter
    def interactive(self, value: bool) -> None:
        self.questions.interactive = value

    # ------------------------------------------------------------ front ends

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
            self._fd_tables.pop(k, None)
            self._last_tokens.pop(k, None)
            self.compaction.forget(k)
            self.selfref.release(k)
        return True

    def preview(self, key: str) -> tuple[list[dict], int]:
        """The exact provider messages the next call would send, and its token count."""
        plan = self.preview_request(key)
        return plan.messages, plan.tokens

    def preview_request(self, key: str) -> RequestPlan:
        """Everything the next call of ``key`` would send: messages, tools, tokens, cuts."""
        memory = self.memory(key)
        session = self._sessions.get(key)
        pending: list[ContextMutation] = session.peek_context_mutations() if session else []
        offer = self.tool_offer(key)
        if self.compaction.is_requested(key) and offer.compact_offered:
            pending.append(runtime_note(REQUESTED_COMPACT_NOTE))
        plan = self._plan(key, memory.messages, pending, offer.tools, breakdown=True)
        plan.tools_total = offer.total
        if offer.compact_offered:
            plan.compacts_at = self.compaction.threshold(self.context_window)
            plan.compaction_asked = self.compaction.already_reminded(key, memory.messages)
            plan.compaction = auto_compact_line(self.compaction.ratio, self.context_window,
                                                plan.tokens, asked=plan.compaction_asked)
        else:
            plan.compaction = ("auto-compaction is off: the window is too small to offer the "
                               "compact tool")
        # Copies: the rendered messages are shared with the compile cache.
        plan.messages = [dict(m) for m in plan.messages]
        return plan

    def remember_experience(self, key: str, text: str) -> str:
        """The person adds an experience; queued into a running turn, else committed now."""
        session = self._sessions.get(key)
        if session is not None:
            return session.remember(text)
        session = SelfRefSession(self.memory(key))
        exp_id = session.remember(text)
        self._commit(session, session.collect_context_mutations())
        return exp_id

    def forget_experience(self, key: str, exp_id: str) -> bool:
        """The person removes an experience; same queueing as :meth:`remember_experience`."""
        session = self._sessions.get(key)
        if session is not None:
            return session.forget(exp_id)
        session = SelfRefSession(self.memory(key))
        found = session.forget(exp_id)
        self._commit(session, session.collect_context_mutations())
        return found

    def edit_experience(self, key: str, exp_id: str, text: str) -> bool:
        """The person corrects an experience's text; same queueing as :meth:`remember_experience`.
        False when there is no such experience (or the text is empty)."""
        session = self._sessions.get(key)
        if session is not None:
            return session.edit(exp_id, text)
        session = SelfRefSession(self.memory(key))
        found = session.edit(exp_id, text)
        self._commit(session, session.collect_context_mutations())
        return found

    def request_compaction(self, key: str) -> None:
        """Make the next compile of ``key`` ask the model to call ``compact``."""
        self.compaction.request(key)

    def compact_offered(self, key: str) -> bool:
        """Whether the next request of ``key`` offers ``compact`` (a small window may not):
        /compact is refused up front when it does not, rather than calling the model for
        nothing."""
        return self.tool_offer(key).compact_offered

    def compaction_requested(self, key: str) -> bool:
        """A requested compaction that no compile of ``key`` has asked for yet."""
        return self.compaction.is_requested(key)

    async def ask(self, key: str, prompt: str, choices: tuple[str, ...], default: str) -> str:
        """Ask the person (``QuestionAsked``); ``default`` when no front end answers."""
        return await self.questions.ask(key, prompt, choices, default)

    def answer_question(self, question_id: str, choice: str) -> bool:
        return self.questions.answer(question_id, choice)

    def tools_for(self, key: str) -> list[dict]:
        """The exact tool list of the next call of ``key`` (forks only below the depth limit;
        a reduced set on a small window, see ``tool_offer``)."""
        return self.tool_offer(key).tools

    def tool_offer(self, key: str) -> ToolOffer:
        """The tools of the next call of ``key`` and how many there are in all."""
        depth = key.count("::fork::")
        tools = schemas_of(self._sources(forks=depth < self.settings.fork_max_depth))
        return offer_tools(tools, self._count_tools, self.context_window)

    def _count_tools(self, tools: list[dict]) -> int:
        return self.calibration.apply(self.tokens.count_tools(tools))

    @staticmethod
    def _offers_compact(tools: list[dict]) -> bool:
        return any((t.get("function") or {}).get("name") == "compact" for t in tools)

    async def aclose(self) -> None:
        if self._encoder_task is not None and not self._encoder_task.done():
            self._encoder_task.cancel()
        await self.provider.aclose()

    # ------------------------------------------------------------------ turn

    async def run_turn(
        self,
        key: str,
        user_text: str | list[dict[str, Any]] | None,
        *,
        abort: AbortSignal | None = None,
        inbox: Inbox | None = None,
        retry: bool = False,
    ) -> str:
        """Run one turn; its outcome (see ``TurnEnded.outcome``).

        ``retry`` sends the messages of a failed turn again (their failed mark
        is cleared) instead of new text; see :meth:`failed_message`. ``user_text``
        may be content parts (text and ``image_url`` parts, for vision models).
        """
        return await self.run_key(
            key,
            user_text,
            abort=abort if abort is not None else AbortSignal(),
            inbox=inbox if inbox is not None else Inbox(),
            retry=retry,
        )

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

    async def run_key(
        self,
        key: str,
        user_text: str | list[dict[str, Any]] | None,
        *,
        abort: AbortSignal,
        inbox: Inbox,
        depth: int = 0,
        fds: Any | None = None,
        on_step: Callable[[str, int], None] | None = None,
        retry: bool = False,
    ) -> str:
        """``run_turn`` with the knobs forks need (depth, inherited refs, progress)."""
        from .forks import ForkManager

        memory = self.memory(key)
        session = SelfRefSession(
            memory,
            token_usage=lambda: {
                "tokens": self._last_tokens.get(key, 0),
                "window": self.context_window,
            },
        )
        if fds is None:
            fds = self._fd_table(key, memory)
        turn = TurnState(key, memory, session, fds, abort, inbox, depth, on_step=on_step)
        if depth < self.settings.fork_max_depth:
            turn.forks = ForkManager(self, turn)
        self._sessions[key] = session
        self._turn_seq += 1
        turn_id = self._turn_seq
        self.emit(TurnStarted(key=key, turn_id=turn_id, user_text=text_of(user_text)))
        self._ensure_encoder()
        outcome = "error"
        try:
            if retry and self.failed_message(key) is not None:
                self._commit(session, [TurnFailedMutation("")])
                self.emit(MessageRetried(key=key))
            if user_text:
                self._commit(session, [UserMessageMutation({"role": "user", "content": user_text})])
            outcome = await self._steps(turn)
        except asyncio.CancelledError:
            outcome = "aborted"
            raise
        except Exception as exc:  # a bug must not leave the turn half-recorded
            turn.failure = f"internal error: {exc}"
            self.emit(ErrorEvent(key=key, message=turn.failure, kind="internal"))
            outcome = "error"
        finally:
            if outcome in ("error", "empty"):
                self._mark_failed(turn)
            if turn.forks is not None:
                await turn.forks.cancel_all(abort.reason or "the parent turn ended")
            try:
                self._report(key, session.finalize())
            finally:
                if self._sessions.get(key) is session:
                    del self._sessions[key]
                if depth > 0:  # a fork's key is done with: free its compile cache
                    self._compilers.pop(key, None)
                self.emit(TurnEnded(key=key, turn_id=turn_id, outcome=outcome))
        return outcome

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

    async def _steps(self, turn: TurnState) -> str:
        key, session = turn.key, turn.session
        while True:
            # The offer follows the window and the calibration, so it is decided per step.
            offer = self.tool_offer(key)
            tools = offer.tools
            self._note_offer(key, offer)
            # ---- compile boundary: session patches, then queued person input
            pending = session.collect_context_mutations()
            after = self.compaction.after_compaction(pending)
            if after is not None:
                pending.append(after)
            delivered = turn.inbox.drain()
            pending += [UserMessageMutation({"role": "user", "content": t}) for t in delivered]
            requested = self.compaction.take_request(key, session.has_pending_compaction)
            if requested is not None and offer.compact_offered:
                pending.append(requested)
            elif requested is not None:
                self.emit(Notice(key=key, severity="warning", message=COMPACT_REFUSED))
            if turn.abort.fired:
                self._commit(session, pending)
                self.emit(Aborted(key=key, reason=turn.abort.reason, stage="idle"))
                return "aborted"
            if turn.step >= self.settings.step_limit:
                self._commit(session, pending)
                return "step_limit"
            budget = turn.budget or self.context_window
            plan = self._plan(key, turn.memory.messages, pending, tools, budget)
            if any(is_runtime_note(m) for m in pending):
                turn.overflow_asked = True  # this request already asks for a compaction
            if plan.tokens > budget and not turn.overflow_asked and offer.compact_offered:
                # Over the window: compaction first (what does not fit is left out below).
                turn.overflow_asked = True
                pending.append(runtime_note(OVERFLOW_COMPACT_NOTE.format(
                    tokens=plan.tokens, window=budget)))
                self.emit(Notice(key=key, severity="warning", message=(
                    f"{overflow_message(plan.tokens, budget)} — asking the model to compact it")))
                plan = self._plan(key, turn.memory.messages, pending, tools, budget)
            reminder = self.compaction.auto_note(
                key, plan.tokens, self.context_window, turn.memory.messages, pending
            ) if offer.compact_offered else None
            if reminder is not None:
                pending.append(reminder)
                plan = self._plan(key, turn.memory.messages, pending, tools, budget)
            self._commit(session, pending)
            for text in delivered:
                self.emit(QueuedMessageDelivered(key=key, text=text_of(text)))
            self._last_tokens[key] = plan.tokens
            self.emit(ContextUsage(key=key, tokens=plan.tokens, window=self.context_window,
                                   estimated=plan.estimated))
            if not plan.fits:
                turn.failure = (f"{overflow_message(plan.tokens, budget)}, not even its last "
                                "message — shorten it, or use a model with a larger window")
                self.emit(ErrorEvent(key=key, message=turn.failure, kind="context_overflow"))
                return "error"
            self._note_left_out(key, plan.left_out)
            self._tell_images_left_out(key, turn.memory.messages)
            # ---- one LLM call
            turn.step += 1
            if turn.on_step is not None:
                turn.on_step("running", turn.step)
            stream_outcome, calls = await self._llm_step(turn, plan.messages, tools)
            if stream_outcome == "overflow":
                if self._after_refusal(turn, plan, budget):
                    continue
                return "error"
            if stream_outcome == "images":
                continue  # the same step again, tools' images left out (_plan)
            if stream_outcome != "ok":
                return stream_outcome
            if not calls:
                return "done"
            if turn.on_step is not None:
                turn.on_step("tool", turn.step)
            if await self._run_tools(turn, calls, offer.names) == "aborted":
                return "aborted"

    def _after_refusal(self, turn: TurnState, plan: RequestPlan, budget: int) -> bool:
        """The server refused the request for length: compact and retry once (True)."""
        key = turn.key
        named = window_named_in(turn.overflow_error) if turn.overflow_error else None
        window = min(named or budget, budget)
        sent = self.calibration.apply(plan.counted)
        said = overflow_message(sent, window)
        if turn.overflow_retried:
            turn.failure = (f"{said}: the server refused it again after compaction — start a new "
                            "key, or use a model with a larger window")
            self.emit(ErrorEvent(key=key, message=turn.failure, kind="context_overflow"))
            return False
        turn.overflow_retried = True
        turn.overflow_asked = False
        # The server counts more than we do: aim well under what it refused.
        turn.budget = max(1, int(min(window, sent) * 0.8))
        self.emit(Notice(key=key, severity="warning",
                         message=f"{said} — compacting and retrying once"))
        return True

    def _note_offer(self, key: str, offer: ToolOffer) -> None:
        """Tell the person when the tool set is reduced (or whole again), once per change."""
        counts = (len(offer.tools), offer.total)
        if counts == self._offered.get(key, (offer.total, offer.total)):
            self._offered[key] = counts
            return
        self._offered[key] = counts
        said = offer.notice()
        if said is None:
            said = f"the full tool set is offered again ({offer.total} tools)"
        self.emit(Notice(key=key, severity="warning" if offer.reduced else "information",
                         message=said))

    def _note_left_out(self, key: str, left_out: int) -> None:
        if left_out and left_out != self._left_out.get(key, 0):
            self.emit(Notice(key=key, severity="warning", message=(
                f"the {left_out} oldest messages are left out of this request (they stay "
                "stored): the conversation no longer fits the model's window")))
        self._left_out[key] = left_out

    def _calibrate(self) -> None:
        """Scale our counts to the server's: its ``prompt_tokens`` for the last request
        over our count of that same request.

        The request is kept and counted again when our counting changes (estimates
        until tiktoken has loaded, exact after), so the factor never mixes the two.
        """
        sample = self._sample
        if sample is None or sample[3] is self.tokens.ready:
            return
        messages, tools, reported, _ = sample
        counted = self.tokens.count_messages(messages) + self.tokens.count_tools(tools)
        self.calibration = Calibration()
        self.calibration.observe(counted, reported)
        self._sample = (messages, tools, reported, self.tokens.ready)

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

    def _plan(self, key: str, base: list[dict], pending: list, tools: list[dict],
              budget: int | None = None, *, breakdown: bool = False) -> RequestPlan:
        """Compile, count everything the request carries, and fit it into ``budget``.

        ``breakdown``: also split the count by part (``context show``, the context view).
        """
        self._calibrate()
        if not getattr(self.provider, "images_ok", True):
            base = without_tool_images(base, omitted_text(self.model))
        elif self._unreadable_images:
            base = without_tool_images(base, UNREADABLE_IMAGE, self._unreadable_images)
        messages, message_tokens = self._compile(key, base, pending)
        once = images_once(messages)
        if once is not messages:  # an image the request already carries is said in words
            messages, message_tokens = once, self.tokens.count_messages(once)
        tool_tokens = self.tokens.count_tools(tools)
        plan = self._fit(messages, message_tokens + tool_tokens, tool_tokens, tools, budget)
        if breakdown:
            from ...context.apply import apply_mutations
            from ...context.breakdown import token_breakdown

            plan.breakdown = token_breakdown(
                self.invocation(key), apply_mutations(base, pending), messages, message_tokens,
                tool_tokens, plan.tokens, self.tokens)
        return plan

    def _fit(self, messages: list[dict], counted: int, tool_tokens: int, tools: list[dict],
             budget: int | None) -> RequestPlan:
        """The plan of a compiled request: as it is, or its newest messages that fit."""
        from ...context.tokens import REPLY_PRIMING

        calibration = self.calibration
        tokens = calibration.apply(counted)
        estimated = not calibration.calibrated
        budget = budget or self.context_window
        if tokens <= budget:
            return RequestPlan(messages, tools, tokens, counted, estimated=estimated)
        own_budget = int(budget / calibration.factor) if calibration.calibrated else budget
        fitted = fit_request(messages, self.tokens.count_message, tool_tokens + REPLY_PRIMING,
                             own_budget, compact=self._offers_compact(tools))
        if fitted is None:
            return RequestPlan(messages, tools, tokens, counted, fits=False, estimated=estimated)
        return RequestPlan(fitted.messages, tools, tokens, fitted.tokens, fitted.left_out,
                           estimated=estimated)

    # ------------------------------------------------------------ streaming

    async def _llm_step(
        self, turn: TurnState, messages: list[dict], tools: list[dict]
    ) -> tuple[str, list]:
        from ..provider.errors import ProviderError

        key, step = turn.key, turn.step
        self.emit(LLMCallStarted(key=key, step=step, model=self.model))
        started = time.perf_counter()
        state = StreamAssembler(key, step, self.emit)
        message_index = len(turn.memory.history)
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
                # without vision. Tools' images sent so far are left out (which one
                # was bad, the server does not say); the step is tried once more.
                left = tool_image_urls(turn.memory.messages) - self._unreadable_images
                if left:
                    turn.images_omitted = True
                    self._unreadable_images |= left
                    self.emit(Notice(key=key, severity="warning", message=(
                        f"{error.message.split(' — ')[0]}: the tools' images sent so far "
                        "are left out of this request and later ones (the transcript "
                        "keeps them)")))
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
            self._sample = (messages, tools, reported, None)
            self._calibrate()
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
                    self._ref_segments(turn, parser, parser.feed(chunk.text), state, message_index)
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
            self._ref_segments(turn, parser, parser.finish(), state, message_index)

    def _ref_segments(
        self, turn: TurnState, parser: Any, segments: list, state: StreamAssembler, index: int
    ) -> None:
        for segment in segments:
            if segment.kind == "ref_open":
                self.emit(RefOpened(key=turn.key, ref_id=segment.ref_id or ""))
            elif segment.kind == "ref_close" and state.refs_seen < len(parser.refs):
                ref = parser.refs[state.refs_seen]
                state.refs_seen += 1
                record = turn.fds.add_ref(ref.id, ref.content, now_iso(), message_index=index)
                state.ref_records.append(record)
                self.emit(RefClosed(key=turn.key, ref_id=ref.id, content=ref.content))

    # ---------------------------------------------------------------- tools

    async def _run_tools(self, turn: TurnState, calls: list[dict], offered: frozenset[str]) -> str:
        key = turn.key

        def make_context(call_id: str) -> ToolContext:
            return ToolContext(
                key=key,
                session=turn.session,
                fds=turn.fds,
                forks=turn.forks,
                ask=lambda p, c, d: self.ask(key, p, c, d),
                roots=self.settings.allowed_roots or (_cwd(),),
                call_id=call_id,
                allow_overwrite=self.settings.allow_overwrite,
                checkpoints=getattr(turn.memory, "checkpoints", None),
                memory_writes=self.settings.memory_writes,
                allow_memory=self.settings.allow_memory,
                review_compaction=self.settings.review_compaction,
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

    def _sources(self, *, forks: bool) -> list[ToolSource]:
        return [BuiltinTools(forks=forks, refs=self.settings.refs_enabled), *self.tool_sources]

    # -------------------------------------------------------------- helpers

    def _compile(self, key: str, base: list[dict], pending: list) -> tuple[list[dict], int]:
        """``compile_messages`` and its token count, incrementally per key."""
        compiler = self._compilers.get(key)
        config = self.invocation(key)
        if compiler is None or compiler.config != config:
            compiler = self._compilers[key] = IncrementalCompile(config, self.tokens)
        return compiler.compile(base, pending)

    def invocation(self, key: str) -> InvocationConfig:
        """How ``key``'s requests render: the window's config plus the key's instructions."""
        settings = getattr(self.memory(key), "settings", None)
        instructions = getattr(settings, "instructions", "")
        if not instructions:
            return self.config
        return replace(self.config, instructions=instructions)

    def _commit(self, session: SelfRefSession, mutations: list[ContextMutation],
                records: list[dict] | None = None) -> None:
        if not mutations and not records:
            return
        self._report(session.key, session.commit(mutations, records or ()))

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

    def _ensure_encoder(self) -> None:
        """Load the tiktoken encoding once, in a thread; estimates are used meanwhile."""
        if self._encoder_task is not None or self.tokens.ready:
            return
        from ...selfref.encodings import load_encoder

        async def load() -> None:
            try:
                encode = await asyncio.to_thread(load_encoder, self.model or "gpt-4o-mini")
            except Exception:  # offline data missing: keep estimating
                return
            self.tokens.set_encoder(encode)

        self._encoder_task = asyncio.create_task(load(), name="load-encoder")


def _cwd() -> Any:
    from pathlib import Path

    return Path.cwd()
