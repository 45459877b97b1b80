"""How long a call takes to end when its stdio MCP server's pipes break while it runs.

Starts ``McpManager`` with the hostile server (a real subprocess under its
supervisor) and ``call_timeout_s`` set to ``--timeout``, tells it to misbehave,
then times the next call, from ``call_raw`` to the error the model reads:

- it closed its stdin and kept running: the write fails;
- it closed its stdout and kept running: its output ends;
- it stopped reading its stdin, and the call's request (256 KiB) fills the pipe:
  the call ends at the call's timeout, the server failed with it;
- the same, cancelled by the caller (Esc, a quit) half-way through the timeout:
  timed from the cancel.

Each row also gives the server's state once its task has seen it (``failed``,
``exited`` or ``ready``).

    python bench/mcp_pipe_bench.py [--runs 3] [--timeout 2]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from selfref_tui.agent.mcp.manager import McpManager  # noqa: E402
from selfref_tui.agent.tools.builtin import ToolError  # noqa: E402
from selfref_tui.config import McpServerConfig  # noqa: E402
from tests.hostile_servers import mcp_stdio_command  # noqa: E402

LARGE = "x" * (256 * 1024)
CASES = {
    "closed its stdin": ("close_stdin", {"text": "there?"}, False),
    "closed its stdout": ("close_stdout", None, False),
    "stopped reading, 256 KiB request": ("stop_reading", {"text": LARGE}, False),
    "stopped reading, cancelled (Esc)": ("stop_reading", {"text": LARGE}, True),
}


async def one(setup: str, args: dict | None, cancel: bool, timeout: float) -> tuple[float, str]:
    command, argv = mcp_stdio_command()
    manager = McpManager([McpServerConfig(name="h", command=command, args=argv,
                                          call_timeout_s=timeout)])
    await manager.wait_started(timeout=60)
    tools = {t.name: t for t in manager.status["h"].tools}
    try:
        started = time.perf_counter()
        if args is None:  # the setup call is the one that breaks
            call = asyncio.create_task(manager.call_raw(tools[setup], {}))
        else:
            await manager.call_raw(tools[setup], {})
            started = time.perf_counter()
            call = asyncio.create_task(manager.call_raw(tools["echo"], args))
        if cancel:
            await asyncio.sleep(timeout / 2)
            started = time.perf_counter()
            call.cancel()
        try:
            await call
        except (ToolError, asyncio.CancelledError):
            pass
        took = time.perf_counter() - started
        status = manager.statuses()[0]
        deadline = time.monotonic() + 10
        while status.state == "ready" and not cancel and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        return took, status.state
    finally:
        await manager.aclose(quitting=True)


async def main(runs: int, timeout: float) -> None:
    print(f"call_timeout_s = {timeout:g}")
    for name, (setup, args, cancel) in CASES.items():
        times, states = [], set()
        for _ in range(runs):
            took, state = await one(setup, args, cancel, timeout)
            times.append(took)
            states.add(state)
        print(f"  {name:<34} median {statistics.median(times) * 1000:7.0f} ms   "
              f"max {max(times) * 1000:7.0f} ms   (n={runs})   server "
              f"{'/'.join(sorted(states))}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=2.0)
    options = parser.parse_args()
    asyncio.run(main(options.runs, options.timeout))
