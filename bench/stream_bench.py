"""How well the app keeps up with a fast stream, against a naive Markdown re-render.

    .venv/bin/python bench/stream_bench.py [--tokens 20000] [--naive-budget 60] [--slices]

A headless app (``App.run_test``) streams a long answer (prose, refs and code
fences) from the in-package demo server over real HTTP, once as fast as the
server can send and once at 2,000 tokens/s. The server runs on its own loop in
another process so its pace does not depend on the UI loop (or the GIL). For each run it prints:

- rendered tokens/s: tokens / (final render done − first chunk received);
- lag at the end: final render painted − last chunk received by the client, and
  − last chunk sent by the server (a slow consumer also slows what it receives);
- key latency: a key is pressed every ~50 ms during the stream through
  ``pilot.press``; latency = its binding's handler time − the press time (p50/p99);
- echo: a letter typed into the input every ~50 ms during the stream; latency =
  the input's text changed − the key's arrival (p50/max), inside the process.

The same figures come, in the same run, from a naive app: one ``Markdown``
widget whose ``update(full_text)`` is awaited on every chunk. It is quadratic,
so it gets ``--naive-budget`` seconds per run; if it has not finished by then
the figures cover what it rendered and the lag is a lower bound. Goals: keep up
with 2,000 tokens/s with ≤ 100 ms lag and p99 key latency ≤ 50 ms.

``--slices`` also prints, for the app's run at 2,000 tokens/s, how long the
event loop was held at a time from the first text to the last paint
(``bench/_slices.py``: wall and CPU per callback, and what ran in the long ones).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from textual import events, on
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Header, Markdown, TextArea

from bench._common import ServerProcess
from bench._slices import LoopSlices
from selfref_tui.agent import events as ev
from selfref_tui.config import AppConfig, ProviderConfig
from selfref_tui.demo.server import split_text
from selfref_tui.ui.app import SelfRefApp

SIZE = (120, 40)
PING_EVERY_S = 0.05
PING_KEY = "f12"
#: the event loop's slices, timed from the first text to the last paint when ``--slices``
SLICES: LoopSlices | None = None


def long_reply(tokens: int) -> str:
    """Prose, headings, refs holding code fences and plain fences, ≥ ``tokens`` server tokens."""
    parts: list[str] = []
    count = 0
    i = 0
    while count < tokens:
        i += 1
        block = (
            f"\n### Section {i}\n\nThis paragraph explains step {i} of the plan in plain words, "
            "with a few **bold** terms, some `inline code` and a list:\n\n"
            f"- first point of section {i}\n- second point, a little longer than the first\n\n"
        )
        if i % 4 == 0:
            block += (
                f'<ref id="snippet_{i}">\n```python\ndef step_{i}(values: list[int]) -> int:\n'
                f"    total = 0\n    for v in values:\n        total += v * {i}\n"
                "    return total\n```\n</ref>\n\n"
            )
        elif i % 4 == 2:
            block += f"```bash\nselfref-tui refs export snippet_{i} out_{i}.py\n```\n\n"
        parts.append(block)
        count += len(split_text(block, None))
    return "".join(parts)


@dataclass
class Figures:
    name: str
    #: characters of answer text received (a delta holds every token that arrived together)
    chars: int = 0
    #: the reply's characters per server token, to count tokens from characters
    chars_per_token: float = 1.0
    first_recv: float = 0.0
    last_recv: float = 0.0
    painted: float = 0.0
    server_done: float = 0.0
    #: process CPU seconds when the request was sent / when the answer was on screen:
    #: the app's own work, which a loaded machine slows far less than wall-clock figures
    sent_cpu: float = 0.0
    painted_cpu: float = 0.0
    key_latencies: list[float] = field(default_factory=list)
    echo_latencies: list[float] = field(default_factory=list)
    finished: bool = True

    @property
    def tokens(self) -> int:
        return round(self.chars / self.chars_per_token)

    @property
    def rendered_tps(self) -> float:
        span = self.painted - self.first_recv
        return self.tokens / span if span > 0 else float("nan")

    @property
    def received_tps(self) -> float:
        span = self.last_recv - self.first_recv
        return self.tokens / span if span > 0 else float("nan")

    def pct(self, p: float, values: list[float] | None = None) -> float:
        values = sorted(self.key_latencies if values is None else values)
        if not values:
            return float("nan")
        return values[min(len(values) - 1, round(p / 100 * (len(values) - 1)))]

    def line(self) -> str:
        lag_recv = (self.painted - self.last_recv) * 1000
        lag_sent = (self.painted - self.server_done) * 1000
        mark = "" if self.finished else "  (stopped at the time budget: lag is a lower bound)"
        return (
            f"  {self.name:<28} tokens {self.tokens:>6}  received {self.received_tps:>8.0f} tok/s"
            f"  rendered {self.rendered_tps:>8.0f} tok/s  lag {lag_recv:>8.1f} ms"
            f" (vs sent {lag_sent:>8.1f} ms)  keys p50 {self.pct(50) * 1000:6.1f} ms"
            f" p99 {self.pct(99) * 1000:6.1f} ms  n={len(self.key_latencies)}{self._echo()}"
            f"  cpu {self.painted_cpu - self.sent_cpu:5.2f} s{mark}"
        )

    def _echo(self) -> str:
        if not self.echo_latencies:
            return ""
        echo = self.echo_latencies
        return (
            f"  echo p50 {self.pct(50, echo) * 1000:6.1f} ms max {max(echo) * 1000:6.1f} ms"
            f" n={len(echo)}"
        )


async def type_keys(app: BenchApp, out: list[float], stop: asyncio.Event) -> None:
    """Type a letter into the input every ~50 ms; latency = input changed − key posted."""
    sent: list[float] = []
    while not stop.is_set():
        sent.append(time.perf_counter())
        app.post_message(events.Key("x", "x"))
        try:
            await asyncio.wait_for(stop.wait(), PING_EVERY_S)
        except TimeoutError:
            pass
    deadline = time.perf_counter() + 5
    while (not app.echoes or app.echoes[-1][1] < len(sent)) and time.perf_counter() < deadline:
        await asyncio.sleep(0.01)
    # The k-th letter is echoed by the first change that shows k of them.
    for count, typed in enumerate(sent, 1):
        echoed = next((at for at, shown in app.echoes if shown >= count), None)
        if echoed is not None:
            out.append(echoed - typed)


async def ping_keys(app: App, pings: list[float], out: list[float], stop: asyncio.Event) -> None:
    """Press the ping key every ~50 ms; latency = handler time − press time.

    The key is posted to the app as the terminal driver posts it (``pilot.press``
    would wait for the screen to go idle, i.e. until the stream ends).
    """
    sent: list[float] = []
    while not stop.is_set():
        sent.append(time.perf_counter())
        app.post_message(events.Key(PING_KEY, None))
        try:
            await asyncio.wait_for(stop.wait(), PING_EVERY_S)
        except TimeoutError:
            pass
    deadline = time.perf_counter() + 5
    while len(pings) < len(sent) and time.perf_counter() < deadline:
        await asyncio.sleep(0.01)
    out.extend(handled - pressed for pressed, handled in zip(sent, pings, strict=False))


# --------------------------------------------------------------------------- the app


class BenchApp(SelfRefApp):
    CSS_PATH = str(Path(sys.modules[SelfRefApp.__module__].__file__).parent / SelfRefApp.CSS_PATH)
    BINDINGS = [Binding(PING_KEY, "bench_ping", "ping", show=False)]  # noqa: RUF012

    def __init__(self, config: AppConfig) -> None:
        super().__init__(config)
        self.pings: list[float] = []
        #: (when, how many typed letters the input shows)
        self.echoes: list[tuple[float, int]] = []
        self.figures = Figures("selfref-tui")
        self.done = asyncio.Event()

    def action_bench_ping(self) -> None:
        self.pings.append(time.perf_counter())

    @on(TextArea.Changed)
    def _bench_echo(self) -> None:
        self.echoes.append((time.perf_counter(), self.chat_input.text.count("x")))

    def emit(self, event: ev.AgentEvent) -> None:
        if isinstance(event, ev.TextDelta) and event.key == self.key:
            now = time.perf_counter()
            if not self.figures.first_recv:
                self.figures.first_recv = now
            self.figures.last_recv = now
            self.figures.chars += len(event.text)
            if SLICES is not None and not self.figures.painted:
                SLICES.active = True
        super().emit(event)

    async def dispatch_event(self, event: ev.AgentEvent) -> None:
        await super().dispatch_event(event)
        if isinstance(event, ev.LLMCallEnded) and event.key == self.key:
            self.run_worker(self._until_painted())

    async def _until_painted(self) -> None:
        # The transcript shows events on its own task: wait for the answer's
        # final full render, then for the frame that puts it on the screen.
        await self.transcript.settle()
        self.screen.call_after_refresh(self._painted)

    def _painted(self) -> None:
        self.figures.painted = time.perf_counter()
        self.figures.painted_cpu = time.process_time()
        if SLICES is not None:
            SLICES.active = False
        self.done.set()


#: the collector's full pass waits for a second without typing (gc_pauses.py)
SETTLE_S = 1.5


async def started(app: SelfRefApp, pilot: Any) -> None:
    """The app is ready and done starting: the key open, tiktoken's encoding loaded (in a
    thread, holding the GIL for ~0.5 s of CPU) and the collector's pass after loading run.

    Without this wait a short stream (100 or 1,000 refs) overlapped the start-up's last
    work, and the figures measured the start as much as the stream.
    """
    while not (app.ready and app.header.status == "ready"):
        await pilot.pause(0.02)
    deadline = time.perf_counter() + 30
    while not app.agent.tokens.ready and time.perf_counter() < deadline:
        await pilot.pause(0.02)
    await pilot.pause(SETTLE_S)


async def run_app(url: str, server: ServerProcess, data_dir: Path) -> Figures:
    provider = ProviderConfig(
        base_url=url, api_key="bench", model="bench", max_retries=0, timeout_s=120
    )
    app = BenchApp(AppConfig(provider=provider, data_dir=data_dir))
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        await pilot.press("g", "o")
        app.figures.sent_cpu = time.process_time()
        # Posted as the terminal driver would: pilot.press would wait for an idle screen.
        app.post_message(events.Key("enter", None))
        stop = asyncio.Event()
        pinger = asyncio.create_task(ping_keys(app, app.pings, app.figures.key_latencies, stop))
        typist = asyncio.create_task(type_keys(app, app.figures.echo_latencies, stop))
        await asyncio.wait_for(app.done.wait(), 600)
        stop.set()
        await pinger
        await typist
        app.figures.server_done = server.sent_done
        while app.router.busy:
            await pilot.pause(0.02)
    return app.figures


# --------------------------------------------------------------------------- naive


class NaiveApp(App[None]):
    """The usual chat-app approach: re-render the whole answer on every chunk."""

    BINDINGS = [Binding(PING_KEY, "bench_ping", "ping", show=False)]  # noqa: RUF012

    def __init__(self, url: str, budget_s: float) -> None:
        super().__init__()
        self.url = url
        self.budget_s = budget_s
        self.pings: list[float] = []
        self.figures = Figures("naive Markdown.update per chunk")
        self.done = asyncio.Event()

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll():
            yield Markdown()

    def on_mount(self) -> None:
        self.query_one(VerticalScroll).anchor()

    def action_bench_ping(self) -> None:
        self.pings.append(time.perf_counter())

    async def stream(self) -> None:
        from selfref_tui.agent.provider.chunks import TextChunk
        from selfref_tui.agent.provider.client import Provider

        provider = Provider(
            ProviderConfig(
                base_url=self.url, api_key="bench", model="bench", max_retries=0, timeout_s=120
            )
        )
        markdown = self.query_one(Markdown)
        figures = self.figures
        text = ""
        stream = provider.stream([{"role": "user", "content": "go"}])
        try:
            async for chunk in stream:
                if not isinstance(chunk, TextChunk):
                    continue
                now = time.perf_counter()
                if not figures.first_recv:
                    figures.first_recv = now
                elif now - figures.first_recv > self.budget_s:
                    figures.finished = False
                    break
                figures.last_recv = now
                figures.chars += len(chunk.text)
                text += chunk.text
                await markdown.update(text)
        finally:
            await stream.aclose()
            await provider.aclose()
        self.screen.call_after_refresh(self._painted)

    def _painted(self) -> None:
        self.figures.painted = time.perf_counter()
        self.done.set()


async def run_naive(url: str, server: ServerProcess, budget_s: float) -> Figures:
    app = NaiveApp(url, budget_s)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        stop = asyncio.Event()
        streaming = asyncio.create_task(app.stream())
        pinger = asyncio.create_task(ping_keys(app, app.pings, app.figures.key_latencies, stop))
        await asyncio.wait_for(app.done.wait(), budget_s + 600)
        stop.set()
        await pinger
        await streaming
        app.figures.server_done = server.sent_done
    return app.figures


# --------------------------------------------------------------------------- main


async def one_pace(text: str, tokens_per_s: float | None, budget_s: float) -> list[Figures]:
    label = "as fast as the server sends" if tokens_per_s is None else f"{tokens_per_s:.0f} tok/s"
    results = []
    for runner in ("app", "naive") if budget_s > 0 else ("app",):
        with ServerProcess(text, tokens_per_s) as server:
            if runner == "app":
                with tempfile.TemporaryDirectory() as tmp:
                    figures = await run_app(server.url, server, Path(tmp) / "data")
            else:
                figures = await run_naive(server.url, server, budget_s)
        figures.chars_per_token = len(text) / len(split_text(text, None))
        results.append(figures)
    print(f"\nServer pace: {label}")
    for figures in results:
        print(figures.line())
    if len(results) == 2:
        ratio = results[0].rendered_tps / results[1].rendered_tps
        print(f"  rendered tokens/s ratio app/naive: {ratio:.1f}x")
    return results


def verdict(fig: Figures) -> str:
    lag = (fig.painted - fig.last_recv) * 1000
    ok_rate = fig.rendered_tps >= 2000 * 0.95
    echo = fig.pct(50, fig.echo_latencies) * 1000 if fig.echo_latencies else float("nan")
    ok = lag <= 100 and fig.pct(99) * 1000 <= 50 and ok_rate and echo <= 30
    return (
        f"goal at 2,000 tok/s (≥ 1,950 tok/s rendered, lag ≤ 100 ms, key p99 ≤ 50 ms,"
        f" echo p50 ≤ 30 ms): {'MET' if ok else 'MISSED'}"
        f" (lag {lag:.1f} ms, key p99 {fig.pct(99) * 1000:.1f} ms,"
        f" rendered {fig.rendered_tps:.0f} tok/s, echo p50 {echo:.1f} ms)"
    )


async def main(tokens: int, budget_s: float, slices: bool = False) -> None:
    global SLICES
    text = long_reply(tokens)
    n = len(split_text(text, None))
    print(
        f"Reply: {n} server tokens, {len(text):,} characters, {text.count('<ref ')} refs, "
        f"{text.count('```') // 2} code fences; terminal {SIZE[0]}x{SIZE[1]}; "
        f"naive budget {budget_s:.0f} s per run"
    )
    await one_pace(text, None, budget_s)
    if slices:
        SLICES = LoopSlices().install()
    paced = await one_pace(text, 2000.0, budget_s)
    if SLICES is not None:
        print("\n".join(SLICES.lines()))
    load = os.getloadavg()
    print(f"\nload average {load[0]:.1f} / {load[1]:.1f} (1 / 5 min): wall-clock figures "
          "grow with it")
    print("selfref-tui " + verdict(paced[0]))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=20_000)
    parser.add_argument(
        "--naive-budget", type=float, default=60.0, help="seconds per naive run (0: skip it)"
    )
    parser.add_argument(
        "--slices", action="store_true",
        help="time the event loop's callbacks during the app's run at 2,000 tok/s",
    )
    args = parser.parse_args()
    asyncio.run(main(args.tokens, args.naive_budget, args.slices))
