"""The bridge from runtime events to widgets, mixed into the app.

Runtime events arrive through :meth:`EventBridge.emit` on the app's own loop
(or from another thread, which hands them over). They are buffered and
drained by one callback in the app's message queue, so a burst of text
deltas becomes one write per widget instead of one message per token, and
their order is kept. Each event is routed by its ``key``: the shown key goes
to the transcript, sidebar and header; a fork's child key goes to the fork
panel; a tool's question, whichever key asks, becomes a dialog.

A mixin rather than an object of its own: every branch touches the app's
widgets and state, and passing the app around would only rename ``self``.
"""

from __future__ import annotations

import functools
import threading
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from selfref_tui.ui.lazy_import import LazyModule

if TYPE_CHECKING:
    from textual.screen import Screen

    from selfref_tui.agent import events as ev
    from selfref_tui.agent.router import AgentInputRouter
    from selfref_tui.ui.widgets.app_header import AppHeader
    from selfref_tui.ui.widgets.chat_input import ChatInput
    from selfref_tui.ui.widgets.fork_panel import ForkPanel
    from selfref_tui.ui.widgets.sidebar import Sidebar
    from selfref_tui.ui.widgets.transcript import Transcript
else:  # events exist once the runtime does, after the first frame
    ev = LazyModule("selfref_tui.agent.events")


#: the most often ref and experience events refresh the sidebar's lists (each refresh
#: lays the screen out again: at 0.1 s a 2,000 tok/s answer with refs spent 14 % of the
#: loop there; the lists are refreshed at once when the turn ends)
SIDEBAR_EVERY_S = 0.5


