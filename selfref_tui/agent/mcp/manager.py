"""Starts the configured MCP servers, keeps their tools, runs calls and stops them all.

Each server lives in one asyncio task that enters the SDK's ``Client`` and leaves
it (anyio requires a cancel scope to be left by the task that entered it); calls
come from the loop's tool tasks and only use the client's streams. A server that
fails to start, or dies later, becomes a ``Notice`` and loses its tools; the
others keep working. Stopping closes each client, which closes the server's stdin
and then kills its process group. For a crash of this process, stdio servers are
started through a tiny launcher that asks Linux to send SIGTERM when we die
(``PR_SET_PDEATHSIG``); other systems rely on the orderly stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import os
import shutil
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from ...config import ConfigError, McpServerConfig
from ...safety import redact
from ..events import EventSink, Notice, discard
from ..tools.batch import MultimodalOutput
from ..tools.builtin import ToolError, now_iso
from .approval import APPROVAL_CHOICES, APPROVE_ALWAYS, APPROVE_ONCE, DENY, approval_prompt
from .naming import exposed_name, server_tags
from .results import MappedResult, map_result

#: Sets the parent-death signal, checks the parent is still there, then becomes the server.
#: Run with ``python -I -S -c`` so it imports nothing beyond ctypes.
LAUNCHER = """\
import ctypes, os, signal, sys
parent = int(sys.argv[1])
try:
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)
except Exception:
    pass
if os.getppid() != parent:
    sys.exit(0)
try:
    os.execvp(sys.argv[2], sys.argv[2:])
except OSError as exc:
    sys.stderr.write(f"cannot run {sys.argv[2]}: {exc.strerror}\\n")
    sys.exit(127)
