"""The servers made what config.toml says now: a restart, ``/mcp reload``.

A mixin of :class:`~selfref_tui.agent.mcp.manager.McpManager` (its state lives there):
a server's table read again and its run replaced (a changed one restarted, a new one
started, a removed or disabled one stopped and said so once its process is gone), and
a whole ``[mcp]`` table reloaded. Apart from the runs and the calls because it decides
*which* runs there are; starting and stopping one is ``server_runs``'.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ...config import ConfigError, McpServerConfig
from ...config_edit import table_name
from ...config_load import load_mcp_server, load_mcp_servers
from .naming import server_tag
from .server_state import ServerStatus, _Run


class ConfigChanges:
    """Restart, add, remove and reload servers from the config file."""

    if TYPE_CHECKING:  # what the manager provides (manager.McpManager)
        configs: dict[str, McpServerConfig]
        status: dict[str, ServerStatus]
        config_path: Path | None
        _tags: dict[str, str]
        _trusted: dict[str, set[str]]
        _answered: dict[tuple, set[str]]
        _runs: dict[str, _Run]
        _stopping: dict[str, set[_Run]]
        _stop: asyncio.Event
        _started: bool
        _settled: dict[str, asyncio.Event]

        def _notice(self, message: str, severity: str) -> None: ...
        def _begin(self, config: McpServerConfig, *, again: str = "") -> None: ...
        def _drop(self, run: _Run) -> None: ...
        def _trust_of(self, config: McpServerConfig) -> set[str]: ...

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


def _stopped(task: asyncio.Task | None, offered: int) -> str:
    """What became of a server the file no longer wants: its process (``task``, the run
    that was stopping it; None when none ran) and the tools it had ``offered``."""
    said = ", so it was stopped" if task is not None else "; it was not running"
    if offered:
        said += (f" and its {offered} tool{' is' if offered == 1 else 's are'} no longer "
                 "offered")
    return said
