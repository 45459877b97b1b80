"""The question asked before an untrusted MCP tool runs, and its answers.

Kept apart from the manager (and free of heavy imports) so the app can
recognise an approval among the agent's questions without loading the MCP SDK.
The last answer is the safe one: Esc and Enter pick it. A front end that cannot
ask (``ask`` on the command line) gets the broker's "not asked" instead, and the
manager refuses the call as not allowed in that run: nobody declined it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ...safety import inert_line

APPROVE_ONCE = "allow once"
APPROVE_ALWAYS = "trust this tool"
DENY = "deny"
#: the last choice is the safe one: Esc and Enter pick it
APPROVAL_CHOICES = (APPROVE_ONCE, APPROVE_ALWAYS, DENY)
ARGS_PREVIEW_CHARS = 2_000
TITLE = "MCP tool call"


def is_approval(choices: tuple[str, ...]) -> bool:
    return tuple(choices) == APPROVAL_CHOICES


@dataclass(frozen=True)
class Approval:
    """An approval question taken apart again, for a dialog that lays it out."""

    server: str
    tool: str
    arguments: str


def approval_prompt(server: str, tool: str, args: dict[str, Any]) -> str:
    """Server, tool and arguments as plain text (front ends show it inert).

    Names are made one-line here: a tool name is the server's text, and one
    holding a newline must not be able to fake the lines below it.
    """
    shown = json.dumps(args, ensure_ascii=False, indent=2)
    if len(shown) > ARGS_PREVIEW_CHARS:
        shown = shown[:ARGS_PREVIEW_CHARS] + f"\n… ({len(shown)} characters in all)"
    return (f"{TITLE}\nserver: {inert_line(server, 120)}\ntool: {inert_line(tool, 120)}\n"
            f"arguments:\n{shown}")


def parse_approval(prompt: str) -> Approval | None:
    """The parts of an :func:`approval_prompt`, or None for any other question."""
    lines = prompt.split("\n", 4)
    if (len(lines) < 4 or lines[0] != TITLE or not lines[1].startswith("server: ")
            or not lines[2].startswith("tool: ") or lines[3] != "arguments:"):
        return None
    return Approval(lines[1][8:], lines[2][6:], lines[4] if len(lines) > 4 else "")
