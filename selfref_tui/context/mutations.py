"""Typed transcript patches.

Nothing in selfref-tui edits a live message list. Every runtime fact — an
answer, a tool result, a remembered experience, a compaction, an abort — is
recorded as one of these values and applied at a compile boundary by
:func:`selfref_tui.context.apply.apply_mutations`. The persisted log of these
patches *is* the history of a memory key; the transcript is their fold.

The classes carry exactly the fields the patch protocol names, so a patch read
back from disk means the same thing it meant when it was written.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, Union


@dataclass(frozen=True, slots=True)
class AssistantMessageMutation:
    """The model answered (text, tool calls, or both)."""

    content: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    reasoning_details: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ToolResultMutation:
    """A tool finished with a text result, linked to its call.

    ``duration_s``: how long it ran, kept so a reloaded transcript shows the time it
    showed live (metadata on the tool message; the renderer strips it).
    ``error``: whether the call failed (``content`` is then "Error: …", what the
    model reads). The runtime always says; ``None`` is a record from before the
    flag, read by its prefix (:mod:`~selfref_tui.context.tool_errors`).
    """

    tool_call_id: str
    content: str
    duration_s: float | None = None
    error: bool | None = None


@dataclass(frozen=True, slots=True)
class MultimodalToolResultMutation:
    """A tool returned images or mixed content.

    Providers accept images only in user messages, so applying this takes the
    call out of the assistant message and re-expresses it as a short assistant
    note followed by ``user_messages``.
    """

    tool_call_id: str
    tool_name: str
    arguments: str
    user_messages: list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class UserMessageMutation:
    """A person's message, including one typed while a turn was running."""

    message: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ContextReplaceMutation:
    """Hard reset: the transcript becomes ``messages``."""

    messages: list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class ContextSummaryMutation:
    """Compaction: keep the system message, replace the working transcript."""

    summary_message: dict[str, Any]
    remember: list[dict[str, str]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ExperienceRememberMutation:
    """Add a durable experience to the system message.

    Where it came from travels with it, so the person can tell a fact they
    stated from one the model inferred: ``source`` ("agent", "person",
    "compaction"), ``from_message`` (the number of the message it came from, 0
    when none) and ``created`` (ISO-8601 UTC). Logs from before provenance
    load with these empty.
    """

    text: str
    source: str = ""
    from_message: int = 0
    created: str = ""


@dataclass(frozen=True, slots=True)
class ExperienceEditMutation:
    """The person corrected an experience's text; its id and provenance stay."""

    experience_id: str
    text: str
    edited: str = ""


@dataclass(frozen=True, slots=True)
class ExperienceForgetMutation:
    """Remove a durable experience by id."""

    experience_id: str


@dataclass(frozen=True, slots=True)
class AssistantTruncatedMutation:
    """A streamed answer was cut off; keep what arrived."""

    partial_content: str
    abort_reason: str = ""


@dataclass(frozen=True, slots=True)
class ToolCancelledMutation:
    """A tool call was cancelled before it produced a result."""

    tool_call_id: str
    tool_name: str
    abort_reason: str = ""


@dataclass(frozen=True, slots=True)
class TurnFailedMutation:
    """The turn failed before any answer: its trailing user messages are marked failed.

    Marked messages stay in the store and the transcript but are left out of
    requests, so a message sent next does not follow them as a run of user
    messages. A retry applies this with ``reason`` "" to clear the marks, so
    the same messages are sent again instead of being typed twice.
    """

    reason: str = ""


@dataclass(frozen=True, slots=True)
class RewindMutation:
    """The person took the conversation back: the state becomes what it was before a patch.

    ``to_patch`` is the 0-based position, among the key's patches, of the first
    patch undone: folding this restores the working transcript, experiences,
    refs and summary exactly as they were before that patch was applied. The
    patches in between stay in the log (the person still reads their messages,
    marked rewound); a later rewind may name a patch among them, or this one
    (which undoes the rewind). ``first_message`` is the first message number it took
    out of the context, for people reading the log; the fold does not need it.
    """

    to_patch: int
    first_message: int = 0


ContextMutation = Union[  # noqa: UP007 - the protocol names this a Union
    AssistantMessageMutation,
    ToolResultMutation,
    MultimodalToolResultMutation,
    UserMessageMutation,
    ContextReplaceMutation,
    ContextSummaryMutation,
    ExperienceRememberMutation,
    ExperienceForgetMutation,
    ExperienceEditMutation,
    AssistantTruncatedMutation,
    ToolCancelledMutation,
    TurnFailedMutation,
    RewindMutation,
]

MUTATION_TYPES: dict[str, type] = {
    cls.__name__: cls
    for cls in (
        AssistantMessageMutation,
        ToolResultMutation,
        MultimodalToolResultMutation,
        UserMessageMutation,
        ContextReplaceMutation,
        ContextSummaryMutation,
        ExperienceRememberMutation,
        ExperienceForgetMutation,
        ExperienceEditMutation,
        AssistantTruncatedMutation,
        ToolCancelledMutation,
        TurnFailedMutation,
        RewindMutation,
    )
}

EXPERIENCE_MUTATIONS = (
    ExperienceRememberMutation, ExperienceForgetMutation, ExperienceEditMutation)


class MutationDecodeError(ValueError):
    """A stored patch does not have the shape of any known mutation."""


def mutation_to_dict(mutation: ContextMutation) -> dict[str, Any]:
    """Serialise a patch for the store: its fields plus a ``type`` tag."""
    data = asdict(mutation)
    data["type"] = type(mutation).__name__
    return data


def mutation_from_dict(data: dict[str, Any]) -> ContextMutation:
    """Rebuild a patch from :func:`mutation_to_dict` output, checking field types.

    Wrong shapes raise :class:`MutationDecodeError` so a corrupt log fails loudly
    instead of folding into a transcript the provider will reject later.
    """
    if not isinstance(data, dict):
        raise MutationDecodeError(f"expected an object, got {type(data).__name__}")
    name = data.get("type")
    cls = MUTATION_TYPES.get(name) if isinstance(name, str) else None
    if cls is None:
        raise MutationDecodeError(f"unknown mutation type {name!r}")
    kwargs: dict[str, Any] = {}
    for f in fields(cls):
        if f.name not in data:
            continue
        value = data[f.name]
        _check_field(cls.__name__, f.name, value)
        kwargs[f.name] = value
    try:
        return cls(**kwargs)
    except TypeError as exc:  # a required field is missing
        raise MutationDecodeError(f"{cls.__name__}: {exc}") from None


_STR_FIELDS = {
    "tool_call_id", "text", "experience_id", "partial_content", "abort_reason",
    "tool_name", "arguments", "reason", "source", "created", "edited",
}
_LIST_FIELDS = {"tool_calls", "reasoning_details", "user_messages", "messages", "remember"}
_DICT_FIELDS = {"message", "summary_message"}
_INT_FIELDS = {"to_patch", "first_message", "from_message"}


def _check_field(cls_name: str, name: str, value: Any) -> None:
    ok = True
    if name in _STR_FIELDS:
        ok = isinstance(value, str)
    elif name in _LIST_FIELDS:
        ok = isinstance(value, list) and all(isinstance(v, dict) for v in value)
    elif name in _DICT_FIELDS:
        ok = isinstance(value, dict)
    elif name in _INT_FIELDS:
        ok = _count(value)
    elif name == "content":
        ok = value is None or isinstance(value, str)
    elif name == "duration_s":
        ok = value is None or (type(value) in (int, float) and value >= 0)
    elif name == "error":
        ok = value is None or type(value) is bool
    if not ok:
        raise MutationDecodeError(f"{cls_name}.{name} has the wrong type ({type(value).__name__})")


def _count(value: Any) -> bool:
    """A whole number from 0 (``True`` is not one, though Python says it is an int)."""
    return type(value) is int and value >= 0
