"""What the MCP manager keeps of each server: its tools, its status, one run of it.

Apart from the manager because each of its parts (``server_runs``, ``tool_calls``,
``config_changes``) reads and writes these, and the tests build them directly.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from ...config import McpServerConfig
from .stdio import Link


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
