"""The ``selfref-tui`` command line: the app, one-shot ``ask``, and store inspection.

It is a stable interface for scripts: JSON shapes and exit codes below do not
change without a major version. Heavy modules (Textual, openai, the runtime)
are imported inside the commands that need them so ``--help`` and ``keys list``
start fast.

One module per command group (``ask``, ``compact``, ``history`` with ``rewind`` and
``branch``, ``pins`` (``pin``, ``unpin``), ``refs``, ``experiences``, ``keys``,
``context``, ``mcp``), each with
``register(commands)`` adding its sub-commands, every one with a ``handler`` default
(and ``writes`` when it changes the key, so that ``--read-only`` refuses it);
``common`` holds the shared flags, exit codes and output.
A new group is a new module listed in :data:`GROUPS`.
"""

from __future__ import annotations

import argparse
import io
import logging
import sys
from collections.abc import Sequence

from selfref_tui.cli import (
    ask,
    compact,
    context,
    experiences,
    export,
    history,
    keys,
    mcp,
    pins,
    refs,
    search,
)
from selfref_tui.cli.common import (
    EPILOG,
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    CliError,
    NoteHandler,
    Parser,
    app_config,
    common_flags,
    err,
    formatter,
    is_terminal,
    key_of,
    provider_flags,
    say,
    silence_stdout,
    store_exit_code,
)
from selfref_tui.config import ConfigError

#: the command groups, in the order ``--help`` lists them
GROUPS = (ask, compact, history, pins, refs, experiences, keys, context, search, export, mcp)

__all__ = ["GROUPS", "build_parser", "main", "run"]


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="selfref-tui", formatter_class=formatter, epilog=EPILOG,
        description="A terminal chat app whose agent manages its own context. "
                    "Without a command, starts the app.")
    from selfref_tui import __version__

    # what a bug report names first; other chat apps' CLIs answer it too
    parser.add_argument("--version", action="version", version=f"selfref-tui {__version__}")
    common_flags(parser, top=True)
    provider_flags(parser, top=True)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for group in GROUPS:
        group.register(commands)
    return parser


def run(argv: Sequence[str] | None = None) -> int:
    """The ``selfref-tui`` program: :func:`main`, then out of the way of Python's exit.

    Everything is committed and closed when :func:`main` returns. Python's last
    garbage collection at exit would still walk every object the process made
    (the loaded encodings, the app's widgets): 1.3–4.5 s between the answer (or
    ctrl+q) and the shell prompt, measured on a loaded machine. Frozen, they are
    out of its reach. Tests call :func:`main`, which leaves the collector alone, and
    does everything in its own process (``program``: work that need not hold the exit,
    a search's caches, may be left to a child process).
    """
    import gc

    # Stored text may hold a lone surrogate (half an emoji's pair from a JSON escape, an
    # undecodable byte of an argument); UTF-8 has no bytes for it. Into a pipe it is
    # written as its escape (on a terminal ``inert`` already shows it so), never a
    # traceback halfway through the output.
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    logging.getLogger("selfref_tui").addHandler(NoteHandler())
    code = main(argv, program=True)
    gc.freeze()
    return code


def main(argv: Sequence[str] | None = None, *, program: bool = False) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return int(exc.code or 0)
    args.program = program
    try:
        return _dispatch(args)
    except CliError as exc:
        err(str(exc))
        return exc.code
    except ConfigError as exc:
        err(str(exc))
        return EXIT_USAGE
    except KeyboardInterrupt:
        err("interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `... | head`: the reader left, nothing to report
        silence_stdout()
        return EXIT_ERROR
    except Exception as exc:
        store_code = store_exit_code(exc)
        if store_code is not None:
            err(str(exc))
            return store_code
        if isinstance(exc, OSError):
            err(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": "))
            return EXIT_ERROR
        raise


def _dispatch(args: argparse.Namespace) -> int:
    writer = getattr(args, "writes", None)
    if writer and getattr(args, "read_only", False):
        raise CliError(f"`{writer}` changes the conversation, and --read-only was given; leave "
                       "--read-only out (once no other selfref-tui writes it)", EXIT_USAGE)
    if args.command is None:
        return _run_app(args)
    return args.handler(args)


def _run_app(args: argparse.Namespace) -> int:
    if getattr(args, "key", None) is not None:
        # checked before the screen opens, as every command checks it: `--key ""` (a
        # script's "$K" unset) opened a conversation that never loaded
        key_of(args)
    if not is_terminal(sys.stdin):
        # Textual would read its end over and over: the app drawn, no key ever read, a
        # core spent until it is killed
        raise CliError("the app reads its keys from a terminal, and standard input is not one "
                       "(a pipe or a file); run it in a terminal, or send a message from a "
                       "script with `selfref-tui ask \"...\"`", EXIT_USAGE)
    if not is_terminal(sys.__stderr__):
        # Textual draws the screen there (standard output stays free to redirect): into a
        # file, the app ran unseen while the keys typed blind were sent
        refused = CliError("the app draws its screen on standard error, and it is not a "
                           "terminal (2> FILE); leave standard error on the terminal, or send a "
                           "message from a script with `selfref-tui ask \"...\"`", EXIT_USAGE)
        if is_terminal(sys.stdout):  # typed at a terminal: said where the person looks too
            say(f"selfref-tui: {refused}", sys.stdout, always=True)
        raise refused
    config = app_config(args)
    try:
        from selfref_tui.ui.app import run_app
    except ImportError as exc:
        raise CliError(f"the terminal app is not available ({exc}); the `ask`, `refs`, "
                       "`experiences`, `keys` and `context` commands still work") from None
    return run_app(config, read_only=bool(getattr(args, "read_only", False)))
