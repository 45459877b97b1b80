"""``selfref-tui compact``: a turn that asks the model to compact the key now."""

from __future__ import annotations

import argparse
from typing import Any

from selfref_tui.cli.ask import one_turn
from selfref_tui.cli.common import (
    EXIT_OK,
    CliError,
    add_command,
    common_flags,
    provider_flags,
    run_async,
)


async def _compact(args: argparse.Namespace) -> int:
    """``selfref-tui compact``: one turn without new text that asks the model to compact."""
    from selfref_tui.agent.events import CompactionFailed

    outcomes: list[Any] = []
    code = await one_turn(args, None, outcomes)
    failed = [e.reason for e in outcomes if isinstance(e, CompactionFailed)]
    if code == EXIT_OK and (failed or not outcomes):
        reason = failed[0] if failed else "the model answered without compacting"
        raise CliError(f"{reason}; run `selfref-tui compact` again, or ask it in words with "
                       "`selfref-tui ask`")
    return code


def register(commands: Any) -> None:
    compact = add_command(commands, "compact", "ask the model to compact the conversation's "
                          "context now (its summary replaces the conversation; nothing is deleted)")
    compact.epilog = ("The summary is applied as the model wrote it: [agent] review_compaction "
                      "is for the app, which shows it to edit, accept or cancel first.\n\n"
                      + (compact.epilog or ""))
    common_flags(compact)
    provider_flags(compact)
    compact.add_argument("--focus", metavar="TEXT",
                         help="what the summary should keep above all (for example: "
                              "\"the API decisions\"); the model reads it with the request")
    compact.add_argument("--allow-memory", action="store_true",
                         help='with [agent] memory_writes = "ask": keep the facts the summary '
                              "asks to remember as experiences (otherwise refused; nobody can "
                              "be asked here)")
    compact.set_defaults(handler=lambda args: run_async(_compact(args)), writes="compact")
