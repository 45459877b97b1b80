"""Textual's own ceiling: one bare ``Markdown`` fed through ``MarkdownStream``.

    .venv/bin/python bench/markdown_baseline.py [--tokens N] [--rate 2000] [--batch-ms 0] [--app-gc]

No selfref-tui code on screen: a ``Header`` and an anchored ``VerticalScroll``
holding one ``Markdown``, fed in-process with the same reply and the same token
split as ``stream_bench`` at ``--rate`` tokens/s. ``--batch-ms`` joins what
arrives within that many milliseconds into one ``write`` (0: a write per token).
It prints the rate the feed reached (a busy loop slows the feeder too), the
rendered tokens/s, the lag at the end and the key latency (p50/p99), so the
app's figures in ``stream_bench`` can be read against what Textual itself does
on the same machine.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Header, Markdown

from bench._common import pct
from bench.stream_bench import PING_EVERY_S, PING_KEY, SIZE, long_reply
from selfref_tui.demo.server import split_text


class Baseline(App[None]):
    BINDINGS = [Binding(PING_KEY, "ping", "ping", show=False)]  # noqa: RUF012

    def __init__(self) -> None:
        super().__init__()
        self.pings: list[float] = []

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll():
            yield Markdown()

    def on_mount(self) -> None:
        self.query_one(VerticalScroll).anchor()

    def action_ping(self) -> None:
        self.pings.append(time.perf_counter())


async def run(tokens: list[str], rate: float, batch_s: float) -> None:
    app = Baseline()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        stream = Markdown.get_stream(app.query_one(Markdown))
        sent: list[float] = []
        stop = asyncio.Event()

        async def pinger() -> None:
            while not stop.is_set():
                sent.append(time.perf_counter())
                app.post_message(events.Key(PING_KEY, None))
                await asyncio.sleep(PING_EVERY_S)

        ping_task = asyncio.create_task(pinger())
        start = last_write = time.perf_counter()
        batch: list[str] = []
        for i, token in enumerate(tokens):
            delay = start + i / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            batch.append(token)
            if time.perf_counter() - last_write >= batch_s:
                await stream.write("".join(batch))
                batch.clear()
                last_write = time.perf_counter()
        await stream.write("".join(batch))
        fed = time.perf_counter()
        await stream.stop()
        painted = asyncio.Event()
        app.screen.call_after_refresh(painted.set)
        await painted.wait()
        done = time.perf_counter()
        stop.set()
        await ping_task
        await asyncio.sleep(0.5)
        latencies = sorted(h - s for s, h in zip(sent, app.pings, strict=False))
        p50 = latencies[len(latencies) // 2] * 1000
        p99 = pct(latencies, 0.99) * 1000
        n = len(tokens)
        print(
            f"  batch {batch_s * 1000:4.0f} ms  fed {n / (fed - start):6.0f} tok/s"
            f"  rendered {n / (done - start):6.0f} tok/s  lag {(done - fed) * 1000:7.1f} ms"
            f"  keys p50 {p50:6.1f} ms p99 {p99:6.1f} ms  n={len(latencies)}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=20_000)
    parser.add_argument("--rate", type=float, default=2000.0)
    parser.add_argument("--batch-ms", type=float, nargs="*", default=[0.0, 50.0])
    parser.add_argument(
        "--app-gc",
        action="store_true",
        help="use the app's garbage-collector thresholds (selfref_tui.ui.gc_pauses)",
    )
    args = parser.parse_args()
    if args.app_gc:
        import gc

        from selfref_tui.ui.gc_pauses import THRESHOLDS

        gc.set_threshold(*THRESHOLDS)
    tokens = split_text(long_reply(args.tokens), None)
    print(
        f"Bare Textual Markdown + MarkdownStream: {len(tokens)} tokens at {args.rate:.0f} tok/s,"
        f" gc thresholds {'of the app' if args.app_gc else 'Python defaults'}"
    )
    for batch_ms in args.batch_ms:
        asyncio.run(run(tokens, args.rate, batch_ms / 1000))


if __name__ == "__main__":
    main()
