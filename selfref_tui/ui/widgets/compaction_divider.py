"""Where the conversation was compacted; the summary opens on demand.

Everything above it stays readable but dimmed: the model no longer sees it,
only the summary.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from textual.widgets import Collapsible, Static

from selfref_tui.safety import content

_SECTIONS = (
    ("goal", "Goal"),
    ("instruction", "Instruction"),
    ("current_status", "Current status"),
    ("likely_next_work", "Likely next work"),
    ("discoveries", "Discoveries"),
    ("completed", "Completed"),
    ("relevant_files_directories", "Relevant files"),
    ("remember", "Remembered"),
)


def summary_text(summary: Mapping[str, Any]) -> str:
    lines: list[str] = []
    for key, title in _SECTIONS:
        value = summary.get(key)
        if not value:
            continue
        if isinstance(value, (list, tuple)):
            lines.append(f"{title}:")
            lines.extend(f"  • {item}" for item in value)
        else:
            lines.append(f"{title}: {value}")
    return "\n".join(lines) or "(empty summary)"


class CompactionDivider(Collapsible):
    DEFAULT_CSS = """
    CompactionDivider {
        height: auto;
        margin: 1 0;
        padding: 0;
        border: none;
        border-top: dashed $accent 50%;
        border-bottom: dashed $accent 50%;
        background: transparent;
    }
    CompactionDivider > CollapsibleTitle { color: $accent; }
    CompactionDivider > Contents { padding: 0 1 0 2; }
    """

    def __init__(self, summary: Mapping[str, Any], messages_before: int = 0) -> None:
        self.summary = dict(summary)
        self.messages_before = messages_before
        title = "Compacted"
        if messages_before:
            title += f" {messages_before} messages"
        title += " · above is archived, the model now sees this summary"
        super().__init__(
            Static(content(summary_text(self.summary))), title=title, collapsed=True
        )
