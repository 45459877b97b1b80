"""The bridge from runtime events to widgets, mixed into the app.

Runtime events arrive through :meth:`EventBridge.emit` on the app's own loop
(or from another thread, which hands them over). They are buffered and
drained by one callback in the app's message queue, so a burst of text
deltas becomes one write per widget instead of one message per token, and
their order is kept. Each event is routed by its ``key`` (:func:`key_place`,
the one function that reads a key's structure): the shown key's events go to
the transcript, then to one handler per event type (sidebar, header); a
fork's go to the fork panel's handler for their type; a tool's question,
whichever key asks, becomes a dialog. The handlers are tables, event type →
method, built on the first event (the types are imported with the runtime).

A mixin rather than an object of its own: every branch touches the app's
widgets and state, and passing the app around would only rename ``self``.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from selfref_tui.ui.lazy_import import LazyModule

if TYPE_CHECKING:
    from textual.screen import Screen

    from selfref_tui.agent import events as ev
    from selfref_tui.agent.chat.controller import ChatController
    from selfref_tui.selfref import keys
    from selfref_tui.ui.widgets.app_header import AppHeader
    from selfref_tui.ui.widgets.chat_input import ChatInput
    from selfref_tui.ui.widgets.fork_panel import ForkPanel
    from selfref_tui.ui.widgets.sidebar import Sidebar
    from selfref_tui.ui.widgets.transcript import Transcript
else:  # events exist once the runtime does, after the first frame
    ev = LazyModule("selfref_tui.agent.events")
    keys = LazyModule("selfref_tui.selfref.keys")


#: the most often ref and experience events refresh the sidebar's lists (each refresh
#: lays the screen out again: at 0.1 s a 2,000 tok/s answer with refs spent 14 % of the
#: loop there; the lists are refreshed at once when the turn ends)
SIDEBAR_EVERY_S = 0.5

#: what the header says when a turn ends, by ``TurnEnded.outcome``
TURN_ENDINGS = {
    "done": "ready",
    "aborted": "stopped",
    "error": "error",
    "step_limit": "step limit reached",
    "cut_off": "answer cut off (output limit)",
    "filtered": "stopped by the provider's filter",
    "empty": "empty answer",
}

#: the fields of the event types that quote a server, and so might quote its key
QUOTING_FIELDS = {
    "ErrorEvent": ("message", "detail"),
    "Notice": ("message",),
    "CompactionFailed": ("reason",),
    "Retrying": ("reason",),
}

Handler = Callable[[Any], None]


@dataclass(frozen=True)
class _Handlers:
    """The bridge's dispatch tables, event type → handler."""

    #: whichever key the event comes from, before it is routed by key: a tool waits on
    #: its question whoever asks, and a turn's end drops the questions it left open
    any_key: dict[type, Handler]
    #: events of the key on screen (after the transcript has them)
    shown: dict[type, Handler]
    #: events for the fork panel: a fork's own events, and the lifecycle its parent reports
    panel: dict[type, Handler]
    #: the lifecycle events, which come with the parent's (shown) key
    fork_lifecycle: frozenset[type]


def key_place(shown: str, key: str) -> Literal["shown", "fork"] | None:
    """Where an event of ``key`` belongs while ``shown`` is on screen.

    ``"shown"``: that key; ``"fork"``: one of its forks, at any depth
    (``main::fork::1::fork::2`` under ``main``); None: another key. The one
    place that reads a key's structure for routing.
    """
    if key == shown:
        return "shown"
    if key.startswith(shown + keys.FORK_MARK):
        return "fork"
    return None


