"""``selfref-tui pin N`` and ``unpin N``: messages every compaction keeps verbatim.

The numbers are the ones ``selfref-tui history`` prints. A pin is stored in
the key's log (a record, see ``selfref/store.py``); the next compaction's
summary carries the pinned messages whole, and so does every one after it,
until the message is unpinned.
"""

from __future__ import annotations

import argparse
from typing import Any

from selfref_tui.cli.common import (
    EXIT_OK,
    CliError,
    add_command,
    common_flags,
    existing_key,
    open_store,
    say,
    store_notes,
)


def _set(args: argparse.Namespace, pinned: bool) -> int:
    store = open_store(args)
    try:
        memory = store_notes(store.open(existing_key(store, args)))
        try:
            changed = memory.set_pinned(args.n, pinned)
        except IndexError:
            from selfref_tui.context.history import unknown_number

            raise CliError(unknown_number(memory.key, args.n, memory.last_number,
                                          memory.is_hidden(args.n))) from None
    finally:
        store.close()
    verb = "pinned" if pinned else "unpinned"
    if changed:
        say(f"{verb} message {args.n}" + (": every compaction keeps it verbatim" if pinned
                                          else ""))
    else:
        # "was already unpinned" said of a message never pinned
        say(f"message {args.n} is already pinned" if pinned
            else f"message {args.n} is not pinned")
    return EXIT_OK


def register(commands: Any) -> None:
    p = add_command(commands, "pin", "pin message N: every compaction keeps it verbatim "
                    "(`selfref-tui history` marks the pinned ones)")
    p.add_argument("n", metavar="N", type=int, help="a message number from "
                   "`selfref-tui history`")
    common_flags(p)
    p.set_defaults(handler=lambda args: _set(args, True), writes="pin")
    p = add_command(commands, "unpin", "unpin message N (compactions summarise it again)")
    p.add_argument("n", metavar="N", type=int, help="a message number from "
                   "`selfref-tui history`")
    common_flags(p)
    p.set_defaults(handler=lambda args: _set(args, False), writes="unpin")
