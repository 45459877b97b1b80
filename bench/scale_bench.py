"""How the transcript's cost grows with one huge answer, a huge line, huge tool arguments.

    .venv/bin/python bench/scale_bench.py [--cases refs:100,refs:1000,...] [--timeout 420]

Every case runs in a fresh process (its peak memory is its own): a headless
app (``App.run_test``, 120x40) streams one answer from the in-package demo
server, run in a child process as fast as it can send, over real HTTP, the
same way ``bench/stream_bench.py`` does, once the app is done starting (its
token encoding loaded, see ``stream_bench.started``). Printed per case:

- ``shown``: seconds from the server writing the answer's last chunk to the
  frame that shows the whole answer (the transcript has drawn every event);
- ``received``: seconds from that last chunk to the app receiving it (a busy
  loop reads late), and ``runtime``: to the runtime finishing the turn
  (``TurnEnded``: its store commit and token count come after the stream);
- ``cpu``: CPU seconds the app process spent from sending the request to the
  answer on screen: its own work, which a loaded machine inflates far less than
  the wall-clock figures (compare runs by this when the load differs);
- ``cpu after``: CPU seconds the app process (all its threads) spends in the 5 s
  after the frame that shows the answer (an idle app should spend next to none);
- ``peak``: the process's peak resident memory (MB).

Cases: ``refs:N`` (one answer holding N refs), ``line:N`` (one line of N
bytes), ``args:N`` (a tool call whose arguments stream N bytes), ``reopen:N``
(open a key whose last answer has N refs: seconds from the app's start to its
end on screen). Goals: 1,000 refs ≤ 1 s, 10,000 refs ≤ 10 s and
≤ 400 MB, 1 MB line ≤ 1 s, 5 MB ≤ 5 s, 1 MB of arguments ≤ 1 s, reopen 1,000
refs ≤ 1 s, CPU after ≤ 0.3 s. A case that runs past ``--timeout`` prints what
it reached.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._common import ServerProcess  # noqa: E402  (needs the repo root on sys.path)

SIZE = (120, 40)
DEFAULT_CASES = (
    "refs:100,refs:300,refs:1000,refs:10000,line:100000,line:300000,line:1000000,"
    "line:5000000,args:1000000,reopen:1000"
)

_TOOL_SERVER = r"""
import asyncio, sys, time
sys.path.insert(0, sys.argv[3])
from selfref_tui.demo.server import DemoServer
from selfref_tui.demo.script import Reply, ToolCall

size = int(sys.argv[1])
done_path = sys.argv[2]
arguments = '{"text": "' + "x" * max(0, size - 12) + '"}'


class TimedServer(DemoServer):
    async def _send_reply(self, out, base, step):
        await super()._send_reply(out, base, step)
        if step.tool_calls:
            with open(done_path, "w") as f:
                f.write(repr(time.perf_counter()))


def script(body, i):
    if i == 0:
        return Reply(tool_calls=[ToolCall("bench_tool", arguments, id="call_1")])
    return Reply(text="done")


