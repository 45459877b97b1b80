"""What an MCP tool call costs on top of the server's own work, and how long servers take to start.

Runs the in-repo SDK server (tests/mcp/server.py) as a real stdio subprocess
through ``McpManager`` — the path the model's calls take — and calls its
``stamp`` tool, which returns when its handler started and ended
(CLOCK_MONOTONIC, comparable across processes). For each call:

- total: ``McpManager.call`` end to end (trust check, ``tools/call`` over the
  pipe, the SDK on both sides, result mapping, fd check);
- overhead: total minus the handler's own time (what MCP adds to the tool);
- ours: total minus a bare SDK ``client.call_tool`` measured the same way
  (what selfref-tui adds on top of the SDK);
- client CPU per call (``process_time``): the part a busy machine cannot inflate;
- schema conversion (``McpManager.schemas()`` per request) and result mapping
  (``map_result``) timed alone;
- where a bare SDK call's wall time goes: the client's CPU, the server's CPU
  (``/proc/<pid>/stat``, in 10 ms ticks, so over many calls) and the rest
  (pipes, both event loops waking, waiting for a core), and the client's CPU
  with and without the SDK's re-validation of results against the tool's
  output schema.

Start-up: from ``start()`` to ready for the test server and ``mcp-server-time``,
and the longest the event loop was held up meanwhile (a 1 ms ticker): servers
start in the background, so this is what a first frame drawn during it would wait.

    python bench/mcp_bench.py [--calls 100]

Figures from a shared, busy machine are noisy; compare runs on the same machine.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._common import pct  # noqa: E402
from selfref_tui.agent.mcp.manager import McpManager  # noqa: E402
from selfref_tui.agent.mcp.results import map_result  # noqa: E402
from selfref_tui.config import McpServerConfig  # noqa: E402
from selfref_tui.refs.fds import FdTable  # noqa: E402

SERVER = ROOT / "tests" / "mcp" / "server.py"


def row(name: str, values_s: list[float]) -> str:
    ms = [v * 1000 for v in values_s]
    return (f"  {name:<34} median {statistics.median(ms):7.3f} ms   p95 {pct(ms, 0.95):7.3f} ms"
            f"   (n={len(ms)})")


class Ctx:
    """What a tool call gets from the loop: the fd table and the records list."""

    def __init__(self) -> None:
        self.fds = FdTable(threshold=8_000)
        self.records: list[dict] = []

    async def ask(self, *_: object) -> str:  # never reached: the tool is trusted
        return "deny"


async def ticker(lags: list[float], stop: asyncio.Event) -> None:
    while not stop.is_set():
        before = time.perf_counter()
        await asyncio.sleep(0.001)
        lags.append(time.perf_counter() - before - 0.001)


async def startup(configs: list[McpServerConfig]) -> None:
    print("server start-up (in the background):")
    for config in configs:
        lags: list[float] = []
        stop = asyncio.Event()
        tick = asyncio.create_task(ticker(lags, stop))
        manager = McpManager([config])
        started = time.perf_counter()
        manager.start()
        await manager.wait_started(timeout=120)
        ready = time.perf_counter() - started
        stop.set()
        await tick
        status = manager.statuses()[0]
        await manager.aclose()
        print(f"  {config.name:<10} {status.state:<6} ready after {ready * 1000:7.0f} ms; "
              f"{len(status.tools)} tools; longest event-loop stall meanwhile "
              f"{max(lags) * 1000:5.1f} ms (median tick lag {statistics.median(lags) * 1000:.2f}"
              " ms)")


def cpu_of(pid: int) -> float:
    """A process's user + system CPU seconds so far (Linux)."""
    import os

    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_pid() -> int | None:
    """The bench server: our child running tests/mcp/server.py."""
    import os

    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read()
            with open(f"/proc/{entry}/stat") as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
        if parent == os.getpid() and str(SERVER).encode() in cmd:
            return int(entry)
    return None


