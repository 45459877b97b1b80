"""Whether a stored tool result is a failure: a fact the runtime records, not a guess.

The model reads a failed call's result as ``"Error: " + why`` (:func:`error_content`);
the runtime also says so on the patch (``ToolResultMutation.error``), and the fold
keeps it on the tool message (``"error"``). A tool whose own output happens to
start with "Error: " (a grep of a log, an MCP server's text) then stays a success
after a reload, a branch or a rewind, as it showed live.

A record written before the flag existed says nothing (``error`` is ``None``): for
it, and for a message folded from it, the prefix decides, as it always did, so an
existing store reads exactly as before.
"""

from __future__ import annotations

from typing import Any

#: how the model reads a failed call's result
ERROR_PREFIX = "Error: "


def error_content(reason: str) -> str:
    """A failed call's result as the model reads it."""
    return ERROR_PREFIX + reason


def result_failed(content: str, error: bool | None) -> bool:
    """A result's failure: the flag when the patch has one, else (an older record) the prefix."""
    return content.startswith(ERROR_PREFIX) if error is None else error


def message_flag(content: str, error: bool | None) -> dict[str, Any]:
    """The keys the fold adds to a tool message for this result.

    A failure is marked ``"error": True``. A success is marked ``"error": False``
    only when its text starts with the prefix: that is the one case where the text
    alone would say otherwise (every other message stays as it was, and a message
    without the key is read by its text). Nothing is added for an unflagged record.
    """
    if error is None:
        return {}
    if error:
        return {"error": True}
    return {"error": False} if content.startswith(ERROR_PREFIX) else {}


def tool_failed(message: dict[str, Any]) -> bool:
    """Whether a stored tool message is a failed call (a cancelled one is not: it is cancelled)."""
    if message.get("cancelled"):
        return False
    flag = message.get("error")
    return result_failed(_text(message), flag if isinstance(flag, bool) else None)


def failure_reason(message: dict[str, Any]) -> str:
    """What a failed call's message says went wrong, without the prefix the model reads."""
    return _text(message).removeprefix(ERROR_PREFIX)


def _text(message: dict[str, Any]) -> str:
    """A tool message's text (the runtime stores a string; anything else says nothing)."""
    content = message.get("content")
    return content if isinstance(content, str) else ""
