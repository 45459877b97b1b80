"""Runtime overhead per LLM call at a 1,000-message history, excluding the server's time.

A key is filled with 1,000 messages, then turns run against the in-package
demo server (in a thread, so its work stays off the measured event loop)
where every step calls ``inspect_context``: each LLM call is followed by a
tool batch and a new compile, like an agent at work.

What one LLM call costs us, apart from the server:

* ``compile``      — ``Agent._compile`` minus its token counting: patches applied,
                     provider messages rendered (incrementally, see loop.py);
* ``token count``  — ``TokenCounter.count_message`` calls made by that compile;
* ``other counts`` — the same calls made elsewhere: a fit counts what it keeps,
                     the calibration after an answer recounts the request only
                     when the encoding arrived while it ran (else it takes the
                     count made when the request was planned). Counted in
                     "token count" once, they made ``compile`` (its time minus
                     all counting) negative;
* ``commits``      — ``MemoryKey.commit`` (JSON, append, fsync, meta.json), with
                     the part spent inside ``os.fsync`` shown on its own;
* ``client``       — CPU time of this thread inside ``Provider.stream``: the
                     openai client building and JSON-encoding the request,
                     httpx, SSE parsing, chunk objects (thread CPU time, so the
                     server thread's work and waiting for it are not in it);
* ``rest``         — events, ref parsing, tool dispatch, asyncio: the remainder.

``total`` = wall time of the turn minus wall time inside ``Provider.stream``,
plus ``client``. The goal (≤ 5 ms per call) is checked against it, and
against it without fsync, since fsync cost belongs to the disk.

Run: ``.venv/bin/python bench/loop_bench.py [calls]``.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from selfref_tui.agent.provider.client import Provider
from selfref_tui.agent.turn.loop import Agent
from selfref_tui.config import AgentSettings, ProviderConfig
from selfref_tui.context.mutations import AssistantMessageMutation, UserMessageMutation
from selfref_tui.demo.script import Reply, ToolCall
from selfref_tui.demo.server import DemoServer
from selfref_tui.selfref import SelfReference

STEPS_PER_TURN = 10
PARTS = ("compile", "token count", "other counts", "commits", "  of which fsync", "client",
         "rest")


class Clock:
    """Adds up wall (perf_counter) or thread CPU time spent in wrapped calls, per part."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = dict.fromkeys(("compile+count", "token count",
                                                      "other counts", "commits",
                                                      "  of which fsync", "stream wall",
                                                      "client"), 0.0)
        #: threads inside a compile now: a count there is the compile's, elsewhere not
        self.compiling: set[int] = set()

    def wrap(self, name: str, fn: Any) -> Any:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.spent[name] += time.perf_counter() - start

        return timed

    def wrap_compile(self, fn: Any) -> Any:
        """``fn`` timed as ``compile+count``, the counts it makes told from the others."""
        timed = self.wrap("compile+count", fn)

        def compiling(*args: Any, **kwargs: Any) -> Any:
            thread = threading.get_ident()
            self.compiling.add(thread)
            try:
                return timed(*args, **kwargs)
            finally:
                self.compiling.discard(thread)

        return compiling

    def wrap_count(self, fn: Any) -> Any:
        """``fn`` timed as ``token count`` inside a compile, ``other counts`` elsewhere."""
        inside, outside = self.wrap("token count", fn), self.wrap("other counts", fn)

        def counted(*args: Any, **kwargs: Any) -> Any:
            if threading.get_ident() in self.compiling:
                return inside(*args, **kwargs)
            return outside(*args, **kwargs)

        return counted


class TimedProvider:
    """Wraps the real provider: wall and thread-CPU time spent inside ``stream``."""

    def __init__(self, inner: Provider, clock: Clock) -> None:
        self.inner = inner
        self.clock = clock

    async def stream(self, messages: list[dict], tools: Any = None, **kwargs: Any):
        spent = self.clock.spent
        agen = self.inner.stream(messages, tools, **kwargs)
        start, cpu = time.perf_counter(), time.thread_time()
        try:
            while True:
                try:
                    chunk = await agen.__anext__()
                except StopAsyncIteration:
                    break
                spent["stream wall"] += time.perf_counter() - start
                spent["client"] += time.thread_time() - cpu
                yield chunk
                start, cpu = time.perf_counter(), time.thread_time()
        finally:
            await agen.aclose()
            spent["stream wall"] += time.perf_counter() - start
            spent["client"] += time.thread_time() - cpu

    async def aclose(self) -> None:
        await self.inner.aclose()


def _med(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:6.2f}"


