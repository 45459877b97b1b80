"""What every command shares: exit codes, flags, errors, output and the store."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Coroutine, Iterable, Sequence
from typing import Any, NoReturn, TextIO, TypeVar

from selfref_tui.config import DEFAULT_KEY, AppConfig, ConfigError, ProviderConfig, chosen_provider
from selfref_tui.config_load import load_config

T = TypeVar("T")
EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_STORE, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


EXIT_INCOMPLETE = 4


EPILOG = """\
exit codes:
  0    success
  1    error (provider failure, empty answer, missing ref or experience, file exists,
       ...)
  2    usage error (bad arguments, an invalid conversation name, bad config,
       a data dir that is not a readable folder, a --config file that does
       not exist, a command that writes given with --read-only)
  3    store locked by another selfref-tui, unreadable or unwritable, a link or FIFO
       in it, a log of another conversation, or from a newer version
  4    incomplete answer: cut off at the output limit or stopped by the provider's
       filter (what arrived is printed and kept, marked)
  130  interrupted (Ctrl+C): what part of the answer arrived is kept, marked as
       truncated; 143 (SIGTERM, as `timeout` sends) and 129 (SIGHUP, the
       terminal closed) stop it the same way

environment: OPENAI_API_KEY, OPENAI_BASE_URL, SELFREF_MODEL, SELFREF_DATA_DIR,
SELFREF_CONFIG (path of config.toml)."""


def run_async(job: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(job)``, asyncio imported only here: the commands that read the store
    (search, history, keys, export) start without its ~30 ms of imports."""
    import asyncio

    return asyncio.run(job)


