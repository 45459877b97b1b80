"""Per-key compile cache for the runtime loop.

Kept apart from the loop because it is a pure optimisation with one contract:
its result always equals ``compile_messages`` plus ``TokenCounter.count_messages``
(property-tested in tests/agent/test_incremental_compile.py).
"""

from __future__ import annotations

from typing import Any


def _has_parts(message: dict) -> bool:
    return isinstance(message.get("content"), list)


class IncrementalCompile:
    """``compile_messages`` + token count for one key, re-rendering only the tail.

    Every LLM call compiles the whole transcript, so at a long history most of
    the work would be re-rendering and re-counting messages unchanged since the
    last call. The result is always ``compile_messages(config, base, pending)``
    and its ``TokenCounter.count_messages``; only the cost changes. It relies
    on one property of ``render_provider_messages``: its only state carried
    from message to message is the open tool block, which a non-tool message
    closes, so for a body ``A + B`` whose ``B`` starts with a non-tool message
    ``render(A + B) == render(A) + render(B)`` (system message aside). So the
    rendering of the body up to its last non-tool message is kept, with shallow
    copies of the stored messages it came from; the next compile reuses it when
    those copies still equal (``==``) the start of the new body, and renders
    the rest. A transcript replaced by a compaction simply misses and renders
    in full. Rendering merges a run of user messages into one, so where two
    renderings meet, a user message on each side is merged (``merge_user``
    gives the same message in any grouping).
    """

    def __init__(self, config: Any, tokens: Any) -> None:
        self.config = config
        self.tokens = tokens
        self._system_src: dict | None = None
        self._system_out: dict | None = None
        self._system_tokens: int | None = None
        self._src: list[dict] = []  # copies of the stored body messages rendered in _out
        self._out: list[dict] = []
        self._out_tokens: int | None = None
        #: how many messages of ``_out`` have content parts (text and images)
        self._out_parts = 0
        #: whether the last compile's result has a message with content parts: only
        #: then can it carry an image twice (``images_once`` scans every message)
        self.has_parts = False
        self._tokens_ready: bool | None = None

    def compile(self, base: list[dict], pending: list) -> tuple[list[dict], int]:
        from ...context.apply import apply_mutations
        from ...context.compile import merge_user, mergeable, render_provider_messages
        from ...context.tokens import REPLY_PRIMING

        config, count = self.config, self.tokens.count_message
        messages = apply_mutations(base, pending)
        has_system = bool(messages) and messages[0].get("role") == "system"
        system = messages[0] if has_system else None
        body = messages[1:] if has_system else messages
        if self._tokens_ready is not self.tokens.ready:  # estimates -> exact counts
            self._tokens_ready = self.tokens.ready
            self._system_tokens = self._out_tokens = None
        if self._system_out is None or system != self._system_src:
            self._system_src = dict(system) if system is not None else None
            self._system_out = render_provider_messages(config, [system] if system else [])[0]
            self._system_tokens = None
        if self._system_tokens is None:
            self._system_tokens = count(self._system_out)
        n = len(self._src)
        if not (n <= len(body) and (n == len(body) or body[n].get("role") != "tool")
                and self._src == body[:n]):
            n = 0
            self._src, self._out, self._out_tokens, self._out_parts = [], [], 0, 0
        cut = len(body)  # new cache end: the last non-tool message (start of the tail)
        while cut > n and body[cut - 1].get("role") == "tool":
            cut -= 1
        cut = max(cut - 1, n)
        if any(m.get("role") == "system" for m in body[n:]):  # a hand-built list: no shortcut
            self._src, self._out, self._out_tokens, self._out_parts = [], [], None, 0
            out = render_provider_messages(config, messages)
            self.has_parts = any(map(_has_parts, out))
            return out, sum(count(m) for m in out) + REPLY_PRIMING
        if cut > n:
            mid = render_provider_messages(config, body[n:cut])[1:]
            if self._out and mid and mergeable(self._out[-1], mid[0]):
                merged = merge_user(self._out[-1], mid[0])
                if self._out_tokens is not None:
                    self._out_tokens += count(merged) - count(self._out[-1])
                self._out_parts += _has_parts(merged) - _has_parts(self._out[-1])
                self._out[-1] = merged
                mid = mid[1:]
            self._src.extend(dict(m) for m in body[n:cut])
            self._out.extend(mid)
            self._out_parts += sum(map(_has_parts, mid))
            if self._out_tokens is not None:
                self._out_tokens += sum(count(m) for m in mid)
        if self._out_tokens is None:
            self._out_tokens = sum(count(m) for m in self._out)
        tail = render_provider_messages(config, body[cut:])[1:] if cut < len(body) else []
        tokens = self._system_tokens + self._out_tokens + sum(count(m) for m in tail)
        if self._out and tail and mergeable(self._out[-1], tail[0]):
            merged = merge_user(self._out[-1], tail[0])
            tokens += count(merged) - count(self._out[-1]) - count(tail[0])
            out = [self._system_out, *self._out[:-1], merged, *tail[1:]]
            self.has_parts = (self._out_parts - _has_parts(self._out[-1]) > 0
                              or _has_parts(merged) or any(map(_has_parts, tail[1:])))
        else:
            out = [self._system_out, *self._out, *tail]
            self.has_parts = self._out_parts > 0 or any(map(_has_parts, tail))
        self.has_parts = self.has_parts or _has_parts(self._system_out)
        return out, tokens + REPLY_PRIMING
