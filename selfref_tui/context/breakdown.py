"""Where the tokens of a request go: system prompt, experiences, tools, summary, messages, images.

The person asks "why is my context full?"; one total does not answer it. The
breakdown splits the very count the runtime compared with the window, so its
parts always add up to that total: each part is measured (with the same
per-message cache the compile uses) and ``messages`` is what remains of the
message tokens. Only a handful of messages are counted here — the system
message twice (with and without its experiences block) and the summary — and
the rest is a scan for image parts, so the split costs little even at
10,000 messages (see bench/breakdown_bench.py).

Pure: the caller passes the rendered messages, the counts it already has,
and the counter.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .compaction_point import threshold
from .compile import InvocationConfig, system_prompt_text
from .experiences import EXPERIENCES_KEY
from .images import image_part_tokens, is_image_part
from .summary import COMPACTION_KEY

#: the parts, in the order people read them (and the JSON keeps)
PARTS: tuple[str, ...] = (
    "system_prompt", "experiences", "tool_schemas", "summary", "messages", "images",
)
LABELS: dict[str, str] = {
    "system_prompt": "system prompt",
    "experiences": "experiences",
    "tool_schemas": "tool schemas",
    "summary": "summary",
    "messages": "messages",
    "images": "images",
}


@dataclass(frozen=True)
class Breakdown:
    """The next request's tokens by part; ``sum(parts.values()) == total``."""

    parts: dict[str, int]
    total: int

    def lines(self) -> list[str]:
        """One aligned line per part, with its share of the total (for people)."""
        width = max(len(label) for label in LABELS.values())
        out = []
        for name in PARTS:
            value = self.parts.get(name, 0)
            share = 100 * value / self.total if self.total else 0.0
            out.append(f"{LABELS[name]:<{width}}  {value:>9,}  {share:5.1f} %")
        out.append(f"{'total':<{width}}  {self.total:>9,}")
        return out


def token_breakdown(
    config: InvocationConfig,
    stored: Sequence[Mapping[str, Any]],
    rendered: Sequence[Mapping[str, Any]],
    message_tokens: int,
    tool_tokens: int,
    total: int,
    counter: Any,
) -> Breakdown:
    """Split ``total`` (the request's count, maybe calibrated) into :data:`PARTS`.

    Args:
        config: how the system prompt was rendered (to render it again without experiences).
        stored: the applied transcript the request was rendered from (system message first);
            only its first two messages are read (the system message, a summary after it).
        rendered: the provider messages (``render_provider_messages`` of ``stored``).
        message_tokens: ``counter``'s count of ``rendered`` (framing and reply priming included).
        tool_tokens: ``counter``'s count of the request's tool schemas.
        total: the figure shown for the request; when it is ``message_tokens + tool_tokens``
            scaled by a calibration factor, every part is scaled the same way.
        counter: a ``TokenCounter`` (its per-message cache is shared with the compile).
    """
    count = counter.count_message
    system_stored = stored[0] if stored and stored[0].get("role") == "system" else None
    system_tokens = count(rendered[0]) if rendered else 0
    experiences = 0
    if system_stored is not None and system_stored.get(EXPERIENCES_KEY):
        bare = {k: v for k, v in system_stored.items() if k != EXPERIENCES_KEY}
        without = {"role": "system", "content": system_prompt_text(config, bare)}
        experiences = max(0, system_tokens - count(without))
    summary = _summary_tokens(stored, rendered, count)
    images = 0
    # the one walk over every message; a comprehension, as it runs at every /context
    with_parts = [c for m in rendered if type(c := m.get("content")) is list]
    for content in with_parts:
        images += sum(image_part_tokens(part) for part in content if is_image_part(part))
    raw = {
        "system_prompt": system_tokens - experiences,
        "experiences": experiences,
        "tool_schemas": tool_tokens,
        "summary": summary,
        "messages": message_tokens - system_tokens - summary - images,
        "images": images,
    }
    return Breakdown(scaled(raw, total), total)


def _summary_tokens(stored: Sequence[Mapping[str, Any]],
                    rendered: Sequence[Mapping[str, Any]], count: Any) -> int:
    """Tokens of the compaction summary the request opens with (0 without one).

    The summary is the first working message after a compaction; rendering may
    have merged a user message behind it (a runtime note), in which case only
    the summary's own text is counted as summary.
    """
    start = 1 if stored and stored[0].get("role") == "system" else 0
    if len(stored) <= start or COMPACTION_KEY not in stored[start] or len(rendered) < 2:
        return 0
    text = stored[start].get("content")
    first = rendered[1]
    if not isinstance(text, str) or first.get("role") != "user":
        return 0
    shown = first.get("content")
    if shown == text:
        return count(first)
    if isinstance(shown, list) and shown and isinstance(shown[0], Mapping):
        shown = shown[0].get("text")  # merged with a message with images: its first text
    if isinstance(shown, str) and shown.startswith(text):
        return count({"role": "user", "content": text})
    return 0


def scaled(raw: Mapping[str, int], total: int) -> dict[str, int]:
    """``raw`` scaled to add up to exactly ``total`` (largest remainders get the rounding).

    A calibrated total is our count times the server's factor; scaling each
    part by the same factor and rounding each alone would leave the sum a few
    tokens off the figure beside it.
    """
    whole = sum(raw.values())
    if whole == total or whole <= 0:
        out = dict(raw)
        if whole != total:  # nothing to scale by: the difference is the messages'
            out["messages"] = out.get("messages", 0) + total - whole
        return out
    exact = {name: value * total / whole for name, value in raw.items()}
    out = {name: int(value // 1) for name, value in exact.items()}
    short = total - sum(out.values())
    for name in sorted(exact, key=lambda n: exact[n] - out[n], reverse=True)[:short]:
        out[name] += 1
    return out


def auto_compact_line(ratio: float, window: int, tokens: int, *, asked: bool = False) -> str:
    """What auto-compaction will do next, in one line ("compacts at 80 %: 25,600 tokens").

    ``asked``: the reminder for this crossing is already in the transcript (it
    is given once per crossing).
    """
    at = threshold(ratio, window)
    if not at:
        return "auto-compaction is off"
    share = f"{ratio * 100:g}" if at == math.ceil(ratio * window) else f"{100 * at / window:.0f}"
    head = f"compacts at {share} %: {at:,} tokens"
    if tokens < at:
        return f"{head} ({at - tokens:,} to go)"
    if asked:
        return f"{head} — reached ({tokens:,}); the model was asked to compact"
    return f"{head} — reached ({tokens:,}); the model is asked to compact at its next step"
