"""When a request does not fit the model's window: recognise it, say so, fit the request.

Three ways out, in order (the loop drives them):

1. before sending, a request over the window gets the compaction note first
   (the model summarises, the summary replaces the conversation);
2. a server that still refuses for length is named ("the conversation no
   longer fits the model's window (N of M tokens)"), and the step is compacted
   and retried once with a smaller budget;
3. whatever still does not fit is made to fit by leaving the oldest working
   messages out of the *request* — never out of the store — with a marker in
   the system message, so the model and ``/context`` both see that they are gone.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .compaction import SUMMARY_GUIDE

#: what servers say when a prompt does not fit: OpenAI's ``context_length_exceeded``,
#: vLLM's "maximum context length", llama.cpp's "exceed context window", and similar
_OVERFLOW_TEXT = re.compile(
    r"context[_ ]length|context window|context size|maximum context|too many tokens"
    r"|prompt is too long|input is too long|requested tokens|exceeds? the (?:model'?s? )?"
    r"(?:context|maximum)|n_ctx",
    re.IGNORECASE,
)
_WINDOW_TEXT = re.compile(r"maximum context length is (\d[\d,]*)", re.IGNORECASE)

OVERFLOW_COMPACT_NOTE = (
    "[selfref-tui runtime] The conversation no longer fits your context window ({tokens} of "
    "{window} tokens). Call the `compact` tool now with a concrete summary of the conversation "
    "so far, then continue with the task. " + SUMMARY_GUIDE
)
LEFT_OUT_MARKER = (
    "[selfref-tui runtime] The {count} oldest messages of this conversation are left out of "
    "this request because it no longer fits your context window; they are still stored."
)
#: added to the marker when the request offers the compact tool (a small window may not)
LEFT_OUT_COMPACT = " Call the `compact` tool to replace them with a summary."


def is_context_overflow(error: BaseException) -> bool:
    """True when a provider error means "the request does not fit the window".

    The provider names it with kind ``context_overflow``; a plain 400/5xx whose
    text says so is recognised here too, so servers the provider does not
    classify yet still lead to compaction instead of a dead key.
    """
    kind = getattr(error, "kind", "")
    if kind == "context_overflow":
        return True
    if kind in ("bad_request", "server", "protocol"):
        return bool(_OVERFLOW_TEXT.search(str(getattr(error, "message", "") or error)))
    return False


def window_named_in(error: BaseException) -> int | None:
    """The window a server's error states ("maximum context length is 4096"), if any.

    The provider reads it into ``error.window``; otherwise the error's text and
    the server's own words (``detail``) are searched.
    """
    window = getattr(error, "window", None)
    if isinstance(window, int) and window > 0:
        return window
    text = f"{getattr(error, 'message', '') or error} {getattr(error, 'detail', '')}"
    match = _WINDOW_TEXT.search(text)
    return int(match.group(1).replace(",", "")) if match else None


def overflow_message(tokens: int, window: int) -> str:
    return f"the conversation no longer fits the model's window ({tokens:,} of {window:,} tokens)"


@dataclass(frozen=True)
class Fitted:
    """A request cut to fit: its messages, how many were left out, its token count."""

    messages: list[dict[str, Any]]
    left_out: int
    tokens: int
    #: the count of the marked system message (``messages[0]``)
    system_tokens: int = 0


def fit_request(
    messages: list[dict[str, Any]],
    count_message: Callable[[dict[str, Any]], int],
    fixed_tokens: int,
    budget: int,
    *,
    compact: bool = True,
    count_appended: Callable[[dict[str, Any], str], int] | None = None,
) -> Fitted | None:
    """Leave out the oldest working messages until the request fits ``budget``.

    Cuts fall only where a user message starts, so the request still opens
    with system → user and no tool result loses its call. The system message
    gets the marker. ``fixed_tokens`` is what does not shrink (tool schemas,
    reply priming). None when even the last user-led part does not fit. ``compact``:
    the request offers the compact tool, so the marker may point to it.
    ``count_appended(message, ending)``: the count of ``message`` with ``ending``
    after its content (``TokenCounter.count_appended`` encodes a long system
    message once for all the markers tried, not once per marker).
    """
    if not messages or messages[0].get("role") != "system":
        return None
    system, body = messages[0], messages[1:]
    counts = [count_message(m) for m in body]
    suffix = [0] * (len(body) + 1)
    for i in range(len(body) - 1, -1, -1):
        suffix[i] = suffix[i + 1] + counts[i]
    starts = [i for i, m in enumerate(body) if i > 0 and m.get("role") == "user"]
    text = f"{system.get('content') or ''}"
    head = {**system, "content": text}
    if count_appended is None:
        def count_appended(message: dict[str, Any], ending: str) -> int:
            return count_message({**message, "content": message["content"] + ending})
    for start in starts:
        ending = "\n\n" + LEFT_OUT_MARKER.format(count=start) + (
            LEFT_OUT_COMPACT if compact else "")
        system_tokens = count_appended(head, ending)
        total = system_tokens + suffix[start] + fixed_tokens
        if total <= budget:
            return Fitted([{**system, "content": text + ending}, *body[start:]], start, total,
                          system_tokens)
    return None
