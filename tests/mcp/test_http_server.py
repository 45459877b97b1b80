"""A streamable HTTP server: headers come from environment variables, never the file;
answers are capped as stdio ones are."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest

from selfref_tui.agent.mcp.manager import McpManager
from selfref_tui.agent.tools.builtin import ToolError
from tests.agent.helpers import wait_until

from .conftest import SERVER, server_config
from .proxy import ForwardProxy


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_listening(port: int, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the HTTP test server exited"
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError("the HTTP test server did not listen")


async def test_http_server_gets_the_header_from_the_environment():
    port = _free_port()
    proc = subprocess.Popen([sys.executable, str(SERVER), "--http", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_listening(port, proc)
        docs = server_config("docs", command="", args=(), url=f"http://127.0.0.1:{port}/mcp",
                             headers=(("Authorization", "Bearer ${DOCS_TOKEN}"),),
                             trust=("*",))
        manager = McpManager([docs], env={"DOCS_TOKEN": "t0ken", "PATH": ""})
        try:
            await manager.wait_started(timeout=60)
            [status] = manager.statuses()
            assert (status.state, status.transport) == ("ready", "http"), status.error
            assert await manager.call("mcp__docs__echo", {"text": "over http"}, None) == \
                "echo: over http"
            assert await manager.call("mcp__docs__whoami", {}, None) == "Bearer t0ken"
        finally:
            await manager.aclose()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.parametrize("mode", ["--json", "--sse"])
async def test_an_http_answer_over_the_cap_fails_the_server_with_the_reason(mode, capfd):
    port = _free_port()
    proc = subprocess.Popen([sys.executable, str(SERVER), "--http", str(port), mode],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_listening(port, proc)
        docs = server_config("docs", command="", args=(), url=f"http://127.0.0.1:{port}/mcp",
                             trust=("*",), max_message_mb=1)
        events: list = []
        manager = McpManager([docs], events.append, env={"PATH": ""})
        try:
            await manager.wait_started(timeout=60)
            # the SDK server sends the text twice (content and structuredContent)
            assert await manager.call("mcp__docs__big", {"mb": 0.25}, None) == "x" * 2**18
            with pytest.raises(ToolError, match=r"'docs' sent a message over the 1 MB limit "
                                                r"\(\[mcp.servers.docs\] max_message_mb\)"):
                await manager.call("mcp__docs__big", {"mb": 2}, None)
            await wait_until(lambda: manager.statuses()[0].state == "failed", timeout=20,
                             what="the server marked failed")
            assert any("over the 1 MB limit" in e.message for e in events)
        finally:
            await manager.aclose()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert "Traceback" not in capfd.readouterr().err


async def test_an_http_server_is_reached_through_the_proxy_the_environment_names(monkeypatch):
    """HTTP_PROXY is honoured (as the SDK's own client does) and the cap still applies."""
    proxy = ForwardProxy()
    monkeypatch.setenv("HTTP_PROXY", await proxy.start())
    for name in ("NO_PROXY", "no_proxy", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    port = _free_port()
    proc = subprocess.Popen([sys.executable, str(SERVER), "--http", str(port), "--json"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_listening(port, proc)
        docs = server_config("docs", command="", args=(), url=f"http://127.0.0.1:{port}/mcp",
                             trust=("*",), max_message_mb=1)
        manager = McpManager([docs], env={"PATH": ""})
        try:
            await manager.wait_started(timeout=60)
            [status] = manager.statuses()
            assert status.state == "ready", status.error
            assert await manager.call("mcp__docs__echo", {"text": "via proxy"}, None) == \
                "echo: via proxy"
            assert ("POST", "/mcp") in proxy.requests
            with pytest.raises(ToolError, match=r"over the 1 MB limit"):
                await manager.call("mcp__docs__big", {"mb": 2}, None)
        finally:
            await manager.aclose()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        await proxy.aclose()
