"""Time and peak memory of a client facing a hostile MCP server (tests/hostile_servers/).

Each case runs in a fresh Python process (so its peak RSS is its own) that starts
one server through ``McpManager``, does one thing and reports:

- stderr_1gb:  the server writes 1 GiB to stderr, then exits at start-up;
- text_50mb:   one ``tools/call`` answered with a 50 MB text (refused: over the 20 MB cap);
- text_50mb_cap64: the same with ``max_message_mb = 64``: taken whole (time is linear);
- image_100mb: one answer holding a 100 MB base64 image (``--all``; minutes before the cap);
- endless:     an answer line of 200 MB with no newline, then silence (``--all``; stopped
               at 120 s before the cap);
- garbage:     1,000 lines that are not JSON: the lines the client printed on stderr;
- tools_10k:   a server listing 10,000 tools: start to ready.

Peak RSS is the measuring process's ``ru_maxrss`` (the server is not counted);
``tmp`` is the largest temp file the client created meanwhile.

    python bench/mcp_flood_bench.py [--all] [--case NAME]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = ROOT / "tests" / "hostile_servers" / "mcp_stdio.py"

CHILD = r"""
import asyncio, json, os, resource, sys, threading, time
sys.path.insert(0, sys.argv[1])
from selfref_tui.agent.mcp.manager import McpManager
from selfref_tui.config import McpServerConfig

case, server_args, tool = sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
args, changes = json.loads(sys.argv[5]), json.loads(sys.argv[6])
tmp_peak = [0]

def watch_tmp():  # the client's temp files (the old stderr log): the largest seen
    while True:
        for fd in os.listdir("/proc/self/fd"):
            try:
                target = os.readlink(f"/proc/self/fd/{fd}")
                if target.startswith("/tmp/"):
                    tmp_peak[0] = max(tmp_peak[0], os.fstat(int(fd)).st_size)
            except OSError:
                pass
        time.sleep(0.05)

threading.Thread(target=watch_tmp, daemon=True).start()

async def main():
    fields = McpServerConfig.__dataclass_fields__
    changes.setdefault("call_timeout_s", 120.0)
    extra = {k: v for k, v in changes.items() if k in fields}  # older code: fewer settings
    config = McpServerConfig(name="hostile", command=sys.executable, args=tuple(server_args),
                             start_timeout_s=120.0, trust=("*",), **extra)
    manager = McpManager([config])
    started = time.perf_counter()
    outcome = ""
    try:
        await manager.wait_started()
        status = manager.statuses()[0]
        outcome = f"{status.state}: {status.error}"[:160]
        if tool:
            found = [t for t in manager.tools() if t.name == tool]
            started = time.perf_counter()
            try:
                mapped = await asyncio.wait_for(manager.call_raw(found[0], args), 120)
                outcome = f"result of {len(mapped.text):,} chars, {len(mapped.images)} image(s)"
            except Exception as exc:
                outcome = f"{type(exc).__name__}: {exc}"[:160]
        took = time.perf_counter() - started
    finally:
        await manager.aclose()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"s": took, "peak_mb": peak, "tmp_mb": tmp_peak[0] / 2**20,
                      "outcome": outcome}))

asyncio.run(main())
"""

CASES = {
    "stderr_1gb": (["--stderr-mb", "1024", "--crash"], "", {}, {}),
    "text_50mb": ([], "big", {"mb": 50}, {}),
    "text_50mb_cap64": ([], "big", {"mb": 50}, {"max_message_mb": 64}),
    "image_100mb": ([], "big", {"mb": 100, "kind": "image"}, {}),
    "endless": ([], "endless", {"mb": 200}, {}),
    "garbage": ([], "garbage", {"lines": 1000}, {}),
    "tools_10k": (["--tools", "10000"], "", {}, {}),
}
SLOW = {"image_100mb", "endless"}


def run(name: str) -> None:
    server_args, tool, args, changes = CASES[name]
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(ROOT), name, json.dumps([str(HOSTILE), *server_args]),
         tool, json.dumps(args), json.dumps(changes)], capture_output=True, text=True, timeout=900,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    lines = proc.stdout.strip().splitlines()
    if not lines:
        print(f"{name:<15} failed: {proc.stderr.strip()[-300:]}")
        return
    got = json.loads(lines[-1])
    stderr_lines = len(proc.stderr.splitlines())
    print(f"{name:<15} {got['s']:7.2f} s  peak {got['peak_mb']:6.0f} MB  tmp "
          f"{got['tmp_mb']:5.0f} MB  stderr {stderr_lines:>6} lines  {got['outcome']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--all", action="store_true", help="also the slow cases")
    parser.add_argument("--case", choices=sorted(CASES), action="append")
    opts = parser.parse_args()
    names = opts.case or [n for n in CASES if opts.all or n not in SLOW]
    started = time.perf_counter()
    for name in names:
        run(name)
    print(f"(all cases {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
