"""``<think>…</think>`` at the start of an answer, told apart from the answer.

DeepSeek-R1, Qwen3 and other reasoning models served by llama.cpp, Ollama or
vLLM (without a reasoning parser) put their thinking in ``content``, wrapped in
``<think>`` tags. It is reasoning like ``reasoning_content``: shown apart,
stored as reasoning, never sent back. The tags may arrive split across chunks
("<thi", "nk>"), so this is a small state machine fed chunk by chunk; it is
pure, and costs one attribute check per chunk once the answer has started.
"""

from __future__ import annotations

OPEN = "<think>"
CLOSE = "</think>"


class ThinkSplitter:
    """Feed content pieces; get ``(kind, text)`` pieces back, kind "reasoning" or "text".

    Only a ``<think>`` at the very start (after whitespace) opens reasoning;
    a tag later in an answer is text (a model explaining the tags, say).
    """

    __slots__ = ("_buffer", "_state")

    def __init__(self) -> None:
        self._state = "start"  # "start" → "think" → ("lead" →) "text", or "start" → "text"
        self._buffer = ""

    @property
    def passthrough(self) -> bool:
        """True once every further piece is plain text."""
        return self._state == "text"

    def feed(self, text: str) -> list[tuple[str, str]]:
        if self._state == "text":
            return [("text", text)] if text else []
        if self._state == "lead":  # the blank lines between "</think>" and the answer
            text = text.lstrip()
            if not text:
                return []
            self._state = "text"
            return [("text", text)]
        self._buffer += text
        if self._state == "start":
            head = self._buffer.lstrip()
            if len(head) < len(OPEN) and OPEN.startswith(head):
                return []  # could still be "<think>": wait for more
            if not head.startswith(OPEN):
                self._state = "text"
                out, self._buffer = self._buffer, ""
                return [("text", out)]
            self._state = "think"
            self._buffer = head[len(OPEN):]
        return self._thinking()

    def _thinking(self) -> list[tuple[str, str]]:
        end = self._buffer.find(CLOSE)
        if end >= 0:
            reasoning = self._buffer[:end]
            answer = self._buffer[end + len(CLOSE):].lstrip()
            self._state, self._buffer = ("text" if answer else "lead"), ""
            return [(k, t) for k, t in (("reasoning", reasoning), ("text", answer)) if t]
        # keep back what may be the start of "</think>"
        keep = 0
        for n in range(min(len(CLOSE) - 1, len(self._buffer)), 0, -1):
            if CLOSE.startswith(self._buffer[-n:]):
                keep = n
                break
        out = self._buffer[: len(self._buffer) - keep]
        self._buffer = self._buffer[len(self._buffer) - keep:]
        return [("reasoning", out)] if out else []

    def flush(self) -> list[tuple[str, str]]:
        """What is held back, at the end of the stream (an unclosed think stays reasoning)."""
        out, self._buffer = self._buffer, ""
        if not out:
            return []
        if self._state == "think":
            return [("reasoning", out)]
        self._state = "text"
        return [("text", out)]
