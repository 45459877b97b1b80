"""MCP for someone trying it for the first time: the server beside the app, an exit code that
says a server failed, and the demo model calling a real MCP tool offline.

``mcp-server-time`` comes with the test extras, in the same environment as the app: run as
``.venv/bin/selfref-tui`` without activating it, ``command = "mcp-server-time"`` was "command
not found" although it sat beside the interpreter, and ``mcp list`` still exited 0.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from selfref_tui.agent.mcp.server_runs import find_command
from tests.cli.helpers import cli

BESIDE = Path(sys.executable).parent
pytestmark = pytest.mark.skipif(not (BESIDE / "mcp-server-time").exists(),
                                reason="mcp-server-time is installed with the test extras")

#: a PATH that holds the system's tools and not the app's environment
BARE_PATH = "/usr/bin:/bin"

TIME_SERVER = """
[mcp.servers.time]
command = "mcp-server-time"
args = ["--local-timezone", "UTC"]
"""


def test_a_command_beside_the_interpreter_is_found_when_path_does_not_have_it():
    assert shutil.which("mcp-server-time", path=BARE_PATH) is None
    assert find_command("mcp-server-time", {"PATH": BARE_PATH}) == str(BESIDE / "mcp-server-time")
    assert find_command("no-such-server-anywhere", {"PATH": BARE_PATH}) is None


def test_mcp_list_starts_a_server_from_the_apps_environment_and_fails_loudly_on_one_missing(
        tmp_path):
    config = tmp_path / "config.toml"
    config.write_text(TIME_SERVER, encoding="utf-8")
    result = cli("mcp", "list", "--json", "--config", str(config), env={"PATH": BARE_PATH})
    assert result.returncode == 0, result.stderr
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    assert rows["time"]["state"] == "ready", rows
    assert "mcp__time__get_current_time" in [t["name"] for t in rows["time"]["tools"]]

    config.write_text(TIME_SERVER + '[mcp.servers.gone]\ncommand = "no-such-server"\n',
                      encoding="utf-8")
    result = cli("mcp", "list", "--config", str(config), env={"PATH": BARE_PATH})
    assert result.returncode == 1  # a configured server failed to start
    error = next(line for line in result.stdout.splitlines() if "no-such-server" in line
                 and "error" in line)
    assert "looked in PATH and in" in error and str(BESIDE) in error


def test_the_demo_model_calls_a_configured_time_server_when_asked(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text(TIME_SERVER, encoding="utf-8")
    result = cli("ask", "what time is it?", "--demo", "--config", str(config),
                 "--data-dir", str(tmp_path / "data"),
                 "--allow-tools", "mcp__time__get_current_time", env={"PATH": BARE_PATH})
    assert result.returncode == 0, result.stderr
    assert "The MCP time server says it is 20" in result.stdout  # 20xx-…: the real clock
    # without a time server it says how to add one
    config.write_text("", encoding="utf-8")
    result = cli("ask", "what time is it?", "--demo", "--config", str(config),
                 "--data-dir", str(tmp_path / "data2"))
    assert result.returncode == 0, result.stderr
    assert "mcp-server-time" in result.stdout
