"""Shared helpers for the store tests."""

from __future__ import annotations

import os
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
