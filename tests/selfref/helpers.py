"""Shared helpers for the store tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from selfref_tui.context.mutations import AssistantMessageMutation, UserMessageMutation
from selfref_tui.selfref.reference import SelfReference
from selfref_tui.selfref.store import MemoryKey

ROOT = Path(__file__).resolve().parents[2]
WRITER = Path(__file__).with_name("writer_proc.py")


def turn(i: int, text: str = "") -> list:
    return [
        UserMessageMutation({"role": "user", "content": text or f"question {i}"}),
        AssistantMessageMutation(content=f"answer {i}"),
    ]


@contextmanager
def reading(data_dir: Path, key: str = "main") -> Iterator[MemoryKey]:
    """``key`` read back without its lock, in a store of its own closed after.

    What another process would read: the writer must have committed (and, if it
    is still open, it keeps its lock).
    """
    store = SelfReference(data_dir)
    try:
        yield store.open(key, write=False)
    finally:
        store.close()


def stored_history(data_dir: Path, key: str = "main") -> list[dict]:
    """Every message ``key`` ever stored (compacted ones too), read back."""
    with reading(data_dir, key) as memory:
        return memory.history


def start_writer(data_dir: Path, key: str, mode: str) -> subprocess.Popen:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    return subprocess.Popen(
        [sys.executable, str(WRITER), str(data_dir), key, mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def wait_ready(proc: subprocess.Popen) -> None:
    line = proc.stdout.readline()
    if line.strip() != "ready":
        raise AssertionError(f"writer did not start: {line!r} {proc.stderr.read()}")


def wait_committed(proc: subprocess.Popen) -> int:
    """The number of the next turn the writer reports committed (it blocks until then)."""
    line = proc.stdout.readline()
    if not line.startswith("committed"):
        raise AssertionError(f"writer stopped: {line!r} {proc.stderr.read()}")
    return int(line.split()[1])


def kill_9(proc: subprocess.Popen) -> tuple[str, str]:
    """SIGKILL ``proc``; everything it wrote to stdout and stderr.

    Read through the pipes' file objects, not ``communicate()``: that reads the
    file descriptors and would miss lines ``readline()`` had already buffered.
    The process is dead, so reading both to the end cannot block on it.
    """
    proc.send_signal(signal.SIGKILL)
    out, err = proc.stdout.read(), proc.stderr.read()
    proc.stdout.close()
    proc.stderr.close()
    if proc.stdin is not None:
        proc.stdin.close()
    proc.wait(timeout=30)
    return out, err
