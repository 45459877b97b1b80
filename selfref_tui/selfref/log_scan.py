"""Reading a log at load, line by line.

The store (key_load.py) decides what to do with what the pass found — repair a
torn tail, salvage around damaged lines — so the pass itself stays one loop
that is fast at 100,000 lines.
"""

from __future__ import annotations

import json
from typing import Any

from ..context.mutations import MutationDecodeError
from .checksum import seal, seal_bytes, verify
from .decode import decode_mutation
from .images import PREFIX as IMAGE_PREFIX
from .log_lines import SCHEMA, FastDecoder, now_iso, parse_line

#: what a line that names a stored image holds
IMAGE_MARK = IMAGE_PREFIX.encode("ascii")


def kept_line(code: int) -> tuple[int, bool]:
    """(line index, more) of a ``LogScan.kept`` code."""
    return (code, False) if code >= 0 else (~code, True)


class LogScan:
    """One pass over a log's complete lines: verify, parse, fold; note damage and batches.

    ``kept`` holds a code for every record folded: its line index, or, when
    its batch goes on (``more``), the index's bitwise not (see :func:`kept_line`;
    one int, not a tuple, per line of a long log). A damaged line is skipped
    and closes its batch (its ``more`` is unknown).
    ``torn_from`` is the index in ``kept`` where a trailing unfinished batch
    starts — a torn write only when no damaged line follows it (otherwise its
    last line was committed and then damaged, and the batch stays).
    """

    def __init__(self, memory: Any, lines: list[bytes], *, images: bool = True,
                 fast: FastDecoder | None = None) -> None:
        # memory: the store's MemoryKey being loaded (its fold, header and record checks)
        self.memory = memory
        self.lines = lines
        #: whether a line may name an image (False: the log's bytes name none, so no line
        #: is looked at for one: a scan of the whole log, not one per line)
        self.images = images
        #: what may read the lines faster (``log_lines.fast_decoder``)
        self.fast = fast
        self.kept: list[int] = []
        self.damaged: list[tuple[int, str]] = []
        self.torn_from: int | None = None
        self.sealed = False
        self.header_ok = False
        self.whole = 0  # complete lines up to the last whole batch
        self.ts: Any = ""

    def run(self) -> None:
        memory, lines = self.memory, self.lines
        self.sealed, problem = memory._header(lines[0], 1)
        if problem is not None:
            self.damaged.append((1, problem))
            # a sealed log keeps checking its lines even when its header is the damage
            self.sealed = len(lines) > 1 and verify(lines[1]) is True
        else:
            self.header_ok = True
        self.ts = memory.created
        sealed = self.sealed
        builder = memory._builder
        builder_apply = builder.apply
        flush = builder.flush_experiences
        decode = decode_mutation
        resolve = memory._images.resolve  # image references → data URLs
        image_mark = IMAGE_MARK
        images = self.images
        fast = self.fast
        open_batch: int | None = None  # index in kept where the open batch starts
        new_batch = True  # the next record starts a batch: its time is the batch's
        kept = self.kept
        # (kept in locals while the loop runs: one attribute write per log, not per line)
        whole, ts = 1, self.ts
        for index in range(1, len(lines)):
            raw = lines[index]
            rec, problem = parse_line(raw, sealed, fast)
            if problem is None:
                if rec.get("t") == "m":
                    try:
                        patch = rec.get("m")
                        if images and image_mark in raw:  # only such a line is resolved
                            patch = resolve(patch)
                        mutation = decode(patch)
                    except MutationDecodeError as exc:
                        problem = f"bad patch: {exc}"
                    else:
                        if new_batch:
                            builder.stamp = rec.get("ts", "")
                            new_batch = False
                        builder_apply(mutation)
                else:
                    problem = memory._apply_record(rec, index + 1)
            if problem is not None:
                self.damaged.append((index + 1, problem))
                open_batch = None  # a damaged line closes its batch: what came before stays
                new_batch = True
                flush()
                whole = index + 1
                continue
            if rec.get("more"):
                if open_batch is None:
                    open_batch = len(kept)
                kept.append(~index)
                continue
            kept.append(index)
            open_batch = None
            new_batch = True
            flush()
            whole = index + 1
            ts = rec.get("ts", ts)
        self.whole, self.ts = whole, ts
        if open_batch is not None:
            self.torn_from = open_batch

    def kept_before(self, end: int | None) -> list[int]:
        return self.kept if end is None else self.kept[:end]

    def header_line(self) -> bytes:
        """The header to save: the original (sealed) when it was good, else a new one."""
        raw = self.lines[0]
        if self.header_ok:
            return raw if verify(raw) else seal_bytes(raw.rstrip())
        memory = self.memory
        header = {"t": "header", "schema": SCHEMA, "key": memory.key,
                  "created": memory.created or now_iso()}
        return seal(json.dumps(header, ensure_ascii=True, separators=(",", ":"))).encode()
