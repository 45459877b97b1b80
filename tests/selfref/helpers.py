"""Shared helpers for the store tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from selfref_tui.context.mutations import AssistantMessageMutation, UserMessageMutation

ROOT = Path(__file__).resolve().parents[2]
WRITER = Path(__file__).with_name("writer_proc.py")


def turn(i: int, text: str = "") -> list:
    return [
        UserMessageMutation({"role": "user", "content": text or f"question {i}"}),
        AssistantMessageMutation(content=f"answer {i}"),
    ]


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
