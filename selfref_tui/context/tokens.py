"""Token counts for the context meter and compaction decisions.

Counting re-runs before every call over the whole history, so each message's
count is cached: a turn costs the encoding of its new messages plus a dict
lookup per old one. The encoder arrives late (loading tiktoken's data takes
~0.3 s and is kept off the start-up path), so until then counts are estimates
(about four bytes of UTF-8 per token) and :attr:`TokenCounter.ready` says so.
"""

from __future__ import annotations

import copy
import json
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from .images import image_part_tokens, is_image_part

Encode = Callable[[str], list[int]]

# OpenAI's chat format: every message costs a few tokens of framing, a name one
# more, and the reply is primed with a few more (see the openai-cookbook recipe
# "How to count tokens with tiktoken").
TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
TOKENS_PER_TOOL_CALL = 3
REPLY_PRIMING = 3
# An image part is billed by its size, read from the data URL's header (see
# context/images.py); an image whose size cannot be read counts as a 1024x1024
# high-detail one.
# Tool schemas ride in the prompt too (OpenAI renders them into the system
# message, llama.cpp and vLLM through the chat template): their JSON text plus
# a little framing per function and once for the block. The framing figures
# are estimates; calibration against the server's reported usage corrects them.
TOKENS_PER_TOOL = 8
TOOLS_FRAMING = 12
DEFAULT_CACHE_SIZE = 50_000
#: schemas whose count is remembered by identity (see ``count_tools``); past it, forgotten
TOOL_MEMO_SIZE = 1_024


#: texts longer than this are encoded in slices of about this size: tiktoken's
#: BPE over one long unbroken run costs several times the slices' sum (1 MB of
#: one letter, as a model may stream into a tool's arguments: 0.55 s whole,
#: 0.15 s in slices, on the machine the app is measured on)
SLICE_CHARS = 16_384


