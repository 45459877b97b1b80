"""What a compaction keeps verbatim: the person's own words and the last exchange.

A summary written by the model loses exactly what the person cares most about:
their own wording — a constraint stated once, a correction, the question still
open. So the runtime, not the model, decides what of it survives: the person's
messages since the previous compaction, newest first, as many as fit a share
of the window, or the room the request has left when that is less (the others
are named by number, so ``read_history`` can bring them back), and the last
exchange (the person's latest message and the model's last words) in full
unless it is huge. Pinned messages, when the person pins
some, are kept whole whatever the budget.

Everything here is pure: it reads numbered history entries (``n``, ``role``,
``message``, ``time``; see ``MemoryKey.entries()``) and a token counter, and
returns values the summary renders (:mod:`.summary`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..refs.parser import quote_refs
from .history import EntryLike, is_person_message
from .images import readable

#: the person's messages may take this share of the window, newest first
PERSON_SHARE = 0.15
#: the last exchange (the person's latest message and the model's last words) may take this
EXCHANGE_SHARE = 0.05
#: the tag's name inside a kept text (any case), escaped so it cannot end or open a tag
_TAG = re.compile(r"<(/?message)", re.IGNORECASE)
#: the most of the window pinned messages take together when the request's room is
#: not known (beyond it each is cut to its head and tail)
PIN_SHARE = 0.5

#: what the tags around one kept message cost, roughly, in tokens
TAG_TOKENS = 12
#: what the summary message costs besides the model's sections and the kept messages (the
#: sections' titles, the note on the searchable history), with the runtime's note after a
#: compaction: reserved when the kept words are fitted to the room a request has left
FRAME_TOKENS = 300


@dataclass(frozen=True)
class Said:
    """One message kept verbatim (``cut``: characters left out of its middle, 0 when whole)."""

    n: int
    role: str
    text: str
    time: str = ""
    cut: int = 0


@dataclass(frozen=True)
class KeptWords:
    """What the summary carries verbatim, decided from the stored messages."""

    #: the person's messages since the previous compaction, newest first
    person: tuple[Said, ...] = ()
    #: the person's messages over the budget, by number (ascending)
    left_out: tuple[int, ...] = ()
    #: the person's latest message and the model's last words, in log order
    exchange: tuple[Said, ...] = ()
    #: messages the person pinned, in log order, always whole
    pinned: tuple[Said, ...] = ()
    #: the highest message number stored so far (the searchable range is 1..last)
    last: int = 0
    #: where the compacted stretch starts (the first number since the previous compaction)
    first: int = 0

    def numbers(self) -> dict[str, Any]:
        """The selection by number, stored with the summary (never the texts twice)."""
        return {
            "person": [s.n for s in self.person],
            "left_out": list(self.left_out),
            "exchange": [s.n for s in self.exchange],
            "pinned": [s.n for s in self.pinned],
            "first": self.first,
            "last": self.last,
        }


def said_text(message: dict[str, Any]) -> str:
    """A message's words as the model should read them again: text, images as one line each,
    tool calls named with their arguments."""
    text = readable(message.get("content"))
    calls = message.get("tool_calls") or []
    lines = [text] if text else []
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            lines.append(f"[called {function.get('name', '')}({function.get('arguments', '')})]")
    return "\n".join(lines)


def tagged(said: Said, **flags: str) -> str:
    """One message between tags that give its number, author, time and any ``flags``.

    The summary and ``read_history`` show messages the same way, so the model
    reads one format for "a stored message, verbatim". A ``<message`` or
    ``</message`` inside the text is written ``&lt;message``: a tool's result (a
    fetched page) could otherwise close its own tag and open one with
    ``role="user"``, and the model would read it as the person's words. Ref
    blocks are quoted (``<quoted_ref id="x">``, :func:`..refs.parser.quote_refs`):
    a model repeating what it read back must not define those refs again.
    """
    attrs = f'n="{said.n}" role="{said.role}"'
    if said.time:
        attrs += f' time="{said.time}"'
    for name, value in flags.items():
        attrs += f' {name}="{value}"'
    text = quote_refs(_TAG.sub(r"&lt;\1", said.text))
    return f"<message {attrs}>\n{text}\n</message>"


def keep_words(
    entries: Sequence[EntryLike],
    *,
    window: int,
    count: Callable[[str], int],
    pinned: Iterable[EntryLike] = (),
    last: int = 0,
    room: int | None = None,
    request: EntryLike | None = None,
) -> KeptWords:
    """Choose what the summary keeps verbatim from ``entries``.

    ``entries``: the numbered messages the compaction takes out of the model's
    view, in log order (the working transcript since the previous compaction).
    ``count`` counts a text's tokens; ``window`` sizes the budgets
    (:data:`PERSON_SHARE`, :data:`EXCHANGE_SHARE`). A message that does not fit
    what is left of the budget is left out (named), and older, shorter ones are
    still tried: one long paste must not push out every instruction before it.

    ``room``: the most tokens the kept messages may take in all, when the request
    has less left than the shares (a small window, a long system prompt): pinned
    messages are kept whole first (the person's choice), then the last exchange,
    then the person's other messages in what remains. Pins larger together than
    ``room`` (or :data:`PIN_SHARE` of the window) are each cut to their ends, the
    cut named: a request that cannot be sent keeps nothing.

    ``request``: the person's latest message anywhere in the history, for the
    last exchange when ``entries`` hold none of theirs: a long tool loop that
    compacts twice still works on a request made before the previous compaction.
    """
    persons = [e for e in entries if is_person_message(e.message)]
    pinned_list = sorted({e.n: e for e in pinned}.values(), key=lambda e: e.n)
    pinned_numbers = {e.n for e in pinned_list}
    exchange = _last_exchange(entries, persons or ([request] if request else []))
    in_exchange = {e.n for e in exchange}
    pinned_said = tuple(Said(e.n, e.role, said_text(e.message), e.time) for e in pinned_list)
    pin_cap = room if room is not None else int(PIN_SHARE * window)
    if sum(count(s.text) + TAG_TOKENS for s in pinned_said) > pin_cap:
        # pins that would not leave the compacted request room to fit are cut to their
        # ends, each named with how to read it whole: verbatim is the promise only
        # while the request can still be sent
        share = max(0, pin_cap) // max(1, len(pinned_list))
        pinned_said = tuple(_fitted(e, share, count) for e in pinned_list)
    left = None if room is None else room - sum(count(s.text) + TAG_TOKENS for s in pinned_said)
    share = int(EXCHANGE_SHARE * window) // max(1, len(exchange))
    if left is not None:
        share = max(0, min(share, left // max(1, len(exchange))))
    exchange_said = tuple(_fitted(e, share, count) for e in exchange)
    budget = int(PERSON_SHARE * window)
    if left is not None:
        left -= sum(count(s.text) + TAG_TOKENS for s in exchange_said)
        budget = max(0, min(budget, left))
    kept: list[Said] = []
    left_out: list[int] = []
    for entry in reversed(persons):
        if entry.n in in_exchange or entry.n in pinned_numbers:
            continue
        text = said_text(entry.message)
        cost = count(text) + TAG_TOKENS
        if cost <= budget:
            kept.append(Said(entry.n, "user", text, entry.time))
            budget -= cost
        else:
            left_out.append(entry.n)
    return KeptWords(
        person=tuple(kept),
        left_out=tuple(sorted(left_out)),
        exchange=exchange_said,
        pinned=pinned_said,
        last=max(last, entries[-1].n if entries else 0),
        first=entries[0].n if entries else 0,
    )


def _last_exchange(entries: Sequence[EntryLike], persons: list[EntryLike]) -> list[EntryLike]:
    """The person's latest message and the model's last words (its last text), log order.

    The message that calls ``compact`` is not the model's last words: its text is
    about compacting ("Let me summarise"), not about the work.
    """
    chosen = [persons[-1]] if persons else []
    for entry in reversed(entries):
        message = entry.message
        if (entry.role == "assistant" and not message.get("multimodal_for")
                and not _calls_compact(message) and readable(message.get("content")).strip()):
            chosen.append(entry)
            break
    return sorted(chosen, key=lambda e: e.n)


def _calls_compact(message: dict[str, Any]) -> bool:
    return any(isinstance(c, dict) and (c.get("function") or {}).get("name") == "compact"
               for c in message.get("tool_calls") or ())


def _fitted(entry: EntryLike, budget: int, count: Callable[[str], int]) -> Said:
    """The entry whole when it fits ``budget`` tokens, else its head and tail with the cut named."""
    text = said_text(entry.message)
    tokens = count(text)
    if tokens + TAG_TOKENS <= budget or not text:
        return Said(entry.n, entry.role, text, entry.time)
    keep_chars = max(200, int(len(text) * max(budget - TAG_TOKENS, 0) / max(tokens, 1)))
    head = keep_chars // 3  # the start says what it is about; the end is often the question
    tail = keep_chars - head
    cut = len(text) - head - tail
    if cut <= 0:
        return Said(entry.n, entry.role, text, entry.time)
    middle = (f"\n[… {cut:,} characters left out here; read_history(start={entry.n}, count=1) "
              "returns the whole message …]\n")
    return Said(entry.n, entry.role, text[:head] + middle + text[-tail:], entry.time, cut)
