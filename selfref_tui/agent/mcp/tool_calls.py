"""A model's call of a server's tool: asked about when untrusted, run within its deadline.

A mixin of :class:`~selfref_tui.agent.mcp.manager.McpManager` (its state lives there):
the ``ToolSource`` call, the person's approval ("allow once", "always allow") and what
is trusted, and each way a call can end — answered, timed out, cancelled, its server
restarted, removed or gone — worded for the model. Apart from the runs because a call
only uses a run's client, from the loop's tool tasks, and never starts or stops one.
"""

from __future__ import annotations

import asyncio
import fnmatch
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...config import ConfigError, McpServerConfig
from ...config_edit import table_name, toml_value
from ...safety import one_line
from ..tools.batch import MultimodalOutput
from ..tools.builtin import NOT_ASKED, ToolError, now_iso
from .approval import APPROVAL_CHOICES, APPROVE_ALWAYS, APPROVE_ONCE, approval_prompt
from .results import MappedResult, map_result
from .server_state import McpTool, ServerStatus, _Run


class ToolCalls:
    """Run the model's calls of the servers' tools."""

    if TYPE_CHECKING:  # what the manager provides (manager.McpManager)
        configs: dict[str, McpServerConfig]
        status: dict[str, ServerStatus]
        on_trust: Callable[[str, str], None] | None
        allowed: tuple[str, ...]
        allow_flag: str
        config_path: Path | None
        _hinted: set[str]
        _trusted: dict[str, set[str]]
        _answered: dict[tuple, set[str]]
        _tools: dict[str, McpTool]
        _runs: dict[str, _Run]
        _leaving: set[asyncio.Future]

        def _notice(self, message: str, severity: str) -> None: ...
        def _drop(self, run: _Run) -> None: ...
        def _gone(self, server: str) -> str: ...
        def _config_now(self, name: str) -> McpServerConfig | None: ...

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


def _dropped(server: str, failure: str) -> str:
    return (f"the MCP server '{server}' {failure}; the connection was dropped and the server "
            "stopped")


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