"""


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
        self._trusted: dict[str, set[str]] = {s.name: set(s.trust) for s in servers}
        self._tools: dict[str, McpTool] = {}
        self._clients: dict[str, Any] = {}
        self._tasks: dict[str, asyncio.Task] = {}
        self._stop = asyncio.Event()
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
            self._tasks[name] = asyncio.create_task(self._run(config), name=f"mcp:{name}")

    async def wait_started(self, timeout: float | None = None) -> None:
        """Until every server is ready or has failed (not an error if ``timeout`` runs out)."""
        self.start()
        waits = [asyncio.create_task(e.wait()) for e in self._settled.values()]
        if not waits:
            return
        _done, pending = await asyncio.wait(waits, timeout=timeout)
        for task in pending:
            task.cancel()

    async def aclose(self) -> None:
        """Stop every server and wait for their processes to go (bounded by the SDK).

        A server still starting is cancelled rather than waited for: quitting must
        not take its start-up timeout. The SDK's shutdown is shielded, so its
        process is still stopped.
        """
        self._stop.set()
        for name, task in self._tasks.items():
            if self.status[name].state == "starting":
                task.cancel()
        tasks = [t for t in self._tasks.values() if not t.done()]
        if tasks:
            await asyncio.wait(tasks)

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
                entry["trusted"] = self.is_trusted(tool.exposed)
            rows.append(row)
        return rows

    def tools(self) -> list[McpTool]:
        return list(self._tools.values())

    def schemas(self) -> list[dict[str, Any]]:
        return [t.schema() for t in self._tools.values()]

    def handles(self, name: str) -> bool:
        return name in self._tools

    def is_trusted(self, exposed: str) -> bool:
        tool = self._tools.get(exposed)
        if tool is None:
            return False
        trusted = self._trusted.get(tool.server, set())
        if "*" in trusted or tool.name in trusted:
            return True
        return any(fnmatch.fnmatchcase(exposed, p) for p in self.allowed)

    async def call(self, name: str, args: dict[str, Any], ctx: Any) -> str | MultimodalOutput:
        """Ask when untrusted, run the call, map the result; ToolError for the model.

        The ``ToolSource`` call of the tool batch: text (an fd preview when long),
        or a :class:`MultimodalOutput` when the result held images.
        """
        tool = self._tools.get(name)
        if tool is None:
            raise ToolError(f"unknown tool '{name}'; its MCP server is not running")
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
        """One ``tools/call``; cancelling the caller sends the protocol's cancellation."""
        client = self._clients.get(tool.server)
        if client is None:
            state = self.status[tool.server].state
            raise ToolError(f"the MCP server '{tool.server}' is {state}; this tool is unavailable")
        try:
            result = await client.call_tool(tool.name, args)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # protocol errors, a server that died mid-call
            raise ToolError(f"the MCP server '{tool.server}' failed the call: "
                            f"{_one_line(str(exc) or type(exc).__name__)}") from None
        return map_result(result)

    async def _approve(self, tool: McpTool, args: dict[str, Any], ctx: Any) -> None:
        prompt = approval_prompt(tool.server, tool.name, args)
        choice = await ctx.ask(prompt, APPROVAL_CHOICES, DENY)
        if choice == APPROVE_ALWAYS:
            self._trusted.setdefault(tool.server, set()).add(tool.name)
            if self.on_trust is not None:
                try:
                    self.on_trust(tool.server, tool.name)
                except (OSError, ConfigError) as exc:
                    self._notice(f"could not save the trust for {tool.exposed}: {exc}", "warning")
        elif choice != APPROVE_ONCE:
            raise ToolError(f"the person declined to run {tool.exposed}; it did not run. Do not "
                            "call it again unless they ask; carry on without it")

    # --------------------------------------------------------------- servers

    async def _run(self, config: McpServerConfig) -> None:
        status = self.status[config.name]
        closed = asyncio.Event()
        started = time.perf_counter()
        errlog: TextIO | None = None
        try:
            await _import_sdk()
            transport, errlog = self._transport(config, closed)
            from mcp import Client

            async with contextlib.AsyncExitStack() as stack:
                async with asyncio.timeout(config.start_timeout_s):
                    client = await stack.enter_async_context(Client(transport, cache=None))
                    listing = await _list_tools(client)
                self._register(config.name, listing)
                status.start_s = time.perf_counter() - started
                status.state = "ready"
                self._clients[config.name] = client
                self._settled[config.name].set()
                stop = asyncio.create_task(self._stop.wait())
                died = asyncio.create_task(closed.wait())
                try:
                    await asyncio.wait({stop, died}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    stop.cancel()
                    died.cancel()
                self._unregister(config.name)
                if not self._stop.is_set():
                    status.state = "exited"
                    status.error = _tail(errlog) or "the server closed the connection"
                    self._notice(f"MCP server '{config.name}' stopped: {status.error}; its tools "
                                 "are gone until the app restarts", "error")
                else:
                    status.state = "stopped"
        except asyncio.CancelledError:
            status.state = "stopped"
            raise
        except BaseException as exc:  # anyio's exception groups, OSError, timeouts
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                raise
            status.state = "failed"
            status.error = _failure(config, exc, errlog)
            self._notice(f"MCP server '{config.name}' did not start: {status.error}", "error")
        finally:
            self._unregister(config.name)
            self._settled[config.name].set()
            if errlog is not None:
                errlog.close()

    def _transport(self, config: McpServerConfig, closed: asyncio.Event) -> tuple[Any, TextIO]:
        # The server's stderr: kept off the terminal, read back to explain a failure.
        errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
        try:
            if config.url:
                return _watched(_http(config.url, config.resolved_headers(self.env)), closed), \
                    errlog
            return _watched(_stdio(config, self.env, errlog), closed), errlog
        except BaseException:
            errlog.close()
            raise

    def _register(self, server: str, listing: Iterable[Any]) -> None:
        # Unique tags keep servers apart, so only this server's own names are taken:
        # what another server registered (or whether it started at all) changes nothing.
        taken: set[str] = set()
        tools: list[McpTool] = []
        for item in listing:
            exposed = exposed_name(server, item.name, taken, tag=self._tags[server])
            taken.add(exposed)
            schema = getattr(item, "input_schema", None) or {}
            tools.append(McpTool(server, item.name, exposed, item.description or "", schema))
        self.status[server].tools = tools
        for tool in tools:
            self._tools[tool.exposed] = tool

    def _unregister(self, server: str) -> None:
        self._clients.pop(server, None)
        for exposed in [n for n, t in self._tools.items() if t.server == server]:
            del self._tools[exposed]

    def _notice(self, message: str, severity: str) -> None:
        self.emit(Notice(key=self.notice_key, message=message, severity=severity))


# ------------------------------------------------------------------ transports


_SDK_MODULES = ("mcp", "mcp.client.stdio", "mcp.client.streamable_http",
                "mcp.shared._httpx_utils", "anyio")


async def _import_sdk() -> None:
    """Import the SDK in a thread: hundreds of milliseconds the app's loop keeps for keys."""
    if all(name in sys.modules for name in _SDK_MODULES):
        return
    import importlib

    def load() -> None:
        for name in _SDK_MODULES:
            importlib.import_module(name)

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


def launch_command(command: str, args: Sequence[str]) -> tuple[str, list[str]]:
    """The command and arguments to spawn: behind the parent-death launcher on Linux."""
    if not sys.platform.startswith("linux"):
        return command, list(args)
    return sys.executable, ["-I", "-S", "-c", LAUNCHER, str(os.getpid()), command, *args]


@contextlib.asynccontextmanager
async def _stdio(config: McpServerConfig, env: dict[str, str], errlog: TextIO) -> AsyncIterator:
    from mcp import StdioServerParameters
    from mcp.client.stdio import stdio_client

    if shutil.which(config.command, path=env.get("PATH")) is None:
        raise ToolError(f"command not found: {config.command}; install it or fix "
                        f"[mcp.servers.{config.name}] command")
    command, args = launch_command(config.command, config.args)
    params = StdioServerParameters(command=command, args=args, env=config.resolved_env(env),
                                   cwd=config.cwd)
    async with stdio_client(params, errlog=errlog) as streams:
        yield streams


@contextlib.asynccontextmanager
async def _http(url: str, headers: dict[str, str]) -> AsyncIterator:
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with create_mcp_http_client(headers=headers) as http, \
            streamable_http_client(url, http_client=http) as streams:
        yield streams


@contextlib.asynccontextmanager
async def _watched(transport: Any, closed: asyncio.Event) -> AsyncIterator:
    """``transport`` whose read side sets ``closed`` when the server goes away.

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
                        await send.send(item)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
                pass
            finally:
                closed.set()

        async with anyio.create_task_group() as group:
            group.start_soon(pump)
            try:
                yield receive, write
            finally:
                group.cancel_scope.cancel()


def _one_line(text: str, limit: int = 300) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _tail(errlog: TextIO | None) -> str:
    """The last non-empty line the server wrote to stderr (it often says why)."""
    if errlog is None:
        return ""
    try:
        errlog.flush()
        errlog.seek(0)
        lines = [ln.strip() for ln in errlog.read()[-8_000:].splitlines() if ln.strip()]
    except (OSError, ValueError):
        return ""
    return _one_line(lines[-1]) if lines else ""


def _failure(config: McpServerConfig, exc: BaseException, errlog: TextIO | None) -> str:
    """One line: why the server did not start, preferring what the server itself said."""
    leaf = exc
    while isinstance(leaf, BaseExceptionGroup) and leaf.exceptions:
        leaf = leaf.exceptions[0]
    if isinstance(leaf, ToolError | ConfigError):
        return str(leaf)
    if isinstance(leaf, TimeoutError):
        return (f"no answer within {config.start_timeout_s:g} s; check the command or raise "
                f"[mcp.servers.{config.name}] start_timeout_s")
    said = _tail(errlog)
    what = said or _one_line(str(leaf) or type(leaf).__name__)
    where = config.url or config.command
    return f"{what} ({where})"
