"""Servers that misbehave on purpose, each run as a real process.

Every surface that talks to something outside the app (a provider's HTTP
server, an MCP server) is tested against these: bodies that never end or
trickle a byte a second, absurd values, floods, bytes that are not what they
claim. Each module runs as ``python -m tests.hostile_servers.NAME ARGS``;
an HTTP server prints ``ready URL`` on its first line once it listens, and
:func:`spawn` starts one, waits for that line and kills its process group on
exit. MCP servers speak stdio and are configured as commands
(:func:`command` gives the argv). ``mcp_stdio.py`` is a raw JSON-RPC MCP
server (no SDK, so it can break the protocol byte by byte: forking helpers,
calls never answered, invalid UTF-8, garbage lines, stderr floods, huge or
endless messages, thousands of tools, deep schemas, a server deaf to SIGTERM);
:func:`read_pids` and :func:`wait_gone` check that what it started is gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def command(name: str, *args: str) -> list[str]:
    """The argv that runs ``tests/hostile_servers/NAME.py`` with ``args``."""
    return [sys.executable, str(Path(__file__).with_name(f"{name}.py")), *args]


def mcp_stdio_command(*args: str) -> tuple[str, tuple[str, ...]]:
    """``(command, args)`` of the hostile stdio MCP server, for an ``McpServerConfig``."""
    program, *rest = command("mcp_stdio", *args)
    return program, tuple(rest)


@contextlib.contextmanager
def spawn(name: str, *args: str) -> Iterator[str]:
    """Run the HTTP server ``NAME`` with ``args``; yields the URL it printed."""
    proc = subprocess.Popen(command(name, *args), stdout=subprocess.PIPE, text=True,
                            start_new_session=True, cwd=ROOT)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("ready "):
            raise RuntimeError(f"{name} did not start (said {line!r})")
        yield line.split(" ", 1)[1].strip()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def stats(url: str) -> dict:
    """What ``http_window`` at ``url`` says of each path: body bytes sent, answer over."""
    with urllib.request.urlopen(url.removesuffix("/v1") + "/stats") as answer:
        return json.loads(answer.read())


async def wait_done(url: str, path: str) -> dict:
    """The server's figures for ``path`` once that answer is over (the client went away)."""
    while True:
        entry = (await asyncio.to_thread(stats, url)).get(path)
        if entry and entry["done"]:
            return entry
        await asyncio.sleep(0.05)


def alive(pid: int) -> bool:
    """Running, not a zombie (nobody may reap it when PID 1 of a container is a shell)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def read_pids(pidfile: Path, count: int = 1, timeout: float = 30.0) -> list[int]:
    """The pids a server wrote to ``pidfile`` (one a line) once ``count`` are there."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            pids = [int(p) for p in pidfile.read_text().split()]
        except (OSError, ValueError):
            pids = []
        if len(pids) >= count:
            return pids
        time.sleep(0.02)
    raise AssertionError(f"{pidfile} did not get {count} pid(s) within {timeout} s")


def wait_gone(pids: list[int], timeout: float = 15.0) -> list[int]:
    """The pids still alive after waiting up to ``timeout`` for all to end."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = [p for p in pids if alive(p)]
        if not left:
            return []
        time.sleep(0.05)
    return [p for p in pids if alive(p)]
