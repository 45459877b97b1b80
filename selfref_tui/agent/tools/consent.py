"""The question asked before the model changes its durable memory, and its answers.

With ``[agent] memory_writes = "ask"`` the model's ``remember`` and ``forget``
(and the ``remember`` items of its compaction summary) wait for the person's
yes: what is kept there is read on every later call, so it is the person's to
allow. Kept import-free, like the MCP approval question, so the app can
recognise it among the agent's questions and lay it out (the action, then the
text, shown inert). The last answer is the safe one: Esc, Enter and a front
end that cannot ask pick it.
"""

from __future__ import annotations

from dataclasses import dataclass

ALLOW = "allow"
DENY = "deny"
#: the last choice is the safe one: Esc and a front end that cannot ask pick it
CONSENT_CHOICES = (ALLOW, DENY)
TITLE = "Memory write"
#: what the model is told when a run that cannot ask refuses a memory write
NOT_ASKED_REFUSAL = (
    "the person's consent is needed to change stored experiences ([agent] memory_writes = "
    '"ask") and no one could be asked (a non-interactive run), so nothing was stored; '
    "tell the person what you wanted to keep — they can add it with `selfref-tui experiences "
    "add`, or rerun with --allow-memory")
DENIED_REFUSAL = (
    "the person declined this change to stored experiences; nothing was changed — carry on "
    "without it and do not ask again for the same text")


def is_consent(choices: tuple[str, ...]) -> bool:
    return tuple(choices) == CONSENT_CHOICES


@dataclass(frozen=True)
class Consent:
    """A consent question taken apart again, for a dialog that lays it out."""

    #: "remember" or "forget"
    action: str
    #: the text to keep, or the experience being forgotten ("exp_003: its text")
    text: str


def consent_prompt(action: str, text: str) -> str:
    """The question as plain text (front ends show it inert): title, action, then the text."""
    return f"{TITLE}\naction: {action}\n{text}"


def parse_consent(prompt: str) -> Consent | None:
    """The parts of a :func:`consent_prompt`, or None for any other question."""
    lines = prompt.split("\n", 2)
    if len(lines) < 3 or lines[0] != TITLE or not lines[1].startswith("action: "):
        return None
    action = lines[1][8:]
    if action not in ("remember", "forget"):
        return None
    return Consent(action, lines[2])
