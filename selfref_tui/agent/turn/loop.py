"""The runtime loop: compile → stream → tools, until the model answers.

Every fact a turn produces becomes a typed patch and is committed (appended
and fsynced) the moment it exists: the person's message when the turn starts,
session patches and queued messages at each compile boundary, the assistant
message when its stream ends, each tool result as its tool finishes, and the
abort patches when the signal fires. A crash therefore loses at most the step
in flight, and an abort leaves a transcript that is valid as it stands.

The abort signal cancels the task that consumes the HTTP stream from inside
``fire()``, so the response is closed at once rather than at the next chunk.

``Agent`` holds the state and runs the turn (``run_key`` → ``_steps``); its other
jobs are mixins, one module each: ``planning`` (the next request: compile, count,
fit, the tools offered), ``llm_step`` (one streamed call), ``tool_run`` (one
message's tool calls) and ``bookkeeping`` (per key: memory, commits, fd tables,
failure marks, notices).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from ...config import AgentSettings
from ...context.images import text_of
from ...context.mutations import TurnFailedMutation, UserMessageMutation
from ...context.tokens import Calibration
from ...selfref.session import SelfRefSession
from ..abort import AbortSignal
from ..events import (
    Aborted,
    ContextUsage,
    ErrorEvent,
    EventSink,
    MessageRetried,
    Notice,
    QueuedMessageDelivered,
    TurnEnded,
    TurnStarted,
    discard,
)
from ..protocols import ProviderLike, StoreLike
from ..tools.batch import NO_FD_TOOLS, ToolSource
from ..tools.offer import COMPACT_REFUSED, COMPACT_TOOL, tool_name
from .bookkeeping import KeyBookkeeping
from .compaction import (
    AFTER_COMPACT_NOTE,
    AUTO_COMPACT_NOTE,
    AUTO_NOTE_KIND,
    REQUESTED_COMPACT_NOTE,
    RUNTIME_NOTE,
    CompactionPolicy,
    is_runtime_note,
    runtime_note,
)
from .compaction_watch import CompactionWatch
from .compile_cache import IncrementalCompile
from .inbox import Inbox
from .llm_step import LlmStep
from .overflow import OVERFLOW_COMPACT_NOTE, overflow_message
from .planning import RequestPlan, RequestPlanning
from .questions import QuestionBroker
from .state import TurnState
from .tool_run import ToolRunning

__all__ = [
    "AFTER_COMPACT_NOTE",
    "AUTO_COMPACT_NOTE",
    "NO_FD_TOOLS",
    "REQUESTED_COMPACT_NOTE",
    "RUNTIME_NOTE",
    "Agent",
    "RequestPlan",
    "ToolSource",
]

#: the topic of the notice that a turn waits for MCP servers to start (withdrawn when done)
SOURCES_STARTING = "sources-starting"


class Agent(KeyBookkeeping, RequestPlanning, LlmStep, ToolRunning, CompactionWatch):
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
        #: what tool calls are timed with (a test passes a clock it moves by hand)
        self.tool_clock: Callable[[], float] = time.perf_counter
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
        #: per key, search_history's index over its stored history (built on first use,
        #: then kept in step with the history: see context.recall)
        self._history_indexes: dict[str, Any] = {}

    @property
    def interactive(self) -> bool:
        """Set by a front end that can answer ``QuestionAsked``; otherwise tools get the default."""
        return self.questions.interactive

    @interactive.setter
    def interactive(self, value: bool) -> None:
        self.questions.interactive = value

    # ------------------------------------------------------------ front ends

    def request_compaction(self, key: str, focus: str = "") -> None:
        """Make the next compile of ``key`` ask the model to call ``compact``; ``focus``
        (the person's words: what the summary should keep) goes into that note."""
        self.compaction.request(key, focus)

    def compaction_requested(self, key: str) -> bool:
        """A requested compaction that no compile of ``key`` has asked for yet."""
        return self.compaction.is_requested(key)

    async def ask(self, key: str, prompt: str, choices: tuple[str, ...], default: str) -> str:
        """Ask the person (``QuestionAsked``); ``default`` when no front end answers."""
        return await self.questions.ask(key, prompt, choices, default)

    def answer_question(self, question_id: str, choice: str) -> bool:
        return self.questions.answer(question_id, choice)

    async def aclose(self) -> None:
        if self._encoder_task is not None and not self._encoder_task.done():
            self._encoder_task.cancel()
        # a count still running in a thread (the meter's) ends now: closing waits for it
        self.tokens.stop()
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
            # ``turn`` is bound below, before any tool can ask: after a server refused a
            # request for length, the turn's smaller budget is the window that counts
            token_usage=lambda: {
                "tokens": self._last_tokens.get(key, 0),
                "window": self.context_window,
                "budget": turn.budget or self.context_window,
                "fixed": turn.fixed_tokens,
                "compacts_at": self.compaction.threshold(self.context_window),
            },
            count_text=self._count_text,
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
        self.prepare_search(key)  # while the request is under way (usually done already)
        outcome = "error"
        try:
            if retry and self.failed_message(key) is not None:
                self._commit(session, [TurnFailedMutation("")])
                self.emit(MessageRetried(key=key))
            if user_text:
                self._commit(session, [UserMessageMutation({"role": "user", "content": user_text})])
            await self._sources_started(turn)
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
                if depth > 0:  # a fork's key is done with: free its caches
                    self._compilers.pop(key, None)
                    self._history_indexes.pop(key, None)
                self.emit(TurnEnded(key=key, turn_id=turn_id, outcome=outcome))
        return outcome

    async def _sources_started(self, turn: TurnState) -> None:
        """Tool sources still starting (MCP servers) are waited for before the first
        request, and the person is told: a message sent while the app was starting went
        without their tools, and the model said it had none. Each server's own start-up
        timeout bounds the wait; the turn's abort (Esc) ends it."""
        starting = [(source, names) for source in self.tool_sources
                    if (names := getattr(source, "starting", lambda: [])())]
        if not starting or turn.abort.fired:
            return
        names = ", ".join(name for _source, some in starting for name in some)
        several = "," in names
        self.emit(Notice(key=turn.key, severity="information", topic=SOURCES_STARTING, message=(
            f"waiting for the MCP server{'s' if several else ''} {names} to start, so "
            f"{'their' if several else 'its'} tools go with this message (Esc stops)")))
        waits = [asyncio.ensure_future(source.wait_started()) for source, _names in starting]
        stop = asyncio.ensure_future(turn.abort.wait())
        try:
            await asyncio.wait([asyncio.gather(*waits), stop],
                               return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
            for wait in waits:
                wait.cancel()
            # the wait is over (started, failed or stopped): "waiting for" is no news now
            self.emit(Notice(key=turn.key, message="", topic=SOURCES_STARTING))

    async def _steps(self, turn: TurnState) -> str:
        key, session = turn.key, turn.session
        while True:
            # The offer follows the window and the calibration, so it is decided per step.
            offer = self.tool_offer(key)
            tools = offer.tools
            self._note_offer(key, offer)
            can_compact = self._can_compact(turn, offer.compact_offered)
            if offer.compact_offered and not can_compact:
                tools = [t for t in tools if tool_name(t) != COMPACT_TOOL]  # withdrawn
            # ---- compile boundary: session patches, then queued person input
            pending = session.collect_context_mutations()
            after = self.compaction.after_compaction(pending)
            if after is not None:
                pending.append(after)
                turn.compaction_asked = turn.compact_error = ""
            delivered = turn.inbox.drain()
            pending += [UserMessageMutation({"role": "user", "content": t}) for t in delivered]
            requested = self.compaction.take_request(key, session.has_pending_compaction)
            if requested is not None and can_compact:
                pending.append(requested)
                turn.compaction_asked = "requested"
            elif requested is not None:
                self.emit(Notice(key=key, severity="warning", message=COMPACT_REFUSED))
            budget = turn.budget or self.context_window
            await self._exact_near_the_line(turn, pending, tools, budget, can_compact)
            if turn.abort.fired:
                self._commit(session, pending)
                self.emit(Aborted(key=key, reason=turn.abort.reason, stage="idle"))
                return "aborted"
            if turn.step >= self.settings.step_limit:
                self._commit(session, pending)
                self._compaction_failed(turn)
                return "step_limit"
            plan = self._plan(key, turn.memory.messages, pending, tools, budget)
            if any(is_runtime_note(m) for m in pending):
                turn.overflow_asked = True  # this request already asks for a compaction
            if after is not None:
                plan = self._after_compaction(turn, pending, after, plan, tools, budget)
            if (plan.tokens > budget and not turn.overflow_asked and can_compact
                    and not self.compaction.already_reminded(key, turn.memory.messages)):
                # Over the window: compaction first (what does not fit is left out below).
                # Stored as the crossing's reminder: a model that does not compact is not
                # asked again at every turn (the oldest messages are left out instead).
                turn.overflow_asked = True
                turn.compaction_asked = "overflow"
                pending.append(runtime_note(OVERFLOW_COMPACT_NOTE.format(
                    tokens=plan.tokens, window=budget), AUTO_NOTE_KIND))
                self.emit(Notice(key=key, severity="warning", message=(
                    f"{overflow_message(plan.tokens, budget)} — asking the model to compact it")))
                plan = self._plan(key, turn.memory.messages, pending, tools, budget)
            reminder = self.compaction.auto_note(
                key, plan.tokens, self.context_window, turn.memory.messages, pending
            ) if can_compact else None
            if reminder is not None:
                pending.append(reminder)
                turn.compaction_asked = "auto"
                plan = self._plan(key, turn.memory.messages, pending, tools, budget)
            self._commit(session, pending)
            for text in delivered:
                self.emit(QueuedMessageDelivered(key=key, text=text_of(text)))
            self._last_tokens[key] = plan.tokens
            turn.fixed_tokens = self._fixed_tokens(plan, tools)
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
            stream_outcome, calls = await self._llm_step(turn, plan)
            if stream_outcome == "overflow":
                # named and retried with the real count, not the estimate it was sent on
                await self._exact_counts(turn.abort)
                if self._after_refusal(turn, plan, budget):
                    continue
                return "error"
            if stream_outcome == "images":
                continue  # the same step again, tools' images left out (_plan)
            if stream_outcome != "ok":
                return stream_outcome
            if not calls:
                self._compaction_failed(turn)
                return "done"
            if turn.on_step is not None:
                turn.on_step("tool", turn.step)
            offered = offer.names if can_compact else offer.names - {COMPACT_TOOL}
            if COMPACT_TOOL in {tool_name(call) for call in calls}:
                # a compaction sizes what it keeps verbatim: with exact counts and their
                # calibration, or its summary can fill the window again (see
                # _exact_near_the_line)
                await self._exact_counts(turn.abort)
                turn.fixed_tokens = self._fixed_tokens(plan, tools)
            if await self._run_tools(turn, calls, offered) == "aborted":
                return "aborted"
            self._check_compact_calls(turn, calls)
