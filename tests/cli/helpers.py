"""Running the command line in tests: in this process (:func:`cli`) or as a real one (:func:`run`).

Most tests check what a command prints, stores and returns, and run
``cli.main(args)`` here: a subprocess costs a Python start and the import of
the runtime and ``openai`` (about 1 s of CPU for an ``ask``), which made the
CLI tests most of the suite's time. ``python -m selfref_tui`` is
``raise SystemExit(run())``, and ``run`` is ``main`` plus a ``gc.freeze()`` (and, as
the program, a search's caches written by a child process).

What only a real process shows stays on :func:`run` / :func:`arun`: Ctrl+C
(SIGINT) and a reader that leaves (EPIPE), a terminal (a pty), the module
entry point itself, a key locked by another process, an open that could hang
(a FIFO), and a command beside a server on the test's own event loop (``cli``
runs ``asyncio.run``, which cannot nest in a running loop).
"""

from __future__ import annotations

import asyncio
import io
import os
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[2]


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra or {})
    return env


def cli(*args: str, stdin: str | None = None,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``selfref-tui ARGS`` in this process: its exit code, stdout and stderr (both pipes)."""
    from selfref_tui.cli import main

    out, err = io.StringIO(), io.StringIO()
    with (mock.patch.dict(os.environ, env or {}),
          mock.patch.object(sys, "stdin", io.StringIO(stdin or "")),
          redirect_stdout(out), redirect_stderr(err)):
        code = main(list(args))
    return subprocess.CompletedProcess(["selfref-tui", *args], code, out.getvalue(),
                                       err.getvalue())


def run(*args: str, stdin: str | None = None, env: dict[str, str] | None = None,
        timeout: float = 60) -> subprocess.CompletedProcess:
    """``python -m selfref_tui ARGS`` as a real process."""
    return subprocess.run([sys.executable, "-m", "selfref_tui", *args], input=stdin,
                          capture_output=True, text=True, env=_env(env), timeout=timeout,
                          cwd=ROOT)


async def arun(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """:func:`run` without blocking the test's event loop (a server may be running on it)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "selfref_tui", *args, env=_env(env), cwd=ROOT,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    return proc.returncode or 0, out.decode(), err.decode()


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    return lines[0]
