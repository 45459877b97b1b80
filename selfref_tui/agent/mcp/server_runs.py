"""A server's run, from its start to its end: the SDK's client in one task.

A mixin of :class:`~selfref_tui.agent.mcp.manager.McpManager` (its state lives there):
the task that starts a server (after its earlier run has stopped its process), lists
its tools, waits until the server goes or is stopped and says what became of it; the
transports (our own stdio, streamable HTTP) and what a stdio server is started with.
Apart from the calls and the config's changes because it is the only part that imports
the ``mcp`` SDK, and the part that owns a server's processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import sys
import time
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...config import ConfigError, McpServerConfig
from ...safety import one_line
from ..tools.builtin import ToolError
from .listing import MAX_SCHEMA_DEPTH, prune_listing
from .naming import exposed_name
from .server_state import McpTool, ServerStatus, _Run
from .stdio import Link, stdio_transport


class ServerRuns:
    """Start, watch and stop each server's runs."""

    if TYPE_CHECKING:  # what the manager provides (manager.McpManager)
        env: dict[str, str]
        status: dict[str, ServerStatus]
        restart_hint: str
        stop_wait_s: float
        _tags: dict[str, str]
        _tools: dict[str, McpTool]
        _runs: dict[str, _Run]
        _run_count: int
        _quitting: bool
        _stopping: dict[str, set[_Run]]
        _stop: asyncio.Event
        _settled: dict[str, asyncio.Event]

        def _notice(self, message: str, severity: str) -> None: ...

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

    def _gone(self, server: str) -> str:
        """What became of a stopped server's tools, and how to have them back."""
        if not self.restart_hint:
            return "its tools are gone for the rest of this run"
        return (f"its tools are gone until it is restarted "
                f"({self.restart_hint.replace('{server}', server)})")

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
