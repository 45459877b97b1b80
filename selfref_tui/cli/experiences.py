"""``selfref-tui experiences list|forget|add``."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from selfref_tui.cli.common import (
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    add_command,
    add_group,
    common_flags,
    key_of,
    open_store,
    print_json,
    read_memory,
    say,
    store_notes,
)


def _experiences_list(args: argparse.Namespace) -> int:
    from selfref_tui.context.experiences import describe_provenance

    memory = read_memory(args)
    rows = [{"id": e["id"], "text": e["text"], "created": e.get("created"),
             "source": e.get("source"), "message": e.get("message"),
             "edited": e.get("edited")} for e in memory.experiences]
    if args.json:
        print_json(rows)
    elif not rows:
        from selfref_tui.safety import name_line

        print(f"no experiences in conversation '{name_line(memory.key)}'")
    else:
        for exp, row in zip(memory.experiences, rows, strict=True):
            about = describe_provenance(exp)
            say(f"{row['id']}  {row['text']}" + (f"  ({about})" if about else ""))
    return EXIT_OK


def _session(args: argparse.Namespace) -> tuple[Any, Any]:
    from selfref_tui.selfref.session import SelfRefSession

    store = open_store(args)
    return store, SelfRefSession(store_notes(store.open(key_of(args))))


def _change(args: argparse.Namespace, change: Callable[[Any], Any],
            done: Callable[[Any], str]) -> int:
    """One change through a session (``change(session)``), committed; ``done(result)`` printed.

    ``change`` returning False means the experience named is not there.
    """
    store, session = _session(args)
    try:
        result = change(session)
        if result is False:
            raise CliError(f"no experience '{args.exp_id}' in conversation '{session.key}'; see "
                           "`selfref-tui experiences list`")
        session.commit(session.collect_context_mutations())
    finally:
        store.close()
    print(done(result))
    return EXIT_OK


def _experiences_forget(args: argparse.Namespace) -> int:
    return _change(args, lambda session: session.forget(args.exp_id),
                   lambda _: f"forgot {args.exp_id}")


def _experiences_add(args: argparse.Namespace) -> int:
    if not args.text.strip():
        raise CliError("the experience text is empty", EXIT_USAGE)
    return _change(args, lambda session: session.remember(args.text), str)


def _experiences_edit(args: argparse.Namespace) -> int:
    if not args.text.strip():
        raise CliError("the new text is empty; to remove the experience use `selfref-tui "
                       "experiences forget`", EXIT_USAGE)
    return _change(args, lambda session: session.edit(args.exp_id, args.text),
                   lambda _: f"edited {args.exp_id}")


def register(commands: Any) -> None:
    exps = add_group(commands, "experiences", "durable experiences in the system prompt")
    p = add_command(exps, "list", "experiences of a conversation")
    common_flags(p)
    p.add_argument("--json", action="store_true",
                   help='[{"id","text","created","source","message","edited"}] (source: '
                        'agent, person or compaction; message: the number it came from)')
    p.set_defaults(handler=_experiences_list)
    p = add_command(exps, "forget", "remove an experience by id")
    p.add_argument("exp_id", metavar="EXP_ID")
    common_flags(p)
    p.set_defaults(handler=_experiences_forget, writes="experiences forget")
    p = add_command(exps, "add", "add an experience; prints its id")
    p.add_argument("text", metavar="TEXT")
    common_flags(p)
    p.set_defaults(handler=_experiences_add, writes="experiences add")
    p = add_command(exps, "edit", "correct an experience's text (its id and provenance stay)")
    p.add_argument("exp_id", metavar="EXP_ID")
    p.add_argument("text", metavar="TEXT")
    common_flags(p)
    p.set_defaults(handler=_experiences_edit, writes="experiences edit")
