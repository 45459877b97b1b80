"""Rewind and branch, as the person asks for them: one call each, and what changed.

The fold does the work (``context.history``: a rewind patch restores the state
as of an earlier patch). This module commits the patch and says, for a front
end to show, what left the model's context: the messages (they stay readable,
marked rewound), the experiences and refs that go with them, the files the
model wrote after that point (their checkpoints, to restore on request) and
the MCP tools that ran there (they may have changed things nothing recorded).
A rewind is undone by another rewind, to the position of its own patch, so no
step loses work.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..context.history import HistoryEntry, unknown_number
from ..context.mutations import RewindMutation
from .checkpoints import FileChange, changes, combined, standing, state_of

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

MCP_PREFIX = "mcp__"


class RewindError(ValueError):
    """The rewind was not done; the message says why and what to do."""


@dataclass
class RewindReport:
    """What one rewind (or its undo) changed in the model's context."""

    key: str
    #: the message the context went back to just before (0 for an undo)
    message: int
    #: numbers of the messages that left the model's context (still readable, rewound)
    left: list[int] = field(default_factory=list)
    #: numbers of the messages that came back (an undo, or a rewind into a rewound stretch)
    back: list[int] = field(default_factory=list)
    #: experiences that left ({"id", "text"}) and those that came back
    forgotten: list[dict[str, Any]] = field(default_factory=list)
    remembered: list[dict[str, Any]] = field(default_factory=list)
    #: refs no longer offered, refs offered again (an undo), and refs whose content changed
    refs_gone: list[str] = field(default_factory=list)
    refs_back: list[str] = field(default_factory=list)
    refs_reverted: list[str] = field(default_factory=list)
    #: files the undone writes changed: what to put back (see checkpoints.restore)
    files: list[FileChange] = field(default_factory=list)
    #: MCP tools that ran in what left (they may have changed files or more)
    mcp_tools: list[str] = field(default_factory=list)
    #: the patch position that undoes this rewind (``undo``)
    undo_patch: int = -1
    #: the context was already there: nothing was committed (and there is nothing to undo)
    already: bool = False

    @property
    def changed(self) -> bool:
        return bool(self.left or self.back)

    def lines(self, *, restore_hint: str = "", files: bool = True,
              roots: Sequence[str | Path] | None = None) -> list[str]:
        """What changed, for people: plain text lines (untrusted: show them inert).

        ``restore_hint`` says how to restore the files listed (a CLI flag, a key);
        ``files`` False leaves them out (a dialog lists them); listed, each is said as
        it stands now (its file is read), one outside ``roots`` as one that cannot be
        restored.
        """
        out = [self.headline()]
        if self.forgotten:
            out.append("experiences taken back: " + "; ".join(
                f"{e.get('id')} {e.get('text')}" for e in self.forgotten))
        if self.remembered:
            out.append("experiences back: " + "; ".join(
                f"{e.get('id')} {e.get('text')}" for e in self.remembered))
        if self.refs_gone:
            out.append("refs no longer offered: " + ", ".join(self.refs_gone))
        if self.refs_back:
            out.append("refs offered again: " + ", ".join(self.refs_back))
        if self.refs_reverted:
            out.append("refs back to another version: " + ", ".join(self.refs_reverted))
        if self.files and files:
            out.append("files the model wrote there:")
            # as each file stands now: one changed since is not restored (the app's
            # dialog says so too)
            out += [f"  {c.path}  ({standing(c, roots) or c.what_restoring_does()})"
                    for c in self.files]
            if restore_hint:
                out.append(restore_hint)
        if self.mcp_tools:
            out.append(f"MCP tools ran there ({', '.join(self.mcp_tools)}): they may have "
                       "changed files or other things that nothing here can restore")
        return out

    def headline(self) -> str:
        def span(numbers: list[int]) -> str:
            first, last = numbers[0], numbers[-1]
            return (f"message {first}" if len(numbers) == 1
                    else f"{len(numbers)} messages ({first}–{last})")

        from selfref_tui.safety import name_line  # a name shown: none looks like another

        key = name_line(self.key)
        if self.already:
            return (f"conversation '{key}' is already rewound to just before message "
                    f"{self.message}: nothing changed")
        if self.message:
            what = (f"{span(self.left)} left the model's context (still readable, marked "
                    "rewound)" if self.left else "no message left the model's context")
            out = f"rewound conversation '{key}' to just before message {self.message}: {what}"
        else:
            out = f"undid the rewind of conversation '{key}'" + (
                f": {span(self.back)} back in the model's context" if self.back else "")
            if self.left:
                # an undo after the person went on: what they sent since leaves the
                # context, and an undo that said only what came back would hide it
                out += (f"; {span(self.left)} left it (still readable, marked rewound)"
                        if self.back else f": {span(self.left)} left the model's context "
                        "(still readable, marked rewound)")
        if self.message and self.back:
            out += f"; {span(self.back)} back in it"
        return out


