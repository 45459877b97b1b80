"""How long restarting a stdio MCP server takes, and when its old process is gone.

Starts ``McpManager`` with the hostile server (a real subprocess under its
supervisor, with one helper process), fails it (it closes its stdin, the next
call's write fails), then calls ``restart`` and times:

- ``ready``: from ``restart`` to the server ready with its tools offered again;
- ``old gone``: from ``restart`` to the old server and its helper no longer running
  (the new start waits for the old run to end, so this comes first).

Right after the failure the old process may still be stopping; "at once" restarts
then; "settled" first waits for the old process to be gone, so it times the start alone.
"deaf" restarts a server that is still ready but reads nothing any more (each call
would time out), with a call waiting on it, and also times ``call ends``: from
``restart`` to that call's error saying the server was restarted.

    python bench/mcp_restart_bench.py [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from selfref_tui.agent.mcp.manager import McpManager  # noqa: E402
from selfref_tui.agent.tools.builtin import ToolError  # noqa: E402
from selfref_tui.config import McpServerConfig  # noqa: E402
from tests.hostile_servers import alive, mcp_stdio_command, read_pids, wait_gone  # noqa: E402


async def one(mode: str) -> tuple[float, float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        pids = Path(tmp) / "pids"
        command, argv = mcp_stdio_command("--pids", str(pids), "--helpers", "1")
        manager = McpManager([McpServerConfig(name="h", command=command, args=argv)])
        await manager.wait_started(timeout=60)
        try:
            old = await asyncio.to_thread(read_pids, pids, 2)
            tools = {t.name: t for t in manager.status["h"].tools}
            waiting: asyncio.Task | None = None
            if mode == "deaf":
                await manager.call_raw(tools["stop_reading"], {})
                waiting = asyncio.create_task(manager.call_raw(tools["echo"], {"text": "?"}))
                await asyncio.sleep(0.2)  # the request in the pipe, never read
            else:
                await manager.call_raw(tools["close_stdin"], {})
                try:
                    await manager.call_raw(tools["echo"], {"text": "there?"})
                except ToolError:
                    pass
                while manager.status["h"].state != "failed":
                    await asyncio.sleep(0.005)
            if mode == "settled":
                await asyncio.to_thread(wait_gone, old)
            started = time.perf_counter()
            assert manager.restart("h") == ""
            gone: float | None = None
            ended: float | None = None
            while manager.status["h"].state == "starting":
                if gone is None and not any(alive(p) for p in old):
                    gone = time.perf_counter() - started
                if waiting is not None and waiting.done() and ended is None:
                    ended = time.perf_counter() - started
                await asyncio.sleep(0.005)
            ready = time.perf_counter() - started
            assert manager.status["h"].state == "ready", manager.status["h"].error
            if waiting is not None:
                try:
                    await waiting
                except ToolError as exc:
                    assert "was restarted" in str(exc), exc
            if gone is None:
                gone = 0.0 if not any(alive(p) for p in old) else float("nan")
            return ready, gone, float("nan") if ended is None else ended
        finally:
            await manager.aclose(quitting=True)


async def main(runs: int) -> None:
    for mode in ("at once", "settled", "deaf"):
        readies, gones, ends = [], [], []
        for _ in range(runs):
            ready, gone, ended = await one(mode)
            readies.append(ready)
            gones.append(gone)
            ends.append(ended)
        call = (f"   call ends: median {statistics.median(ends) * 1000:5.0f} ms"
                if mode == "deaf" else "")
        print(f"  restart {mode:<8} ready: median {statistics.median(readies) * 1000:6.0f} ms  "
              f"max {max(readies) * 1000:6.0f} ms   old gone: median "
              f"{statistics.median(gones) * 1000:6.0f} ms{call}   (n={runs})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    options = parser.parse_args()
    asyncio.run(main(options.runs))
