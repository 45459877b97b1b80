"""The key's records folded into its state: refs, fds, forks, pins, file writes, summary.

Mixed into :class:`~selfref_tui.selfref.store.MemoryKey`. Patches go to the
history fold (:class:`~selfref_tui.context.history.HistoryBuilder`); the other
records land here, the same way at load and after a commit (a commit folds
what it wrote, decoded again, so memory equals a reload). What a rewind must
take back (a ref's new version, the summary, the compaction count) is
journaled in the history fold with what undoes it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..context.history import HistoryBuilder
from ..context.mutations import ContextMutation, ContextSummaryMutation, MutationDecodeError
from .decode import decode_mutation
from .log_lines import LINE_ONLY, check_record

if TYPE_CHECKING:
    from .images import ImageStore


class KeyFold:
    """One record at a time into the key's state, each change a rewind can undo."""

    if TYPE_CHECKING:  # what the key provides
        summary: dict[str, Any] | None
        refs: dict[str, list[dict[str, Any]]]
        fds: dict[str, dict[str, Any]]
        forks: dict[str, dict[str, Any]]
        origin: dict[str, Any] | None
        last_compacted: int
        _file_writes: list[tuple[int, dict[str, Any]]]
        _pins: set[int]
        _builder: HistoryBuilder
        _images: ImageStore

    def _reset_state(self) -> None:
        self.summary = None
        self.refs, self.fds, self.forks = {}, {}, {}
        self._file_writes, self.origin = [], None
        self._pins = set()
        self._builder = HistoryBuilder(self._archive_working)
        self.last_compacted = 0

    def _apply_record(self, rec: dict[str, Any], lineno: int) -> str | None:
        """Fold one log record; a description of the problem if it has the wrong shape."""
        kind = rec.get("t")
        if kind == "m":
            try:
                mutation = decode_mutation(self._images.resolve(rec.get("m")))
            except MutationDecodeError as exc:
                return f"bad patch: {exc}"
            self._builder.stamp = rec.get("ts", "")
            self._builder.apply(mutation)
            return None
        problem = check_record(rec)
        if problem is not None:
            return problem
        entry = {k: v for k, v in rec.items() if k not in LINE_ONLY}
        if kind == "ref":
            self.refs.setdefault(entry["id"], []).append(entry)
            self._builder.journal_entry(self._undo_ref, entry["id"])
        elif kind == "fd":
            self.fds[entry["id"]] = entry
        elif kind == "fork":
            self.forks[entry["fork_id"]] = entry
        elif kind == "file":
            # committed with its call's result, the newest numbered message
            self._file_writes.append((self._builder.last_number, entry))
        elif kind == "pin":
            if entry["pinned"]:
                self._pins.add(entry["n"])
            else:
                self._pins.discard(entry["n"])
        else:
            self.origin = entry
        return None

    def _archive_working(self, mutation: ContextMutation) -> None:
        """Before a compaction or replace: its marker, summary and count, each undoable."""
        builder = self._builder
        hidden = sum(1 for message in builder.messages if message.get("role") != "system")
        summary: dict[str, Any] = {}
        if isinstance(mutation, ContextSummaryMutation):
            compaction = mutation.summary_message.get("compaction")
            summary = dict(compaction) if isinstance(compaction, dict) else {}
            builder.journal_entry(self._undo_attr, "summary", self.summary)
            self.summary = summary
        elif not hidden:
            return  # a replace on an empty transcript (a fork's seed) hides nothing: no marker
        #: how many messages the latest compaction took out of the model's view
        builder.journal_entry(self._undo_attr, "last_compacted", self.last_compacted)
        self.last_compacted = hidden
        builder.add_marker(
            {"role": "compaction", "summary": summary, "messages_before": self.last_compacted,
             "time": builder.stamp}
        )

    def _undo_ref(self, entry: tuple[Any, ...]) -> tuple[Any, ...]:
        ref_id = entry[1]
        versions = self.refs[ref_id]
        version = versions.pop()
        if not versions:
            del self.refs[ref_id]
        return (self._redo_ref, ref_id, version)

    def _redo_ref(self, entry: tuple[Any, ...]) -> tuple[Any, ...]:
        _, ref_id, version = entry
        self.refs.setdefault(ref_id, []).append(version)
        return (self._undo_ref, ref_id)

    def _undo_attr(self, entry: tuple[Any, ...]) -> tuple[Any, ...]:
        _, name, value = entry
        current = getattr(self, name)
        setattr(self, name, value)
        return (self._undo_attr, name, current)