class EventBridge:
    """Runtime events → transcript, sidebar, header, fork panel and dialogs."""

    if TYPE_CHECKING:  # what the app provides
        key: str
        controller: ChatController
        transcript: Transcript
        sidebar: Sidebar
        header: AppHeader
        chat_input: ChatInput
        fork_panel: ForkPanel
        _thread_id: int
        _events: list[ev.AgentEvent]
        _drain_posted: bool
        _questions: dict[str, tuple[str, Screen[Any]]]
        _stream_chars: int

        # and App's call_from_thread, call_later, set_timer, notify, push_screen, log, plus
        # the app's forks_spawned, forks_settled (fork_actions.py), collect_when_idle,
        # _refresh_sidebar, _refresh_usage and secret_free

    # The bridge's own state: class defaults, so the mixin needs no __init__ of its own.
    #: the dispatch tables, built on the first event
    _event_handlers: _Handlers | None = None
    #: a sidebar refresh is scheduled
    _sidebar_due = False
    #: what the last sidebar refresh cost, in seconds (the next one waits five times that)
    _sidebar_cost = 0.0

    def emit(self, event: ev.AgentEvent) -> None:
        """The runtime's event sink: buffer, and schedule one drain per burst."""
        if threading.get_ident() != self._thread_id:
            self.call_from_thread(self.emit, event)
            return
        self._events.append(event)
        if not self._drain_posted:
            self._drain_posted = True
            self.call_later(self._drain)  # through the app's queue: order is kept

    async def _drain(self) -> None:
        events, self._events = self._events, []
        self._drain_posted = False
        for event in _coalesce(events):
            try:
                await self.dispatch_event(event)
            except Exception as exc:  # a display bug must not take the app down
                self.log.error(f"event {event!r} failed: {exc!r}")

    async def dispatch_event(self, event: ev.AgentEvent) -> None:
        """One event to its handlers: by its type, and by where its key stands.

        A few types are handled whichever key they come from (``any_key``: a
        tool's question, a turn's end); then the event belongs to the key on
        screen (transcript, sidebar, header), to one of its forks (the fork
        panel), or to neither (a key switched away from: dropped).
        """
        event = self._secret_free(event)
        handlers, kind = self._handlers(), type(event)
        first = handlers.any_key.get(kind)
        if first is not None:
            first(event)
        place = key_place(self.key, event.key)
        if place == "fork" or (place == "shown" and kind in handlers.fork_lifecycle):
            panel = handlers.panel.get(kind)
            if panel is not None:
                panel(event)
        elif place == "shown":
            self.transcript.post(event)  # shown in order by the transcript; never awaited here
            shown = handlers.shown.get(kind)
            if shown is not None:
                shown(event)

    def _handlers(self) -> _Handlers:
        """The dispatch tables, built once the runtime's event types exist (after boot)."""
        handlers = self._event_handlers
        if handlers is None:
            handlers = self._event_handlers = _Handlers(
                any_key={
                    ev.QuestionAsked: self._ask,
                    ev.TurnEnded: lambda e: self._drop_questions(e.key),
                },
                shown={
                    ev.TextDelta: self._on_text,
                    ev.ReasoningDelta: lambda _e: self._set_phase("thinking…"),
                    # its arguments are still streaming
                    ev.ToolCallStarted: lambda _e: self._set_phase("writing a tool call…"),
                    ev.TurnStarted: self._on_turn_started,
                    ev.LLMCallStarted: lambda _e: self._set_phase("waiting for the model…"),
                    ev.LLMCallEnded: self._on_call_ended,
                    ev.ContextUsage: self._on_usage,
                    ev.TurnEnded: self._on_turn_ended,
                    ev.ExperienceRemembered: self._on_lists_changed,
                    ev.ExperienceForgotten: self._on_lists_changed,
                    ev.ExperienceEdited: self._on_lists_changed,
                    ev.RefClosed: self._on_lists_changed,
                    ev.CompactionApplied: self._on_lists_changed,
                    # an ErrorEvent is said once, by the transcript's error block
                    ev.Notice: lambda e: self.notify(e.message, severity=e.severity, timeout=8,
                                                     topic=e.topic),
                    ev.CompactionFailed: lambda e: self.notify(
                        f"{e.reason} — /compact asks again", severity="warning", timeout=8),
                    ev.Retrying: self._on_retrying,
                    ev.Aborted: self._on_aborted,
                },
                panel={
                    ev.ForkSpawned: self._on_fork_spawned,
                    ev.ForkProgress: lambda e: self.fork_panel.fork_progress(
                        e.fork_id, e.status, e.step
                    ),
                    ev.ForkFinished: self._on_fork_finished,
                    ev.TextDelta: lambda e: self.fork_panel.child_text(e.key, e.text),
                    ev.ToolCallStarted: lambda e: self.fork_panel.child_tool(
                        e.key, e.name, "running", e.call_id
                    ),
                    ev.ToolCallEnded: lambda e: self.fork_panel.child_tool(
                        e.key, e.name, "done", e.call_id
                    ),
                    ev.ToolCallError: lambda e: self.fork_panel.child_tool(
                        e.key, e.name, "error", e.call_id
                    ),
                },
                fork_lifecycle=frozenset({ev.ForkSpawned, ev.ForkProgress, ev.ForkFinished}),
            )
        return handlers

    # ------------------------------------------------- the key on screen

    def _on_text(self, event: ev.TextDelta) -> None:
        self._stream_chars += len(event.text)
        self.sidebar.meter.stream_tokens = max(1, self._stream_chars // 4)
        self._set_phase("writing…")

    def _on_turn_started(self, event: ev.TurnStarted) -> None:
        self._stream_chars = 0
        self.sidebar.meter.streaming = True
        self.header.status = "working…"
        self.chat_input.add_class("-busy")

    def _on_call_ended(self, event: ev.LLMCallEnded) -> None:
        if event.finish_reason == "tool_calls":
            self._set_phase("running tools…")

    def _on_usage(self, event: ev.ContextUsage) -> None:
        self.sidebar.meter.show_usage(event.tokens, event.window, event.estimated)

    def _on_turn_ended(self, event: ev.TurnEnded) -> None:
        self.sidebar.meter.streaming = False
        if event.outcome == "done":
            self.header.provider_note = ""  # it answered: whatever the check saw is over
        self.header.status = TURN_ENDINGS.get(event.outcome, "ready")
        self.chat_input.remove_class("-busy")
        self.forks_settled(turn_over=True)
        self._refresh_sidebar()
        self._refresh_usage()
        self.collect_when_idle()  # the full GC pass waits for the turn's end

    def _on_retrying(self, event: ev.Retrying) -> None:
        self.header.status = event.text()

    def _on_aborted(self, event: ev.Aborted) -> None:
        self.header.status = "stopped"

    def _on_lists_changed(self, event: ev.AgentEvent) -> None:
        self._refresh_sidebar_soon()

    # ------------------------------------------------------- its forks

    def _on_fork_spawned(self, event: ev.ForkSpawned) -> None:
        self.fork_panel.fork_spawned(event.fork_id, event.child_key, event.task)
        self.forks_spawned()

    def _on_fork_finished(self, event: ev.ForkFinished) -> None:
        self.fork_panel.fork_finished(event.fork_id, event.status, event.response, event.error)
        self.forks_settled(turn_over=False)

    def _secret_free(self, event: ev.AgentEvent) -> ev.AgentEvent:
        """Errors and notices quote servers: the configured key never reaches a widget."""
        fields = QUOTING_FIELDS.get(type(event).__name__)
        if not fields:
            return event
        return replace(event, **{f: self.secret_free(getattr(event, f)) for f in fields})

    def _refresh_sidebar_soon(self) -> None:
        """Once per burst: an answer closing 1,000 refs re-read the store's lists 1,000 times.

        A refresh that took long (a list of 10,000 refs) waits five times its cost
        before the next one, so the lists never take more than a sixth of the loop.
        """
        if not self._sidebar_due:
            self._sidebar_due = True
            self.set_timer(max(SIDEBAR_EVERY_S, 5 * self._sidebar_cost), self._refresh_sidebar_due)

    def _refresh_sidebar_due(self) -> None:
        from textual.css.query import NoMatches

        self._sidebar_due = False
        started = time.perf_counter()
        try:
            self._refresh_sidebar()
        except NoMatches:  # the app is closing: its sidebar is gone
            return
        self._sidebar_cost = time.perf_counter() - started

    def _set_phase(self, status: str) -> None:
        """The header says what the turn is doing now (a reactive: the same value costs nothing)."""
        self.header.status = status

    def _ask(self, event: ev.QuestionAsked) -> None:
        asker = "" if event.key == self.key else event.key
        screen = question_screen(event.prompt, event.choices, asker)
        self._questions[event.question_id] = (event.key, screen)
        # the turn on screen (or a fork it waits for) waits for the person: not the
        # model's time, so the sidebar's speed line leaves it out
        meter = self.sidebar.meter if key_place(self.key, event.key) is not None else None
        if meter is not None:
            meter.hold()

        def answered(choice: str | None) -> None:
            self._questions.pop(event.question_id, None)
            if meter is not None:
                meter.release()
            if choice is not None:
                self.controller.answer(event.question_id, choice)

        self.push_screen(screen, answered)

    def _drop_questions(self, key: str) -> None:
        """The turn that asked is over (Esc, say): its tool no longer waits."""
        for question_id, (asker, screen) in list(self._questions.items()):
            if key_place(key, asker) is not None:
                self._questions.pop(question_id, None)
                if screen.is_current:
                    screen.dismiss(None)


def question_screen(prompt: str, choices: tuple[str, ...], asker: str = "") -> Screen[str]:
    """The dialog for a tool's question: an MCP approval, a memory write, a summary to
    review, or any other question (its prompt and choices as they are)."""
    from selfref_tui.agent.mcp.approval import is_approval, parse_approval
    from selfref_tui.agent.tools.consent import is_consent, parse_consent
    from selfref_tui.agent.tools.review import is_review, parse_review

    approval = parse_approval(prompt) if is_approval(choices) else None
    if approval is not None:
        from selfref_tui.ui.screens.approval import ApprovalScreen

        return ApprovalScreen(approval, asker=asker)
    consent = parse_consent(prompt) if is_consent(choices) else None
    if consent is not None:
        from selfref_tui.ui.screens.memory_consent import MemoryConsentScreen

        return MemoryConsentScreen(consent, asker=asker)
    summary = parse_review(prompt) if is_review(choices) else None
    if summary is not None:
        from selfref_tui.ui.screens.compaction_review import CompactionReviewScreen

        return CompactionReviewScreen(summary, asker=asker)
    from selfref_tui.ui.screens.question import QuestionScreen

    return QuestionScreen(prompt, choices, asker=asker)


def _coalesce(events: list[ev.AgentEvent]) -> list[ev.AgentEvent]:
    """Join runs of text (or one call's argument) deltas: one widget write per burst.

    Each run is joined once: adding every delta to the run so far copied the
    run again each time, quadratic in a burst of a 1 MB answer.
    """
    fields = _delta_fields()
    out: list[ev.AgentEvent] = []
    run: list[str] = []

    def close() -> None:
        if len(run) > 1:
            out[-1] = replace(out[-1], **{fields[type(out[-1])]: "".join(run)})
        run.clear()

    for event in events:
        field = fields.get(type(event))
        last = out[-1] if out else None
        if (
            field is not None
            and type(last) is type(event)
            and last.key == event.key  # type: ignore[union-attr]
            and getattr(last, "call_id", None) == getattr(event, "call_id", None)
        ):
            run.append(getattr(event, field))
            continue
        close()
        out.append(event)
        if field is not None:
            run.append(getattr(event, field))
    close()
    return out


@functools.cache
def _delta_fields() -> dict[type, str]:
    """The delta events that may be joined, and the field holding their text."""
    return {ev.TextDelta: "text", ev.ToolCallArgumentsDelta: "delta"}
