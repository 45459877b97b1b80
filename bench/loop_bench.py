"""Runtime overhead per LLM call at a 1,000-message history, excluding the server's time.

A key is filled with 1,000 messages, then turns run against the in-package
demo server where every step calls ``inspect_context`` (so each LLM call is
followed by a tool batch and a new compile). Time spent inside
``Provider.stream`` (request, server, SSE parsing by the client) is measured
and subtracted; what is left is the runtime: compile, token count, patch
commits (append + fsync), events, tool dispatch. Commit time is also shown
on its own because it depends on the disk.

Run: ``.venv/bin/python bench/loop_bench.py [calls]``. Goal: ≤ 5 ms per call.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from selfref_tui.agent.loop import Agent
from selfref_tui.agent.provider import Provider
from selfref_tui.config import AgentSettings, ProviderConfig
from selfref_tui.context.mutations import AssistantMessageMutation, UserMessageMutation
from selfref_tui.demo.script import Reply, ToolCall
from selfref_tui.demo.server import DemoServer
from selfref_tui.selfref import SelfReference

STEPS_PER_TURN = 10


class TimedProvider:
    """Wraps the real provider and adds up the time spent inside ``stream``."""

    def __init__(self, inner: Provider) -> None:
        self.inner = inner
        self.spent = 0.0

    async def stream(self, messages: list[dict], tools: Any = None, **kwargs: Any):
        start = time.perf_counter()
        agen = self.inner.stream(messages, tools, **kwargs)
        try:
            while True:
                try:
                    chunk = await agen.__anext__()
                except StopAsyncIteration:
                    break
                self.spent += time.perf_counter() - start
                yield chunk
                start = time.perf_counter()
        finally:
            await agen.aclose()
            self.spent += time.perf_counter() - start

    async def aclose(self) -> None:
        await self.inner.aclose()


async def main(calls: int) -> None:
    def script(body: dict, index: int) -> Reply:
        return Reply(text="Checking my context.",
                     tool_calls=[ToolCall("inspect_context", {}, id=f"c{index}")])

    with tempfile.TemporaryDirectory() as tmp:
        server = DemoServer(script)
        url = server.start_in_thread()  # its work stays off the loop being measured
        provider = TimedProvider(Provider(ProviderConfig(base_url=url, api_key="sk-bench",
                                                         model="gpt-4o-mini", max_retries=0)))
        selfref = SelfReference(Path(tmp) / "data")
        memory = selfref.open("bench")
        filler = []
        for i in range(500):
            filler.append(UserMessageMutation({"role": "user", "content": f"question {i} " * 20}))
            filler.append(AssistantMessageMutation(content=f"answer {i} " * 30))
        memory.commit(filler)
        settings = AgentSettings(step_limit=STEPS_PER_TURN, auto_compact_ratio=0)
        agent = Agent(selfref, provider, settings, lambda e: None, model="gpt-4o-mini")
        commit_time = 0.0
        real_commit = memory.commit

        def timed_commit(*args: Any, **kwargs: Any) -> None:
            nonlocal commit_time
            start = time.perf_counter()
            real_commit(*args, **kwargs)
            commit_time += time.perf_counter() - start

        memory.commit = timed_commit  # type: ignore[method-assign]
        try:
            # Warm-up: loads the tiktoken encoding and fills the per-message token cache.
            await agent.run_turn("bench", "warm up")
            if agent._encoder_task is not None:
                await agent._encoder_task
            await agent.run_turn("bench", "warm up again")
            start_messages = len(memory.messages)
            per_call: list[float] = []
            per_commit: list[float] = []
            per_provider: list[float] = []
            done = 0
            while done < calls:
                provider.spent = 0.0
                commit_time = 0.0
                before = len(server.requests)
                t0 = time.perf_counter()
                await agent.run_turn("bench", "go on")
                wall = time.perf_counter() - t0
                n = len(server.requests) - before
                per_call.append((wall - provider.spent) / n)
                per_provider.append(provider.spent / n)
                per_commit.append(commit_time / n)
                done += n
        finally:
            await agent.aclose()
            server.stop_thread()
            selfref.close()
    ms = [v * 1000 for v in per_call]
    cm = [v * 1000 for v in per_commit]
    print(f"runtime overhead per LLM call, {done} calls, history {start_messages}+ messages,"
          f" encoder ready: {agent.tokens.ready}")
    pm = [v * 1000 for v in per_provider]
    print(f"  inside Provider.stream median {statistics.median(pm):6.2f} ms   (client request "
          "building + HTTP + server; excluded)")
    print(f"  total (excl. server)  median {statistics.median(ms):6.2f} ms   max {max(ms):6.2f} ms")
    print(f"  of which commits      median {statistics.median(cm):6.2f} ms   (append + fsync)")
    print(f"  without commits       median {statistics.median(ms) - statistics.median(cm):6.2f} ms")
    goal = statistics.median(ms)
    print(f"goal: ≤ 5 ms per call — {'met' if goal <= 5 else 'NOT met'}")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 100))
