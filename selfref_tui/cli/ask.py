"""``selfref-tui ask``: one turn, its answer streamed to stdout."""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, replace
from typing import Any

from selfref_tui.cli.common import (
    EXIT_ERROR,
    EXIT_INCOMPLETE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    add_command,
    app_config,
    common_flags,
    conversation_provider,
    err,
    existing_key,
    key_of,
    nowhere_to_send,
    provider_flags,
    run_async,
    say,
    silence_stdout,
    store_notes,
    window_cache,
)
from selfref_tui.config import AppConfig


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
    #: collects CompactionApplied and CompactionFailed events (``selfref-tui compact``)
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
            n = event.messages_before
            self._note(f"[compacted] {n} message{'' if n == 1 else 's'} replaced by the summary")
        elif isinstance(event, ev.CompactionFailed):
            if self.compacted is not None:  # `compact` exits with it: said once, there
                self.compacted.append(event)
            else:
                self._note(f"[warning] {event.reason} — `selfref-tui compact` asks again")
        elif isinstance(event, ev.Notice) and event.message:  # empty: a state is over
            self._note(f"[{event.severity}] {event.message}")

    def _out(self, text: str) -> None:
        if not text or self.closed:
            return
        try:
            say(text, sys.stdout, end="")
        except BrokenPipeError:
            self.closed = True
            silence_stdout()
            if self.abort is not None:
                self.abort.fire("output closed by its reader")
            return
        self.wrote = True
        self.last_char = text[-1]

    def _note(self, text: str) -> None:
        if self.wrote and self.last_char != "\n":
            self._out("\n")
        from selfref_tui.safety import redact

        say(redact(text, self.secrets), sys.stderr, always=True)

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
        return await one_turn(args, text)
    from selfref_tui.context.images import user_content
    from selfref_tui.selfref.attach import AttachError, read_image

    try:
        urls = [read_image(path).url for path in args.image]
    except AttachError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    names = [os.path.basename(str(path)) for path in args.image]
    return await one_turn(args, user_content(text, urls, names))


async def one_turn(args: argparse.Namespace, prompt: str | list[dict] | None,
                   compacted: list[Any] | None = None) -> int:
    """Run one turn of the key (``prompt`` None: a compaction turn) and map its outcome."""
    import asyncio
    import signal

    from selfref_tui.agent.abort import AbortSignal
    from selfref_tui.agent.events import Notice
    from selfref_tui.agent.provider.client import Provider
    from selfref_tui.agent.provider.window import resolve_window
    from selfref_tui.agent.turn.loop import Agent
    from selfref_tui.selfref.reference import SelfReference

    config = app_config(args)
    if getattr(args, "allow_overwrite", False):  # ask only; compact never writes files
        config = replace(config, agent=replace(config.agent, allow_overwrite=True))
    if getattr(args, "allow_memory", False):  # nobody can be asked here: the flag is the yes
        config = replace(config, agent=replace(config.agent, allow_memory=True))
    key = key_of(args)
    selfref = SelfReference(config.data_dir, source=config.data_dir_source)
    if prompt is None and getattr(args, "key", None) is not None:
        # `compact --key typo` made the conversation to compact its empty history
        existing_key(selfref, args)
    if config.unconfigured and not config.provider.demo:
        # Nothing configured, unless the conversation chose a profile of its own: read what
        # it chose without taking its lock, so a refusal leaves no trace.
        from selfref_tui.selfref.key_settings import read_settings

        settings = read_settings(selfref.key_dir(key))
        if nowhere_to_send(config, conversation_provider(args, config, settings, quiet=True)):
            raise CliError("no provider configured: set OPENAI_API_KEY, or point --base-url / "
                           "OPENAI_BASE_URL at a local server, or try --demo")
    server = None
    if config.provider.demo:
        from selfref_tui.demo import demo_server, with_demo_url

        server = demo_server()
        config = with_demo_url(config, await server.start())
    abort = AbortSignal()
    output = _AskOutput(key, abort=abort, secrets=(config.provider.api_key,),
                        compacted=compacted)
    loop = asyncio.get_running_loop()
    agent = None
    mcp = None
    ended: list[int] = []  # the SIGTERM or SIGHUP that stopped the turn
    try:
        # take the key's lock up front: a clear exit 3 if the app holds it
        memory = store_notes(selfref.open(key))
        # the model and profile the conversation chose in the app, unless flags say otherwise
        chosen = conversation_provider(args, config, getattr(memory, "settings", None))
        if chosen != config.provider:
            config = replace(config, provider=chosen)
            output.secrets = (*output.secrets, chosen.api_key)
        provider = Provider(config.provider)
        window = await resolve_window(config.provider, window_cache(config))
        for line in window.notices():
            output(Notice(key=key, message=line, severity="warning"))
        agent = Agent(selfref, provider, config.agent, output, model=config.provider.model,
                      context_window=window.tokens)
        loop.add_signal_handler(signal.SIGINT, abort.fire, "interrupted (Ctrl+C)")
        for signum in _ending_signals():  # `timeout`, a closed terminal: as Ctrl+C
            loop.add_signal_handler(signum, _ended, abort, signum, ended)
        if config.mcp_servers:
            # `compact` has no --allow-tools: only trusted tools may run there
            allow = getattr(args, "allow_tools", None) or ""
            flag = "--allow-tools" if hasattr(args, "allow_tools") else ""
            mcp = await _start_mcp(config, key, output, allow, abort, flag)
            agent.tool_sources.append(mcp)
        if prompt is None:
            if not agent.compact_offered(key):  # the model could only answer again
                from selfref_tui.agent.tools.offer import COMPACT_REFUSED

                raise CliError(f"{COMPACT_REFUSED}; set --context-window if the model's "
                               "window is larger")
            agent.request_compaction(key, getattr(args, "focus", None) or "")
        outcome = await agent.run_turn(key, prompt, abort=abort)
    finally:
        for signum in (signal.SIGINT, *_ending_signals()):
            loop.remove_signal_handler(signum)
        output.finish()
        if mcp is not None:
            await mcp.aclose(quitting=True)
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
        # Ctrl+C while MCP servers start or the model thinks: no answer to keep, and saying
        # "the partial answer was kept" sent the person looking for one in `history`
        err("interrupted: the partial answer was kept, marked as truncated" if output.wrote
            else "interrupted before any answer arrived: your message is kept, unanswered")
        # as a shell reports a process the signal ended (`timeout` 124 aside)
        return 128 + ended[0] if ended else EXIT_INTERRUPTED
    if outcome == "step_limit":
        raise CliError(f"stopped after {config.agent.step_limit} steps (the step limit); "
                       "ask again to continue, or raise [agent] step_limit in config.toml")
    if outcome in ("cut_off", "filtered"):
        return EXIT_INCOMPLETE  # the note on stderr said which, and what to do
    if outcome == "empty":
        return EXIT_ERROR  # the note on stderr said so
    from selfref_tui.safety import redact

    if getattr(args, "verbose", False) and output.detail:
        say(f"the server said, in full:\n{redact(output.detail, output.secrets)}", sys.stderr,
            always=True)
    raise CliError(redact(output.error, output.secrets)
                   or "the turn failed; see the messages above")


