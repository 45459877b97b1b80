"""Starts the configured MCP servers, keeps their tools, runs calls and stops them all.

Each server lives in one asyncio task that enters the SDK's ``Client`` and leaves
it (anyio requires a cancel scope to be left by the task that entered it); calls
come from the loop's tool tasks and only use the client's streams. A server that
fails to start, breaks the protocol, or dies later, becomes a ``Notice`` and
loses its tools; the others keep working, and the person may start it again
(:meth:`McpManager.restart`). Every call has a deadline
(``call_timeout_s``), after which it is cancelled the protocol's way. Stdio
servers run through our own transport (``stdio.py``: bounded reads, a size cap
per message, a bounded stderr tail) under a supervisor (``supervisor.py``) that
kills the server's process group however this process ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import json
import os
import shutil
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ...config import ConfigError, McpServerConfig
from ...config_edit import table_name, toml_value
from ...config_load import load_mcp_server, load_mcp_servers
from ...safety import one_line, redact
from ..events import EventSink, Notice, discard
from ..tools.batch import MultimodalOutput
from ..tools.builtin import NOT_ASKED, ToolError, now_iso
from .approval import APPROVAL_CHOICES, APPROVE_ALWAYS, APPROVE_ONCE, approval_prompt
from .listing import MAX_SCHEMA_DEPTH, prune_listing
from .naming import exposed_name, server_tag, server_tags
from .results import MappedResult, map_result
from .stdio import Link, stdio_transport

#: seconds a server's new process waits for its old one to be gone (see McpManager._begin)
STOP_WAIT_S = 10.0


@dataclass(frozen=True)
class McpTool:
    """One server tool as the model sees it."""

    server: str
    name: str  # as the server spells it
    exposed: str  # mcp__server__tool
    description: str
    input_schema: dict[str, Any]

    def schema(self) -> dict[str, Any]:
        """The OpenAI function schema: the server's JSON schema, an object at the root."""
        parameters = dict(self.input_schema) if isinstance(self.input_schema, dict) else {}
        parameters.setdefault("type", "object")
        if parameters.get("type") == "object":
            parameters.setdefault("properties", {})
        description = self.description or f"The {self.name} tool of the {self.server} MCP server."
        return {"type": "function", "function": {
            "name": self.exposed, "description": description, "parameters": parameters}}


@dataclass
class ServerStatus:
    """What ``mcp list`` and the app show for one server."""

    name: str
    transport: str
    #: "disabled", "starting", "ready", "failed", "exited" or "stopped"
    state: str = "starting"
    error: str = ""
    tools: list[McpTool] = field(default_factory=list)
    start_s: float | None = None

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "transport": self.transport, "state": self.state,
                "error": self.error, "start_s": self.start_s,
                "tools": [{"name": t.exposed, "server_tool": t.name,
                           "description": t.description} for t in self.tools]}


@dataclass(eq=False)
class _Run:
    """One start of one server, to its end: what its task and its calls share.

    A restart makes a new run. What an older run still does after that (its task
    stopping its process, a call on it ending late) touches that run alone: the
    server's tools and status are the current run's, and an old run may take
    them off the list only while it is the current one (:meth:`McpManager._drop`).
    """

    #: which start of the manager's this is (a screen that follows the servers sees a
    #: restart even when the new run ends in the state the old one had)
    number: int
    config: McpServerConfig
    status: ServerStatus
    settled: asyncio.Event
    link: Link = field(default_factory=Link)
    client: Any = None
    task: asyncio.Task | None = None
    #: set when the person restarts the server while this run is up: its calls end
    #: saying so and its task stops the process
    ending: asyncio.Event = field(default_factory=asyncio.Event)