async def breakdown(client, n: int) -> None:
    """Client CPU, server CPU and the rest of a bare ``call_tool``'s wall time."""
    pid = server_pid()
    session = client.session
    validate = session.validate_tool_result

    async def skip(name, result) -> None:
        return None

    rows = []
    for label, check in (("with output-schema validation", validate),
                         ("without it", skip)):
        session.validate_tool_result = check
        server0 = cpu_of(pid) if pid else 0.0
        c0, t0 = time.process_time(), time.perf_counter()
        for _ in range(n):
            await client.call_tool("stamp", {"payload": "x" * 200})
        wall = (time.perf_counter() - t0) / n
        client_cpu = (time.process_time() - c0) / n
        server_cpu = (cpu_of(pid) - server0) / n if pid else float("nan")
        rows.append((label, wall, client_cpu, server_cpu))
    session.validate_tool_result = validate
    print(f"where a bare SDK call_tool's time goes (means over {n} calls each):")
    for label, wall, client_cpu, server_cpu in rows:
        rest = wall - client_cpu - server_cpu
        print(f"  {label:<30} wall {wall * 1000:6.2f} ms = client CPU {client_cpu * 1000:5.2f}"
              f" + server CPU {server_cpu * 1000:5.2f} + waiting/pipes {rest * 1000:6.2f} ms")


async def calls(n: int) -> None:
    manager = McpManager([McpServerConfig(name="bench", command=sys.executable,
                                          args=(str(SERVER),), trust=("*",))])
    await manager.wait_started(timeout=120)
    try:
        tool = next(t for t in manager.tools() if t.name == "stamp")
        client = manager._runs["bench"].client
        ctx = Ctx()
        for _ in range(10):  # warm-up: imports, caches, the pipe
            await manager.call(tool.exposed, {}, ctx)
            await client.call_tool("stamp", {})
        total, overhead, bare, bare_overhead, cpu = [], [], [], [], []
        for _ in range(n):
            c0 = time.process_time()
            t0 = time.perf_counter()
            text = await manager.call(tool.exposed, {"payload": "x" * 200}, ctx)
            t1 = time.perf_counter()
            cpu.append(time.process_time() - c0)
            h_in, h_out, _size = text.split()
            total.append(t1 - t0)
            overhead.append((t1 - t0) - (float(h_out) - float(h_in)))
            t0 = time.perf_counter()
            result = await client.call_tool("stamp", {"payload": "x" * 200})
            t1 = time.perf_counter()
            h_in, h_out, _size = result.content[0].text.split()
            bare.append(t1 - t0)
            bare_overhead.append((t1 - t0) - (float(h_out) - float(h_in)))
        ours = [a - b for a, b in zip(sorted(total), sorted(bare), strict=True)]
        schemas, mapping = [], []
        sample = SimpleNamespace(is_error=False, structured_content=None, content=[
            SimpleNamespace(type="text", text="x" * 2_000)])
        for _ in range(n):
            t0 = time.perf_counter()
            manager.schemas()
            schemas.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            map_result(sample)
            mapping.append(time.perf_counter() - t0)
        print(f"tool calls over stdio ({n} each, goal: overhead median <= 5 ms):")
        print(row("McpManager.call, total", total))
        print(row("overhead over the handler", overhead))
        print(row("bare SDK call_tool, total", bare))
        print(row("bare SDK overhead over the handler", bare_overhead))
        print(row("ours on top of the SDK (by rank)", ours))
        print(row("client CPU per McpManager.call", cpu))
        print(row(f"schemas() for {len(manager.tools())} tools", schemas))
        print(row("map_result (2,000 chars of text)", mapping))
        await breakdown(client, max(n, 300))
    finally:
        await manager.aclose()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=100)
    args = parser.parse_args()
    configs = [McpServerConfig(name="test", command=sys.executable, args=(str(SERVER),))]
    time_cmd = Path(sys.executable).with_name("mcp-server-time")
    found = str(time_cmd) if time_cmd.exists() else shutil.which("mcp-server-time")
    if found:
        configs.append(McpServerConfig(name="time", command=found,
                                       args=("--local-timezone", "UTC")))
    import os

    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
          f"on {os.cpu_count()} cores")
    await startup(configs)  # first: the SDK's import is part of the first start
    await calls(args.calls)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    asyncio.run(main())
