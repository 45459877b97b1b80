"""How long /mcp holds the screen: from opening it to its first frame, and a jump to the end.

A server may list thousands of tools; the screen is opened on a headless app
(``run_test``) with one server of N tools and timed until the frame after it
was pushed, then pressing End (the last tool drawn).

    python bench/mcp_screen_bench.py [--tools 10 1000 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from textual.app import App, ComposeResult  # noqa: E402
from textual.widgets import Static  # noqa: E402

from selfref_tui.ui.screens.mcp_servers import McpServersScreen  # noqa: E402


class Host(App):
    def compose(self) -> ComposeResult:
        yield Static("host")


def rows(count: int) -> list[dict]:
    tools = [{"name": f"mcp__big__tool_{i:05d}", "description": f"extra tool {i}",
              "trusted": i % 2 == 0} for i in range(1, count + 1)]
    return [{"name": "big", "transport": "stdio", "state": "ready", "start_s": 1.0,
             "error": "", "target": "big-server", "tools": tools}]


async def measure(count: int) -> tuple[float, float]:
    app = Host()
    async with app.run_test(size=(110, 30)) as pilot:
        await pilot.pause()
        started = time.perf_counter()
        await app.push_screen(McpServersScreen(rows(count)))
        await pilot.pause()
        shown = time.perf_counter() - started
        started = time.perf_counter()
        await pilot.press("tab", "end")
        await pilot.pause()
        return shown, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", type=int, nargs="+", default=[10, 1000, 10000])
    for count in parser.parse_args().tools:
        shown, end = asyncio.run(measure(count))
        print(f"{count:>6} tools: shown in {shown:6.2f} s, End in {end:5.2f} s")


if __name__ == "__main__":
    main()