class CliError(Exception):
    """One line for stderr and the exit code that goes with it."""

    def __init__(self, message: str, code: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.code = code


def formatter(prog: str) -> argparse.HelpFormatter:
    return argparse.RawDescriptionHelpFormatter(prog, max_help_position=32)


class Parser(argparse.ArgumentParser):
    """Usage errors as one line (plus where to look), exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        say(f"{self.prog}: {message} (see `{self.prog} --help`)", sys.stderr, always=True)
        raise SystemExit(EXIT_USAGE)


def common_flags(parser: argparse.ArgumentParser, *, key: bool = True, top: bool = False,
                 key_help: str | None = None) -> None:
    """--data-dir, --key and --read-only; ``key_help`` for a command whose --key is not
    "this one conversation, main by default" (search: every conversation unless given)."""
    # Sub-commands use SUPPRESS so a flag given before the command is not reset.
    default = None if top else argparse.SUPPRESS
    parser.add_argument("--data-dir", metavar="DIR", default=default, help="store directory "
                        "(default: $SELFREF_DATA_DIR or the platform's data dir)")
    if key:
        parser.add_argument(
            "--key", metavar="K", default=default,
            help="the conversation (memory key); default: the app opens the one it "
                 f"showed last in this data dir ({DEFAULT_KEY} the first time), commands "
                 f"use {DEFAULT_KEY}" if top else
                 key_help or f"the conversation (memory key); default: {DEFAULT_KEY}")
    parser.add_argument("--read-only", action="store_true", default=False if top else default,
                        help="read a conversation another selfref-tui is writing (no lock taken; "
                             "commands that change the conversation are refused)")


def provider_flags(parser: argparse.ArgumentParser, *, top: bool = False) -> None:
    default = None if top else argparse.SUPPRESS
    parser.add_argument("--model", metavar="M", default=default,
                        help="model name (overrides config/env)")
    parser.add_argument("--base-url", metavar="URL", default=default,
                        help="OpenAI-compatible base URL, e.g. http://localhost:11434/v1")
    parser.add_argument("--profile", metavar="NAME", default=default,
                        help="a [providers.NAME] profile from config.toml")
    parser.add_argument("--config", metavar="PATH", default=default,
                        help="config.toml to read")
    parser.add_argument("--demo", action="store_true", default=False if top else default,
                        help="use the offline demo model, for this run only: a conversation "
                             "does not remember it (a model or profile it chose with /model "
                             "or /profile waits for the next run without --demo, and one begun "
                             "in the demo goes on with the configured model)")
    parser.add_argument("--context-window", metavar="N", type=int, default=default,
                        help="the model's context window in tokens (default: "
                             "$SELFREF_CONTEXT_WINDOW, the profile's, else asked of the server)")


def silence_stdout() -> None:
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def err(message: str, secrets: Sequence[str] = ()) -> None:
    from selfref_tui.safety import redact

    say(f"selfref-tui: {' '.join(redact(message, secrets).split())}", sys.stderr, always=True)


def say(text: str, stream: TextIO | None = None, *, end: str = "\n",
        always: bool = False) -> None:
    """Write untrusted text (the model's, a server's, the store's) for a person to read.

    On a terminal its control characters are shown, not sent (no clipboard
    writes, retitling or clearing from an answer); ``always`` does that
    everywhere, for notes and errors. Into a pipe or a file the text is
    written exactly: it is the content a script asked for.
    """
    stream = sys.stdout if stream is None else stream
    if always or is_terminal(stream):
        from selfref_tui.safety import inert

        text, end = inert(text), inert(end)
    stream.write(text + end)
    stream.flush()


#: lines :func:`say_lines` writes at once
LINES_AT_ONCE = 512


def say_lines(lines: Iterable[str], stream: TextIO | None = None) -> None:
    """:func:`say` of each of ``lines``, written :data:`LINES_AT_ONCE` at a time (the same
    text): a line at a time is a write and a question to the terminal each, a tenth of a
    second at 100,000 lines."""
    stream = sys.stdout if stream is None else stream
    terminal = is_terminal(stream)
    if terminal:
        from selfref_tui.safety import inert
    block: list[str] = []
    for line in lines:
        block.append(inert(line) if terminal else line)
        if len(block) == LINES_AT_ONCE:
            stream.write("\n".join(block) + "\n")
            stream.flush()
            block = []
    if block:
        stream.write("\n".join(block) + "\n")
        stream.flush()


def exit_now(code: int) -> NoReturn:
    """End the process with ``code`` at once, its output flushed: what it holds is not
    freed object by object, nor are Python's exit steps taken (a command whose work is
    done and whose last objects are many: a search's fold). Only for the program
    (``cli.run``), never in a process that goes on (a test's)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    logging.shutdown()
    os._exit(code)


def is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no such method, or closed
        return False


def store_exit_code(exc: BaseException) -> int | None:
    from selfref_tui.selfref.errors import InvalidKeyError, StoreError

    if isinstance(exc, InvalidKeyError):
        return EXIT_USAGE
    if isinstance(exc, StoreError):
        return EXIT_STORE
    return None


def app_config(args: argparse.Namespace) -> AppConfig:
    config_path = getattr(args, "config", None)
    if config_path and not os.path.exists(os.path.expanduser(config_path)):
        raise CliError(f"--config {config_path}: no such file; check the path, or leave "
                       "--config out to use the default config.toml", EXIT_USAGE)
    return load_config(
        config_path=getattr(args, "config", None), model=getattr(args, "model", None),
        base_url=getattr(args, "base_url", None), demo=getattr(args, "demo", False),
        data_dir=args.data_dir, key=getattr(args, "key", None),
        profile=getattr(args, "profile", None),
        context_window=getattr(args, "context_window", None))


#: the flags that choose a provider for one command, above what a conversation chose
PROVIDER_FLAGS = ("model", "base_url", "profile", "demo")


def provider_flagged(args: argparse.Namespace) -> bool:
    """A flag names the provider: it beats what the conversation chose."""
    return any(getattr(args, flag, None) for flag in PROVIDER_FLAGS)


def conversation_provider(args: argparse.Namespace, config: AppConfig, settings: Any,
                          *, quiet: bool = False) -> ProviderConfig:
    """The provider a command runs a conversation on: what its flags say, else what the
    conversation chose last (``/model``, ``/profile``), else the config's.

    The demo model is never a conversation's choice (``--demo`` is for one run):
    a conversation begun in the demo runs on the configured model next time, and
    ``--demo`` runs any conversation on the demo, its own choice left for later.
    """
    if settings is None or provider_flagged(args):
        return config.provider
    try:
        return chosen_provider(config, config.provider, settings.profile, settings.model)
    except ConfigError as exc:  # the profile it chose is gone: say so, run on the config's
        if not quiet:
            err(f"{exc}; using the configured provider")
        return config.provider


def nowhere_to_send(config: AppConfig, provider: ProviderConfig) -> bool:
    """Nothing says where ``provider``'s requests would go: no key, no URL of its own
    (the app then offers only the demo model, and ``ask`` refuses)."""
    return (config.unconfigured and not provider.demo and not provider.api_key
            and provider.base_url == config.provider.base_url)


def window_cache(config: AppConfig) -> Any:
    from selfref_tui.agent.provider.window import CACHE_FILE, WindowCache

    return WindowCache(config.data_dir / CACHE_FILE if config.data_dir else None)


def open_store(args: argparse.Namespace) -> Any:
    from selfref_tui.selfref.reference import SelfReference

    config = app_config(args)
    return SelfReference(config.data_dir, source=config.data_dir_source)


def key_of(args: argparse.Namespace) -> str:
    from selfref_tui.selfref.keys import validate_key

    # `--key ""` (a script's "$K" unset) is refused as an empty name: read as main, a
    # `rewind 3 --key "$K"` rewound main
    key = getattr(args, "key", None)
    return validate_key(DEFAULT_KEY if key is None else key)


def existing_key(store: Any, args: argparse.Namespace) -> str:
    """The conversation ``args`` names, which must exist: a command that changes one
    (rewind, pin) would otherwise make an empty folder for a mistyped name."""
    key = key_of(args)
    if not store.exists(key):
        from selfref_tui.safety import name_line

        raise CliError(f"no conversation '{name_line(key)}' in this data folder; "
                       "`selfref-tui keys list` shows them")
    return key


def print_json(value: Any, *, one_per_line: bool = False) -> None:
    """``value`` as JSON on stdout; ``one_per_line``: a list with each item compact on a
    line of its own (for thousands of rows: json's indenting runs in Python, ~10x slower
    than its compact C encoder, and a row per line still reads and greps well)."""
    from selfref_tui.safety import json_inert

    if one_per_line and isinstance(value, list):
        dumps = json.JSONEncoder(ensure_ascii=False).encode
        text = "[\n" + ",\n".join("  " + dumps(item) for item in value) + "\n]" if value else "[]"
    else:
        text = json.dumps(value, ensure_ascii=False, indent=2)
    print(json_inert(text))


def read_memory(args: argparse.Namespace) -> Any:
    """A read-only view of the key: works while the app is writing it.

    A ``--key`` naming no conversation is an error, as in ``export`` and ``search``:
    ``history --key mian --json`` printed ``[]`` and exited 0, as if the conversation
    were empty. ``main`` by default may be missing (a fresh data folder): it is empty.
    """
    store = open_store(args)
    key = key_of(args) if getattr(args, "key", None) is None else existing_key(store, args)
    return store_notes(store.open(key, write=False))


def store_notes(memory: Any) -> Any:
    """Say on stderr what loading the key found (skipped damaged records, a torn write)."""
    for warning in memory.take_warnings():
        err(warning)
    return memory


class NoteHandler(logging.Handler):
    """The runtime's logged warnings (a cache or a record it could not write) as notes
    on stderr, each once: without a handler Python's last resort printed them raw,
    and a store's load warnings twice (they are said by :func:`store_notes`)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(record, "told", False):
            return
        try:
            err(record.getMessage())
        except Exception:  # a log line never stops a command
            self.handleError(record)


def add_command(parent: Any, name: str, help_text: str) -> argparse.ArgumentParser:
    """A sub-command of ``parent`` (a sub-parsers action) with the shared epilog."""
    return parent.add_parser(name, help=help_text, description=help_text,
                             epilog=EPILOG, formatter_class=formatter)


def add_group(commands: Any, name: str, help_text: str) -> Any:
    """A command that takes an action (``refs list``): its sub-parsers action."""
    return add_command(commands, name, help_text).add_subparsers(
        dest="action", metavar="ACTION", required=True)
