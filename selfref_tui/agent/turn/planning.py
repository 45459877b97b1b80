"""The next request of a key: compile, count, fit the window, choose the tools.

A mixin of :class:`~selfref_tui.agent.turn.loop.Agent` (its state lives there):
the request a step sends (``_plan``), and the same for a preview (``context show``,
the context view), the calibration of our counts to the server's, and a refusal
for length (``_after_refusal``).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ...context.breakdown import Breakdown, auto_compact_line
from ...context.compile import InvocationConfig
from ...context.images import images_once, omitted_text, without_tool_images
from ...context.mutations import ContextMutation
from ...context.tokens import ESTIMATE_SHORTFALL, Calibration
from ..events import ErrorEvent, Notice
from ..tools.batch import schemas_of
from ..tools.offer import ToolOffer, offer_tools
from .compile_cache import IncrementalCompile
from .overflow import fit_request, overflow_message, window_named_in
from .state import TurnState

if TYPE_CHECKING:
    from ...config import AgentSettings
    from ...context.tokens import TokenCounter
    from ...selfref.session import SelfRefSession
    from ..abort import AbortSignal
    from ..events import EventSink
    from ..protocols import MemoryLike, ProviderLike
    from ..tools.batch import ToolSource
    from .compaction import CompactionPolicy

#: what stands in a request for a tool's image the server could not read
UNREADABLE_IMAGE = "[image omitted: the server could not read it]"


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
    #: whether ``counted`` came from the real encoding (not estimates): the calibration
    #: after the answer takes it as it is unless the counting changed since
    counted_exact: bool | None = None


class RequestPlanning:
    """Compile, count and fit the next request of a key."""

    if TYPE_CHECKING:  # what the agent provides (loop.Agent)
        settings: AgentSettings
        provider: ProviderLike
        emit: EventSink
        model: str
        context_window: int
        config: InvocationConfig
        tokens: TokenCounter
        calibration: Calibration
        compaction: CompactionPolicy
        _sessions: dict[str, SelfRefSession]
        _compilers: dict[str, IncrementalCompile]
        _sample: tuple[list[dict], list[dict], int, bool | None] | None
        _encoder_task: asyncio.Task | None
        _unreadable_images: set[str]

        def memory(self, key: str) -> MemoryLike: ...
        def _sources(self, *, forks: bool) -> list[ToolSource]: ...

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
            pending.append(self.compaction.requested_note(key))
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

    def compact_offered(self, key: str) -> bool:
        """Whether the next request of ``key`` offers ``compact`` (a small window may not):
        /compact is refused up front when it does not, rather than calling the model for
        nothing."""
        return self.tool_offer(key).compact_offered

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

    def _count_text(self, text: str) -> int:
        """A text's tokens as the window's decisions count them (calibrated): what a
        compaction keeps verbatim is fitted below the compaction point with it, so it
        must be counted the way the point and the request's fixed part are."""
        return self.calibration.apply(self.tokens.count_text(text))

    def _fixed_tokens(self, plan: RequestPlan, tools: list[dict]) -> int:
        """What ``plan``'s request spends before its first working message (the system
        message and the tool schemas), calibrated; 0 for an empty request."""
        if not plan.messages:
            return 0
        return self.calibration.apply(
            self.tokens.count_message(plan.messages[0]) + self.tokens.count_tools(tools))

    @staticmethod
    def _offers_compact(tools: list[dict]) -> bool:
        return any((t.get("function") or {}).get("name") == "compact" for t in tools)

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
        compiled, compiled_tokens = self._compile(key, base, pending)
        messages, message_tokens = compiled, compiled_tokens
        # (no message with content parts: no image to carry once, and no scan of them all)
        once = images_once(messages) if self._compilers[key].has_parts else messages
        if once is not messages:  # an image the request already carries is said in words
            messages, message_tokens = once, self.tokens.count_messages(once)
        tool_tokens = self.tokens.count_tools(tools)
        plan = self._fit(messages, message_tokens + tool_tokens, tool_tokens, tools, budget)
        if plan.left_out and messages is not compiled:
            # The cut may have left out where a repeated image was first: fit with each
            # image counted where it stands, then carry each once in what is kept (the
            # words "the same image as shown earlier" must point at an image sent).
            cut = self._fit(compiled, compiled_tokens + tool_tokens, tool_tokens, tools,
                            budget)
            if cut.fits:  # (else a repeat within the newest part made it too large)
                kept = images_once(cut.messages)
                if kept is not cut.messages:
                    cut.messages = kept
                    cut.counted = self.tokens.count_messages(kept) + tool_tokens
                cut.tokens = plan.tokens
                plan = cut
        plan.counted_exact = self.tokens.ready
        if breakdown:
            from ...context.apply import apply_mutations
            from ...context.breakdown import token_breakdown

            # Only the system message and a summary after it are read: the head of the
            # transcript with the queued patches applied is enough (a copy of the whole
            # cost a millisecond per 10,000 messages).
            head = apply_mutations(base[:2], pending) if pending else base[:2]
            plan.breakdown = token_breakdown(
                self.invocation(key), head, messages, message_tokens, tool_tokens,
                plan.tokens, self.tokens)
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
                             own_budget, compact=self._offers_compact(tools),
                             count_appended=self.tokens.count_appended)
        if fitted is None:
            return RequestPlan(messages, tools, tokens, counted, fits=False, estimated=estimated)
        # the marked system message is counted again with the request (the step's fixed
        # part, the calibration): from the cache, not by encoding it whole once more
        self.tokens.remember(fitted.messages[0], fitted.system_tokens)
        return RequestPlan(fitted.messages, tools, tokens, fitted.tokens, fitted.left_out,
                           estimated=estimated)

    def _compile(self, key: str, base: list[dict], pending: list) -> tuple[list[dict], int]:
        """``compile_messages`` and its token count, incrementally per key."""
        compiler = self._compilers.get(key)
        config = self.invocation(key)
        if compiler is None or compiler.config != config:
            compiler = self._compilers[key] = IncrementalCompile(config, self.tokens)
        return compiler.compile(base, pending)

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

    def _observe_usage(self, plan: RequestPlan, reported: int) -> None:
        """The server counted ``reported`` prompt tokens for ``plan``'s request: calibrate.

        The plan's own count is that request's count, unless the encoding arrived
        since it was made; only then is the request counted again (a recount of
        every message after each answer cost more than the compile).
        """
        exact = plan.counted_exact
        self._sample = (plan.messages, plan.tools, reported, exact)
        if exact is None or exact is not self.tokens.ready:
            self._calibrate()
            return
        self.calibration = Calibration()
        self.calibration.observe(plan.counted, reported)

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
            if not self.tokens.ready:  # (a front end may have loaded it first: its counts stay)
                self.tokens.set_encoder(encode)

        self._encoder_task = asyncio.create_task(load(), name="load-encoder")

    async def _exact_near_the_line(self, turn: TurnState, pending: list, tools: list[dict],
                                   budget: int, can_compact: bool) -> None:
        """Before a step decides anything about the window, wait for exact counts when the
        estimate is near a line: the compaction point (when ``compact`` is offered) or
        the budget.

        Why wait rather than decide on the estimate: the estimate (four bytes per
        token) falls short up to :data:`ESTIMATE_SHORTFALL` times on digests or code. A
        decision made on it asks for no compaction where one is due, sends a request over
        the window (the server refuses it, and the retry is sized from the
        figure it refused), or sizes a compaction whose kept words fill the window again
        — and the next count, exact, asks for another. A scaled-up estimate would ask
        English conversations (about 0.75 of the estimate) to compact far too early. The
        wait is the rest of the encoding's load (~0.3 s, once a process), only for a
        conversation that could reach a line: below a quarter of it no text can (a token
        is at least a byte). The app loads the encoding at start,
        so there it is rarely waited for; ``ask`` and ``compact`` on a large key wait once.
        """
        if self.tokens.ready or self._encoder_task is None or self._encoder_task.done():
            return
        line = budget
        point = self.compaction.threshold(self.context_window) if can_compact else 0
        if point:
            line = min(line, point)
        plan = self._plan(turn.key, turn.memory.messages, pending, tools, budget)
        if plan.tokens * ESTIMATE_SHORTFALL >= line:
            await self._exact_counts(turn.abort)

    async def _exact_counts(self, abort: AbortSignal) -> None:
        """Wait for the encoding's load to end (exact counts from then on, or estimates
        when it failed), or for ``abort``; the calibration then compares the server's
        figure with the count as it is now (also when the encoding arrived meanwhile:
        a factor taken from estimates must not scale exact counts)."""
        task = self._encoder_task
        if not self.tokens.ready and task is not None and not task.done():
            stop = asyncio.ensure_future(abort.wait())
            try:
                await asyncio.wait({task, stop}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                stop.cancel()
        self._calibrate()

    def _after_refusal(self, turn: TurnState, plan: RequestPlan, budget: int) -> bool:
        """The server refused the request for length: compact and retry once (True)."""
        key = turn.key
        named = window_named_in(turn.overflow_error) if turn.overflow_error else None
        window = min(named or budget, budget)
        counted = plan.counted
        if plan.counted_exact is False and self.tokens.ready:
            # Sent on an estimate (past what it can fall short, or before the wait for
            # the tokenizer was due): the refusal says what it really held, and the
            # retry's budget is not cut from a figure the server did not see.
            counted = self.tokens.count_request(plan.messages, plan.tools)
        sent = self.calibration.apply(counted)
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

    def invocation(self, key: str) -> InvocationConfig:
        """How ``key``'s requests render: the window's config plus the key's instructions."""
        settings = getattr(self.memory(key), "settings", None)
        instructions = getattr(settings, "instructions", "")
        if not instructions:
            return self.config
        return replace(self.config, instructions=instructions)
