"""A process that starts one MCP server through a manager, says "ready" and waits.

``python holder.py COMMAND ARGS...``. tests/mcp/test_orphans.py ends this process
in every way a process can end (SIGKILL, SIGTERM, SIGINT) and checks that the
server and every helper it started go too.
"""

from __future__ import annotations

import asyncio
import sys

from selfref_tui.agent.mcp.manager import McpManager
from selfref_tui.config import McpServerConfig


async def main() -> None:
    server = McpServerConfig(name="t", command=sys.argv[1], args=tuple(sys.argv[2:]))
    manager = McpManager([server])
    try:
        await manager.wait_started(timeout=60)
        print(manager.statuses()[0].state, flush=True)
        await asyncio.Event().wait()
    finally:
        await manager.aclose()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(130)