async def main(calls: int) -> None:
    def script(body: dict, index: int) -> Reply:
        return Reply(text="Checking my context.",
                     tool_calls=[ToolCall("inspect_context", {}, id=f"c{index}")])

    clock = Clock()
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as tmp:
        server = DemoServer(script)
        url = server.start_in_thread()
        provider = TimedProvider(Provider(ProviderConfig(base_url=url, api_key="sk-bench",
                                                         model="gpt-4o-mini", max_retries=0)),
                                 clock)
        selfref = SelfReference(Path(tmp) / "data")
        memory = selfref.open("bench")
        filler = []
        for i in range(500):
            filler.append(UserMessageMutation({"role": "user", "content": f"question {i} " * 20}))
            filler.append(AssistantMessageMutation(content=f"answer {i} " * 30))
        memory.commit(filler)
        settings = AgentSettings(step_limit=STEPS_PER_TURN, auto_compact_ratio=0)
        agent = Agent(selfref, provider, settings, lambda e: None, model="gpt-4o-mini")
        # The hooks: instance attributes shadow the methods, nothing else changes.
        memory.commit = clock.wrap("commits", memory.commit)  # type: ignore[method-assign]
        if hasattr(agent, "_compile"):
            agent._compile = clock.wrap_compile(agent._compile)  # type: ignore[method-assign]
        else:  # the loop before incremental compiles (for before/after figures)
            import selfref_tui.context.compile as compile_module

            compile_module.compile_messages = clock.wrap_compile(
                compile_module.compile_messages)
            agent.tokens.count_messages = clock.wrap_compile(  # type: ignore[method-assign]
                agent.tokens.count_messages)
        agent.tokens.count_message = clock.wrap_count(  # type: ignore[method-assign]
            agent.tokens.count_message)
        real_fsync = os.fsync
        os.fsync = clock.wrap("  of which fsync", real_fsync)
        rows: dict[str, list[float]] = {name: [] for name in (*PARTS, "total", "stream wall")}
        try:
            # Warm-up: loads the tiktoken encoding and fills the caches.
            await agent.run_turn("bench", "warm up")
            if agent._encoder_task is not None:
                await agent._encoder_task
            await agent.run_turn("bench", "warm up again")
            start_messages = len(memory.messages)
            done = 0
            while done < calls:
                for name in clock.spent:
                    clock.spent[name] = 0.0
                before = len(server.requests)
                t0 = time.perf_counter()
                await agent.run_turn("bench", "go on")
                wall = time.perf_counter() - t0
                n = len(server.requests) - before
                s = clock.spent
                total = wall - s["stream wall"] + s["client"]
                part = {
                    "compile": s["compile+count"] - s["token count"],
                    "token count": s["token count"],
                    "other counts": s["other counts"],
                    "commits": s["commits"],
                    "  of which fsync": s["  of which fsync"],
                    "client": s["client"],
                }
                part["rest"] = total - sum(v for k, v in part.items() if "fsync" not in k)
                for name, value in part.items():
                    rows[name].append(value / n)
                rows["total"].append(total / n)
                rows["stream wall"].append(s["stream wall"] / n)
                done += n
        finally:
            os.fsync = real_fsync
            await agent.aclose()
            server.stop_thread()
            selfref.close()
    no_fsync = [t - f for t, f in zip(rows["total"], rows["  of which fsync"], strict=True)]
    ours = [t - c for t, c in zip(rows["total"], rows["client"], strict=True)]
    print(f"runtime overhead per LLM call: {done} calls in turns of {STEPS_PER_TURN}, history "
          f"{start_messages}+ messages, encoder ready: {agent.tokens.ready}, "
          f"data dir on {tmp}")
    print("  part (ms per LLM call)         median   (medians of each part: they need not add up)")
    for name in PARTS:
        print(f"  {name:28s} {_med(rows[name])}")
    print(f"  {'total (excl. server)':28s} {_med(rows['total'])}   max "
          f"{max(rows['total']) * 1000:6.2f}")
    print(f"  {'total without fsync':28s} {_med(no_fsync)}")
    print(f"  {'total without client':28s} {_med(ours)}   (selfref-tui's own code)")
    print(f"  (wall inside Provider.stream incl. server and HTTP: {_med(rows['stream wall'])} ms,"
          " not in total)")
    goal = statistics.median(rows["total"]) * 1000
    goal_nf = statistics.median(no_fsync) * 1000
    goal_ours = statistics.median(ours) * 1000
    print(f"goal: ≤ 5 ms per call — {'met' if goal <= 5 else 'NOT met'} "
          f"({goal:.2f} ms; without fsync {goal_nf:.2f} ms; without the openai client "
          f"{goal_ours:.2f} ms)")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 100))
