"""Abort latency: signal fired → HTTP stream closed → abort patches committed and persisted.

Each round streams a few words from the in-package demo server, stalls it
mid-answer, fires the AbortSignal and records, from the fire:

* ``stream closed``  — the loop saw the consuming task end (LLMCallEnded),
* ``server noticed`` — the demo server saw the client disconnect,
* ``persisted``      — the AssistantTruncatedMutation is appended and fsynced (Aborted),
* ``turn returned``  — ``run_turn`` returned "aborted".

Run: ``.venv/bin/python bench/abort_bench.py [rounds]``. Goal: median ≤ 50 ms (persisted).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import pct
from selfref_tui.agent import events as ev
from selfref_tui.agent.abort import AbortSignal
from selfref_tui.agent.provider.client import Provider
from selfref_tui.agent.turn.loop import Agent
from selfref_tui.config import AgentSettings, ProviderConfig
from selfref_tui.demo.script import Stall
from selfref_tui.demo.server import DemoServer
from selfref_tui.selfref import SelfReference


async def main(rounds: int) -> None:
    stalls: list[Stall] = []

    def script(body: dict, index: int) -> Stall:
        stall = Stall(event=asyncio.Event(), text_before="A partial answer that will be cut")
        stalls.append(stall)
        return stall

    stamps: dict[str, float] = {}

    def emit(event: ev.AgentEvent) -> None:
        if isinstance(event, ev.LLMCallEnded):
            stamps["closed"] = time.perf_counter()
        elif isinstance(event, ev.Aborted):
            stamps["persisted"] = time.perf_counter()
        elif isinstance(event, ev.TextDelta):
            stamps.setdefault("first_text", time.perf_counter())

    figures: dict[str, list[float]] = {"stream closed": [], "server noticed": [],
                                       "persisted": [], "turn returned": []}
    with tempfile.TemporaryDirectory() as tmp:
        server = DemoServer(script)
        url = await server.start()
        provider = Provider(ProviderConfig(base_url=url, api_key="sk-bench", model="bench",
                                           max_retries=0))
        selfref = SelfReference(Path(tmp) / "data")
        agent = Agent(selfref, provider, AgentSettings(), emit, model="bench")
        try:
            for i in range(rounds):
                stamps.clear()
                server._disconnected.clear()
                signal = AbortSignal()
                turn = asyncio.create_task(agent.run_turn("bench", f"round {i}", abort=signal))
                def stalled(i: int = i) -> bool:
                    return len(stalls) > i and stalls[i].reached.is_set() and "first_text" in stamps

                while not stalled():
                    await asyncio.sleep(0.001)
                await asyncio.sleep(0.005)  # let the partial text arrive in full
                noticed = asyncio.create_task(server.wait_disconnect(2.0))
                fired = time.perf_counter()
                signal.fire("bench abort")
                outcome = await turn
                returned = time.perf_counter()
                await noticed
                server_at = time.perf_counter()
                assert outcome == "aborted", outcome
                figures["stream closed"].append(stamps["closed"] - fired)
                figures["persisted"].append(stamps["persisted"] - fired)
                figures["turn returned"].append(returned - fired)
                figures["server noticed"].append(server_at - fired)
            memory = selfref.open("bench")
            truncated = sum(1 for m in memory.messages if m.get("truncated"))
            assert truncated == rounds, truncated
        finally:
            await agent.aclose()
            await server.stop()
            selfref.close()
    print(f"abort latency over {rounds} aborts (ms, from AbortSignal.fire):")
    for name, values in figures.items():
        ms = [v * 1000 for v in values]
        print(f"  {name:15s} median {statistics.median(ms):7.2f}   p95 {pct(ms, 0.95):7.2f}"
              f"   max {max(ms):7.2f}")
    median = statistics.median(figures["persisted"]) * 1000
    print(f"goal: median ≤ 50 ms (persisted) — {'met' if median <= 50 else 'NOT met'}")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 50))