def slices(text: str, size: int = SLICE_CHARS) -> list[str]:
    """``text`` cut into pieces of at most ``size`` characters, counted one by one.

    Each cut is made before a single space that has a non-space on both sides
    where the second half of a slice has one: the encoders' pre-tokenizers
    (r50k to o200k) end a piece there whatever follows, so the count is the
    same as for the whole text. A run with no such space is cut where it
    reaches ``size``, a token or two off at each such cut.
    """
    if len(text) <= size:
        return [text]
    out: list[str] = []
    start = 0
    end_of_text = len(text)
    while end_of_text - start > size:
        end = start + size
        cut = space_cut(text, start + size // 2, end)
        if cut <= start:
            cut = end
        out.append(text[start:cut])
        start = cut
    out.append(text[start:])
    return out


def space_cut(text: str, low: int, high: int) -> int:
    """The last single space in ``text[low:high]`` with a non-space on both sides (-1: none).

    The encoders' pre-tokenizers end a piece before such a space whatever follows,
    so a text counts as the sum of its two sides cut there (see :func:`slices`).
    """
    cut = text.rfind(" ", low, high)
    while cut > 0 and (cut + 1 >= len(text) or text[cut - 1].isspace()
                       or text[cut + 1].isspace()):
        cut = text.rfind(" ", low, cut)
    return cut


#: how many times too few tokens :func:`estimate_tokens` can say. A byte-level BPE
#: token (tiktoken's, and the byte-fallback vocabularies of open models) holds at least
#: one byte of UTF-8, so a text never has more tokens than bytes, and four bytes a token
#: is at most four times too few: with o200k, English prose ~0.2 tokens a byte, code
#: ~0.45, hex digests ~0.9; emoji, Chinese and rarer scripts are several bytes a
#: character and come out near their real count (a character-based guess said up to
#: twelve times too few on runic or mathematical letters)
ESTIMATE_SHORTFALL = 4


def estimate_tokens(text: str) -> int:
    """A tokenizer-free guess: about four bytes of UTF-8 per token, rounded up."""
    size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
    return (size + 3) // 4


class CountingStopped(Exception):
    """The counter was stopped (:meth:`TokenCounter.stop`): what it was counting is not
    wanted any more (the window is closing)."""


class TokenCounter:
    """Counts tokens of provider messages with a bounded per-message cache."""

    def __init__(self, encode: Encode | None = None, *, max_entries: int = DEFAULT_CACHE_SIZE):
        self._encode: Encode | None = encode
        self._cache: OrderedDict[Hashable, int] = OrderedDict()
        self._max_entries = max(1, max_entries)
        #: id(schema) -> (the schema, a copy of it as counted, its count): the same schema
        #: objects come with every request, and encoding each as JSON to find its cached
        #: count cost more than the rest of the counting at every model call
        self._tool_memo: dict[int, tuple[Any, Any, int]] = {}
        #: (a long text, where it was cut, the count of what is before the cut): the
        #: start :meth:`count_appended` keeps while a text is counted with many endings
        self._head: tuple[str, int, int] | None = None
        self.hits = 0
        self.misses = 0
        #: set by :meth:`stop`: no more encoding, from any thread
        self.stopped = False

    @property
    def ready(self) -> bool:
        """True once real token counts (not estimates) are being returned."""
        return self._encode is not None

    def set_encoder(self, encode: Encode) -> None:
        """Switch from estimates to exact counts; cached estimates are dropped."""
        self._encode = encode
        self._cache.clear()
        self._tool_memo.clear()
        self._head = None

    def stop(self) -> None:
        """Refuse to encode from now on: a count under way in a thread ends at its next
        message (or slice) with :class:`CountingStopped` instead of going on for seconds.

        Why: quitting waits for the store's threads before the store closes, and the
        meter's first exact count of a 20,000-message conversation took 5 s of them.
        A count only reads, so nothing is lost by leaving it unfinished.
        """
        self.stopped = True

    def count_text(self, text: str) -> int:
        if not text:
            return 0
        if self._encode is None:
            return estimate_tokens(text)
        if len(text) <= SLICE_CHARS:
            return len(self._encode(text))
        encode = self._encode
        total = 0
        for piece in slices(text):
            if self.stopped:
                raise CountingStopped
            total += len(encode(piece))
        return total

    def count_message(self, message: dict[str, Any]) -> int:
        key = _cache_key(message)
        cache = self._cache
        cached = cache.get(key)
        if cached is not None:
            cache.move_to_end(key)
            self.hits += 1
            return cached
        self.misses += 1
        count = self._count_uncached(message)
        cache[key] = count
        if len(cache) > self._max_entries:
            cache.popitem(last=False)
        return count

    def count_appended(self, message: dict[str, Any], ending: str) -> int:
        """:meth:`count_message` of ``message`` with ``ending`` added to its text content,
        neither cached (each ending is counted once) nor encoding the content again.

        Fitting a request into the window tries the system message with one marker
        after another ("the N oldest messages are left out"): with a large system
        message (a thousand experiences is ~130 kB) encoding it whole for each of
        hundreds of tries cost seconds. The content is cut at its last space that
        ends a pre-tokenizer piece (:func:`space_cut`), the count before the cut is
        kept, and only the rest with the ending is encoded.
        """
        content = message.get("content")
        if content is None:
            content = ""
        if not isinstance(content, str):  # (parts: as the whole would be counted)
            return self._count_uncached({**message, "content": f"{content}{ending}"})
        head = self._head
        if self._encode is None or len(content) <= SLICE_CHARS // 4:
            head = None
        elif head is None or not (head[0] is content or head[0] == content):
            cut = space_cut(content, max(0, len(content) - SLICE_CHARS), len(content))
            head = self._head = (content, cut, self.count_text(content[:cut])) if cut > 0 \
                else None
        if head is None:
            return self._count_uncached({**message, "content": content + ending})
        return head[2] + self._count_uncached({**message, "content": content[head[1]:] + ending})

    def remember(self, message: dict[str, Any], count: int) -> None:
        """Cache ``count`` as ``message``'s (a count :meth:`count_appended` made), so
        the message is not encoded again when the request it went into is counted."""
        self._cache[_cache_key(message)] = count
        if len(self._cache) > self._max_entries:
            self._cache.popitem(last=False)

    def count_messages(self, messages: list[dict[str, Any]]) -> int:
        """Tokens the provider will count for ``messages`` as a prompt (an estimate
        until :attr:`ready`; exact framing differs slightly between providers)."""
        if not messages:
            return 0
        count = self.count_message
        return sum(count(m) for m in messages) + REPLY_PRIMING

    def count_tools(self, tools: Sequence[dict[str, Any]]) -> int:
        """Tokens the tool schemas add to a request (0 for none); cached per schema."""
        if not tools:
            return 0
        total = TOOLS_FRAMING
        memo = self._tool_memo
        for tool in tools:
            function = tool.get("function", tool) if isinstance(tool, dict) else tool
            known = memo.get(id(function))
            # the same object, unchanged since it was counted (a deep compare, in C)
            if known is not None and known[0] is function and known[1] == function:
                total += known[2]
                continue
            text = json.dumps(function, ensure_ascii=False, separators=(",", ":"),
                              sort_keys=True, default=str)
            key = ("tool", text)
            cached = self._cache.get(key)
            if cached is None:
                cached = self.count_text(text) + TOKENS_PER_TOOL
                self._cache[key] = cached
                if len(self._cache) > self._max_entries:
                    self._cache.popitem(last=False)
            total += cached
            try:
                counted_as = copy.deepcopy(function)
            except Exception:  # an odd object in a schema (json.dumps took its str): no memo
                continue
            if len(memo) >= TOOL_MEMO_SIZE:
                memo.clear()
            memo[id(function)] = (function, counted_as, cached)
        return total

    def count_request(self, messages: list[dict[str, Any]],
                      tools: Sequence[dict[str, Any]] = ()) -> int:
        """Everything a request carries: messages, their framing, and the tool schemas."""
        return self.count_messages(messages) + self.count_tools(tools)

    def __len__(self) -> int:
        return len(self._cache)

    def _count_uncached(self, message: dict[str, Any]) -> int:
        if self.stopped:
            raise CountingStopped
        total = TOKENS_PER_MESSAGE + self.count_text(str(message.get("role") or ""))
        content = message.get("content")
        if isinstance(content, str):
            total += self.count_text(content)
        elif isinstance(content, list):
            for part in content:
                if not isinstance(part, dict):
                    continue
                if is_image_part(part):
                    total += image_part_tokens(part)
                else:
                    total += self.count_text(str(part.get("text", "")))
        name = message.get("name")
        if isinstance(name, str) and name:
            total += TOKENS_PER_NAME + self.count_text(name)
        for call in message.get("tool_calls") or ():
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict):
                total += TOKENS_PER_TOOL_CALL
                total += self.count_text(str(function.get("name", "")))
                total += self.count_text(str(function.get("arguments", "")))
        call_id = message.get("tool_call_id")
        if isinstance(call_id, str):
            total += self.count_text(call_id)
        return total