def check_message(memory: Any, n: int) -> HistoryEntry | None:
    """Message ``n`` of the key, or a RewindError saying which numbers exist.

    None for a hidden number: it names no message to read, but it is still the
    point in the log where that message entered (the app's live item of such a
    call carries it), so a rewind may go just before it (where it is readable
    again, rewound: the rewind undid what hid it).
    """
    try:
        return memory.entry(n)
    except IndexError:
        if memory.is_hidden(n):
            return None
        raise RewindError(unknown_number(memory.key, n, memory.last_number, False)) from None


def rewind(memory: Any, n: int) -> RewindReport:
    """Take ``memory``'s context back to just before message ``n``; what changed.

    When it is there already, nothing is committed: a patch that changes nothing
    would become the rewind an undo takes back, and that undo would do nothing.
    """
    check_message(memory, n)
    patch = memory.rewind_patch(n)
    if memory.is_at(patch.to_patch):
        report = RewindReport(memory.key, n, already=True)
        # The files the model wrote there and the person kept (a rewind without
        # --restore-files, Esc in the app's dialog) are offered again: asking for the
        # same rewind is how they are restored now. Those already back are not.
        undone = [record for number, record in memory.file_writes() if number >= n]
        report.files = [change for change in changes(undone, undone)
                        if state_of(change.path) != change.before]
        return report
    return _commit(memory, patch, n)


def undo(memory: Any, report: RewindReport | None = None) -> RewindReport:
    """Undo the rewind ``report`` describes (default: the newest not undone yet), by a
    rewind to its own patch; what changed. Undo after undo walks back through the
    rewinds; an undo done after the person went on is undone like any rewind."""
    position = report.undo_patch if report is not None else memory.undoable_rewind
    if position is None or position < 0:
        from selfref_tui.safety import name_line

        raise RewindError(f"conversation '{name_line(memory.key)}' has no rewind to undo")
    return _commit(memory, RewindMutation(to_patch=position), 0)


def _commit(memory: Any, patch: RewindMutation, n: int) -> RewindReport:
    before = memory.states()
    experiences = {e["id"]: e for e in memory.experiences}
    refs = {ref_id: versions[-1].get("content") for ref_id, versions in memory.refs.items()}
    memory.commit([patch])
    report = RewindReport(memory.key, n, undo_patch=memory.patch_count - 1)
    report.left, report.back = memory.moved_since(before)
    now = {e["id"]: e for e in memory.experiences}
    report.forgotten = [e for i, e in experiences.items() if i not in now]
    report.remembered = [e for i, e in now.items() if i not in experiences]
    for ref_id, content in refs.items():
        versions = memory.refs.get(ref_id)
        if not versions:
            report.refs_gone.append(ref_id)
        elif versions[-1].get("content") != content:
            report.refs_reverted.append(ref_id)
    report.refs_back = [r for r in memory.refs if r not in refs]
    left, back = set(report.left), set(report.back)
    writes = memory.file_writes()
    undone = [record for number, record in writes if number in left]
    redone = [record for number, record in writes if number in back]
    # what the model's writes since the first undone one left, those out of the context
    # now (an earlier rewind's, whose files the person kept): restoring over it takes
    # nobody's work; over what a write still in the context left, it would
    first = next((i for i, (number, _) in enumerate(writes) if number in left), len(writes))
    later = [record for number, record in writes[first:]
             if number in left or _rewound(memory, number)]
    report.files = combined(changes(undone, later), [c.reversed() for c in changes(redone)])
    names = set()
    for number in report.left:
        for call in memory.message(number).get("tool_calls") or ():
            name = str((call.get("function") or {}).get("name", "")) if isinstance(
                call, dict) else ""
            if name.startswith(MCP_PREFIX):
                names.add(name)
    report.mcp_tools = sorted(names)
    return report


def _rewound(memory: Any, n: int) -> bool:
    try:
        return bool(memory.entry(n).rewound)
    except IndexError:  # a hidden number: no message of its own to say
        return False
