"""No orphan server processes: not after Ctrl+C, not after the app's process is killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import SERVER, alive

HOLDER = Path(__file__).with_name("holder.py")
ROOT = Path(__file__).resolve().parents[2]


def _wait_gone(pids: list[int], timeout: float = 15.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = [p for p in pids if alive(p)]
        if not left:
            return []
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc, uses PDEATHSIG")
def test_server_goes_with_its_client_on_sigint_and_on_sigkill():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    holders = {sig: subprocess.Popen([sys.executable, str(HOLDER), str(SERVER)], env=env,
                                     stdout=subprocess.PIPE, text=True)
               for sig in (signal.SIGINT, signal.SIGKILL)}
    try:
        servers = {}
        for sig, holder in holders.items():
            line = holder.stdout.readline()
            servers[sig] = [int(p) for p in line.split()]
            assert len(servers[sig]) == 1 and alive(servers[sig][0]), line
        for sig, holder in holders.items():
            holder.send_signal(sig)
        for sig, holder in holders.items():
            holder.wait(timeout=30)
            assert _wait_gone(servers[sig]) == [], f"server left running after {sig.name}"
    finally:
        for holder in holders.values():
            if holder.poll() is None:
                holder.kill()
