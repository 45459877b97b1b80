"""Servers that misbehave on purpose, each run as a real process.

Every surface that talks to something outside the app (a provider's HTTP
server, an MCP server) is tested against these: bodies that never end or
trickle a byte a second, absurd values, floods, bytes that are not what they
claim. Each module runs as ``python -m tests.hostile_servers.NAME ARGS``;
an HTTP server prints ``ready URL`` on its first line once it listens, and
:func:`spawn` starts one, waits for that line and kills its process group on
exit. MCP servers speak stdio and are configured as commands
(:func:`command` gives the argv).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def command(name: str, *args: str) -> list[str]:
    """The argv that runs ``tests/hostile_servers/NAME.py`` with ``args``."""
    return [sys.executable, str(Path(__file__).with_name(f"{name}.py")), *args]


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
