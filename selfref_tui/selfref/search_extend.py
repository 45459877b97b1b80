"""Bring a search cache up to date by folding only what its log gained since.

A log only ever grows by appended batches, so when the first ``end`` bytes
of the log are still the bytes the cache was made from (their CRC-32 is the
one it recorded), the whole fold equals the cached fold followed by the
appended patches. Those are folded by a ``HistoryBuilder`` resumed from the
state the cache kept (``resume_state``): the open tool block and the highest
number. The numbers, roles, times, texts and flags that come out are the ones
a load of the whole log gives (``MemoryKey.entries()``; tests compare them).

Only what can be answered exactly this way is: anything else returns None,
and the caller folds the whole log, as a load would, warnings and all —
* the bytes before ``end`` changed (salvaged, rewritten, another file);
* an appended line that is cut, fails its checksum, does not parse or does
  not validate, or a batch whose last line has not arrived;
* a rewind (it may bring back any earlier state; only the whole journal knows);
* a change to a message that was already cached (a result added to, or a call
  taken from, the open block's assistant message; a message hidden);
* an image the store cannot find.
A compaction needs no more than the flags: every message that was working
becomes compacted.
"""

from __future__ import annotations

import zlib
from bisect import bisect_left
from pathlib import Path
from typing import Any

from ..context.history import HistoryBuilder
from ..context.mutations import (
    ContextReplaceMutation,
    ContextSummaryMutation,
    MutationDecodeError,
    RewindMutation,
)
from .decode import decode_mutation
from .images import ImageStore
from .log_lines import check_record, parse_line
from .search_cache import (
    _ROLE_LETTER,
    COMPACTED,
    REWOUND,
    WORKING,
    SearchEntries,
    block_names,
    text_pass,
)

_COMPACTING = (ContextSummaryMutation, ContextReplaceMutation)


def extend(cached: SearchEntries, data: bytes, key_dir: Path) -> SearchEntries | None:
    """``cached`` brought up to ``data`` (the whole log as it is now); None when only a
    load of the whole log can say (see the module docstring)."""
    fold = cached.fold
    if fold is None:
        return None
    end, crc = fold["end"], fold["crc"]
    if len(data) < end or zlib.crc32(memoryview(data)[:end]) != crc:
        return None
    if len(data) == end:
        return cached
    tail = memoryview(data)[end:]
    if tail[-1] != 0x0A:
        return None  # a cut write (or a changed newline): a load says what it is
    records = _appended(bytes(tail[:-1]).split(b"\n"), ImageStore(key_dir))
    if records is None:
        return None
    try:
        return _merge(cached, records, len(data), zlib.crc32(tail, crc))
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        return None  # a fold state that does not hold together: folded whole instead


def _appended(lines: list[bytes], images: ImageStore) -> list[tuple[Any, Any, bool]] | None:
    """(time, patch or None for another record, more) per line, each checked as a load
    checks a sealed log's lines; None when one would be damage or a rewind, or the last
    batch is not whole."""
    out: list[tuple[Any, Any, bool]] = []
    for raw in lines:
        rec, problem = parse_line(raw, True)
        if problem is not None:
            return None
        if rec.get("t") == "m":
            try:
                mutation = decode_mutation(images.resolve(rec.get("m")))
            except MutationDecodeError:
                return None
            if type(mutation) is RewindMutation:
                return None
        elif check_record(rec) is None:
            mutation = None
        else:
            return None
        out.append((rec.get("ts", ""), mutation, bool(rec.get("more"))))
    if not out or out[-1][2] or images.problems:
        return None
    return out


def _merge(cached: SearchEntries, records: list[tuple[Any, Any, bool]], end: int,
           crc: int) -> SearchEntries | None:
    fold = cached.fold
    assert fold is not None
    state = fold["state"]
    builder = HistoryBuilder.resumed(state)
    compacted = False
    for ts, mutation, more in records:
        if mutation is not None:
            builder.stamp = ts
            builder.apply(mutation)
            compacted = compacted or isinstance(mutation, _COMPACTING)
        if not more:
            builder.flush_experiences()
    last = state["last"]
    seeded = {n: message for n, _time, message in state["block"] if n}
    fresh = builder.entries()
    old = [entry for entry in fresh if entry.n <= last]
    if len(old) != len(seeded) or any(entry.message is not seeded.get(entry.n)
                                      for entry in old):
        return None  # a cached message changed or was hidden: fold the whole log
    new = fresh[len(old):]
    flags = cached.flags
    if compacted and WORKING in flags:
        flags = flags.replace(WORKING, COMPACTED)
    if old:
        chars = list(flags)
        numbers = cached.numbers
        for entry in old:
            at = bisect_left(numbers, entry.n)
            if at == len(numbers) or numbers[at] != entry.n:
                return None
            chars[at] = REWOUND if entry.rewound else COMPACTED if entry.compacted else WORKING
        flags = "".join(chars)
    names = dict(fold["names"])
    texts = text_pass([entry.message for entry in new], names)
    roles = "".join([_ROLE_LETTER[entry.role] for entry in new])
    flags += "".join([REWOUND if entry.rewound else COMPACTED if entry.compacted else WORKING
                      for entry in new])
    next_state = builder.resume_state()
    return SearchEntries(
        cached.numbers + [entry.n for entry in new], cached.roles + roles,
        cached.times + [entry.time for entry in new], flags, cached.texts + texts,
        {"end": end, "crc": crc, "state": next_state, "names": block_names(next_state, names)})