class EventBridge:
    """Runtime events → transcript, sidebar, header, fork panel and dialogs."""

    if TYPE_CHECKING:  # what the app provides
        key: str
        router: AgentInputRouter | None
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
        # the app's show_forks, collect_when_idle, _refresh_sidebar, _refresh_usage and
        # secret_free

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
        event = self._secret_free(event)
        key = event.key
        if isinstance(event, ev.QuestionAsked):
            self._ask(event)  # whichever key asks: its tool waits for the answer
            return
        if isinstance(event, ev.TurnEnded):
            self._drop_questions(key)
        if key != self.key:
            if key.startswith(self.key + "::"):
                self._to_fork_panel(event)
            return
        if isinstance(event, (ev.ForkSpawned, ev.ForkProgress, ev.ForkFinished)):
            self._to_fork_panel(event)
            return
        self.transcript.post(event)  # shown in order by the transcript; never awaited here
        meter = self.sidebar.meter
        if isinstance(event, ev.TextDelta):
            self._stream_chars += len(event.text)
            meter.stream_tokens = max(1, self._stream_chars // 4)
            self._set_phase("writing…")
        elif isinstance(event, ev.ReasoningDelta):
            self._set_phase("thinking…")
        elif isinstance(event, ev.ToolCallStarted):
            self._set_phase("writing a tool call…")  # its arguments are still streaming
        elif isinstance(event, ev.TurnStarted):
            self._stream_chars = 0
            meter.streaming = True
            self.header.status = "working…"
            self.chat_input.add_class("-busy")
        elif isinstance(event, ev.LLMCallStarted):
            self._set_phase("waiting for the model…")
        elif isinstance(event, ev.LLMCallEnded) and event.finish_reason == "tool_calls":
            self._set_phase("running tools…")
        elif isinstance(event, ev.ContextUsage):
            meter.tokens, meter.window = event.tokens, event.window
            meter.estimated = event.estimated
        elif isinstance(event, ev.TurnEnded):
            meter.streaming = False
            if event.outcome == "done":
                self.header.provider_note = ""  # it answered: whatever the check saw is over
            self.header.status = (
                {
                    "done": "ready",
                    "aborted": "stopped",
                    "error": "error",
                    "step_limit": "step limit reached",
                    "cut_off": "answer cut off (output limit)",
                    "filtered": "stopped by the provider's filter",
                    "empty": "empty answer",
                }.get(event.outcome, "ready")
            )
            self.chat_input.remove_class("-busy")
            self._refresh_sidebar()
            self._refresh_usage()
            self.collect_when_idle()  # the full GC pass waits for the turn's end
        elif isinstance(
            event,
            (ev.ExperienceRemembered, ev.ExperienceForgotten, ev.RefClosed, ev.CompactionApplied),
        ):
            self._refresh_sidebar_soon()
        elif isinstance(event, ev.ErrorEvent):
            self.notify(event.message, severity="error", timeout=8)
        elif isinstance(event, ev.Notice):
            self.notify(event.message, severity=event.severity, timeout=8)  # type: ignore[arg-type]
        elif isinstance(event, ev.Retrying):
            self.header.status = event.text()
        elif isinstance(event, ev.Aborted):
            self.header.status = "stopped"

    def _secret_free(self, event: ev.AgentEvent) -> ev.AgentEvent:
        """Errors and notices quote servers: the configured key never reaches a widget."""
        if isinstance(event, ev.ErrorEvent):
            return replace(
                event,
                message=self.secret_free(event.message),
                detail=self.secret_free(event.detail),
            )
        if isinstance(event, ev.Notice):
            return replace(event, message=self.secret_free(event.message))
        if isinstance(event, ev.Retrying):
            return replace(event, reason=self.secret_free(event.reason))
        return event

    def _refresh_sidebar_soon(self) -> None:
        """Once per burst: an answer closing 1,000 refs re-read the store's lists 1,000 times.

        A refresh that took long (a list of 10,000 refs) waits five times its cost
        before the next one, so the lists never take more than a sixth of the loop.
        """
        if not self.__dict__.get("_sidebar_due"):
            self.__dict__["_sidebar_due"] = True
            cost = self.__dict__.get("_sidebar_cost", 0.0)
            self.set_timer(max(SIDEBAR_EVERY_S, 5 * cost), self._refresh_sidebar_due)

    def _refresh_sidebar_due(self) -> None:
        from textual.css.query import NoMatches

        self.__dict__["_sidebar_due"] = False
        started = time.perf_counter()
        try:
            self._refresh_sidebar()
        except NoMatches:  # the app is closing: its sidebar is gone
            return
        self.__dict__["_sidebar_cost"] = time.perf_counter() - started

    def _set_phase(self, status: str) -> None:
        """The header says what the turn is doing now (a reactive: the same value costs nothing)."""
        self.header.status = status

    def _ask(self, event: ev.QuestionAsked) -> None:
        from selfref_tui.agent.mcp.approval import is_approval, parse_approval

        asker = "" if event.key == self.key else event.key
        approval = parse_approval(event.prompt) if is_approval(event.choices) else None
        screen: Screen[str]
        if approval is not None:
            from selfref_tui.ui.screens.approval import ApprovalScreen

            screen = ApprovalScreen(approval, asker=asker)
        else:
            from selfref_tui.ui.screens.question import QuestionScreen

            screen = QuestionScreen(event.prompt, event.choices, asker=asker)
        self._questions[event.question_id] = (event.key, screen)

        def answered(choice: str | None) -> None:
            self._questions.pop(event.question_id, None)
            if choice is not None and self.router is not None:
                self.router.answer(event.question_id, choice)

        self.push_screen(screen, answered)

    def _drop_questions(self, key: str) -> None:
        """The turn that asked is over (Esc, say): its tool no longer waits."""
        for question_id, (asker, screen) in list(self._questions.items()):
            if asker == key or asker.startswith(key + "::"):
                self._questions.pop(question_id, None)
                if screen.is_current:
                    screen.dismiss(None)

    def _to_fork_panel(self, event: ev.AgentEvent) -> None:
        panel = self.fork_panel
        if isinstance(event, ev.ForkSpawned):
            panel.fork_spawned(event.fork_id, event.child_key, event.task)
            self.show_forks(True)
        elif isinstance(event, ev.ForkProgress):
            panel.fork_progress(event.fork_id, event.status, event.step)
        elif isinstance(event, ev.ForkFinished):
            panel.fork_finished(event.fork_id, event.status, event.response, event.error)
        elif isinstance(event, ev.TextDelta):
            panel.child_text(event.key, event.text)
        elif isinstance(event, ev.ToolCallStarted):
            panel.child_tool(event.key, event.name, "running")
        elif isinstance(event, ev.ToolCallEnded):
            panel.child_tool(event.key, event.name, "done")
        elif isinstance(event, ev.ToolCallError):
            panel.child_tool(event.key, event.name, "error")


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
