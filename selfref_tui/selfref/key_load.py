"""Opening a key's log: torn writes cut back, damaged records skipped and salvaged.

Mixed into :class:`~selfref_tui.selfref.store.MemoryKey`; the store module's
docstring says what the log guarantees, this is where a log that broke them
is read. One pass (:class:`~selfref_tui.selfref.log_scan.LogScan`) verifies
and folds every line; then a torn tail (a write cut by a crash, never
reported committed) is cut off, and damaged lines (changed, unparsable or
invalid) are skipped, the original kept beside the log and the key saved
sealed without them by a writer. A log or meta file written by a newer
version is refused before anything is read or changed.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from selfref_tui.safety import name_line

from .checksum import verify
from .errors import (
    CorruptStoreError,
    SalvageReport,
    UnsafeStoreFileError,
    UnsupportedSchemaError,
    denied,
)
from .fsutil import atomic_write, check_dir, open_regular, read_regular
from .log_lines import SCHEMA, fast_decoder, keep_copy, resealed
from .log_scan import IMAGE_MARK, LogScan, kept_line

if TYPE_CHECKING:
    from ..context.history import HistoryBuilder


class KeyLoad:
    """Reads the log into the fold at open, mending what a crash or damage left."""

    if TYPE_CHECKING:  # what the key provides
        key: str
        key_dir: Path
        log_path: Path
        meta_path: Path
        writable: bool
        created: str
        updated: str
        salvage: SalvageReport | None
        _builder: HistoryBuilder
        _size: int

        def _warn(self, message: str) -> None: ...
        def _reset_state(self) -> None: ...
        def _apply_record(self, rec: dict[str, Any], lineno: int) -> str | None: ...

    def _read_meta(self) -> Any:
        """meta.json parsed, or None when missing, unreadable or not a regular file."""
        try:
            data = read_regular(self.meta_path)
            return None if data is None else json.loads(data)
        except (OSError, ValueError, RecursionError, UnsafeStoreFileError):
            return None  # a cache: rebuilt from the log

    def _check_meta_schema(self) -> None:
        meta = self._read_meta()
        schema = meta.get("schema") if isinstance(meta, dict) else None
        if isinstance(schema, int) and schema > SCHEMA:
            raise UnsupportedSchemaError(self._newer_message(self.meta_path, schema))

    def _newer_message(self, path: Path, schema: int) -> str:
        return (
            f"Conversation '{name_line(self.key)}' ({path}) was written by a newer selfref-tui "
            f"(schema {schema}); upgrade selfref-tui to open it — "
            f"this version (schema {SCHEMA}) will not change it."
        )

    def _load(self) -> None:
        check_dir(self.key_dir)  # a link to another key's folder is refused, never followed
        self._check_meta_schema()
        try:
            data = read_regular(self.log_path)
        except OSError as exc:
            raise denied(exc, self.log_path, "read") from exc
        if data is None:
            return
        lines = data.split(b"\n")
        tail = lines.pop()  # b"" when the file ends with a newline
        torn = "the last line is incomplete" if tail else None
        mended = ""
        if tail and len(tail) > 1 and verify(tail[:-1]):
            # A whole sealed record whose newline became another byte: damage to one
            # byte, not a cut write — the record stays.
            lines.append(tail[:-1])
            torn, mended = None, f"{self.log_path}: the newline after the last line was changed"
        if not lines:
            self._repair(0, torn or "the file is empty")
            return
        scan = LogScan(self, lines, images=IMAGE_MARK in data, fast=fast_decoder(data))
        scan.run()
        self.updated = scan.ts if isinstance(scan.ts, str) else self.created
        if scan.torn_from is not None:
            torn = torn or "the last batch is incomplete"
        whole = lines[: scan.whole]
        good_end = sum(map(len, whole)) + len(whole)  # the lines and their newlines
        self._size = good_end
        if scan.torn_from is not None:
            # Lines of the unfinished batch were folded already: fold again up to the
            # last whole batch (rare: only after a crash mid-batch).
            self._reset_state()
            self._refold(lines, scan.kept_before(scan.torn_from))
        if mended:
            self._warn(mended + ("; the file was repaired." if self.writable else
                                 "; open the conversation in the app to repair it."))
        if scan.damaged or (self.writable and (mended or not scan.sealed)):
            self._save_salvaged(data, lines, scan, torn)
        elif torn is not None:
            self._repair(good_end, torn)

    def _refold(self, lines: list[bytes], kept: list[int]) -> None:
        """Fold records already known to be valid (``LogScan.kept`` codes)."""
        for code in kept:
            index, more = kept_line(code)
            self._apply_record(json.loads(lines[index]), index + 1)
            if not more:
                self._builder.flush_experiences()
        self._builder.flush_experiences()

    def _save_salvaged(self, data: bytes, lines: list[bytes], scan: LogScan,
                       torn: str | None) -> None:
        """Report skipped records; a writer keeps the original and saves the key sealed."""
        kept = scan.kept_before(scan.torn_from)
        kept_as: Path | None = None
        saved = False
        if self.writable:
            if scan.damaged:
                stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
                kept_as = self.log_path.with_name(f"{self.log_path.name}.damaged-{stamp}")
                try:
                    keep_copy(kept_as, data)
                except OSError as exc:
                    raise denied(exc, kept_as, "write") from exc
            out = [scan.header_line()]
            for n, code in enumerate(kept):
                index, more = kept_line(code)
                # a batch goes on only to the very next line (a line between was damaged)
                last_of_batch = (n + 1 == len(kept) or not more
                                 or kept_line(kept[n + 1])[0] != index + 1)
                out.append(resealed(lines[index], more=not last_of_batch, had_more=more))
            payload = b"".join(line + b"\n" for line in out)
            try:
                atomic_write(self.log_path, payload, sync_dir=True)
            except OSError as exc:
                raise denied(exc, self.log_path, "write") from exc
            self._size = len(payload)
            saved = bool(scan.damaged)
            if torn is not None:
                self._warn(f"{self.log_path}: {torn}; dropped the unfinished last write "
                           "(it was never reported saved).")
        elif torn is not None:
            self._repair(self._size, torn)
        if scan.damaged:
            self.salvage = SalvageReport(self.log_path, scan.damaged, kept_as, saved)
            self._warn(str(self.salvage))

    def _header(self, raw: bytes, lineno: int) -> tuple[bool, str | None]:
        """(sealed, problem) for the header line; raises when the key must not be touched."""
        sealed = verify(raw)
        if sealed is False:
            return False, "the checksum does not match (the line was changed)"
        try:
            header = json.loads(raw)
        except (ValueError, RecursionError):
            return False, "the header line is not valid JSON"
        if (
            type(header) is not dict
            or header.get("t") != "header"
            or not isinstance(header.get("schema"), int)
        ):
            return False, "the first line is not a selfref-tui log header"
        schema = header["schema"]
        if schema > SCHEMA:
            raise UnsupportedSchemaError(self._newer_message(self.log_path, schema))
        if schema < 1:
            return False, f"unknown schema version {schema}"
        if header.get("key") != self.key:
            named = name_line(str(header.get("key")), 100)  # disk text, shown as a name
            raise CorruptStoreError(
                f"Conversation '{name_line(self.key)}' cannot use {self.log_path}: line "
                f"{lineno} says it holds key '{named}'; nothing was changed — move that file "
                "back to its own key's folder, or away.")
        self.created = header.get("created") if isinstance(header.get("created"), str) else ""
        return bool(sealed), None

    def _repair(self, good_end: int, reason: str) -> None:
        message = (
            f"{self.log_path}: {reason}; dropped the unfinished last write "
            "(it was never reported saved)."
        )
        if self.writable:
            try:
                fd = open_regular(self.log_path, os.O_WRONLY)
                try:
                    os.ftruncate(fd, good_end)
                    os.fsync(fd)
                finally:
                    os.close(fd)
                message += " The file was repaired."
            except OSError as exc:
                message += f" Could not repair the file ({exc.strerror})."
        self._warn(message)
        self._size = good_end
