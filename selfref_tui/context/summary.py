"""The compaction summary: the structured record and the message the model reads.

A compaction replaces the working transcript with one message, so that message
must let the model pick the work up cold. It is a *user* message because
strict chat templates of local servers reject anything but a user turn right
after the system prompt. The structured fields travel with it under
``compaction`` so the store, the app and ``inspect`` never parse the text back.

The message has two authors. The model writes the sections (the seed's seven,
then errors and fixes, constraints and preferences, pending tasks). The runtime
adds what it keeps verbatim from the stored messages (:mod:`.kept_words`): the
person's own messages, the last exchange, pinned messages, and how to reach
the rest of the conversation, which stays stored and searchable.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from .kept_words import KeptWords, tagged
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
    errors_and_fixes: list[str] = field(default_factory=list)
    constraints_and_preferences: list[str] = field(default_factory=list)
    pending_tasks: list[str] = field(default_factory=list)
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


_LIST_FIELDS = {
    "discoveries", "completed", "relevant_files_directories", "errors_and_fixes",
    "constraints_and_preferences", "pending_tasks", "remember",
}

# (title, field) in reading order: what we were doing, then what we know, then what is next.
# The seed's seven come first, in the seed's order; the three after them are what
# compactions elsewhere were found to lose (a fix re-broken, a preference forgotten,
# a task dropped).
SECTIONS: tuple[tuple[str, str], ...] = (
    ("Goal", "goal"),
    ("Instruction", "instruction"),
    ("Discoveries", "discoveries"),
    ("Completed", "completed"),
    ("Current status", "current_status"),
    ("Likely next work", "likely_next_work"),
    ("Relevant files/directories", "relevant_files_directories"),
    ("Errors and fixes", "errors_and_fixes"),
    ("Constraints and preferences", "constraints_and_preferences"),
    ("Pending tasks", "pending_tasks"),
)
#: the seed's seven fields, in its order: the ones a ``compact`` call must give
SEED_FIELDS: tuple[str, ...] = tuple(name for _title, name in SECTIONS[:7])
#: the key under ``compaction`` that records, by number, what was kept verbatim
VERBATIM_KEY = "verbatim"
PERSON_TITLE = "## The person's messages since the previous compaction (verbatim, newest first)"
EXCHANGE_TITLE = "## Last exchange (verbatim)"
PINNED_TITLE = "## Pinned messages (verbatim)"
HISTORY_TITLE = "## Earlier conversation (searchable)"


def sections(summary: Summary, titles: tuple[tuple[str, str], ...]) -> list[str]:
    """``## Title`` blocks of ``summary``'s fields (lists as ``- `` items, empty ones as
    (none)); the summary message and the text a person reviews are both made of them."""
    blocks = []
    for title, name in titles:
        value = getattr(summary, name)
        if isinstance(value, list):
            items = [" ".join(str(v).split()) for v in value if str(v).strip()]
            body = "\n".join(f"- {item}" for item in items) if items else EMPTY
        else:
            body = str(value).strip() or EMPTY
        blocks.append(f"## {title}\n{body}")
    return blocks


def render_summary(summary: Summary, kept: KeptWords | None = None) -> str:
    """The summary as Markdown sections, every section present (empty ones say so),
    then what the runtime kept verbatim (``kept``), when given."""
    parts = [SUMMARY_HEADER, *sections(summary, SECTIONS)]
    if kept is not None:
        parts += render_kept(kept)
    return "\n\n".join(parts)


def render_kept(kept: KeptWords) -> list[str]:
    """The verbatim sections: pinned, the person's messages, the last exchange, the way back."""
    parts: list[str] = []
    if kept.pinned:
        parts.append(PINNED_TITLE + "\n" + "\n".join(tagged(s) for s in kept.pinned))
    exchange_person = [s.n for s in kept.exchange if s.role == "user"]
    lines = [tagged(s) for s in kept.person]
    if exchange_person:
        lines.insert(0, f"(The latest, message {exchange_person[0]}, is in the last exchange "
                        "below.)")
    if kept.left_out:
        lines.append(f"Left out to keep this summary short: {number_ranges(kept.left_out)} "
                     "(read_history returns them).")
    if not lines:
        lines.append(EMPTY)
    parts.append(PERSON_TITLE + "\n" + "\n".join(lines))
    if kept.exchange:
        parts.append(EXCHANGE_TITLE + "\n" + "\n".join(tagged(s) for s in kept.exchange))
    span = f"messages 1–{kept.last}" if kept.last > 1 else "every message"
    parts.append(
        f"{HISTORY_TITLE}\nNothing was deleted: {span} of this conversation are stored, "
        "compacted ones included, and you can get them back. "
        'search_history(query) finds messages by words or a "quoted phrase" and returns '
        "their numbers, roles, times and a snippet; read_history(start, count) returns "
        "messages verbatim by number. Use them before guessing at anything the summary "
        "does not say. Ref blocks in stored messages, here and in those tools' results, "
        'read <quoted_ref id="ID">…</quoted_ref>: quotations that define nothing; ref:ID '
        "keeps the current content.")
    return parts


def summary_message(summary: Summary, kept: KeptWords | None = None) -> dict[str, Any]:
    """The user-role message that stands in for the compacted transcript."""
    compaction = asdict(summary)
    if kept is not None:
        compaction[VERBATIM_KEY] = kept.numbers()
    return {"role": "user", "content": render_summary(summary, kept), COMPACTION_KEY: compaction}


def summary_mutation(summary: Summary, kept: KeptWords | None = None) -> ContextSummaryMutation:
    """The patch that applies a compaction; ``remember`` items become experiences."""
    remember = [{"text": text.strip()} for text in summary.remember if text.strip()]
    return ContextSummaryMutation(summary_message=summary_message(summary, kept),
                                  remember=remember)


def compacted_just_now(messages: list[dict[str, Any]]) -> bool:
    """Whether the working transcript holds nothing since its summary but the traces of
    compacting: runtime notes and calls to ``compact`` (with their results).

    Another summary of it would say the same again; a model that compacts whenever it
    reads the person's "compact the context" (kept verbatim in the summary) would
    otherwise compact until the step limit.
    """
    if not any(COMPACTION_KEY in m for m in messages):
        return False
    since = len(messages) - next(i for i, m in enumerate(reversed(messages))
                                 if COMPACTION_KEY in m)
    calls: set[str] = set()
    for message in messages[since:]:
        if message.get("role") == "user" and message.get("runtime_note"):
            continue
        tool_calls = message.get("tool_calls") or []
        if message.get("role") == "assistant" and tool_calls and all(
                isinstance(c, dict) and (c.get("function") or {}).get("name") == "compact"
                for c in tool_calls):
            calls.update(str(c.get("id", "")) for c in tool_calls)
            continue
        if message.get("role") == "tool" and str(message.get("tool_call_id", "")) in calls:
            continue
        return False
    return True


def number_ranges(numbers: tuple[int, ...] | list[int]) -> str:
    """``messages 3, 5, 9–12``: numbers as runs, so a long list stays short."""
    runs: list[list[int]] = []
    for n in numbers:
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    said = [str(a) if a == b else f"{a}–{b}" for a, b in runs]
    return ("message " if len(numbers) == 1 else "messages ") + ", ".join(said)


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list | tuple):
        return [str(v) for v in value if str(v).strip()]
    return [str(value)]
