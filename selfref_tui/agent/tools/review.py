"""The question that shows the person the model's summary before it is applied.

With ``[agent] review_compaction = true`` the ``compact`` tool waits for the
person: they read the summary the model proposed, may edit it, and accept or
cancel it; the patch applied is built from what they accepted. It rides on
the question broker like any tool's question (so a turn that ends takes its
dialog away, and a front end that cannot ask — ``ask``, ``compact`` on the
command line — gets the default, "accept", at once). Import-free, like the
other questions, so the app recognises it without loading the runtime.

An answer is ``"cancel"``, ``"accept"`` (unchanged), or ``"accept"``, a
newline and the edited text.
"""

from __future__ import annotations

ACCEPT = "accept"
CANCEL = "cancel"
REVIEW_CHOICES = (ACCEPT, CANCEL)
TITLE = "Compaction summary"
CANCELLED_NOTE = (
    "the person read your summary and cancelled this compaction: the conversation stays as "
    "it is and nothing was replaced. Continue the task; do not call compact again unless the "
    "person asks for it.")
EDITED_NOTE = (
    "the person edited your summary before accepting it: what they accepted replaces the "
    "conversation after these tool calls (read it in the summary message).")


def is_review(choices: tuple[str, ...]) -> bool:
    return tuple(choices) == REVIEW_CHOICES


def review_prompt(text: str) -> str:
    """The question: a title line, then the editable summary."""
    return f"{TITLE}\n{text}"


def parse_review(prompt: str) -> str | None:
    """The editable summary of a :func:`review_prompt`, or None for any other question."""
    title, sep, text = prompt.partition("\n")
    return text if title == TITLE and sep else None


def accept_answer(text: str | None = None) -> str:
    """The answer for "accept" (``text``: the summary as edited, None when unchanged)."""
    return ACCEPT if text is None else f"{ACCEPT}\n{text}"


def edited_text(answer: str) -> str | None:
    """The edited summary an accepting answer carries, or None (unchanged, or cancelled)."""
    head, sep, text = answer.partition("\n")
    return text if head == ACCEPT and sep else None
