"""Pieces the UI benchmarks share.

The demo server runs in its own process: in a thread it would wait for the GIL
behind a busy UI loop (up to the 5 ms switch interval per chunk), and the pace
it was asked for would silently become a few hundred tokens/s.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

def pct(values: list[float], q: float) -> float:
    """The value at rank ``q`` (0–1) of ``values``: the benches' p90/p95/p99, one rule."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


_SERVER = r"""
import asyncio, sys, time
sys.path.insert(0, sys.argv[4])
from selfref_tui.demo.server import DemoServer
from selfref_tui.demo.script import Reply

text = open(sys.argv[1], encoding="utf-8").read()
tokens_per_s = float(sys.argv[2]) or None
done_path = sys.argv[3]


class TimedServer(DemoServer):
    async def _send_reply(self, out, base, step):
        await super()._send_reply(out, base, step)
        with open(done_path, "w") as f:  # CLOCK_MONOTONIC: comparable across processes
            f.write(repr(time.perf_counter()))


async def main():
    server = TimedServer(lambda body, i: Reply(text=text), tokens_per_s=tokens_per_s)
    print(await server.start(), flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    await server.stop()


asyncio.run(main())
"""


class ServerProcess:
    """A demo server in a child process answering every request with ``text``."""

    def __init__(self, text: str, tokens_per_s: float | None) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="selfref-bench-")
        reply = Path(self._dir.name) / "reply.txt"
        reply.write_text(text, encoding="utf-8")
        self._start(_SERVER, str(reply), str(tokens_per_s or 0))

    def _start(self, script: str, *args: str) -> None:
        """Run ``script`` with ``args``, then the done-file and the repo root; read its URL."""
        self._done = Path(self._dir.name) / "sent_done"
        self.proc = subprocess.Popen(
            [sys.executable, "-c", script, *args, str(self._done), str(ROOT)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()
        if not self.url.startswith("http"):
            raise RuntimeError("the demo server process did not start")

    @property
    def sent_done(self) -> float:
        """perf_counter() when the server wrote the last chunk of its latest answer."""
        try:
            return float(self._done.read_text())
        except (OSError, ValueError):
            return 0.0

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self._dir.cleanup()

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
