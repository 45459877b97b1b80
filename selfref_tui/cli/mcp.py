"""``selfref-tui mcp list``: the configured MCP servers, started, and their tools."""

from __future__ import annotations

import argparse
from typing import Any

from selfref_tui.cli.common import (
    EXIT_ERROR,
    EXIT_OK,
    add_command,
    add_group,
    app_config,
    print_json,
    run_async,
)

#: the states of a configured server that did not start (a disabled one is not one)
FAILED = frozenset({"failed", "exited"})


def _mcp_list(args: argparse.Namespace) -> int:
    from selfref_tui.agent.mcp.manager import McpManager
    from selfref_tui.safety import inert_line, redact

    config = app_config(args)

    async def collect() -> list[dict]:
        manager = McpManager(config.mcp_servers)
        try:
            await manager.wait_started()
            return manager.overview()
        finally:
            await manager.aclose(quitting=True)

    rows = run_async(collect()) if config.mcp_servers else []
    # A server that did not start is a failure a script must see, not only read.
    failed = any(row["state"] in FAILED for row in rows)
    status = EXIT_ERROR if failed else EXIT_OK
    if args.json:
        print_json(rows)
        return status
    if not rows:
        print("no MCP servers configured; add an [mcp.servers.NAME] table to config.toml")
        return EXIT_OK
    for row in rows:
        took = f" in {row['start_s']:.1f}s" if row["start_s"] is not None else ""
        # a URL's userinfo or a token among the args is not for the screen
        print(inert_line(redact(f"{row['name']}  {row['state']}{took}  {row['transport']}: "
                                f"{row['target']}")))
        if row["error"]:
            print(inert_line(redact(f"  error: {row['error']}")))
        for tool in row["tools"]:
            trusted = "trusted" if tool["trusted"] else "asks"
            first = (tool["description"].strip().splitlines() or [""])[0]
            print(inert_line(f"  {tool['name']}  [{trusted}]  {first}", 160))
    return status


def register(commands: Any) -> None:
    mcp = add_group(commands, "mcp", "MCP servers from config.toml")
    p = add_command(mcp, "list", "start each configured MCP server, show its state and its "
                    "tools; exits 1 when one failed to start")
    p.add_argument("--config", metavar="PATH", default=argparse.SUPPRESS,
                   help="config.toml to read")
    p.add_argument("--json", action="store_true",
                   help='[{"name", "transport", "target", "state", "error", "start_s", '
                        '"tools":[{"name", "server_tool", "description", "trusted"}]}]')
    p.set_defaults(data_dir=None, handler=_mcp_list)
