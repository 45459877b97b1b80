"""``selfref-tui keys list`` and ``keys instructions``."""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any

from selfref_tui.cli.common import (
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    add_command,
    add_group,
    common_flags,
    open_store,
    print_json,
    say,
    store_notes,
)
from selfref_tui.context.local_time import shown_time


def _keys_list(args: argparse.Namespace) -> int:
    infos = open_store(args).keys(forks=args.all)
    rows: list[dict[str, Any]] = [
        {"key": i.key, "messages": i.messages, "updated": i.updated} for i in infos]
    for info, row in zip(infos, rows, strict=True):
        if info.origin_key:
            row["origin"] = {"key": info.origin_key, "message": info.origin_message}
    if args.json:
        print_json(rows)
    elif not rows:
        print("no conversations yet")
    else:
        from selfref_tui.safety import name_line

        names = [name_line(r["key"]) for r in rows]  # "ma\u200bin" never shown as "main"
        width = max(len(n) for n in names)
        for info, row, name in zip(infos, rows, names, strict=True):
            problem = f"  ({info.problem})" if getattr(info, "problem", "") else ""
            origin = f"  ({info.origin_text()})" if info.origin_key else ""
            count = row["messages"]
            say(f"{name:<{width}}  {count:>6} message{'' if count == 1 else 's'}  "
                f"{shown_time(row['updated']) if row['updated'] else ''}"
                f"{origin}{problem}")
    return EXIT_OK


def _keys_instructions(args: argparse.Namespace) -> int:
    """Print a conversation's instructions, or set (TEXT, ``-`` for stdin) or clear them."""
    import sys

    from selfref_tui.safety import name_line, shell_word
    from selfref_tui.selfref.key_settings import check_instructions
    from selfref_tui.selfref.keys import validate_key

    key = validate_key(args.conversation)
    if args.text is not None and args.clear:
        raise CliError("give TEXT or --clear, not both", EXIT_USAGE)
    writing = args.text is not None or args.clear
    if writing and getattr(args, "read_only", False):
        raise CliError("`keys instructions` with TEXT or --clear changes the conversation, and "
                       "--read-only was given; leave --read-only out", EXIT_USAGE)
    store = open_store(args)
    try:
        if not writing:
            if key not in {info.key for info in store.keys(forks=True)}:
                raise CliError(f"there is no conversation '{name_line(key)}'; see "
                               "`selfref-tui keys list`")
            memory = store_notes(store.open(key, write=False))
            text = memory.settings.instructions
            if text:
                say(text)
            else:
                print(f"no instructions for '{name_line(key)}'; set them with "
                      f"`selfref-tui keys instructions {shell_word(key)} TEXT`")
            return EXIT_OK
        text = "" if args.clear else (sys.stdin.read() if args.text == "-" else args.text)
        try:
            text = check_instructions(text)
        except ValueError as exc:
            raise CliError(str(exc), EXIT_USAGE) from None
        memory = store_notes(store.open(key))  # its lock: refused while the app writes it
        store.create(key)
        memory.save_settings(replace(memory.settings, instructions=text))
    finally:
        store.close()
    print(f"instructions for '{name_line(key)}' {'set' if text else 'cleared'}")
    return EXIT_OK


def register(commands: Any) -> None:
    keys = add_group(commands, "keys", "conversations (memory keys)")
    p = add_command(keys, "list", "conversations with message counts and last activity (empty "
                    "ones too); the agent's forks only with --all")
    common_flags(p, key=False)
    p.add_argument("--all", action="store_true",
                   help="include the agent's fork conversations (main::fork::1, ...)")
    p.add_argument("--json", action="store_true",
                   help='[{"key","messages","updated"[,"origin":{"key","message"}]}]')
    p.set_defaults(handler=_keys_list)
    p = add_command(keys, "instructions", "a conversation's own instructions, added to its "
                    "system prompt: print them, set them (TEXT, or - to read stdin) or --clear")
    p.add_argument("conversation", metavar="K", help="the conversation (memory key)")
    p.add_argument("text", metavar="TEXT", nargs="?", default=None,
                   help="the new instructions; - reads them from stdin")
    p.add_argument("--clear", action="store_true", help="remove them")
    common_flags(p, key=False)
    p.set_defaults(handler=_keys_instructions)
