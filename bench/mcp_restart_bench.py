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

"removed and added back" takes a ready server's table out of config.toml and puts it
back at once, two ``/mcp reload``s ("slow to stop": a server that outlives its stdin
with a helper deaf to SIGTERM); it times ``ready`` and ``old gone`` from the second
reload and counts the new starts that found a process of the old one still running
(the server writes that down as it starts: ``--alive-at-start``).

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
from selfref_tui.config_load import load_config  # noqa: E402
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


async def readded(slow: bool) -> tuple[float, float, bool]:
    """One table removed and added back at once: (ready, old gone, the new start found
    a process of the old one running)."""
    import json

    with tempfile.TemporaryDirectory() as tmp:
        pids, seen, path = Path(tmp) / "pids", Path(tmp) / "seen", Path(tmp) / "config.toml"
        extra = ("--stubborn-helpers", "--linger") if slow else ()
        command, argv = mcp_stdio_command("--pids", str(pids), "--helpers", "1",
                                          "--alive-at-start", str(seen), *extra)
        table = (f"[mcp.servers.h]\ncommand = {json.dumps(command)}\n"
                 f"args = {json.dumps(list(argv))}\n")
        path.write_text(table, encoding="utf-8")
        manager = McpManager(load_config(config_path=path, env={}).mcp_servers)
        manager.config_path = path
        await manager.wait_started(timeout=60)
        try:
            old = await asyncio.to_thread(read_pids, pids, 2)
            path.write_text("", encoding="utf-8")
            assert manager.reload()[1]
            path.write_text(table, encoding="utf-8")
            started = time.perf_counter()
            assert manager.reload()[1]
            gone: float | None = None
            while manager.status["h"].state == "starting":
                if gone is None and not any(alive(p) for p in old):
                    gone = time.perf_counter() - started
                await asyncio.sleep(0.005)
            ready = time.perf_counter() - started
            assert manager.status["h"].state == "ready", manager.status["h"].error
            if gone is None:
                gone = 0.0 if not any(alive(p) for p in old) else float("nan")
            overlap = seen.read_text().splitlines()[1] != ""
            return ready, gone, overlap
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
    for slow in (False, True):
        found = [await readded(slow) for _ in range(runs)]
        readies, gones = [f[0] for f in found], [f[1] for f in found]
        label = "removed and added back" + (", slow to stop" if slow else "")
        print(f"  {label:<36} ready: median {statistics.median(readies) * 1000:6.0f} ms  "
              f"max {max(readies) * 1000:6.0f} ms   old gone: median "
              f"{statistics.median(gones) * 1000:6.0f} ms   new start found the old running: "
              f"{sum(f[2] for f in found)} of {runs}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    options = parser.parse_args()
    asyncio.run(main(options.runs))
