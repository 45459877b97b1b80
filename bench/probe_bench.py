"""How long the app's event loop stalls while the window look-up and the provider check run.

    .venv/bin/python bench/probe_bench.py [--runs 9]

Both run on the app's loop after its first frame, while the person may be
typing. A ticker wakes every millisecond and notes the longest gap between its
wake-ups while ``resolve_window`` (no cache) and ``status_of`` ask the
in-package demo server (a real HTTP server on 127.0.0.1, in this process);
the figure is that gap, median and worst over ``--runs`` runs. Anything the
look-ups do without awaiting (building an HTTP client loads the CA bundle into
a TLS context) shows up here.
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

from selfref_tui.agent.provider.probe import status_of  # noqa: E402
from selfref_tui.agent.provider.window import WindowCache, resolve_window  # noqa: E402
from selfref_tui.config import ProviderConfig  # noqa: E402
from selfref_tui.demo import DemoServer  # noqa: E402


async def longest_stall(work) -> float:
    """The longest gap (ms) between 1 ms ticks of the loop while ``work`` runs."""
    worst, done = 0.0, asyncio.Event()

    async def tick() -> None:
        nonlocal worst
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            worst, last = max(worst, now - last), now

    ticker = asyncio.create_task(tick())
    await asyncio.sleep(0.01)
    try:
        await work
    finally:
        done.set()
        await ticker
    return worst * 1000


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    import openai  # the runtime is imported before either runs in the app

    del openai
    async with DemoServer([], context_window=3000) as url:
        config = ProviderConfig(base_url=url, api_key="k", model="selfref-demo")
        for name, make in (("window look-up (resolve_window)",
                            lambda: resolve_window(config, WindowCache())),
                           ("provider check (status_of)", lambda: status_of(config, 5.0))):
            stalls = [await longest_stall(make()) for _ in range(args.runs)]
            print(f"{name}: longest loop stall median {statistics.median(stalls):.0f} ms, "
                  f"worst {max(stalls):.0f} ms ({args.runs} runs)")


if __name__ == "__main__":
    asyncio.run(main())
