"""``selfref-tui refs list|show|export``."""

from __future__ import annotations

import argparse
from typing import Any

from selfref_tui.cli.common import (
    EPILOG,
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    add_command,
    add_group,
    common_flags,
    print_json,
    read_memory,
    say,
)
from selfref_tui.context.local_time import shown_time


def _current_ref(args: argparse.Namespace) -> dict:
    from selfref_tui.safety import name_line

    memory = read_memory(args)
    occurrences = memory.refs.get(args.ref_id)
    if not occurrences:
        known = ", ".join(sorted(memory.refs)[:8]) or "none yet"
        raise CliError(f"no ref '{args.ref_id}' in conversation '{name_line(memory.key)}' "
                       f"(known: {known}); see `selfref-tui refs list`")
    return occurrences[-1]


def _refs_list(args: argparse.Namespace) -> int:
    from selfref_tui.safety import name_line

    memory = read_memory(args)
    rows = []
    for ref_id, occurrences in memory.refs.items():
        current = occurrences[-1]
        content = current.get("content", "")
        rows.append({"id": ref_id, "chars": len(content),
                     "lines": content.count("\n") + 1 if content else 0,
                     "created": current.get("created", "")})
    if args.json:
        print_json(rows)
    elif not rows:
        print(f"no refs in conversation '{name_line(memory.key)}'")
    else:
        width = max(len(r["id"]) for r in rows)
        for r in rows:
            lines = f"{r['lines']:>5} line{'s' if r['lines'] != 1 else ' '}"
            when = shown_time(r["created"]) if r["created"] else ""
            say(f"{r['id']:<{width}}  {r['chars']:>7} chars  {lines}  {when}")
    return EXIT_OK


def _refs_show(args: argparse.Namespace) -> int:
    content = _current_ref(args).get("content", "")
    say(content, end="" if content.endswith("\n") else "\n")
    return EXIT_OK


def _refs_export(args: argparse.Namespace) -> int:
    from selfref_tui.refs.export import export_plan
    from selfref_tui.selfref.export_path import export_target, is_taken, link_note
    from selfref_tui.selfref.file_walk import FileWriteError, PathNotAllowed
    from selfref_tui.selfref.files import write_file

    ref = _current_ref(args)
    plan = export_plan(args.ref_id, ref.get("content", ""))
    try:
        target = export_target(args.path, plan.suggested_name)
    except ValueError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    if is_taken(target) and args.mode == "write" and not args.force:
        raise CliError(f"{target} already exists{link_note(target)}; pass --force to "
                       "overwrite it or --mode append to add to it")
    try:
        written = write_file(target, plan.content, mode=args.mode, roots=None)
    except (FileWriteError, PathNotAllowed) as exc:
        raise CliError(str(exc)) from None
    verb = "appended" if args.mode == "append" else "wrote"
    say(f"{verb} {len(plan.content)} chars of ref '{args.ref_id}' to {written}")
    return EXIT_OK


def register(commands: Any) -> None:
    refs = add_group(commands, "refs", "list, show and export refs")
    p = add_command(refs, "list", "refs of a conversation: id, size, creation time")
    common_flags(p)
    p.add_argument("--json", action="store_true", help='[{"id","chars","lines","created"}]')
    p.set_defaults(handler=_refs_list)
    p = add_command(refs, "show", "print a ref's current content")
    p.add_argument("ref_id", metavar="ID")
    common_flags(p)
    p.set_defaults(handler=_refs_show)
    p = add_command(refs, "export", "write a ref to a file (a lone code fence is stripped)")
    p.epilog = ("A PATH that is a folder, or ends with /, gets a file named after the ref "
                "inside it (the folder is created).\nAn ID starting with - goes after --:  "
                "selfref-tui refs export -- -my-id out.txt\n\n" + EPILOG)
    p.add_argument("ref_id", metavar="ID", help="the ref's id (after -- if it starts with -)")
    p.add_argument("path", metavar="PATH",
                   help="a file, or a folder (existing, or ending with /) for the ref's name")
    p.add_argument("--mode", choices=("write", "append"), default="write")
    p.add_argument("--force", action="store_true", help="overwrite an existing file")
    common_flags(p)
    p.set_defaults(handler=_refs_export)
