"""How long stopping the MCP servers takes when the app quits, and that nothing is left.

Starts ``McpManager`` with one stdio server (a real subprocess under its
supervisor), waits until it is ready, then times ``aclose(quitting=True)`` (what
ctrl+q and the end of a command run) for:

- a well-behaved server (the hostile server with no switch: it exits when its
  stdin closes);
- a wedged one (``--wedge``: after listing its tools it stops reading, ignores
  SIGTERM and never exits), the worst case: only SIGKILL ends it;
- a wedged one with helpers deaf to SIGTERM, one of which left the group.

Each row also says whether every process it started was gone when ``aclose``
returned (the rule: no process outlives the app).

    python bench/mcp_quit_bench.py [--runs 5]
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
from selfref_tui.config import McpServerConfig  # noqa: E402
from tests.hostile_servers import alive, mcp_stdio_command, read_pids  # noqa: E402

CASES = {
    "well-behaved server": (),
    "wedged server (deaf to SIGTERM)": ("--wedge",),
    "wedged, 3 helpers deaf to SIGTERM": ("--wedge", "--helpers", "2", "--setsid-helpers", "1",
                                          "--stubborn-helpers"),
}
PROCESSES = {"well-behaved server": 1, "wedged server (deaf to SIGTERM)": 1,
             "wedged, 3 helpers deaf to SIGTERM": 4}


async def one(name: str, extra: tuple[str, ...], folder: Path) -> tuple[float, bool]:
    pids_file = folder / f"pids-{time.monotonic_ns()}"
    command, args = mcp_stdio_command("--pids", str(pids_file), *extra)
    manager = McpManager([McpServerConfig(name="h", command=command, args=args)])
    await manager.wait_started(timeout=60)
    pids = await asyncio.to_thread(read_pids, pids_file, PROCESSES[name])
    started = time.perf_counter()
    await manager.aclose(quitting=True)
    took = time.perf_counter() - started
    return took, not any(alive(pid) for pid in pids)


async def main(runs: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for name, extra in CASES.items():
            times, clean = [], True
            for _ in range(runs):
                took, gone = await one(name, extra, Path(tmp))
                times.append(took)
                clean = clean and gone
            print(f"  {name:<36} median {statistics.median(times) * 1000:7.0f} ms   "
                  f"max {max(times) * 1000:7.0f} ms   (n={runs})   "
                  f"{'nothing left' if clean else 'PROCESSES LEFT BEHIND'}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    asyncio.run(main(parser.parse_args().runs))