def _ending_signals() -> tuple[int, ...]:
    """The signals that stop a turn as Ctrl+C does, what arrived kept: a `timeout`, a job
    cancelled, a terminal closed (their default action ended the process, the answer
    printed so far lost from the conversation)."""
    import signal

    return tuple(s for s in (signal.SIGTERM, getattr(signal, "SIGHUP", None)) if s is not None)


def _ended(abort: Any, signum: int, ended: list[int]) -> None:
    import signal

    ended.append(signum)
    abort.fire(f"ended by {signal.Signals(signum).name}")


#: seconds of MCP servers starting before `ask` says what it waits for
STARTING_NOTE_S = 1.0


async def _start_mcp(config: AppConfig, key: str, emit: Any, allow: str, abort: Any,
                     allow_flag: str = "") -> Any:
    """The configured MCP servers, started before the turn (a one-shot has no first frame).

    Nobody can answer an approval here, so only trusted tools and those named by
    ``--allow-tools`` run; any other call is refused (the model is told it is not
    allowed in this run, and stderr says once per tool how to allow it).
    """
    import asyncio

    from selfref_tui.agent.mcp.manager import McpManager

    manager = McpManager(config.mcp_servers, emit, notice_key=key)
    manager.allowed = tuple(p.strip() for p in allow.split(",") if p.strip())
    if allow_flag:
        manager.allow_flag = allow_flag
    started = asyncio.create_task(manager.wait_started())
    stopped = asyncio.create_task(abort.wait())  # Ctrl+C while a server starts
    try:
        done, _ = await asyncio.wait({started, stopped}, timeout=STARTING_NOTE_S,
                                     return_when=asyncio.FIRST_COMPLETED)
        if not done and (names := manager.starting()):
            # a slow server kept `ask` silent for many seconds, as if it hung
            from selfref_tui.agent.events import Notice

            several = len(names) > 1
            emit(Notice(key=key, severity="information", message=(
                f"waiting for the MCP server{'s' if several else ''} {', '.join(names)} "
                "to start (Ctrl+C stops)")))
            await asyncio.wait({started, stopped}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        started.cancel()
        stopped.cancel()
    return manager


def register(commands: Any) -> None:
    ask = add_command(commands, "ask", "run one turn and stream the answer to stdout")
    ask.add_argument("prompt", metavar="PROMPT", help="the message; - reads it from stdin")
    ask.add_argument("--allow-overwrite", action="store_true",
                     help="let the model change files that exist (otherwise they are kept)")
    ask.add_argument("--allow-memory", action="store_true",
                     help='with [agent] memory_writes = "ask": let the model remember and '
                          "forget experiences (otherwise refused; nobody can be asked here)")
    ask.add_argument("--allow-tools", metavar="NAMES", default="",
                     help="MCP tools that may run without being trusted in config.toml: "
                          "mcp__server__tool names, comma-separated, * wildcards ('*' = all)")
    ask.add_argument("--verbose", "-v", action="store_true", default=False,
                     help="on failure, print the server's error text in full")
    ask.add_argument("--image", metavar="PATH", action="append", default=[],
                     help="send an image with the message (PNG, JPEG, WebP or GIF, up to "
                          "20 MB; repeat for more) — for vision models")
    common_flags(ask)
    provider_flags(ask)
    ask.set_defaults(handler=lambda args: run_async(_ask(args)), writes="ask")
