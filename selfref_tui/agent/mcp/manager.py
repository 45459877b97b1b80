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

The manager holds the state and its jobs come as mixins, one module each:
``server_runs`` (a server's run in its task, the transports, the SDK),
``tool_calls`` (a call: approval, trust, deadline, how it ended) and
``config_changes`` (restart and ``/mcp reload`` from config.toml); the values they
share are ``server_state``'s. Here: the start, the stop, and what there is.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ...config import McpServerConfig
from ...safety import redact
from ..events import EventSink, Notice, discard
from .config_changes import ConfigChanges
from .naming import server_tags
from .server_runs import ServerRuns
from .server_state import McpTool, ServerStatus, _Run
from .tool_calls import ToolCalls

#: seconds a server's new process waits for its old one to be gone (see McpManager._begin)
STOP_WAIT_S = 10.0


class McpManager(ConfigChanges, ToolCalls, ServerRuns):
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

    # ------------------------------------------------------- what there is

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

    def _notice(self, message: str, severity: str) -> None:
        self.emit(Notice(key=self.notice_key, message=message, severity=severity))
