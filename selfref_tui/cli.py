"""The ``selfref-tui`` command line: the app, one-shot ``ask``, and store inspection.

It is a stable interface for scripts: JSON shapes and exit codes below do not
change without a major version. Heavy modules (Textual, openai, the runtime)
are imported inside the commands that need them so ``--help`` and ``keys list``
start fast.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TextIO

from selfref_tui.config import DEFAULT_KEY, AppConfig, ConfigError, load_config

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_STORE, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
EXIT_INCOMPLETE = 4

EPILOG = """\
exit codes:
  0    success
  1    error (provider failure, empty answer, missing ref or experience, file exists,
       ...)
  2    usage error (bad arguments, invalid key name, bad config, a data dir
       that is not a readable folder, a --config file that does not exist,
       a command that writes given with --read-only)
  3    store locked by another selfref-tui, unreadable or unwritable, a link or FIFO
       in it, a log of another key, or from a newer version
  4    incomplete answer: cut off at the output limit or stopped by the provider's
       filter (what arrived is printed and kept, marked)
  130  interrupted (Ctrl+C): the partial answer is kept, marked as truncated

environment: OPENAI_API_KEY, OPENAI_BASE_URL, SELFREF_MODEL, SELFREF_DATA_DIR,
SELFREF_CONFIG (path of config.toml)."""


class CliError(Exception):
    """One line for stderr and the exit code that goes with it."""

    def __init__(self, message: str, code: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.code = code


# --------------------------------------------------------------------------- parser

def _formatter(prog: str) -> argparse.HelpFormatter:
    return argparse.RawDescriptionHelpFormatter(prog, max_help_position=32)


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line (plus where to look), exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        _say(f"{self.prog}: {message} (see `{self.prog} --help`)", sys.stderr, always=True)
        raise SystemExit(EXIT_USAGE)


def _common(parser: argparse.ArgumentParser, *, key: bool = True, top: bool = False) -> None:
    # Sub-commands use SUPPRESS so a flag given before the command is not reset.
    default = None if top else argparse.SUPPRESS
    parser.add_argument("--data-dir", metavar="DIR", default=default, help="store directory "
                        "(default: $SELFREF_DATA_DIR or the platform's data dir)")
    if key:
        parser.add_argument("--key", metavar="K", default=default,
                            help=f"memory key (default: {DEFAULT_KEY})")
    parser.add_argument("--read-only", action="store_true", default=False if top else default,
                        help="read a key another selfref-tui is writing (no lock taken; "
                             "commands that change the key are refused)")


def _provider_flags(parser: argparse.ArgumentParser, *, top: bool = False) -> None:
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
                        help="use the offline demo model")
    parser.add_argument("--context-window", metavar="N", type=int, default=default,
                        help="the model's context window in tokens (default: "
                             "$SELFREF_CONTEXT_WINDOW, the profile's, else asked of the server)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="selfref-tui", formatter_class=_formatter, epilog=EPILOG,
        description="A terminal chat app whose agent manages its own context. "
                    "Without a command, starts the app.")
    _common(parser, top=True)
    _provider_flags(parser, top=True)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    def sub(parent: Any, name: str, help_text: str) -> argparse.ArgumentParser:
        return parent.add_parser(name, help=help_text, description=help_text,
                                 epilog=EPILOG, formatter_class=_formatter)

    ask = sub(commands, "ask", "run one turn and stream the answer to stdout")
    ask.add_argument("prompt", metavar="PROMPT", help="the message; - reads it from stdin")
    ask.add_argument("--allow-overwrite", action="store_true",
                     help="let the model change files that exist (otherwise they are kept)")
    ask.add_argument("--allow-tools", metavar="NAMES", default="",
                     help="MCP tools that may run without being trusted in config.toml: "
                          "mcp__server__tool names, comma-separated, * wildcards ('*' = all)")
    ask.add_argument("--verbose", "-v", action="store_true", default=False,
                     help="on failure, print the server's error text in full")
    ask.add_argument("--image", metavar="PATH", action="append", default=[],
                     help="send an image with the message (PNG, JPEG, WebP or GIF, up to "
                          "20 MB; repeat for more) — for vision models")
    _common(ask)
    _provider_flags(ask)

    compact = sub(commands, "compact", "ask the model to compact the key's context now "
                  "(its summary replaces the conversation; nothing is deleted)")
    _common(compact)
    _provider_flags(compact)

    refs = sub(commands, "refs", "list, show and export refs").add_subparsers(
        dest="action", metavar="ACTION", required=True)
    p = sub(refs, "list", "refs of a key: id, size, creation time")
    _common(p)
    p.add_argument("--json", action="store_true", help='[{"id","chars","lines","created"}]')
    p = sub(refs, "show", "print a ref's current content")
    p.add_argument("ref_id", metavar="ID")
    _common(p)
    p = sub(refs, "export", "write a ref to a file (a lone code fence is stripped)")
    p.epilog = ("A PATH that is a folder, or ends with /, gets a file named after the ref "
                "inside it (the folder is created).\nAn ID starting with - goes after --:  "
                "selfref-tui refs export -- -my-id out.txt\n\n" + EPILOG)
    p.add_argument("ref_id", metavar="ID", help="the ref's id (after -- if it starts with -)")
    p.add_argument("path", metavar="PATH",
                   help="a file, or a folder (existing, or ending with /) for the ref's name")
    p.add_argument("--mode", choices=("write", "append"), default="write")
    p.add_argument("--force", action="store_true", help="overwrite an existing file")
    _common(p)

    exps = sub(commands, "experiences", "durable experiences in the system prompt") \
        .add_subparsers(dest="action", metavar="ACTION", required=True)
    p = sub(exps, "list", "experiences of a key")
    _common(p)
    p.add_argument("--json", action="store_true", help='[{"id","text"}]')
    p = sub(exps, "forget", "remove an experience by id")
    p.add_argument("exp_id", metavar="EXP_ID")
    _common(p)
    p = sub(exps, "add", "add an experience; prints its id")
    p.add_argument("text", metavar="TEXT")
    _common(p)

    keys = sub(commands, "keys", "memory keys").add_subparsers(
        dest="action", metavar="ACTION", required=True)
    p = sub(keys, "list", "memory keys with message counts and last activity (empty ones "
            "too); the agent's fork keys only with --all")
    _common(p, key=False)
    p.add_argument("--all", action="store_true", help="include fork keys (main::fork::1, ...)")
    p.add_argument("--json", action="store_true", help='[{"key","messages","updated"}]')

    ctx = sub(commands, "context", "what the model sees").add_subparsers(
        dest="action", metavar="ACTION", required=True)
    p = sub(ctx, "show", "the exact provider messages the next call would send")
    _common(p)
    _provider_flags(p)
    p.add_argument("--json", action="store_true",
                   help='{"model","messages":[...],"tools":[...],"tokens":N,"window":N}')

    mcp = sub(commands, "mcp", "MCP servers from config.toml").add_subparsers(
        dest="action", metavar="ACTION", required=True)
    p = sub(mcp, "list", "start each configured MCP server, show its state and its tools")
    p.add_argument("--config", metavar="PATH", default=argparse.SUPPRESS,
                   help="config.toml to read")
    p.add_argument("--json", action="store_true",
                   help='[{"name","transport","state","error","start_s","tools":[...]}]')
    p.set_defaults(data_dir=None)
    return parser


# --------------------------------------------------------------------------- entry

def run(argv: Sequence[str] | None = None) -> int:
    """The ``selfref-tui`` program: :func:`main`, then out of the way of Python's exit.

    Everything is committed and closed when :func:`main` returns. Python's last
    garbage collection at exit would still walk every object the process made
    (the loaded encodings, the app's widgets): 1.3–4.5 s between the answer (or
    ctrl+q) and the shell prompt, measured on a loaded machine. Frozen, they are
    out of its reach. Tests call :func:`main`, which leaves the collector alone.
    """
    import gc

    code = main(argv)
    gc.freeze()
    return code


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return int(exc.code or 0)
    try:
        return _dispatch(args)
    except CliError as exc:
        _err(str(exc))
        return exc.code
    except ConfigError as exc:
        _err(str(exc))
        return EXIT_USAGE
    except KeyboardInterrupt:
        _err("interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `... | head`: the reader left, nothing to report
        _silence_stdout()
        return EXIT_ERROR
    except Exception as exc:
        store_code = _store_exit_code(exc)
        if store_code is not None:
            _err(str(exc))
            return store_code
        if isinstance(exc, OSError):
            _err(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": "))
            return EXIT_ERROR
        raise


#: commands that change a key, refused under --read-only
_WRITES = {("ask", None): "ask", ("experiences", "add"): "experiences add",
           ("experiences", "forget"): "experiences forget"}


def _dispatch(args: argparse.Namespace) -> int:
    writer = _WRITES.get((args.command, getattr(args, "action", None)))
    if writer and getattr(args, "read_only", False):
        raise CliError(f"`{writer}` changes the key, and --read-only was given; leave "
                       "--read-only out (once no other selfref-tui writes the key)", EXIT_USAGE)
    if args.command is None:
        return _run_app(args)
    if args.command == "ask":
        return asyncio.run(_ask(args))
    if args.command == "compact":
        return asyncio.run(_compact(args))
    handler = _HANDLERS[(args.command, args.action)]
    return handler(args)


def _silence_stdout() -> None:
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def _err(message: str, secrets: Sequence[str] = ()) -> None:
    from selfref_tui.safety import redact

    _say(f"selfref-tui: {' '.join(redact(message, secrets).split())}", sys.stderr, always=True)


def _say(text: str, stream: TextIO | None = None, *, end: str = "\n",
         always: bool = False) -> None:
    """Write untrusted text (the model's, a server's, the store's) for a person to read.

    On a terminal its control characters are shown, not sent (no clipboard
    writes, retitling or clearing from an answer); ``always`` does that
    everywhere, for notes and errors. Into a pipe or a file the text is
    written exactly: it is the content a script asked for.
    """
    stream = sys.stdout if stream is None else stream
    if always or _is_terminal(stream):
        from selfref_tui.safety import inert

        text, end = inert(text), inert(end)
    stream.write(text + end)
    stream.flush()


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no such method, or closed
        return False


def _store_exit_code(exc: BaseException) -> int | None:
    from selfref_tui.selfref.errors import InvalidKeyError, StoreError

    if isinstance(exc, InvalidKeyError):
        return EXIT_USAGE
    if isinstance(exc, StoreError):
        return EXIT_STORE
    return None


def _config(args: argparse.Namespace) -> AppConfig:
    config_path = getattr(args, "config", None)
    if config_path and not Path(os.path.expanduser(config_path)).is_file():
        raise CliError(f"--config {config_path}: no such file; check the path, or leave "
                       "--config out to use the default config.toml", EXIT_USAGE)
    return load_config(
        config_path=getattr(args, "config", None), model=getattr(args, "model", None),
        base_url=getattr(args, "base_url", None), demo=getattr(args, "demo", False),
        data_dir=args.data_dir, key=getattr(args, "key", None),
        profile=getattr(args, "profile", None),
        context_window=getattr(args, "context_window", None))


def _window_cache(config: AppConfig) -> Any:
    from selfref_tui.agent.provider.window import CACHE_FILE, WindowCache

    return WindowCache(config.data_dir / CACHE_FILE if config.data_dir else None)


def _store(args: argparse.Namespace) -> Any:
    from selfref_tui.selfref.reference import SelfReference

    config = _config(args)
    return SelfReference(config.data_dir, source=config.data_dir_source)


def _key(args: argparse.Namespace) -> str:
    from selfref_tui.selfref.keys import validate_key

    return validate_key(args.key or DEFAULT_KEY)


def _print_json(value: Any) -> None:
    from selfref_tui.safety import json_inert

    print(json_inert(json.dumps(value, ensure_ascii=False, indent=2)))


# --------------------------------------------------------------------------- app

def _run_app(args: argparse.Namespace) -> int:
    config = _config(args)
    try:
        from selfref_tui.ui.app import run_app
    except ImportError as exc:
        raise CliError(f"the terminal app is not available ({exc}); the `ask`, `refs`, "
                       "`experiences`, `keys` and `context` commands still work") from None
    return run_app(config, read_only=bool(getattr(args, "read_only", False)))


# --------------------------------------------------------------------------- ask

@dataclass
class _AskOutput:
    """Turns runtime events into stdout text (the answer) and stderr notes."""

    key: str
    wrote: bool = False
    last_char: str = "\n"
    error: str = ""
    #: the server's error text in full (``ask --verbose`` prints it)
    detail: str = ""
    steps: int = 0
    #: fired when the reader goes away (`ask ... | head`): the turn stops as on Ctrl+C
    abort: Any = None
    #: stdout was closed by its reader; nothing more is written
    closed: bool = False
    #: values never printed (the configured API key)
    secrets: tuple[str, ...] = ()
    #: collects CompactionApplied events (``selfref-tui compact``)
    compacted: list[Any] | None = None

    def __call__(self, event: Any) -> None:
        from selfref_tui.agent import events as ev

        if getattr(event, "key", self.key) != self.key:
            return  # a fork's events: its answer reaches us through fork_gather_all
        if isinstance(event, ev.LLMCallStarted):
            self.steps += 1
            if self.wrote and self.last_char != "\n":
                self._out("\n")
        elif isinstance(event, ev.TextDelta):
            self._out(event.text)
        elif isinstance(event, ev.ToolCallStarted):
            self._note(f"[tool] {event.name}")
        elif isinstance(event, ev.Retrying):
            self._note(f"[{event.text()}]")
        elif isinstance(event, ev.ErrorEvent):
            self.error = event.message
            self.detail = event.detail
        elif isinstance(event, ev.CompactionApplied):
            if self.compacted is not None:
                self.compacted.append(event)
            self._note(f"[compacted] {event.messages_before} messages replaced by the summary")
        elif isinstance(event, ev.Notice):
            self._note(f"[{event.severity}] {event.message}")

    def _out(self, text: str) -> None:
        if not text or self.closed:
            return
        try:
            _say(text, sys.stdout, end="")
        except BrokenPipeError:
            self.closed = True
            _silence_stdout()
            if self.abort is not None:
                self.abort.fire("output closed by its reader")
            return
        self.wrote = True
        self.last_char = text[-1]

    def _note(self, text: str) -> None:
        if self.wrote and self.last_char != "\n":
            self._out("\n")
        from selfref_tui.safety import redact

        _say(redact(text, self.secrets), sys.stderr, always=True)

    def finish(self) -> None:
        if self.wrote and self.last_char != "\n":
            self._out("\n")


def _read_prompt(prompt: str) -> str:
    text = sys.stdin.read() if prompt == "-" else prompt
    if not text.strip():
        raise CliError("the prompt is empty; pass some text or pipe it with `ask -`",
                       EXIT_USAGE)
    return text


async def _ask(args: argparse.Namespace) -> int:
    text = _read_prompt(args.prompt)
    if not args.image:
        return await _one_turn(args, text)
    from selfref_tui.context.images import user_content
    from selfref_tui.selfref.attach import AttachError, read_image

    try:
        urls = [read_image(path).url for path in args.image]
    except AttachError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    return await _one_turn(args, user_content(text, urls))


async def _compact(args: argparse.Namespace) -> int:
    """``selfref-tui compact``: one turn without new text that asks the model to compact."""
    compacted: list[Any] = []
    code = await _one_turn(args, None, compacted)
    if code == EXIT_OK and not compacted:
        raise CliError("the model answered without compacting; run `selfref-tui compact` "
                       "again, or ask it in words with `selfref-tui ask`")
    return code


async def _one_turn(args: argparse.Namespace, prompt: str | list[dict] | None,
                    compacted: list[Any] | None = None) -> int:
    """Run one turn of the key (``prompt`` None: a compaction turn) and map its outcome."""
    from selfref_tui.agent.abort import AbortSignal
    from selfref_tui.agent.events import Notice
    from selfref_tui.agent.provider.client import Provider
    from selfref_tui.agent.provider.window import resolve_window
    from selfref_tui.agent.turn.loop import Agent
    from selfref_tui.selfref.reference import SelfReference

    config = _config(args)
    if getattr(args, "allow_overwrite", False):  # ask only; compact never writes files
        config = replace(config, agent=replace(config.agent, allow_overwrite=True))
    key = _key(args)
    server = None
    if config.provider.demo:
        from selfref_tui.demo import demo_server, with_demo_url

        server = demo_server()
        config = with_demo_url(config, await server.start())
    elif config.unconfigured:
        raise CliError("no provider configured: set OPENAI_API_KEY, or point --base-url / "
                       "OPENAI_BASE_URL at a local server, or try --demo")
    selfref = SelfReference(config.data_dir, source=config.data_dir_source)
    abort = AbortSignal()
    output = _AskOutput(key, abort=abort, secrets=(config.provider.api_key,),
                        compacted=compacted)
    loop = asyncio.get_running_loop()
    agent = None
    mcp = None
    try:
        # take the key's lock up front: a clear exit 3 if the app holds it
        _store_notes(selfref.open(key))
        provider = Provider(config.provider)
        window = await resolve_window(config.provider, _window_cache(config))
        if window.notice():
            output(Notice(key=key, message=window.notice() or "", severity="warning"))
        agent = Agent(selfref, provider, config.agent, output, model=config.provider.model,
                      context_window=window.tokens)
        loop.add_signal_handler(signal.SIGINT, abort.fire, "interrupted (Ctrl+C)")
        if config.mcp_servers:
            # `compact` has no --allow-tools: only trusted tools may run there
            allow = getattr(args, "allow_tools", None) or ""
            mcp = await _start_mcp(config, key, output, allow, abort)
            agent.tool_sources.append(mcp)
        if prompt is None:
            if not agent.compact_offered(key):  # the model could only answer again
                from selfref_tui.agent.tools.offer import COMPACT_REFUSED

                raise CliError(f"{COMPACT_REFUSED}; set --context-window if the model's "
                               "window is larger")
            agent.request_compaction(key)
        outcome = await agent.run_turn(key, prompt, abort=abort)
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        output.finish()
        if mcp is not None:
            await mcp.aclose()
        if agent is not None:
            await agent.aclose()
        selfref.close()
        if server is not None:
            await server.stop()
    if outcome == "done":
        return EXIT_OK
    if outcome == "aborted" and output.closed:
        return EXIT_ERROR  # the reader left (`| head`): nothing to say, the part is stored
    if outcome == "aborted":
        _err("interrupted: the partial answer was kept, marked as truncated")
        return EXIT_INTERRUPTED
    if outcome == "step_limit":
        raise CliError(f"stopped after {config.agent.step_limit} steps (the step limit); "
                       "ask again to continue, or raise [agent] step_limit in config.toml")
    if outcome in ("cut_off", "filtered"):
        return EXIT_INCOMPLETE  # the note on stderr said which, and what to do
    if outcome == "empty":
        return EXIT_ERROR  # the note on stderr said so
    from selfref_tui.safety import redact

    if getattr(args, "verbose", False) and output.detail:
        _say(f"the server said, in full:\n{redact(output.detail, output.secrets)}", sys.stderr,
             always=True)
    raise CliError(redact(output.error, output.secrets)
                   or "the turn failed; see the messages above")


async def _start_mcp(config: AppConfig, key: str, emit: Any, allow: str, abort: Any) -> Any:
    """The configured MCP servers, started before the turn (a one-shot has no first frame).

    Nobody can answer an approval here, so only trusted tools and those named by
    ``--allow-tools`` run; any other call gets "the person declined".
    """
    from selfref_tui.agent.mcp.manager import McpManager

    manager = McpManager(config.mcp_servers, emit, notice_key=key)
    manager.allowed = tuple(p.strip() for p in allow.split(",") if p.strip())
    started = asyncio.create_task(manager.wait_started())
    stopped = asyncio.create_task(abort.wait())  # Ctrl+C while a server starts
    try:
        await asyncio.wait({started, stopped}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        started.cancel()
        stopped.cancel()
    return manager


# --------------------------------------------------------------------------- refs

def _read_memory(args: argparse.Namespace) -> Any:
    """A read-only view of the key: works while the app is writing it."""
    return _store_notes(_store(args).open(_key(args), write=False))


def _store_notes(memory: Any) -> Any:
    """Say on stderr what loading the key found (skipped damaged records, a torn write)."""
    for warning in memory.take_warnings():
        _err(warning)
    return memory


def _current_ref(args: argparse.Namespace) -> dict:
    memory = _read_memory(args)
    occurrences = memory.refs.get(args.ref_id)
    if not occurrences:
        known = ", ".join(sorted(memory.refs)[:8]) or "none yet"
        raise CliError(f"no ref '{args.ref_id}' under key '{memory.key}' (known: {known}); "
                       "see `selfref-tui refs list`")
    return occurrences[-1]


def _refs_list(args: argparse.Namespace) -> int:
    memory = _read_memory(args)
    rows = []
    for ref_id, occurrences in memory.refs.items():
        current = occurrences[-1]
        content = current.get("content", "")
        rows.append({"id": ref_id, "chars": len(content),
                     "lines": content.count("\n") + 1 if content else 0,
                     "created": current.get("created", "")})
    if args.json:
        _print_json(rows)
    elif not rows:
        print(f"no refs under key '{memory.key}'")
    else:
        width = max(len(r["id"]) for r in rows)
        for r in rows:
            _say(f"{r['id']:<{width}}  {r['chars']:>7} chars  {r['lines']:>5} lines  "
                 f"{r['created']}")
    return EXIT_OK


def _refs_show(args: argparse.Namespace) -> int:
    content = _current_ref(args).get("content", "")
    _say(content, end="" if content.endswith("\n") else "\n")
    return EXIT_OK


def _refs_export(args: argparse.Namespace) -> int:
    from selfref_tui.refs.export import export_plan
    from selfref_tui.selfref.export_path import export_target
    from selfref_tui.selfref.files import FileWriteError, PathNotAllowed, write_file

    ref = _current_ref(args)
    plan = export_plan(args.ref_id, ref.get("content", ""))
    try:
        target = export_target(args.path, plan.suggested_name)
    except ValueError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    if target.exists() and args.mode == "write" and not args.force:
        raise CliError(f"{target} already exists; pass --force to overwrite it or "
                       "--mode append to add to it")
    try:
        written = write_file(target, plan.content, mode=args.mode, roots=None)
    except (FileWriteError, PathNotAllowed) as exc:
        raise CliError(str(exc)) from None
    verb = "appended" if args.mode == "append" else "wrote"
    _say(f"{verb} {len(plan.content)} chars of ref '{args.ref_id}' to {written}")
    return EXIT_OK


# --------------------------------------------------------------------------- experiences

def _experiences_list(args: argparse.Namespace) -> int:
    memory = _read_memory(args)
    rows = [{"id": e["id"], "text": e["text"]} for e in memory.experiences]
    if args.json:
        _print_json(rows)
    elif not rows:
        print(f"no experiences under key '{memory.key}'")
    else:
        for row in rows:
            _say(f"{row['id']}  {row['text']}")
    return EXIT_OK


def _session(args: argparse.Namespace) -> tuple[Any, Any]:
    from selfref_tui.selfref.session import SelfRefSession

    store = _store(args)
    return store, SelfRefSession(_store_notes(store.open(_key(args))))


def _experiences_forget(args: argparse.Namespace) -> int:
    store, session = _session(args)
    try:
        if not session.forget(args.exp_id):
            raise CliError(f"no experience '{args.exp_id}' under key '{session.key}'; see "
                           "`selfref-tui experiences list`")
        session.commit(session.collect_context_mutations())
    finally:
        store.close()
    print(f"forgot {args.exp_id}")
    return EXIT_OK


def _experiences_add(args: argparse.Namespace) -> int:
    if not args.text.strip():
        raise CliError("the experience text is empty", EXIT_USAGE)
    store, session = _session(args)
    try:
        exp_id = session.remember(args.text)
        session.commit(session.collect_context_mutations())
    finally:
        store.close()
    print(exp_id)
    return EXIT_OK


# --------------------------------------------------------------------------- keys, context

def _keys_list(args: argparse.Namespace) -> int:
    infos = _store(args).keys(forks=args.all)
    rows = [{"key": i.key, "messages": i.messages, "updated": i.updated} for i in infos]
    if args.json:
        _print_json(rows)
    elif not rows:
        print("no memory keys yet")
    else:
        width = max(len(r["key"]) for r in rows)
        for info, row in zip(infos, rows, strict=True):
            problem = f"  ({info.problem})" if getattr(info, "problem", "") else ""
            _say(f"{row['key']:<{width}}  {row['messages']:>6} messages  {row['updated']}"
                 f"{problem}")
    return EXIT_OK


async def _cached_window(provider: Any, config: AppConfig) -> int:
    """The window for a command that only reports: the configured or cached one, else
    asked of the server (a down server answers at once: connection refused)."""
    from selfref_tui.agent.provider.window import resolve_window

    return (await resolve_window(provider, _window_cache(config))).tokens


def _context_show(args: argparse.Namespace) -> int:
    from selfref_tui.agent.provider.client import Provider
    from selfref_tui.agent.turn.loop import Agent
    from selfref_tui.selfref.reference import ReadOnlyReference, SelfReference

    config = _config(args)
    key = _key(args)
    provider_config = config.provider
    if provider_config.demo and not provider_config.base_url:
        provider_config = replace(provider_config, base_url="http://127.0.0.1:9/v1")
    store = ReadOnlyReference(SelfReference(config.data_dir, source=config.data_dir_source))
    _store_notes(store.open(key))  # what loading found (skipped damaged records), once
    window = asyncio.run(_cached_window(provider_config, config))
    agent = Agent(store, Provider(provider_config), config.agent,
                  model=provider_config.model, context_window=window)
    _load_encoder(agent, provider_config.model)
    plan = agent.preview_request(key)
    asyncio.run(agent.aclose())
    store.close()
    messages, tokens = plan.messages, plan.tokens
    if args.json:
        _print_json({"model": provider_config.model, "messages": messages, "tools": plan.tools,
                     "tokens": tokens, "window": window})
        return EXIT_OK
    names = ", ".join(str((t.get("function") or {}).get("name", "?")) for t in plan.tools)
    estimate = "~" if plan.estimated else ""
    _say(f"model {provider_config.model} · {len(messages)} messages · {len(plan.tools)} tools "
         f"· {estimate}{tokens} tokens of {window}"
         + (" (an estimate: messages and tool schemas, counted here)" if plan.estimated else ""))
    if plan.left_out:
        _say(f"{plan.left_out} oldest messages are left out of this request (still stored): "
             "it no longer fits the window")
    if plan.tools_total > len(plan.tools):
        _say(f"window too small for the full tool set: this request offers "
             f"{len(plan.tools)} of {plan.tools_total} tools")
    _say(f"tools: {names or 'none'}")
    for index, message in enumerate(messages):
        _say(f"\n── [{index}] {message.get('role')}"
             + (f" (tool_call_id {message['tool_call_id']})" if "tool_call_id" in message
                else ""))
        if message.get("content"):
            from selfref_tui.context.images import readable

            _say(readable(message["content"]))
        for call in message.get("tool_calls") or ():
            fn = call.get("function", {})
            _say(f"→ {fn.get('name')}({fn.get('arguments')})  [{call.get('id')}]")
    return EXIT_OK


def _mcp_list(args: argparse.Namespace) -> int:
    from selfref_tui.agent.mcp.manager import McpManager
    from selfref_tui.safety import inert_line, redact

    config = _config(args)

    async def collect() -> list[dict]:
        manager = McpManager(config.mcp_servers)
        try:
            await manager.wait_started()
            return manager.overview()
        finally:
            await manager.aclose()

    rows = asyncio.run(collect()) if config.mcp_servers else []
    if args.json:
        _print_json(rows)
        return EXIT_OK
    if not rows:
        print("no MCP servers configured; add an [mcp.servers.NAME] table to config.toml")
        return EXIT_OK
    for row in rows:
        took = f" in {row['start_s']:.1f}s" if row["start_s"] is not None else ""
        # a URL's userinfo or a token among the args is not for the screen
        print(inert_line(redact(f"{row['name']}  {row['state']}{took}  {row['transport']}: "
                                f"{row['target']}")))
        if row["error"]:
            print(inert_line(redact(f"  error: {row['error']}")))
        for tool in row["tools"]:
            trusted = "trusted" if tool["trusted"] else "asks"
            first = (tool["description"].strip().splitlines() or [""])[0]
            print(inert_line(f"  {tool['name']}  [{trusted}]  {first}", 160))
    return EXIT_OK


def _load_encoder(agent: Any, model: str) -> None:
    """Exact token counts for a one-shot command (the app loads this off its start-up path)."""
    try:
        from selfref_tui.selfref.encodings import load_encoder
    except ImportError:
        return
    try:
        agent.tokens.set_encoder(load_encoder(model))
    except Exception:  # an estimate is still a useful answer
        return


_HANDLERS = {
    ("refs", "list"): _refs_list,
    ("refs", "show"): _refs_show,
    ("refs", "export"): _refs_export,
    ("experiences", "list"): _experiences_list,
    ("experiences", "forget"): _experiences_forget,
    ("experiences", "add"): _experiences_add,
    ("keys", "list"): _keys_list,
    ("context", "show"): _context_show,
    ("mcp", "list"): _mcp_list,
}
