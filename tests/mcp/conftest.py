"""MCP fixtures: the in-repo test server (a real subprocess) behind a real manager."""

from __future__ import annotations

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
