"""A compaction's summary as a person reads it: the transcript's divider and the export.

The stored summary (a marker's ``summary``, the ``compaction`` dict of the
summary message) is structured; the model read it rendered by
:mod:`.summary`. A person reads it as short lines, section by section, then
which of their messages it carried word for word. One text for every place a
person reads it (the divider opened, its copy, find, ``export``, ``/save``).

Kept apart from :mod:`.summary` so the app's import of it stays light.
"""

from __future__ import annotations

from typing import Any

_SECTIONS = (
    ("goal", "Goal"),
    ("instruction", "Instruction"),
    ("current_status", "Current status"),
    ("likely_next_work", "Likely next work"),
    ("discoveries", "Discoveries"),
    ("completed", "Completed"),
    ("relevant_files_directories", "Relevant files"),
    ("errors_and_fixes", "Errors and fixes"),
    ("constraints_and_preferences", "Constraints and preferences"),
    ("pending_tasks", "Pending tasks"),
    ("remember", "Remembered"),
)


def summary_text(summary: dict[str, Any]) -> str:
    """A compaction summary as readable lines, then what it kept of your words."""
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
    lines += kept_lines(summary.get("verbatim"))
    return "\n".join(lines) or "(empty summary)"


def kept_lines(verbatim: Any) -> list[str]:
    """What the summary carries word for word (``compaction["verbatim"]``), by number."""
    from .summary import number_ranges  # here: the app's import stays light

    if not isinstance(verbatim, dict):
        return []

    def numbers(name: str) -> list[int]:
        value = verbatim.get(name)
        return sorted(n for n in value if isinstance(n, int)) if isinstance(value, list) else []

    kept = sorted(set(numbers("person")) | set(numbers("exchange")) | set(numbers("pinned")))
    lines = [f"Kept word for word: {number_ranges(kept)}"] if kept else []
    if numbers("left_out"):
        lines.append(f"Left out (the model can read them back): "
                     f"{number_ranges(numbers('left_out'))}")
    return lines
