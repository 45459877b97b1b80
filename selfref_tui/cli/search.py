"""``selfref-tui search TEXT``: every conversation's messages that hold TEXT."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from typing import Any

from selfref_tui.cli.common import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    add_command,
    app_config,
    common_flags,
    err,
    exit_now,
    print_json,
    say,
    say_lines,
)
from selfref_tui.context.local_time import shown_time

#: matches shown per conversation unless ``--limit`` says otherwise: a word that every
#: message holds asks for the first screenful and the count, not 100,000 lines
DEFAULT_LIMIT = 20


def _search(args: argparse.Namespace) -> int:
    import gc

    if args.limit < 0:
        raise CliError("--limit must be 0 (every match) or more", EXIT_USAGE)
    # A search that folds a long log makes about ten objects per message, none of them
    # garbage until it ends: the collector's passes over them would be a tenth of its time.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _run(args)
    finally:
        if collecting:
            gc.enable()


def _run(args: argparse.Namespace) -> int:
    from selfref_tui.context.recall import RecallError
    from selfref_tui.selfref.conversation_search import ConversationSearch
    from selfref_tui.selfref.keys import validate_key

    config = app_config(args)
    # `--key ""` is an empty name, refused: it searched every conversation
    keys = [validate_key(args.key)] if args.key is not None else None
    program = bool(getattr(args, "program", False))
    # The caches a fold makes are written when the search closes: after the answer; as
    # the program, by a child process, so that the command exits with its answer.
    search = ConversationSearch(config.data_dir, source=config.data_dir_source)
    try:
        if keys is not None and keys[0] not in search.keys(forks=True):
            raise CliError(f"there is no conversation '{keys[0]}'; see `selfref-tui keys list`")
        try:
            found = search.search(args.text, keys=keys, limit=args.limit or None,
                                  forks=args.all)
        except RecallError as exc:
            raise CliError(str(exc), EXIT_USAGE) from None
        code = _show(args, found)
    finally:
        search.close(detach=program)
    if program:
        # Freeing what a fold of 100,000 messages made, object by object, is 0.1-0.2 s
        # between the answer and the exit; the process ends with them instead.
        exit_now(code)
    return code


def _show(args: argparse.Namespace, found: Any) -> int:
    from selfref_tui.safety import name_line

    for problem in found.problems:
        err(problem)
    more = found.total - len(found.matches)
    if args.json:
        print_json([match.as_dict() for match in found.matches])
        if more:
            err(f"{more:,} more match{'es' if more != 1 else ''} (at most {args.limit} per "
                "conversation shown; --limit 0 for all)")
        return EXIT_OK if found.matches else EXIT_ERROR
    if not found.matches:
        where = f"conversation '{name_line(args.key)}'" if args.key else "any conversation"
        print(f"no message in {where} holds all of: {args.text}")
        return EXIT_ERROR
    say_lines(_lines(found.matches))
    shown, total = len(found.matches), found.total
    conversations = len(found.counts)
    summary = (f"{total:,} message{'s' if total != 1 else ''} in {conversations:,} "
               f"conversation{'s' if conversations != 1 else ''}")
    if more:
        summary += (f" ({shown:,} shown: at most {args.limit} per conversation; {more:,} "
                    "more: --limit 0 for all)")
    say(summary)
    return EXIT_OK


#: what a line says of a match (rewound, compacted)
_FLAGS = {(rewound, compacted): "".join(f" ({flag})" for flag, on in (
    ("rewound", rewound), ("compacted", compacted)) if on)
    for rewound in (False, True) for compacted in (False, True)}


def _lines(matches: list[Any]) -> Iterator[str]:
    """A line per match, as they are made."""
    from selfref_tui.safety import name_line

    # a batch's messages share its time: each time is made local once (every match of
    # 100,000 messages printed: 0.1 s less)
    times: dict[str, str] = {}
    names: dict[str, str] = {}  # each name made shown once ("ma\u200bin" never as "main")
    for match in matches:
        flags = _FLAGS[match.rewound, match.compacted]
        when = times.get(match.time)
        if when is None:
            when = times[match.time] = shown_time(match.time)
        name = names.get(match.key)
        if name is None:
            name = names[match.key] = name_line(match.key)
        # two spaces before the snippet: a colon after "17:18" read as a time cut short
        yield f"{name} #{match.n} {match.role} {when}{flags}  {match.snippet}"


def register(commands: Any) -> None:
    p = add_command(commands, "search", "find the messages holding TEXT in every "
                    "conversation (or --key K): every word, and every \"quoted phrase\", must "
                    "occur (case aside); newest first, with their numbers")
    p.epilog = ("Exit status 1 when nothing matches (as grep). Rewound and compacted messages "
                "are searched too, and marked.\n\n" + (p.epilog or ""))
    p.add_argument("text", metavar="TEXT", help="the words to find")
    p.add_argument("--all", action="store_true", help="the agent's fork conversations too")
    p.add_argument("--limit", metavar="N", type=int, default=DEFAULT_LIMIT,
                   help=f"at most N matches shown per conversation, newest first (default: "
                        f"{DEFAULT_LIMIT}; 0: every one); the count is of them all, and says "
                        "how many more there are")
    p.add_argument("--json", action="store_true",
                   help='[{"key","n","role","time","snippet","rewound","compacted"}], at most '
                        '--limit per conversation (how many more: one line on stderr)')
    common_flags(p, key_help="search only this conversation (default: every one)")
    p.set_defaults(handler=_search)