async def main():
    server = DemoServer.__new__(TimedServer)
    TimedServer.__init__(server, script)
    print(await server.start(), flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    await server.stop()


asyncio.run(main())
"""


def many_refs(count: int) -> str:
    return "".join(
        f'Step {i} of the plan:\n<ref id="r{i}">\n```python\nvalue_{i} = {i} * 2\n```\n</ref>\n\n'
        for i in range(count)
    )


def one_line(size: int) -> str:
    words = "lorem ipsum dolor sit amet consectetur "
    return (words * (size // len(words) + 1))[:size]


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# --------------------------------------------------------------------------- one case


async def run_case(kind: str, n: int, timeout: float) -> dict:
    from bench.stream_bench import BenchApp, started
    from selfref_tui.agent import events as ev
    from selfref_tui.config import AppConfig, ProviderConfig

    class ScaleApp(BenchApp):
        turn_ended = 0.0

        async def dispatch_event(self, event: ev.AgentEvent) -> None:
            if isinstance(event, ev.TurnEnded) and event.key == self.key:
                self.turn_ended = time.perf_counter()
                await super().dispatch_event(event)
                if kind == "args":  # the answer is the tool call: shown when the turn is
                    self.run_worker(self._until_painted())
                return
            if kind == "args" and isinstance(event, ev.LLMCallEnded):
                await super(BenchApp, self).dispatch_event(event)
                return
            await super().dispatch_event(event)

    result: dict = {"case": f"{kind}:{n}"}
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        if kind == "args":
            server = ToolServerProcess(n)
        else:
            text = one_line(n) if kind == "line" else many_refs(n)
            server = ServerProcess(text, None)
        with server:
            provider = ProviderConfig(
                base_url=server.url, api_key="bench", model="bench", max_retries=0,
                timeout_s=600,
            )
            config = AppConfig(provider=provider, data_dir=data)
            app = ScaleApp(config)
            async with app.run_test(size=SIZE) as pilot:
                await started(app, pilot)
                await pilot.press("g", "o")
                from textual import events

                app.figures.sent_cpu = time.process_time()
                app.post_message(events.Key("enter", None))
                try:
                    await asyncio.wait_for(app.done.wait(), timeout)
                except TimeoutError:
                    result["timeout"] = True
                sent = server.sent_done
                if not sent:  # the server had not sent it all: nothing to measure from
                    result["timeout"] = True
                elif app.figures.painted:
                    result["shown_s"] = app.figures.painted - sent
                    result["cpu_s"] = app.figures.painted_cpu - app.figures.sent_cpu
                if app.turn_ended and sent:
                    result["runtime_s"] = app.turn_ended - sent
                if app.figures.last_recv and sent:
                    result["received_s"] = app.figures.last_recv - sent
                if not result.get("timeout") and app.figures.painted:
                    # From the frame that showed it, not from when this task resumes:
                    # work the turn's end started (a collection) may run in between.
                    cpu = app.figures.painted_cpu
                    await asyncio.sleep(max(0.0, app.figures.painted + 5 - time.perf_counter()))
                    result["cpu_after_s"] = time.process_time() - cpu
                while app.router is not None and app.router.busy and not result.get("timeout"):
                    await pilot.pause(0.05)
        result["peak_mb"] = peak_mb()
        if kind == "reopen":
            result = await reopen(config, n, timeout)
    return result


async def reopen(config, n: int, timeout: float) -> dict:
    """A fresh app on the key that holds the answer: seconds until its end is on screen."""
    from selfref_tui.ui.app import SelfRefApp

    start = time.perf_counter()
    app = SelfRefApp(config)
    result: dict = {"case": f"reopen:{n}"}
    async with app.run_test(size=SIZE) as pilot:
        deadline = start + timeout
        while not (app.ready and app.header.status == "ready"):
            if time.perf_counter() > deadline:
                result["timeout"] = True
                break
            await pilot.pause(0.01)
        await app.transcript.settle()
        painted = asyncio.Event()
        app.screen.call_after_refresh(painted.set)
        await painted.wait()
        result["shown_s"] = time.perf_counter() - start
        last = f"r{n - 1}"
        result["end_visible"] = any(
            last in line for line in getattr(app.transcript, "visible_text", lambda: [])()
        ) if hasattr(app.transcript, "visible_text") else None
    result["peak_mb"] = peak_mb()
    return result


class ToolServerProcess(ServerProcess):
    """A demo server whose first answer is one tool call with ``size`` bytes of arguments."""

    def __init__(self, size: int) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="selfref-bench-")
        self._start(_TOOL_SERVER, str(size))


# --------------------------------------------------------------------------- main


def line(result: dict) -> str:
    def fig(key: str, unit: str = "s") -> str:
        value = result.get(key)
        return f"{value:8.2f} {unit}" if isinstance(value, (int, float)) else f"{'—':>8}  "

    mark = "  (stopped at the time limit: shown is a lower bound)" if result.get("timeout") else ""
    if result.get("error"):
        mark = f"  failed: {result['error']}"
    return (
        f"  {result['case']:<16} shown {fig('shown_s')}   received {fig('received_s')}   "
        f"runtime {fig('runtime_s')}   cpu {fig('cpu_s')}   "
        f"cpu after {fig('cpu_after_s')}   peak {fig('peak_mb', 'MB')}{mark}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default=DEFAULT_CASES)
    parser.add_argument("--timeout", type=float, default=420.0)
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        kind, n = args.one.split(":")
        try:
            result = asyncio.run(run_case(kind, int(n), args.timeout))
        except Exception as exc:  # a case that breaks still prints its row
            result = {"case": args.one, "error": repr(exc)}
        print(json.dumps(result), flush=True)
        return
    load = os.getloadavg()
    print(f"terminal {SIZE[0]}x{SIZE[1]}, one process per case, time limit {args.timeout:.0f} s,"
          f" load average {load[0]:.1f} / {load[1]:.1f} (1 / 5 min)")
    for case in args.cases.split(","):
        proc = subprocess.run(
            [sys.executable, __file__, "--one", case, "--timeout", str(args.timeout)],
            capture_output=True,
            text=True,
            timeout=args.timeout * 3 + 120,
        )
        out = proc.stdout.strip().splitlines()
        try:
            result = json.loads(out[-1])
        except (IndexError, ValueError):
            result = {"case": case, "error": (proc.stderr.strip().splitlines() or ["?"])[-1]}
        print(line(result), flush=True)


if __name__ == "__main__":
    main()
