"""What waiting for exact token counts costs the first request of a process: prints
figures, asserts nothing.

    python bench/tokenizer_wait_bench.py [--runs N] [--window N]

A turn whose estimated context is near a line (a quarter of the compaction point or
more) waits for the tokenizer before it decides anything about the window (see
``RequestPlanning._exact_near_the_line``); one far below it goes on estimates. This is
what ``selfref-tui ask`` meets on a large key: each run is a fresh process (tiktoken
keeps a loaded encoding for the rest of a process), with the runtime, a key made with
the real store API, and the in-package demo server over real HTTP; the child notes
``perf_counter()`` when the turn starts and when the server receives its first
request. Printed: the median time to that first request and whether it was counted
exactly, for a key far from the line and one near it; the near one also decided on
estimates (the encoder's load over, failed: what every turn did before it waited) and
with the tokenizer loaded before the turn (as the app loads it at start).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from conversation_bench import build  # noqa: E402

from selfref_tui.selfref import SelfReference  # noqa: E402

_CHILD = r"""
import asyncio, json, sys, time
sys.path.insert(0, sys.argv[4])
from selfref_tui.agent.provider.client import Provider
from selfref_tui.agent.turn.loop import Agent
from selfref_tui.config import AgentSettings, ProviderConfig
from selfref_tui.demo.script import Reply
from selfref_tui.demo.server import DemoServer
from selfref_tui.selfref import SelfReference

data, key, window, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[5]
seen = {}


def answer(body, index):
    seen.setdefault("first", time.perf_counter())
    seen.setdefault("exact", agent.tokens.ready)
    return Reply(text="ok")


async def main():
    global agent
    server = DemoServer(answer)
    url = await server.start()
    provider = Provider(ProviderConfig(base_url=url, api_key="sk-bench", model="gpt-4o",
                                       max_retries=0, timeout_s=30.0))
    store = SelfReference(data)
    agent = Agent(store, provider, AgentSettings(), model="gpt-4o", context_window=window)
    if mode == "estimates":  # a load already over (failed): nothing to wait for
        agent._encoder_task = asyncio.get_running_loop().create_future()
        agent._encoder_task.set_result(None)
    elif mode == "preloaded":  # as the app, which loads it at start
        from selfref_tui.selfref.encodings import load_encoder

        agent.tokens.set_encoder(load_encoder("gpt-4o"))
    started = time.perf_counter()
    outcome = await agent.run_turn(key, "one more question")
    await agent.aclose()
    await server.stop()
    store.close()
    print(json.dumps({"outcome": outcome, "first_s": seen["first"] - started,
                      "exact": seen["exact"]}))


asyncio.run(main())
"""


def one(data: Path, key: str, window: int, mode: str) -> dict:
    out = subprocess.run([sys.executable, "-c", _CHILD, str(data), key, str(window), str(ROOT),
                          mode], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--window", type=int, default=128_000)
    options = parser.parse_args()
    # ~60 estimated tokens a message: 200 messages are far below a quarter of the
    # 128k window's compaction point (102,400), 1,000 are past it (the whole key
    # still fits the window)
    keys = {"far": 200, "near": 1_000}
    #: (key, mode, what it is)
    cases = [("far", "ask", "as ask: no wait"),
             ("near", "ask", "as ask: waits for the tokenizer"),
             ("near", "estimates", "decided on estimates (no tokenizer to wait for)"),
             ("near", "preloaded", "tokenizer loaded before the turn, as in the app")]
    with tempfile.TemporaryDirectory(prefix="selfref-bench-") as tmp:
        data = Path(tmp) / "data"
        for name, messages in keys.items():
            store = SelfReference(data)
            build(store, name, messages)
            store.close()
        print(f"first request of a fresh process, window {options.window:,}, "
              f"median of {options.runs} (a turn is its own process each time):")
        for name, mode, what in cases:
            runs = []
            for _ in range(options.runs):
                # a fresh copy each run: the turn appends to the key
                copy = Path(tmp) / f"run-{name}"
                subprocess.run(["cp", "-r", str(data), str(copy)], check=True)
                runs.append(one(copy, name, options.window, mode))
                subprocess.run(["rm", "-rf", str(copy)], check=True)
            first = statistics.median(r["first_s"] for r in runs)
            exact = {r["exact"] for r in runs}
            counted = "exact" if exact == {True} else "estimated" if exact == {False} else "mixed"
            print(f"  {name:4} key ({keys[name]:,} messages), {what}: {first * 1000:.0f} ms "
                  f"to the first request, counted {counted}")


if __name__ == "__main__":
    main()
