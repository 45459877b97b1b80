"""Conformance: a server this project did not write, `mcp-server-time` from PyPI."""

from __future__ import annotations

import json
import shutil
import sys
from datetime import UTC, datetime
from pathlib import Path

from selfref_tui.agent.mcp.manager import McpManager
from selfref_tui.config import McpServerConfig


def time_server_command() -> str:
    """The test extra installs it next to this interpreter (a venv's bin)."""
    beside = Path(sys.executable).with_name("mcp-server-time")
    found = str(beside) if beside.exists() else shutil.which("mcp-server-time")
    assert found, "mcp-server-time is missing: pip install -e '.[test]'"
    return found


def time_server() -> McpServerConfig:
    return McpServerConfig(name="time", command=time_server_command(),
                           args=("--local-timezone", "UTC"), trust=("*",))


async def test_get_current_time_from_the_pypi_server():
    manager = McpManager([time_server()])
    try:
        await manager.wait_started(timeout=60)
        assert manager.statuses()[0].state == "ready", manager.statuses()[0].error
        schema = next(s for s in manager.schemas()
                      if s["function"]["name"] == "mcp__time__get_current_time")
        assert "timezone" in schema["function"]["parameters"]["properties"]
        out = await manager.call("mcp__time__get_current_time", {"timezone": "UTC"}, None)
        answer = json.loads(out.text)
        assert answer["timezone"] == "UTC"
        assert answer["datetime"].startswith(str(datetime.now(UTC).year))
    finally:
        await manager.aclose()
