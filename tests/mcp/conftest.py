"""MCP fixtures: the in-repo test server (a real subprocess) behind a real manager."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from selfref_tui.config import McpServerConfig

SERVER = Path(__file__).with_name("server.py")


def server_config(name: str = "test", **changes) -> McpServerConfig:
    """The in-repo SDK server as a stdio ``[mcp.servers.NAME]`` entry."""
    values = {"command": sys.executable, "args": (str(SERVER),)} | changes
    return McpServerConfig(name=name, **values)


@pytest.fixture
def mark(tmp_path) -> Path:
    """The file the slow tool writes 'started' / 'cancelled' to."""
    return tmp_path / "mark"


def time_server_command() -> str:
    """`mcp-server-time` from PyPI (the test extra installs it next to this interpreter)."""
    beside = Path(sys.executable).with_name("mcp-server-time")
    found = str(beside) if beside.exists() else shutil.which("mcp-server-time")
    assert found, "mcp-server-time is missing: pip install -e '.[test]'"
    return found


def time_server() -> McpServerConfig:
    """Conformance: a server this project did not write."""
    return McpServerConfig(name="time", command=time_server_command(),
                           args=("--local-timezone", "UTC"), trust=("*",))
