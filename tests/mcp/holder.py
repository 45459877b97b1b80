"""A process that starts the test server through a manager, prints the server's pid and waits.

tests/mcp/test_orphans.py kills this process (SIGKILL) or interrupts it (SIGINT)
and checks that the server goes too.
"""

from __future__ import annotations

import asyncio
import os
import sys

from selfref_tui.agent.mcp.manager import McpManager
from selfref_tui.config import McpServerConfig


async def main() -> None:
    server = McpServerConfig(name="t", command=sys.executable, args=(sys.argv[1], "--linger"))
    manager = McpManager([server])
    try:
        await manager.wait_started(timeout=60)
        children = [p for p in os.listdir("/proc") if p.isdigit() and _parent(p) == os.getpid()]
        print(" ".join(children), flush=True)
        await asyncio.Event().wait()
    finally:
        await manager.aclose()


def _parent(pid: str) -> int:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except OSError:
        return -1


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(130)
