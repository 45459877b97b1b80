"""The compaction summary: the structured record and the message the model reads.

A compaction replaces the working transcript with one message, so that message
must let the model pick the work up cold. It is a *user* message because
strict chat templates of local servers reject anything but a user turn right
after the system prompt. The structured fields travel with it under
``compaction`` so the store, the app and ``inspect`` never parse the text back.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from .mutations import ContextSummaryMutation

COMPACTION_KEY = "compaction"
SUMMARY_HEADER = (
    "[Context summary] The earlier conversation was compacted to save context. "
    "Continue the work from this summary; durable experiences are in the system prompt."
)
EMPTY = "(none)"


@dataclass(frozen=True)
class Summary:
    """What a compaction keeps of the working transcript."""

    goal: str
    instruction: str
    discoveries: list[str]
    completed: list[str]
    current_status: str
    likely_next_work: str
    relevant_files_directories: list[str]
    remember: list[str] = field(default_factory=list)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Summary:
        """Rebuild from a stored ``compaction`` dict, tolerating missing or odd fields."""
        data = data if isinstance(data, dict) else {}
        values: dict[str, Any] = {}
        for f in fields(cls):
            raw = data.get(f.name)
            if f.name in _LIST_FIELDS:
                values[f.name] = _as_list(raw)
            else:
                values[f.name] = "" if raw is None else str(raw)
        return cls(**values)


_LIST_FIELDS = {"discoveries", "completed", "relevant_files_directories", "remember"}

# (title, field) in reading order: what we were doing, then what we know, then what is next.
SECTIONS: tuple[tuple[str, str], ...] = (
    ("Goal", "goal"),
    ("Instruction", "instruction"),
    ("Discoveries", "discoveries"),
    ("Completed", "completed"),
    ("Current status", "current_status"),
    ("Likely next work", "likely_next_work"),
    ("Relevant files/directories", "relevant_files_directories"),
)


def render_summary(summary: Summary) -> str:
    """The summary as Markdown sections, every section present (empty ones say so)."""
    parts = [SUMMARY_HEADER]
    for title, name in SECTIONS:
        value = getattr(summary, name)
        if isinstance(value, list):
            items = [" ".join(str(v).split()) for v in value if str(v).strip()]
            body = "\n".join(f"- {item}" for item in items) if items else EMPTY
        else:
            body = str(value).strip() or EMPTY
        parts.append(f"## {title}\n{body}")
    return "\n\n".join(parts)


def summary_message(summary: Summary) -> dict[str, Any]:
    """The user-role message that stands in for the compacted transcript."""
    return {"role": "user", "content": render_summary(summary), COMPACTION_KEY: asdict(summary)}


def summary_mutation(summary: Summary) -> ContextSummaryMutation:
    """The patch that applies a compaction; ``remember`` items become experiences."""
    remember = [{"text": text.strip()} for text in summary.remember if text.strip()]
    return ContextSummaryMutation(summary_message=summary_message(summary), remember=remember)


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list | tuple):
        return [str(v) for v in value if str(v).strip()]
    return [str(value)]