class McpManager:
    """All configured servers of one app or CLI run."""

    def __init__(
        self,
        servers: Sequence[McpServerConfig],
        emit: EventSink = discard,
        *,
        notice_key: str = "",
        on_trust: Callable[[str, str], None] | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.configs = {s.name: s for s in servers}
        #: each server's part of its tools' names, from the config's order alone
        self._tags = server_tags(s.name for s in servers)
        self.emit = emit
        self.notice_key = notice_key
        #: called with (server, tool) when the person answers "always allow"
        self.on_trust = on_trust
        self.env = dict(os.environ) if env is None else env
        self.status = {s.name: ServerStatus(s.name, s.transport,
                                            "starting" if s.enabled else "disabled")
                       for s in servers}
        #: ``--allow-tools`` patterns (exposed names, fnmatch): run without asking
        self.allowed: tuple[str, ...] = ()
        #: the flag of a run that cannot ask which lets a tool run (``ask``'s
        #: ``--allow-tools``; empty where there is none, as in ``compact``)
        self.allow_flag = ""
        #: how the person starts a failed server again ("{server}" is replaced by its
        #: name), said where its tools are gone; empty where there is no way (``ask``)
        self.restart_hint = ""
        #: where a restart reads the server's table again (the app's config.toml), so
        #: what the person fixed there is what starts; None: the tables given here
        self.config_path: Path | None = None
        #: tools whose "not allowed here" hint the person was given (once per tool per run)
        self._hinted: set[str] = set()
        self._trusted: dict[str, set[str]] = {s.name: set(s.trust) for s in servers}
        #: the tools the person answered "always allow" for in this run, by the server
        #: they were asked about: its name and what it runs (:func:`approved_as`). A
        #: restart that reads a changed trust list keeps them; a table pointed at another
        #: command does not inherit them, and a table removed takes them with it.
        self._answered: dict[tuple, set[str]] = {}
        self._tools: dict[str, McpTool] = {}
        #: each started server's current run
        self._runs: dict[str, _Run] = {}
        self._run_count = 0
        #: set by aclose(quitting=True), for a link made after it (a task not started yet)
        self._quitting = False
        #: the runs of servers restarted or removed since, still stopping their processes,
        #: by server: a new run of the same name starts only once they have ended
        self._stopping: dict[str, set[_Run]] = {}
        #: calls whose caller stopped waiting, still sending the protocol's cancellation
        self._leaving: set[asyncio.Future] = set()
        self._stop = asyncio.Event()
        #: seconds a new run of a server waits for its earlier one to stop its process
        #: (stdio's own bounds end it within ~7 s); then it does not start
        self.stop_wait_s = STOP_WAIT_S
        self._started = False
        self._settled: dict[str, asyncio.Event] = {}

    # ------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Start every enabled server in the background (needs a running loop); once."""
        if self._started:
            return
        self._started = True
        for name, config in self.configs.items():
            self._settled[name] = asyncio.Event()
            if not config.enabled:
                self._settled[name].set()
                continue
            self._begin(config)

    def _begin(self, config: McpServerConfig, *, again: str = "") -> None:
        """A new run of ``config``'s server, its status fresh: an old run still ending
        writes to its own. The new process starts once every earlier run of the same
        name has stopped its own (restarted, removed and added back, disabled and
        enabled again): two of one server at once may clash over its files or ports."""
        name = config.name
        self._run_count += 1
        status = self.status[name] = ServerStatus(name, config.transport)
        settled = self._settled[name] = asyncio.Event()
        run = self._runs[name] = _Run(self._run_count, config, status, settled)
        after = [old for old in self._stopping.get(name, ()) if old.task is not None]
        run.task = asyncio.create_task(self._run(run, after=after, again=again),
                                       name=f"mcp:{name}")

    def restart(self, name: str) -> str:
        """Start a server again: '' when it is starting (or stopping), else why not (one line).

        Any state but "starting": a ready server may be one that no longer answers
        (each call times out). Its table is read again from :attr:`config_path`
        first, so a fixed ``command``, ``args`` or ``env`` is what starts; a file
        that is not right now leaves the server as it is. A server up is stopped
        (its calls end saying it was restarted), and its old process and helpers
        are gone before the new one starts. Its state goes to "starting", then
        "ready" (its tools offered from the next request) or "failed" with the new
        error; the person gets one notice either way. What the person answered
        "always allow" for stays trusted while the table runs the same program
        (:func:`approved_as`). The file decides what the server is: a
        table added since the app started is started, one removed (or now
        ``enabled = false``) is stopped and said so once its process is gone.
        """
        status = self.status.get(name)
        if self._stop.is_set():
            return f"MCP server '{name}' is not restarted: the servers are being stopped"
        table = table_name(("mcp", "servers", name))
        if status is not None and (status.state == "starting" or not self._started):
            return (f"MCP server '{name}' is starting; restart it once it is ready or has "
                    f"failed ({table} start_timeout_s bounds the wait)")
        try:
            config = self._config_now(name) if status is not None or self.config_path \
                else None
        except ConfigError as exc:
            return f"MCP server '{name}' was not restarted: {exc}"
        if status is None:
            if config is None or not self._started:
                names = ", ".join(f"'{n}'" for n in self.status) or "none"
                where = f" in {self.config_path}" if self.config_path else ""
                return f"no MCP server is named '{name}'{where} (configured: {names})"
            self._add(config)
            return ""
        if config is None:
            self._remove(name)
            return ""
        if not config.enabled and status.state == "disabled":
            then = "then restart it" if self.config_path else "start the app again"
            return (f"MCP server '{name}' is disabled in config.toml; set {table} enabled = "
                    f"true and {then}")
        self._apply(config)
        return ""

    def reload(self) -> tuple[str, bool]:
        """Read the whole ``[mcp]`` table again and make the servers what it says: a new
        table started, one gone stopped, one changed restarted (stopped, if it is now
        ``enabled = false``), the others left as they are, running or not. One line
        for the person (what was done, or why nothing was); each start and stop also
        says its own outcome, as :meth:`restart` does. False: nothing was done."""
        if self.config_path is None:
            return "MCP servers are not reloaded here: there is no config file to read", False
        if self._stop.is_set():
            return "MCP servers are not reloaded: the servers are being stopped", False
        if not self._started:
            return "MCP servers are still starting; reload once they have", False
        try:
            servers = {s.name: s for s in load_mcp_servers(self.config_path)}
        except ConfigError as exc:
            return f"MCP servers were not reloaded, none changed: {exc}", False
        done: dict[str, list[str]] = {"started": [], "restarted": [], "stopped": [],
                                      "removed": [], "trust updated": [], "unchanged": []}
        for name in [n for n in self.status if n not in servers]:
            self._remove(name)
            done["removed"].append(name)
        for name, config in servers.items():
            if name not in self.status:
                self._add(config)
                done["started" if config.enabled else "unchanged"].append(name)
            elif config == self.configs[name]:
                done["unchanged"].append(name)
            elif replace(config, trust=()) == replace(self.configs[name], trust=()):
                # the trust list alone (an "always allow" writes there): no restart needed,
                # and one dropped the server's calls though nobody changed it
                self.configs[name] = config
                self._trusted[name] = self._trust_of(config)
                done["trust updated"].append(name)
            else:
                was = self.status[name].state
                self._apply(config)
                if not config.enabled:
                    done["unchanged" if was == "disabled" else "stopped"].append(name)
                else:
                    done["started" if was == "disabled" else "restarted"].append(name)
        said = "; ".join(f"{what} {', '.join(repr(n) for n in names)}"
                         for what, names in done.items() if names)
        return f"MCP servers reloaded from {self.config_path}: {said or 'none configured'}", True

    def _apply(self, config: McpServerConfig) -> None:
        """``config`` for its known server, now: started again, or stopped if disabled."""
        name = config.name
        self.configs[name] = config
        self._trusted[name] = self._trust_of(config)
        if not config.enabled:
            run = self._runs.get(name)
            offered = len(run.status.tools) if run and run.status.state == "ready" else 0
            task = self._retire(name)
            self._runs.pop(name, None)
            self.status[name] = ServerStatus(name, config.transport, "disabled")
            self._settled[name] = settled = asyncio.Event()
            settled.set()
            if run is not None:
                self._say_when_gone(task, f"MCP server '{name}' is disabled in config.toml "
                                          f"now{_stopped(task, offered)}")
            return
        old = self._runs.get(name)
        self._retire(name)
        self._begin(config, again="restarted" if old else "started")

    def _add(self, config: McpServerConfig) -> None:
        """A server whose table was added to the file since the app started; its tools'
        names get a tag no other server has, as if its table came last."""
        name = config.name
        if name not in self._tags:
            used = set(self._tags.values())
            base = tag = server_tag(name)
            n = 1
            while tag in used:
                n += 1
                tag = f"{base}_{n}"
            self._tags[name] = tag
        self.configs[name] = config
        self._trusted[name] = self._trust_of(config)
        if config.enabled:
            self._begin(config, again="started")
            return
        self.status[name] = ServerStatus(name, config.transport, "disabled")
        self._settled[name] = settled = asyncio.Event()
        settled.set()

    def _remove(self, name: str) -> None:
        """A server whose table is gone from the file: stopped, its tools no longer
        offered, and it leaves the list; the person is told once its process is gone."""
        run = self._runs.get(name)
        offered = len(run.status.tools) if run and run.status.state == "ready" else 0
        task = self._retire(name)
        for table in (self._runs, self.status, self.configs, self._settled, self._trusted):
            table.pop(name, None)
        for key in [k for k in self._answered if k[0] == name]:  # asked of what was removed
            del self._answered[key]
        self._say_when_gone(task, f"MCP server '{name}' was removed from {self.config_path}"
                                  f"{_stopped(task, offered)}")

    def _retire(self, name: str) -> asyncio.Task | None:
        """End ``name``'s current run: its calls end saying the server was restarted,
        its tools are off the list, and its task stops its process (a start under way
        is cancelled). That task, while it still runs, for what must wait for it."""
        old = self._runs.get(name)
        if old is None:
            return None
        old.ending.set()  # its calls end now, saying why; its task stops the process
        old.link.quitting = True  # the person waits: the short grace a quit gets
        self._drop(old)  # not offered from the next request on
        task = old.task
        if task is None or task.done():
            return None
        if old.status.state == "starting":
            task.cancel()  # its start waits for nothing we set; the SDK still stops it
        stopping = self._stopping.setdefault(name, set())
        stopping.add(old)
        task.add_done_callback(lambda _task: stopping.discard(old))
        return task

    def _say_when_gone(self, task: asyncio.Task | None, message: str) -> None:
        """``message`` for the person once ``task`` (a stopping run) has ended."""
        if task is None:
            self._notice(message, "information")
        else:
            task.add_done_callback(lambda _task: self._notice(message, "information"))

    def _config_now(self, name: str) -> McpServerConfig | None:
        """The server's table as the config file says now (see :meth:`restart`)."""
        if self.config_path is None:
            return self.configs[name]
        return load_mcp_server(self.config_path, name)

    def starting(self) -> list[str]:
        """The servers still starting (a turn waits for them before its first request);
        none before :meth:`start`."""
        if not self._started:
            return []
        return [name for name, status in self.status.items() if status.state == "starting"]

    async def wait_started(self, timeout: float | None = None) -> None:
        """Until every server is ready or has failed (not an error if ``timeout`` runs out)."""
        self.start()
        waits = [asyncio.create_task(e.wait()) for e in self._settled.values()]
        if not waits:
            return
        _done, pending = await asyncio.wait(waits, timeout=timeout)
        for task in pending:
            task.cancel()

    async def aclose(self, *, quitting: bool = False) -> None:
        """Stop every server and wait for their processes to go (bounded by the SDK).

        A server still starting is cancelled rather than waited for: quitting must
        not take its start-up timeout. The SDK's shutdown is shielded, so its
        process is still stopped. ``quitting``: the app or command is ending and a
        person waits for it, so a stdio server gets a short grace (``stdio.QUIT_GRACE_S``)
        and what is left of it is killed soon after; the rule that no process
        outlives the app holds either way.
        """
        self._quitting = quitting
        for run in self._runs.values():
            run.link.quitting = quitting
        self._stop.set()
        for run in self._runs.values():
            if run.status.state == "starting" and run.task is not None:
                run.task.cancel()
        runs = [*self._runs.values(), *(r for runs in self._stopping.values() for r in runs)]
        tasks = [r.task for r in runs if r.task is not None and not r.task.done()]
        if tasks:
            await asyncio.wait(tasks)
        for status in self.status.values():  # a task cancelled before it ran said nothing
            if status.state == "starting":
                status.state = "stopped"
        if self._leaving:  # their servers are gone, so their last write fails at once
            await asyncio.wait(list(self._leaving))

    # ---------------------------------------------------------------- tools

    def statuses(self) -> list[ServerStatus]:
        return list(self.status.values())

    def overview(self) -> list[dict[str, Any]]:
        """Each server as plain data (state, target, tools and whether each is trusted).

        What ``mcp list --json`` prints and the app's MCP screen shows.
        """
        rows = []
        for status in self.status.values():
            config = self.configs[status.name]
            row = status.as_json()
            # a URL's userinfo or a token among the arguments is not for the screen
            row["target"] = redact(config.url or " ".join([config.command, *config.args]))
            row["error"] = redact(row["error"])
            for tool, entry in zip(status.tools, row["tools"], strict=True):
                entry["trusted"] = self._trusts(tool)  # kept while it is down, as a restart does
            rows.append(row)
        return rows

    def changes(self) -> tuple:
        """Each server's name, run, state and error: what changes when :meth:`overview`
        does (but a tool's trust), at a fraction of its cost, for a screen that follows
        them; the run moves with a restart that ends as the one before did."""
        return tuple((s.name, run.number if (run := self._runs.get(s.name)) else 0, s.state,
                      s.error) for s in self.status.values())

    def tools(self) -> list[McpTool]:
        return list(self._tools.values())

    def schemas(self) -> list[dict[str, Any]]:
        return [t.schema() for t in self._tools.values()]

    def handles(self, name: str) -> bool:
        return name in self._tools

    def is_trusted(self, exposed: str) -> bool:
        tool = self._tools.get(exposed)
        return tool is not None and self._trusts(tool)

    def _trusts(self, tool: McpTool) -> bool:
        trusted = self._trusted.get(tool.server, set())
        if "*" in trusted or tool.name in trusted:
            return True
        return any(fnmatch.fnmatchcase(tool.exposed, p) for p in self.allowed)

    async def call(self, name: str, args: dict[str, Any], ctx: Any) -> str | MultimodalOutput:
        """Ask when untrusted, run the call, map the result; ToolError for the model.

        The ``ToolSource`` call of the tool batch: text (an fd preview when long),
        or a :class:`MultimodalOutput` when the result held images.
        """
        tool = self._tools.get(name)
        if tool is None:
            raise ToolError(f"unknown tool '{name}'; its MCP server is not running")
        _check_sendable(args)
        if not self.is_trusted(name):
            await self._approve(tool, args, ctx)
        mapped = await self.call_raw(tool, args)
        if mapped.is_error:
            raise ToolError(mapped.text or f"{name} failed without a message")
        text = mapped.text
        fds = getattr(ctx, "fds", None)
        if fds is not None:
            text, record = fds.add_output(text, now_iso(), f"tool:{name}")
            if record is not None:
                ctx.records.append(record if "t" in record else {"t": "fd", **record})
        if mapped.images:
            return MultimodalOutput(text, mapped.user_messages(name, text))
        return text

    async def call_raw(self, tool: McpTool, args: dict[str, Any]) -> MappedResult:
        """One ``tools/call`` within the server's ``call_timeout_s``.

        Cancelling the caller, or the deadline passing, sends the protocol's
        cancellation (``notifications/cancelled``). The deadline's call ends once it
        is sent; a cancelled caller does not wait for it: it goes in the background,
        where a server whose stdin is full would otherwise hold the caller (Esc, a
        quit) for the SDK's own bound on that write, 5 s.
        """
        run = self._runs.get(tool.server)
        if run is not None and run.link.failure:  # broken, maybe not yet taken down: fail fast
            raise self._lost(run)
        if run is None or run.client is None:
            raise ToolError(self._unavailable(tool.server))
        config, link = run.config, run.link
        deadline = asyncio.timeout(config.call_timeout_s)
        call = asyncio.ensure_future(run.client.call_tool(tool.name, args))
        restarted = asyncio.ensure_future(run.ending.wait())
        try:
            async with deadline:
                await asyncio.wait({call, restarted}, return_when=asyncio.FIRST_COMPLETED)
            if not call.done():
                self._let_go(call)
                raise self._restarted(tool)
            result = call.result()
        except asyncio.CancelledError:
            self._let_go(call)
            raise
        except TimeoutError:
            if deadline.expired():
                call.cancel()
                await asyncio.wait({call})  # the cancellation sent (or the link gone)
                _retrieve(call)
            if run.ending.is_set():  # restarted while its cancellation was being sent
                raise self._restarted(tool) from None
            if link.failure:  # the request never left: the pipe was full
                raise self._lost(run) from None
            if not deadline.expired():
                raise ToolError(f"the MCP server '{tool.server}' failed the call: it timed "
                                "out") from None
            raise ToolError(
                f"the MCP server '{tool.server}' did not answer {tool.name} within "
                f"{config.call_timeout_s:g} s ([mcp.servers.{tool.server}] call_timeout_s); the "
                "call was cancelled") from None
        except ToolError:
            raise
        except Exception as exc:  # protocol errors, a server that died or broke mid-call
            if run.ending.is_set():
                raise self._restarted(tool) from None
            if link.failure or link.closed.is_set():
                raise self._lost(run) from None
            raise ToolError(f"the MCP server '{tool.server}' failed the call: "
                            f"{one_line(str(exc) or type(exc).__name__, 300)}") from None
        finally:
            restarted.cancel()
        return map_result(result)

    def _restarted(self, tool: McpTool) -> ToolError:
        status = self.status.get(tool.server)
        if status is None or status.state == "disabled":  # the file no longer has it run
            how = "removed from" if status is None else "disabled in"
            return ToolError(
                f"the MCP server '{tool.server}' was {how} the config by the person while "
                f"{tool.name} ran, so the call was dropped and its result is lost; its tools "
                "are no longer offered")
        return ToolError(
            f"the MCP server '{tool.server}' was restarted by the person while {tool.name} "
            "ran, so the call was dropped and its result is lost; call it again once the "
            "server is back, if it is still needed")

    def _let_go(self, call: asyncio.Future) -> None:
        """Cancel ``call`` without waiting for it; :meth:`aclose` waits for what is left."""
        call.cancel()
        if call.done():
            _retrieve(call)
            return
        self._leaving.add(call)

        def gone(done: asyncio.Future) -> None:
            self._leaving.discard(done)
            _retrieve(done)

        call.add_done_callback(gone)

    def _lost(self, run: _Run) -> ToolError:
        """The error for a call to a server whose connection ended, its tools already off
        the list: the request that follows this call's result must not offer them (the
        server's task, which tells the person, may run only after that request is built).
        A call on a run the person has restarted since leaves the new run's tools alone.
        """
        self._drop(run)
        server, link = run.config.name, run.link
        if link.failure:
            return ToolError(_dropped(server, link.failure))
        said = one_line(link.stderr.last_line(), 200)
        return ToolError(f"the MCP server '{server}' closed its connection during the call"
                         f"{f' ({said})' if said else ''}; {self._gone(server)}")

    def _gone(self, server: str) -> str:
        """What became of a stopped server's tools, and how to have them back."""
        if not self.restart_hint:
            return "its tools are gone for the rest of this run"
        return (f"its tools are gone until it is restarted "
                f"({self.restart_hint.replace('{server}', server)})")

    def _unavailable(self, server: str) -> str:
        status = self.status.get(server)
        if status is None:  # its table left the file while the person was asked to allow it
            return (f"the MCP server '{server}' was removed from the config by the person, so "
                    "this tool did not run; its tools are no longer offered")
        why = f" ({one_line(status.error, 200)})" if status.error else ""
        return f"the MCP server '{server}' is {status.state}{why}; this tool is unavailable"

    def _trust_of(self, config: McpServerConfig) -> set[str]:
        """What runs without asking on ``config``'s server: its table's trust list, and
        what the person answered "always allow" for on this very server in this run."""
        return set(config.trust) | self._answered.get(approved_as(config), set())

    async def _approve(self, tool: McpTool, args: dict[str, Any], ctx: Any) -> None:
        prompt = approval_prompt(tool.server, tool.name, args)
        config = self.configs.get(tool.server)
        asked = approved_as(config) if config is not None else None
        choice = await ctx.ask(prompt, APPROVAL_CHOICES, NOT_ASKED)
        now = self.configs.get(tool.server)
        if choice != NOT_ASKED and now is not None and approved_as(now) != asked:
            # its table now runs something else: the answer was about what ran before
            raise ToolError(
                f"the MCP server '{tool.server}' was changed in the config by the person "
                f"while they were asked about {tool.name} (it runs something else now), so "
                "the call did not run and the answer was not kept; call the tool again if "
                "it is still needed, and the person is asked about the server as it is now")
        if choice == NOT_ASKED:
            how = self._allow_how(tool)
            if tool.exposed not in self._hinted:  # the person hears it once per tool per run
                self._hinted.add(tool.exposed)
                self._notice(f"{tool.exposed} did not run: it is not trusted and nobody can be "
                             f"asked here; to allow it, {how}", "warning")
            raise ToolError(
                f"{tool.exposed} is not allowed in this non-interactive run: it is not trusted "
                "and nobody could be asked to allow it, so it did not run. Carry on without "
                f"it; if it is needed, tell the person that to allow it they can {how}")
        if choice == APPROVE_ALWAYS:
            if now is None:  # removed meanwhile: nothing to trust, and the call says so
                return
            self._trusted.setdefault(tool.server, set()).add(tool.name)
            self._answered.setdefault(approved_as(now), set()).add(tool.name)
            if self.on_trust is not None:
                try:
                    self._save_trust(tool, now)
                except (OSError, ConfigError) as exc:
                    self._notice(f"could not save the trust for {tool.exposed}: {exc}", "warning")
        elif choice != APPROVE_ONCE:
            raise ToolError(f"the person declined to run {tool.exposed}; it did not run. Do not "
                            "call it again unless they ask; carry on without it")

    def _save_trust(self, tool: McpTool, config: McpServerConfig) -> None:
        """Write "always allow" for ``tool`` into its server's table, if the file's table
        still runs what ``config`` runs: one pointed at another program since (not
        reloaded yet) would hand it the answer at the next reload, unasked."""
        assert self.on_trust is not None
        written = self._config_now(tool.server)
        if written is not None and approved_as(written) != approved_as(config):
            self._notice(
                f"'always allow' for {tool.exposed} was not saved to config.toml: its "
                f"{table_name(('mcp', 'servers', tool.server))} table there runs another "
                f"program now ({self.config_path}); the answer holds for the server as it "
                "runs now", "warning")
            return
        self.on_trust(tool.server, tool.name)

    def _allow_how(self, tool: McpTool) -> str:
        """How the person lets an untrusted tool run where nobody can be asked."""
        trust = (f"trust it in config.toml ({table_name(('mcp', 'servers', tool.server))} "
                 f"trust = {toml_value([tool.name])})")
        if not self.allow_flag:
            return trust
        return f"rerun with {self.allow_flag} {tool.exposed}, or {trust}"

    # --------------------------------------------------------------- servers

    async def _run(self, run: _Run, *, after: Sequence[_Run] = (), again: str = "") -> None:
        """One run of a server from its start to its end. ``after``: the server's earlier
        runs, whose processes must be gone first; ``again``: what the person is told of
        when it is ready ("restarted"; "" at the app's start)."""
        config, status, link = run.config, run.status, run.link
        ready = False
        try:
            await self._wait_gone(config.name, after)
            link.quitting = link.quitting or self._quitting
            started = time.perf_counter()
            await _import_sdk()
            transport = self._transport(config, link)
            from mcp import Client

            async with contextlib.AsyncExitStack() as stack:
                async with asyncio.timeout(config.start_timeout_s):
                    client = await stack.enter_async_context(Client(transport, cache=None))
                    listing = await _list_tools(client)
                self._register(run, listing)
                status.start_s = time.perf_counter() - started
                status.state = "ready"
                ready = True
                run.client = client
                run.settled.set()
                if again:
                    count = len(status.tools)
                    self._notice(f"MCP server '{config.name}' {again}: {count} "
                                 f"tool{'' if count == 1 else 's'} offered"
                                 f"{' again' if again == 'restarted' else ''}", "information")
                waits = [asyncio.create_task(e.wait())
                         for e in (self._stop, link.closed, run.ending)]
                try:
                    await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    for wait in waits:
                        wait.cancel()
                self._drop(run)
                if self._stop.is_set() or run.ending.is_set():
                    status.state = "stopped"  # a restart: the next run is the news
                elif link.failure:
                    self._failed(status, link.failure, "failed")
                else:
                    status.state = "exited"
                    status.error = one_line(link.stderr.last_line(), 300) or \
                        "the server closed the connection"
                    self._notice(f"MCP server '{config.name}' stopped: {status.error}; "
                                 f"{self._gone(config.name)}", "error")
        except asyncio.CancelledError:
            status.state = "stopped"
            raise
        except BaseException as exc:  # anyio's exception groups, OSError, timeouts
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                raise
            if self._stop.is_set() or run.ending.is_set():
                status.state = "stopped"  # stopped by us while starting or closing: no news
            else:
                self._failed(status, link.failure or _failure(config, exc, link),
                             "failed" if ready else "did not restart" if again == "restarted"
                             else "did not start")
        finally:
            run.client = None
            self._drop(run)
            run.settled.set()

    async def _wait_gone(self, name: str, runs: Sequence[_Run]) -> None:
        """Until ``runs`` (earlier runs of server ``name``) have stopped their processes,
        at most :attr:`stop_wait_s`; a ToolError saying so if one has not by then."""
        tasks = {run.task for run in runs if run.task is not None and not run.task.done()}
        if not tasks:
            return
        _done, pending = await asyncio.wait(tasks, timeout=self.stop_wait_s)
        if not pending:
            return
        pids = ", ".join(str(run.link.pid) for run in runs
                         if run.task in pending and run.link.pid is not None)
        how = self.restart_hint.replace("{server}", name) if self.restart_hint else \
            "start it again"
        raise ToolError(
            f"its previous process{f' (pid {pids})' if pids else ''} was still stopping "
            f"{self.stop_wait_s:g} s after it was told to, and a second one beside it could "
            f"clash over the same files or ports; once it is gone, {how}")

    def _failed(self, status: ServerStatus, error: str, what: str) -> None:
        status.state = "failed"
        status.error = error
        stopped = f"; it was stopped and {self._gone(status.name)}" if what == "failed" else ""
        self._notice(f"MCP server '{status.name}' {what}: {error}{stopped}", "error")

    def _transport(self, config: McpServerConfig, link: Link) -> Any:
        max_bytes = int(config.max_message_mb * 2**20)
        setting = f"[mcp.servers.{config.name}] max_message_mb"
        if config.url:
            from .http import http_transport

            return _watched(http_transport(config.url, config.resolved_headers(self.env), link,
                                           max_bytes=max_bytes, setting=setting), link)
        command = find_command(config.command, self.env)
        if command is None:
            raise ToolError(f"command not found: {config.command} (looked in PATH and in "
                            f"{interpreter_dir()}); install it or fix "
                            f"[mcp.servers.{config.name}] command")
        return stdio_transport(
            [command, *config.args], server_env(config, self.env), config.cwd, link,
            max_bytes=max_bytes, setting=setting, stall_s=config.call_timeout_s,
            stall_setting=f"[mcp.servers.{config.name}] call_timeout_s")

    def _register(self, run: _Run, listing: Iterable[Any]) -> None:
        # Unique tags keep servers apart, so only this server's own names are taken:
        # what another server registered (or whether it started at all) changes nothing.
        server, status = run.config.name, run.status
        taken: set[str] = set()
        tools: list[McpTool] = []
        for item in listing:
            schema = getattr(item, "input_schema", None) or {}
            exposed = exposed_name(server, item.name, taken, tag=self._tags[server])
            taken.add(exposed)
            tools.append(McpTool(server, item.name, exposed, item.description or "", schema))
        left_out = run.link.left_out
        if left_out:
            names = ", ".join(json.dumps(n, ensure_ascii=False) for n in left_out[:5])
            more = f" and {len(left_out) - 5} more" if len(left_out) > 5 else ""
            status.error = (
                f"left out {names}{more}: schema nested more than {MAX_SCHEMA_DEPTH} levels deep")
            self._notice(f"MCP server '{server}' {status.error}", "warning")
        status.tools = tools
        for tool in tools:
            self._tools[tool.exposed] = tool

    def _drop(self, run: _Run) -> None:
        """``run``'s server's tools off the list, if ``run`` is still its current one: an
        old run ending late (a call on it failing after a restart) leaves the new alone."""
        server = run.config.name
        if self._runs.get(server) is not run:
            return
        for exposed in [n for n, t in self._tools.items() if t.server == server]:
            del self._tools[exposed]

    def _notice(self, message: str, severity: str) -> None:
        self.emit(Notice(key=self.notice_key, message=message, severity=severity))


# ------------------------------------------------------------------ transports


_SDK_MODULES = ("mcp", "mcp.client.stdio", "mcp.client.streamable_http",
                "mcp.shared._httpx_utils", "anyio", "httpx2")


async def _import_sdk() -> None:
    """Import the SDK in a thread: hundreds of milliseconds the app's loop keeps for keys.

    The SDK logs what goes wrong on its side (with tracebacks); with no handler of
    ours, Python would print those on stderr, under the app's screen and among
    ``ask``'s output. What matters reaches the person as a notice or a tool error.
    """
    if all(name in sys.modules for name in _SDK_MODULES):
        return
    import importlib
    import logging

    def load() -> None:
        for name in _SDK_MODULES:
            importlib.import_module(name)
        sdk_log = logging.getLogger("mcp")
        if not sdk_log.handlers:
            sdk_log.addHandler(logging.NullHandler())

    await asyncio.to_thread(load)


async def _list_tools(client: Any) -> list[Any]:
    tools: list[Any] = []
    cursor: str | None = None
    for _ in range(100):  # a server whose cursor never ends cannot hang the start
        page = await client.list_tools(cursor=cursor)
        tools += page.tools
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


def find_command(command: str, env: Mapping[str, str]) -> str | None:
    """The executable a stdio server's ``command`` names (None when there is none).

    PATH first, then beside the running interpreter: the app started as
    ``.venv/bin/selfref-tui`` (no activated environment) finds a server installed
    in its own environment, as ``mcp-server-time`` is by ``pip install``.
    """
    found = shutil.which(command, path=env.get("PATH"))
    if found is None and os.sep not in command:
        found = shutil.which(command, path=str(interpreter_dir()))
    return found


def interpreter_dir() -> Path:
    """Where the running interpreter's environment keeps its scripts (``.venv/bin``).

    The folder of ``sys.executable`` as invoked (a venv's ``python`` is often a
    link to the system's: resolving it would leave the environment).
    """
    return Path(sys.executable).parent


def server_env(config: McpServerConfig, env: Mapping[str, str]) -> dict[str, str]:
    """What a stdio server's environment holds: a few safe variables plus its own ``env``.

    As the SDK's stdio client does: the app's secrets (API keys) are not handed to
    every server; a shell function (``()`` …) is never passed.
    """
    from mcp.client.stdio import DEFAULT_INHERITED_ENV_VARS

    base = {k: env[k] for k in DEFAULT_INHERITED_ENV_VARS
            if k in env and not env[k].startswith("()")}
    return base | config.resolved_env(env)


@contextlib.asynccontextmanager
async def _watched(transport: Any, link: Link) -> AsyncIterator:
    """``transport`` whose read side sets ``link.closed`` when the server goes away.

    The SDK notices a dead server only when a request fails; the pump between
    its read stream and the session's sees the end at once, idle or not.
    """
    import anyio

    async with transport as (read, write):
        send, receive = anyio.create_memory_object_stream[Any](0)

        async def pump() -> None:
            try:
                async with send:
                    async for item in read:
                        link.left_out += prune_listing(item)
                        await send.send(item)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
                pass
            finally:
                link.closed.set()

        async with anyio.create_task_group() as group:
            group.start_soon(pump)
            try:
                yield receive, write
            finally:
                group.cancel_scope.cancel()


def approved_as(config: McpServerConfig) -> tuple:
    """What an "always allow" answer is tied to: the server's name and what it runs (its
    command, arguments, environment and folder, or its URL). The same name running another
    program is another server, which the person was never asked about; so is the same
    command given another environment (``PYTHONPATH``, ``LD_PRELOAD`` or ``NODE_OPTIONS``
    load other code into it)."""
    return (config.name, config.command, config.args, config.env, config.cwd, config.url)


def _retrieve(call: asyncio.Future) -> None:
    """Take a finished call's outcome, so asyncio does not log it as never retrieved."""
    if not call.cancelled():
        call.exception()


def _stopped(task: asyncio.Task | None, offered: int) -> str:
    """What became of a server the file no longer wants: its process (``task``, the run
    that was stopping it; None when none ran) and the tools it had ``offered``."""
    said = ", so it was stopped" if task is not None else "; it was not running"
    if offered:
        said += (f" and its {offered} tool{' is' if offered == 1 else 's are'} no longer "
                 "offered")
    return said


def _dropped(server: str, failure: str) -> str:
    return (f"the MCP server '{server}' {failure}; the connection was dropped and the server "
            "stopped")


def _failure(config: McpServerConfig, exc: BaseException, link: Link) -> str:
    """One line: why the server did not start, preferring what the server itself said."""
    leaf = exc
    while isinstance(leaf, BaseExceptionGroup) and leaf.exceptions:
        leaf = leaf.exceptions[0]
    if isinstance(leaf, ToolError | ConfigError):
        return str(leaf)
    if isinstance(leaf, TimeoutError):
        return (f"no answer within {config.start_timeout_s:g} s; check the command or raise "
                f"[mcp.servers.{config.name}] start_timeout_s")
    said = one_line(link.stderr.last_line(), 300)
    where = config.url or config.command
    from mcp_types.jsonrpc import CONNECTION_CLOSED

    if not said and link.returncode is not None and getattr(leaf, "code", None) == \
            CONNECTION_CLOSED:  # the SDK's "Connection closed": the server left, saying nothing
        return (f"it exited with status {link.returncode} before it was ready and said "
                f"nothing on stderr ({where}); run the command in a terminal to see why")
    what = said or one_line(str(leaf) or type(leaf).__name__, 300)
    return f"{what} ({where})"


def _check_sendable(args: dict[str, Any]) -> None:
    """Refuse arguments that hold a lone surrogate (half an emoji's pair, from a JSON
    escape the model wrote): the request is UTF-8, which has no bytes for one, and
    failing to write it stopped the server's connection for every later call."""
    try:
        json.dumps(args, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        half = exc.object[exc.start:exc.end].encode("unicode_escape").decode("ascii")
        raise ToolError(f"the arguments hold half a surrogate pair ({half}), which cannot be "
                        "sent; call the tool again with whole characters") from None
    except (TypeError, ValueError):
        pass  # not JSON the usual way: the client says what it makes of it
