"""``selfref-tui keys list``."""

from __future__ import annotations

import argparse
from typing import Any

from selfref_tui.cli.common import (
    EXIT_OK,
    add_command,
    add_group,
    common_flags,
    open_store,
    print_json,
    say,
)


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
        print("no memory keys yet")
    else:
        width = max(len(r["key"]) for r in rows)
        for info, row in zip(infos, rows, strict=True):
            problem = f"  ({info.problem})" if getattr(info, "problem", "") else ""
            origin = f"  ({info.origin_text()})" if info.origin_key else ""
            say(f"{row['key']:<{width}}  {row['messages']:>6} messages  {row['updated']}"
                f"{origin}{problem}")
    return EXIT_OK


def register(commands: Any) -> None:
    keys = add_group(commands, "keys", "memory keys")
    p = add_command(keys, "list", "memory keys with message counts and last activity (empty "
                    "ones too); the agent's fork keys only with --all")
    common_flags(p, key=False)
    p.add_argument("--all", action="store_true", help="include fork keys (main::fork::1, ...)")
    p.add_argument("--json", action="store_true",
                   help='[{"key","messages","updated"[,"origin":{"key","message"}]}]')
    p.set_defaults(handler=_keys_list)
