"""Sending a 2 MB pasted text in a long conversation: prints figures, asserts nothing.

    .venv/bin/python bench/send_bench.py [--keep DIR] [--lines N]

The data folder of ``bench/scale_use_bench.py`` (built there, or in DIR once and
copied for each run, since sending changes it) opens in the real app at 120x40;
a paste of 36,000 log lines (2.1 MB) is sent from the key to the turn's end (the
window cannot hold it: the turn ends saying so) and the meter's count after it,
then ``/context`` shows the request. Figures: CPU seconds of this process (every
thread), wall seconds, and the process's resident memory before the send and at
its peak. Goals: ≤ 2 s of CPU and ≤ 200 MB over the open app.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from scale_use_bench import SIZE, bench_app, build, command, opened  # noqa: E402

from bench._common import ServerProcess  # noqa: E402


def rss_mb() -> float:
    """The process's resident memory now."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize() / 1e6


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3


async def run(data: Path, lines: int) -> None:
    from textual import events

    pasted = "\n".join(f"line {k}: some pasted log output, words and numbers {k}"
                       for k in range(lines))
    with ServerProcess("ok", None) as server:
        app = bench_app(server.url, data)
        async with app.run_test(size=SIZE) as pilot:
            timer = await opened(app, pilot)
            deadline = time.perf_counter() + 60
            while not app.agent.tokens.ready and time.perf_counter() < deadline:
                await pilot.pause(0.05)
            while any(w.is_running for w in app.workers if w.group == "usage"):
                await pilot.pause(0.05)
            await pilot.pause(1.5)  # the collector's pass after loading (gc_pauses)
            memory = app.agent.memory(app.key)
            before, count = rss_mb(), len(memory.messages)

            async def send() -> None:
                app.query_one("#input").post_message(events.Paste(pasted))
                await pilot.pause()
                await pilot.press("enter")
                while len(memory.messages) <= count or app.chat_input.has_class("-busy"):
                    await pilot.pause(0.02)
                await pilot.pause()
                while any(w.is_running for w in app.workers if w.group == "usage"):
                    await pilot.pause(0.02)

            await timer.time(f"send a paste of {len(pasted) / 1e6:.1f} MB ({lines:,} lines)",
                             send)
            print(f"  {'':<52} memory {before:.0f} MB before, peak {peak_mb():.0f} MB: "
                  f"+{peak_mb() - before:.0f} MB; the turn: {app.header.status}", flush=True)
            await command(pilot, "/context")
            await timer.time("/context with it", lambda: pilot.press("enter"))
            await pilot.press("escape")
            await timer.settled()
            await pilot.press("ctrl+q")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="build into (and reuse) this folder")
    parser.add_argument("--lines", type=int, default=36_000, help="lines pasted")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="send-bench-"))
    try:
        source = args.keep / "data" if args.keep else tmp / "source"
        if not source.exists() or not any(source.glob("*")):
            build(source)
        data = tmp / "data"
        shutil.copytree(source, data)
        print(f"the real app at {SIZE[0]}x{SIZE[1]}, the scale bench's data folder:")
        asyncio.run(run(data, args.lines))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
