"""``selfref-tui export``: a whole conversation as Markdown or JSON, to stdout or a file."""

from __future__ import annotations

import argparse
from typing import Any

from selfref_tui.cli.common import (
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    add_command,
    common_flags,
    key_of,
    open_store,
    say,
    store_notes,
)


def _export(args: argparse.Namespace) -> int:
    from selfref_tui.context.conversation_export import (
        images_folder,
        suggested_name,
        to_json,
        to_markdown,
    )
    from selfref_tui.safety import json_inert, name_line
    from selfref_tui.selfref.export_beside import write_beside
    from selfref_tui.selfref.export_path import export_target, is_taken, link_note
    from selfref_tui.selfref.file_walk import FileWriteError, PathNotAllowed
    from selfref_tui.selfref.files import refuse_read_only, write_file

    key = key_of(args)
    if args.json and args.format == "md":
        raise CliError("--json and --format md ask for two formats; give one", EXIT_USAGE)
    fmt = args.format or ("json" if args.json or (args.output or "").lower().endswith(".json")
                          else "md")
    store = open_store(args)
    try:
        if key not in {info.key for info in store.keys(forks=True)}:
            raise CliError(f"there is no conversation '{name_line(key)}'; see "
                           "`selfref-tui keys list`")
        memory = store_notes(store.open(key, write=False))
        entries, compactions = memory.entries(), memory.compactions()
    finally:
        store.close()
    if args.output is None:  # stdout: the text as it is (images are named, not written)
        if fmt == "json":
            text = json_inert(to_json(key, entries, compactions=compactions))
        else:
            text = to_markdown(key, entries, images_dir=None, compactions=compactions).text
        say(text, end="")  # on a terminal, control characters shown, not sent
        return EXIT_OK
    try:
        target = export_target(args.output, suggested_name(key, fmt))
    except ValueError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    if is_taken(target) and not args.force:
        raise CliError(f"{target} already exists{link_note(target)}; pass --force to "
                       "overwrite it")
    images = []
    if fmt == "json":
        # no raw control character, same value
        text = json_inert(to_json(key, entries, compactions=compactions))
    else:
        folder = images_folder(target.name)
        exported = to_markdown(key, entries, images_dir=folder, compactions=compactions)
        text = exported.text
        images = [(target.parent / folder / image.name, image.data) for image in exported.images]
    try:
        refuse_read_only(target, str(target))  # before its images: nothing half-written
        write_beside(images)  # first: a folder refused leaves the export unwritten
        written = write_file(target, text, roots=None)
    except (FileWriteError, PathNotAllowed) as exc:
        raise CliError(str(exc)) from None
    beside = f" and {len(images)} image{'s' if len(images) != 1 else ''} in " \
        f"{target.parent / images_folder(target.name)}" if images else ""
    count = f"{len(entries)} message{'' if len(entries) == 1 else 's'}"  # not "1 messages"
    say(f"wrote {count} of '{name_line(key)}' to {written}{beside}")
    return EXIT_OK


def register(commands: Any) -> None:
    p = add_command(commands, "export", "a whole conversation as Markdown (messages under "
                    "headings with their number, role and time; refs with their ids; tool "
                    "calls and results summarised; images written beside the file) or JSON "
                    "(the stored messages), to stdout or -o PATH")
    p.epilog = ("A PATH that is a folder, or ends with /, gets conversation-KEY.md (or .json) "
                "inside it.\n\n" + (p.epilog or ""))
    p.add_argument("--format", choices=("md", "json"), default=None,
                   help="md (default; json when PATH ends with .json)")
    # every other command that prints JSON takes --json: `export --json` was refused
    p.add_argument("--json", action="store_true", help="the same as --format json")
    p.add_argument("-o", "--output", metavar="PATH", default=None,
                   help="write to this file (default: stdout)")
    p.add_argument("--force", action="store_true", help="overwrite an existing file")
    common_flags(p)
    p.set_defaults(handler=_export)