def _cache_key(message: dict[str, Any]) -> Hashable:
    """What the count depends on. Strings hash once and keep their hash, so
    keys of long stored messages are cheap to rebuild on every count."""
    content = message.get("content")
    if isinstance(content, list):
        content = tuple(map(_part_key, content))
    elif not isinstance(content, str | None):
        content = repr(content)
    calls = message.get("tool_calls")
    calls_key: Hashable = None
    if calls:
        calls_key = tuple(
            (
                str(c.get("id", "")),
                str((c.get("function") or {}).get("name", "")),
                str((c.get("function") or {}).get("arguments", "")),
            )
            if isinstance(c, dict)
            else repr(c)
            for c in calls
        )
    return (
        _str_or_none(message.get("role")),
        content,
        calls_key,
        _str_or_none(message.get("name")),
        _str_or_none(message.get("tool_call_id")),
    )


def _part_key(part: Any) -> Hashable:
    """A content part's key: its text or URL as the same string object (an image's
    ``data:`` URL is megabytes: a ``repr`` of the list copied it at every count)."""
    if not isinstance(part, dict) or not set(part) <= {"type", "text", "image_url"}:
        return repr(part)
    inner = part.get("image_url")
    if isinstance(inner, dict) and set(inner) <= {"url", "detail"}:
        inner = (inner.get("url"), inner.get("detail"))
    fields = (part.get("type"), part.get("text"), *(inner if type(inner) is tuple else (inner,)))
    if all(value is None or type(value) is str for value in fields):
        return (type(inner) is tuple, *fields)
    return repr(part)


def _str_or_none(value: Any) -> str | None:
    return value if value is None or isinstance(value, str) else repr(value)


@dataclass
class Calibration:
    """Our count scaled to what the server reports it counted.

    Our tokenizer is only a proxy for the server's (another vocabulary, another
    chat template); after each call whose usage names ``prompt_tokens`` the
    ratio of that figure to our own count of the same request becomes the
    factor for the next estimates. Figures stay estimates (front ends show
    them as such); only a server's own report is exact.
    """

    factor: float = 1.0
    #: True once a server report has set the factor
    calibrated: bool = False

    #: a report this far off is a different request (a cache hit, a truncation): ignored
    MIN_FACTOR = 0.25
    MAX_FACTOR = 4.0

    def observe(self, counted: int, reported: int) -> None:
        """The server said ``reported`` prompt tokens for a request we counted as ``counted``."""
        if counted <= 0 or reported <= 0:
            return
        factor = reported / counted
        if self.MIN_FACTOR <= factor <= self.MAX_FACTOR:
            self.factor = factor
            self.calibrated = True

    def apply(self, counted: int) -> int:
        return round(counted * self.factor) if self.calibrated else counted
