"""``selfref-tui history``, ``rewind`` and ``branch``: the person's side of the log.

``history`` prints the key's messages with the numbers every other command
takes ("message N"); ``rewind N`` takes the model's context back to just before
message N (nothing is deleted: ``history --all`` still shows what left it, and
``rewind --undo`` brings it back); ``branch N --name NEW`` starts a new key from
the state before message N, leaving the original as it is.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from typing import Any

from selfref_tui.cli.common import (
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    add_command,
    app_config,
    common_flags,
    existing_key,
    key_of,
    open_store,
    print_json,
    read_memory,
    say,
    say_lines,
    store_notes,
)
from selfref_tui.context.local_time import SECOND, shown_time


def entry_row(entry: Any) -> dict[str, Any]:
    """One message as ``history --json`` prints it (images as short lines of text)."""
    from selfref_tui.context.images import readable

    message = entry.message
    row: dict[str, Any] = {
        "n": entry.n, "role": entry.role, "content": readable(message.get("content")),
        "time": entry.time, "rewound": entry.rewound, "compacted": entry.compacted,
        "pinned": entry.pinned,
    }
    calls = message.get("tool_calls")
    if calls:
        row["tool_calls"] = [
            {"id": str(c.get("id", "")), "name": str((c.get("function") or {}).get("name", "")),
             "arguments": str((c.get("function") or {}).get("arguments", ""))}
            for c in calls if isinstance(c, dict)
        ]
    if entry.role == "tool":
        from selfref_tui.context.tool_errors import tool_failed

        row["tool_call_id"] = str(message.get("tool_call_id", ""))
        if tool_failed(message):
            row["error"] = True
    for flag in ("failed", "truncated", "cancelled"):
        if message.get(flag):
            row[flag] = True
    return row


def _history(args: argparse.Namespace) -> int:
    from selfref_tui.safety import name_line

    memory = read_memory(args)
    entries = [e for e in memory.entries() if args.all or not e.rewound]
    rows = [entry_row(e) for e in entries]
    if args.json:
        print_json(rows, one_per_line=True)
        return EXIT_OK
    if not rows:
        print(f"no messages in conversation '{name_line(memory.key)}'")
        return EXIT_OK
    hidden = sum(1 for e in memory.entries() if e.rewound) if not args.all else 0
    say_lines(_history_lines(rows, hidden))
    return EXIT_OK


def _history_lines(rows: list[dict[str, Any]], hidden: int) -> Iterator[str]:
    """``history``'s lines, as they are made: written a block at a time (a write and a
    flush per line were a third of the command at 20,000 messages), each batch's time
    made local once (a turn's messages share it)."""
    times: dict[Any, str] = {}
    for row in rows:
        marks = [m for m in ("rewound", "compacted", "pinned", "failed", "truncated", "error")
                 if row.get(m)]
        when = times.get(row["time"])
        if when is None:
            when = times[row["time"]] = shown_time(row["time"], SECOND)
        yield f"#{row['n']}  {row['role']}  {when}" + (f"  [{', '.join(marks)}]" if marks
                                                       else "")
        if row["content"]:
            yield row["content"]
        for call in row.get("tool_calls", ()):
            yield f"→ {call['name']}({call['arguments']})"
        yield ""
    if hidden:
        yield f"({hidden} rewound messages not shown; `selfref-tui history --all` shows them)"


def _rewind(args: argparse.Namespace) -> int:
    from selfref_tui.safety import key_option
    from selfref_tui.selfref.rewind import RewindError, rewind, undo

    if args.n is None and not args.undo:
        raise CliError("give the message number to rewind to (see `selfref-tui history`), "
                       "or --undo", EXIT_USAGE)
    store = open_store(args)
    try:
        memory = store_notes(store.open(existing_key(store, args)))
        try:
            report = undo(memory) if args.undo else rewind(memory, args.n)
        except RewindError as exc:
            raise CliError(str(exc)) from None
        hint = "" if args.restore_files else (
            "they are left as they are; rewind with --restore-files to restore them")
        roots = _roots(args) if report.files else None
        if args.json:
            row = rewind_row(report, roots)
            done = _restore(args, memory, report, quiet=True) if (
                args.restore_files and report.files) else None
            if done is not None:
                row |= {"restored": done.restored, "removed": done.removed,
                        "skipped": [{"path": p, "why": why} for p, why in done.skipped]}
            print_json(row)
            if done is not None:
                _skipped(args, report, done)
            return EXIT_OK
        for line in report.lines(restore_hint=hint, roots=roots):
            say(line)
        if args.restore_files and report.files:
            _skipped(args, report, _restore(args, memory, report))
        if report.message and not report.already:
            say(f"to undo: selfref-tui rewind --undo {key_option(memory.key)}")
    finally:
        store.close()
    return EXIT_OK


def rewind_row(report: Any, roots: Any) -> dict[str, Any]:
    """``rewind --json``: what the rewind (or undo) changed, the fields ``--help`` lists."""
    from selfref_tui.selfref.checkpoints import standing

    return {
        "key": report.key, "message": report.message or None, "undo": not report.message,
        "already": report.already, "left": report.left, "back": report.back,
        "experiences_left": report.forgotten, "experiences_back": report.remembered,
        "refs_left": report.refs_gone, "refs_back": report.refs_back,
        "refs_reverted": report.refs_reverted,
        "files": [{"path": c.path, "restoring": standing(c, roots) or c.what_restoring_does()}
                  for c in report.files],
        "mcp_tools": report.mcp_tools,
    }


def _restore(args: argparse.Namespace, memory: Any, report: Any, *,
             quiet: bool = False) -> Any:
    """The files of ``report`` put back; said line by line unless ``quiet`` (--json)."""
    from selfref_tui.selfref.checkpoints import restore

    done = restore(memory.checkpoints, report.files, _roots(args))
    if not quiet:
        for line in done.lines():
            say(line)
    return done


def _roots(args: argparse.Namespace) -> Any:
    """Where the model may write (the files a rewind names are said and restored within
    them); imported only for a rewind that names files: most name none."""
    from selfref_tui.selfref.file_walk import write_roots

    return write_roots(app_config(args).agent.allowed_roots)


def _skipped(args: argparse.Namespace, report: Any, done: Any) -> None:
    """A file left as it was makes the command fail (exit 1), the rest being done."""
    if done.skipped:
        raise CliError(f"{len(done.skipped)} of {len(report.files)} files were not restored "
                       "(see above); " + ("the rewind was undone" if args.undo
                                         else "the conversation was rewound"))


def _branch(args: argparse.Namespace) -> int:
    from selfref_tui.safety import name_line
    from selfref_tui.selfref.errors import InvalidKeyError
    from selfref_tui.selfref.keys import validate_name

    new = validate_name(args.name)
    key = key_of(args)
    store = open_store(args)
    try:
        source = store_notes(store.open(key, write=False))
        if not 1 <= args.n <= source.last_number:
            from selfref_tui.context.history import unknown_number

            raise CliError(unknown_number(key, args.n, source.last_number, False))
        try:
            branch = store.branch(key, args.n, new)
        except InvalidKeyError as exc:
            raise CliError(str(exc), EXIT_USAGE) from None
        count = branch.message_count
    finally:
        store.close()
    say(f"branched conversation '{name_line(new)}' from '{name_line(key)}' before message "
        f"{args.n}: {count} message{'' if count == 1 else 's'}, with the experiences and refs "
        f"of that point ('{name_line(key)}' is unchanged)")
    return EXIT_OK


def register(commands: Any) -> None:
    p = add_command(commands, "history", "the conversation's messages, numbered from 1 as the "
                    "person reads them (other commands take these numbers)")
    common_flags(p)
    p.add_argument("--all", action="store_true", help="include rewound messages (marked)")
    p.add_argument("--json", action="store_true",
                   help='[{"n","role","content","time","rewound","compacted",...}]; a tool '
                        'result also has "tool_call_id", and "error": true when the call failed')
    p.set_defaults(handler=_history)

    p = add_command(commands, "rewind", "take the model's context back to just before "
                    "message N (nothing is deleted; --undo brings it back)")
    p.add_argument("n", metavar="N", type=int, nargs="?", help="a message number from "
                   "`selfref-tui history`")
    p.add_argument("--undo", action="store_true", help="undo the conversation's last rewind "
                   "(again: the one before it)")
    p.add_argument("--restore-files", action="store_true",
                   help="also put back the files the model wrote after that point (a file "
                        "changed since by someone else is left as it is, and said)")
    p.add_argument("--json", action="store_true",
                   help='{"key","message" (null: an undo),"undo","already","left","back",'
                        '"experiences_left","experiences_back","refs_left","refs_back",'
                        '"refs_reverted","files":[{"path","restoring"}],"mcp_tools"'
                        '[,"restored","removed","skipped":[{"path","why"}] with '
                        '--restore-files]}; "left" and "back" are message numbers')
    common_flags(p)
    p.set_defaults(handler=_rewind, writes="rewind")

    p = add_command(commands, "branch", "start a new conversation from the state just before "
                    "message N of this one (this one is not changed)")
    p.add_argument("n", metavar="N", type=int, help="a message number from "
                   "`selfref-tui history`")
    p.add_argument("--name", metavar="NEW", required=True, help="the new conversation's name")
    common_flags(p)
    p.set_defaults(handler=_branch, writes="branch")
