"""Typed events the runtime emits for front ends.

The runtime never imports a UI. It calls one ``emit(event)`` callback with
these frozen values; the Textual app turns them into messages, the command
line prints the text deltas. Every event names the memory ``key`` it belongs
to, so a fork's events (key ``main::fork::1``) travel on the same stream as
its parent's and a front end can route them.

See docs/events.md for when each one is sent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class AgentEvent:
    key: str


@dataclass(frozen=True, slots=True)
class TurnStarted(AgentEvent):
    turn_id: int
    user_text: str


@dataclass(frozen=True, slots=True)
class TurnEnded(AgentEvent):
    turn_id: int
    #: "done", "aborted", "error", "step_limit", "cut_off" (output limit),
    #: "filtered" (the provider's filter) or "empty" (no text, no tool calls)
    outcome: str


@dataclass(frozen=True, slots=True)
class MessageFailed(AgentEvent):
    """The turn failed before any answer: the person's last message is marked failed.

    It stays in the transcript, is left out of later requests, and can be sent
    again with ``AgentInputRouter.retry()`` (``/retry`` in the app).
    """

    reason: str


@dataclass(frozen=True, slots=True)
class MessageRetried(AgentEvent):
    """A retry cleared the failed mark: the message is sent again, not typed twice."""


@dataclass(frozen=True, slots=True)
class LLMCallStarted(AgentEvent):
    step: int
    model: str


@dataclass(frozen=True, slots=True)
class LLMCallEnded(AgentEvent):
    step: int
    duration_s: float
    usage: dict[str, int] | None = None
    finish_reason: str | None = None


@dataclass(frozen=True, slots=True)
class TextDelta(AgentEvent):
    text: str


@dataclass(frozen=True, slots=True)
class ReasoningDelta(AgentEvent):
    text: str


@dataclass(frozen=True, slots=True)
class RefOpened(AgentEvent):
    ref_id: str


@dataclass(frozen=True, slots=True)
class RefClosed(AgentEvent):
    ref_id: str
    content: str


@dataclass(frozen=True, slots=True)
class ToolCallStarted(AgentEvent):
    call_id: str
    name: str


@dataclass(frozen=True, slots=True)
class ToolCallArgumentsDelta(AgentEvent):
    call_id: str
    delta: str


@dataclass(frozen=True, slots=True)
class ToolCallEnded(AgentEvent):
    call_id: str
    name: str
    arguments: str
    result: str
    duration_s: float
    #: the result's images as ``data:`` URLs (they reach the model in a user message)
    images: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ToolCallError(AgentEvent):
    call_id: str
    name: str
    arguments: str
    error: str
    duration_s: float = 0.0


@dataclass(frozen=True, slots=True)
class ExperienceRemembered(AgentEvent):
    experience_id: str
    text: str


@dataclass(frozen=True, slots=True)
class ExperienceForgotten(AgentEvent):
    experience_id: str


@dataclass(frozen=True, slots=True)
class ExperienceEdited(AgentEvent):
    """The person corrected an experience's text (its id and provenance stay)."""

    experience_id: str
    text: str


@dataclass(frozen=True, slots=True)
class CompactionApplied(AgentEvent):
    summary: dict[str, Any]
    messages_before: int


@dataclass(frozen=True, slots=True)
class CompactionFailed(AgentEvent):
    """A compaction the runtime asked for (or the model tried) did not happen: the model
    answered without calling ``compact``, or its call was invalid. Said once; the runtime
    does not ask again in that turn."""

    #: what happened, one line (front ends add how to ask again: /compact, `compact`)
    reason: str
    #: which note asked: "requested" (/compact), "auto", "overflow", or "model" (unasked)
    asked: str = ""


@dataclass(frozen=True, slots=True)
class ForkSpawned(AgentEvent):
    fork_id: str
    child_key: str
    task: str


@dataclass(frozen=True, slots=True)
class ForkProgress(AgentEvent):
    fork_id: str
    child_key: str
    #: "queued", "running", "tool", ...
    status: str
    step: int = 0


@dataclass(frozen=True, slots=True)
class ForkFinished(AgentEvent):
    fork_id: str
    child_key: str
    #: "completed", "error" or "cancelled"
    status: str
    response: str = ""
    error: str | None = None


@dataclass(frozen=True, slots=True)
class QueuedMessageDelivered(AgentEvent):
    text: str


@dataclass(frozen=True, slots=True)
class Aborted(AgentEvent):
    reason: str
    #: "stream", "tools", "forks" or "idle"
    stage: str


@dataclass(frozen=True, slots=True)
class Retrying(AgentEvent):
    """A failed attempt will be retried after ``delay_s``.

    ``reason`` is short ("rate limited (429)"); ``of`` is how many retries
    there may be in all (0 when unknown). :meth:`text` is the line people read.
    """

    attempt: int
    delay_s: float
    reason: str
    of: int = 0

    def text(self) -> str:
        """E.g. "retry 1 of 3 in 1.5 s: rate limited (429)"."""
        of = f" of {self.of}" if self.of else ""
        return f"retry {self.attempt}{of} in {self.delay_s:.1f} s: {self.reason}"


@dataclass(frozen=True, slots=True)
class ErrorEvent(AgentEvent):
    message: str
    #: "auth", "model", "rate_limit", "server", "connection", "timeout", "protocol",
    #: "bad_request", "context_overflow" (the request does not fit the window), "internal"
    kind: str = "internal"
    #: the server's own error text in full (``message`` is one line); "" when none
    detail: str = ""


@dataclass(frozen=True, slots=True)
class ContextUsage(AgentEvent):
    """How full the window is: everything the next request carries (messages and tools)."""

    tokens: int
    window: int
    #: our own count, not yet calibrated by a server's usage report: show it as "~N"
    estimated: bool = True


@dataclass(frozen=True, slots=True)
class QuestionAsked(AgentEvent):
    """A tool needs the person to choose (an overwrite confirmation, say)."""

    question_id: str
    prompt: str
    choices: tuple[str, ...] = field(default=())


@dataclass(frozen=True, slots=True)
class MessageStored(AgentEvent):
    """A message of the conversation was stored and got its number (``history``'s "N").

    A front end ties what it shows live to the stored message with it, so the
    person can act on it by number (rewind to here, edit, branch). ``text`` is
    a person's message's text; ``call_ids`` an answer's tool calls.
    """

    n: int
    role: str
    text: str = ""
    call_ids: tuple[str, ...] = ()
    #: a message the person wrote (not a tool's image result)
    person: bool = False


@dataclass(frozen=True, slots=True)
class Notice(AgentEvent):
    """Something the person should know that is not an error of the turn.

    For example: the window was not found and 8k is assumed; a server refused
    ``stream_options`` and usage reporting is off for it; damaged records were
    skipped on load. Front ends show it as a notification (inert text).
    """

    message: str
    #: "information", "warning" or "error" (Textual's notification severities)
    severity: str = "information"
    #: notices of one topic tell of one state: a newer one supersedes an older one a
    #: front end still holds back (behind a dialog), and one with an empty ``message``
    #: says that state is over (its older notice is dropped, nothing is shown)
    topic: str = ""


#: finish_reason of an answer the server ended early -> the marker stored with it and
#: shown on it (the answer is kept as ``truncated`` with this ``abort_reason``)
ENDING_MARKERS: dict[str, str] = {
    "length": "cut off: output limit",
    "content_filter": "stopped by the provider's filter",
}

EventSink = Callable[[AgentEvent], None]


def discard(_event: AgentEvent) -> None:
    """An event sink for callers that do not listen."""
