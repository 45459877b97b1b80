"""search_history and read_history over a long stored history: prints figures, asserts nothing.

    python bench/recall_bench.py [--messages N] [--runs R]

A real key of N stored messages (default 100,000: the person's questions, the
model's answers with tool calls, tool results of varied length, a compaction
every 2,000 messages, so most of the history is compacted) is written with
the store, opened again from disk as a new process would, and the two tools
are run through their handlers as the model calls them (``run_tool``: the
key's search index, the rendering). Goals: a search at most 200 ms, a read at
most 50 ms, at 100,000 messages.

The model's first search is the one that matters: it comes soon after the key
is opened, or right after a compaction. Taking in the history (every message's
text, lower-cased once) is most of its cost, so the agent does that ahead of
need, in a thread, once the key is on screen and right after a compaction
(``HistoryRecall.prepare``). Printed, each the median of R fresh indexes:
- ``taking in``: that thread's time (its CPU beside it);
- ``first search after opening the key``: the key opened from disk, taken in
  ahead, then the model's search (it asks once the person has typed and the
  server has answered: seconds, against the taking in's fraction of one);
- ``first search right after a compaction``: a compaction committed in a
  process that never searched the key, taken in ahead, then the search (the
  model's next request comes between the two);
- ``at once``: the search made the moment the taking in began (it waits for
  it): the worst a model could meet, and what every first search cost before.
Then, per query: ``warm`` (R searches with nothing new) and ``after a commit``
(each after one more message was committed, as in a turn).
Times are wall-clock; CPU time (this process) is printed beside them, since
the machine may be shared.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from selfref_tui.agent.tools.builtin import run_tool
from selfref_tui.agent.tools.history_recall import HistoryRecall
from selfref_tui.context.mutations import (
    AssistantMessageMutation,
    ToolResultMutation,
    UserMessageMutation,
)
from selfref_tui.context.summary import Summary, summary_mutation
from selfref_tui.selfref import SelfReference

_TEXT = """the parser tokenizer grammar rule test fails passes because we should fix build
deploy server client request response cache index file path line column error warning value
type list dict string number config option flag command shell run step plan next done pending
open close read write move copy delete rename check review merge branch commit patch diff log
trace stack frame thread lock queue"""
WORDS = tuple(_TEXT.split())
QUERIES = ('"blue heron protocol"', "tokenizer cache", "xylophone", "the")


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)) + "."


def build(data: Path, messages: int) -> None:
    """Write ``messages`` numbered messages to key ``main``, a compaction every 2,000."""
    rng = random.Random(7)
    summary = summary_mutation(Summary("Bench recall", "measure", [], [], "running", "more",
                                       []))
    with SelfReference(data) as store:
        memory = store.open("main")
        written, batch, i = 0, [], 0
        while written < messages:
            call = {"id": f"c{i}", "type": "function",
                    "function": {"name": "read_fd", "arguments": f'{{"fd": "fd:{i}"}}'}}
            question = sentence(rng, rng.randint(8, 40))
            if i == 17:
                question += " Use the blue heron protocol for the rollout."
            batch += [
                UserMessageMutation({"role": "user", "content": f"question {i}: {question}"}),
                AssistantMessageMutation(sentence(rng, 12), [call]),
                ToolResultMutation(f"c{i}", sentence(rng, rng.choice((20, 60, 400)))),
                AssistantMessageMutation(f"answer {i}: {sentence(rng, rng.randint(20, 120))}"),
            ]
            written += 4
            i += 1
            if written % 2_000 == 0 and written < messages:
                batch.append(summary)
            if len(batch) >= 1_000 or written >= messages:
                memory.commit(batch)
                batch = []


def timed(fn) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        started = time.perf_counter()
        build(data, args.messages)
        print(f"wrote {args.messages:,} messages in {time.perf_counter() - started:.1f} s")
        store = SelfReference(data)
        wall, cpu = timed(lambda: store.open("main"))
        memory = store.open("main")
        print(f"opened the key: {wall:,.0f} ms (cpu {cpu:,.0f} ms); "
              f"{len(memory.entries()):,} entries, "
              f"{sum(e.compacted for e in memory.entries()):,} compacted")
        ctx = SimpleNamespace(session=SimpleNamespace(memory=memory),
                              history_index=HistoryRecall())

        def compaction():
            return summary_mutation(Summary("Bench recall", "measure", [], [], "running",
                                            "more", []))

        def call(name: str, **tool_args) -> str:
            return asyncio.run(run_tool(name, tool_args, ctx))  # type: ignore[arg-type]

        def commit_one() -> None:
            memory.commit([UserMessageMutation({"role": "user", "content": "one more"})])

        print(f"\nThe model's first search over {args.messages:,} messages (goal <= 200 ms):")
        query = QUERIES[0]

        def first_search(prepared: bool) -> tuple[tuple[float, float], tuple[float, float]]:
            """(taking in, the search) with a fresh index, as the agent does it."""
            recall = HistoryRecall()
            ctx.history_index = recall

            async def go() -> tuple[tuple[float, float], tuple[float, float]]:
                ahead = (0.0, 0.0)
                wall, cpu = time.perf_counter(), time.process_time()
                task = recall.prepare(memory)
                if prepared and task is not None:
                    await task
                    ahead = ((time.perf_counter() - wall) * 1000,
                             (time.process_time() - cpu) * 1000)
                wall, cpu = time.perf_counter(), time.process_time()
                await run_tool("search_history", {"query": query}, ctx)  # type: ignore[arg-type]
                return ahead, ((time.perf_counter() - wall) * 1000,
                               (time.process_time() - cpu) * 1000)

            return asyncio.run(go())

        opened = [first_search(True) for _ in range(args.runs)]
        at_once = [first_search(False)[1] for _ in range(args.runs)]
        store.release("main")
        memory = store.open("main")
        ctx.session.memory = memory
        memory.commit([compaction()])  # a compaction, in a process that never searched
        compacted = [first_search(True) for _ in range(args.runs)]
        ahead = [pair[0] for pair in opened + compacted]
        print(f"  taking in the history (a thread)       {_median(ahead, 0):6.0f} ms "
              f"(cpu {_median(ahead, 1):4.0f})")
        for name, runs in (("first search after opening the key", [p[1] for p in opened]),
                           ("first search right after a compaction", [p[1] for p in compacted]),
                           ("first search at once (waits for it)", at_once)):
            print(f"  {name:38} {_median(runs, 0):6.0f} ms (cpu {_median(runs, 1):4.0f})")

        print(f"\nsearch_history over {args.messages:,} messages, taken in (goal <= 200 ms):")
        for query in QUERIES:
            warm = [timed(lambda q=query: call("search_history", query=q))
                    for _ in range(args.runs)]
            after = []
            for _ in range(args.runs):
                commit_one()
                after.append(timed(lambda q=query: call("search_history", query=q)))
            found = call("search_history", query=query).split("\n", 1)[0]
            print(f"  {query:24}  warm {_median(warm, 0):5.0f} ms (cpu {_median(warm, 1):4.0f})"
                  f"  after a commit {_median(after, 0):5.0f} ms "
                  f"(cpu {_median(after, 1):4.0f})")
            print(f"      {found[:110]}")

        print("\nread_history(start, count=10) (goal <= 50 ms):")
        last = memory.last_number
        starts = [1, 69, last // 2, last - 9]
        warm = [timed(lambda s=s: call("read_history", start=s)) for s in starts * 4]
        after = []
        for s in starts * 4:
            commit_one()
            after.append(timed(lambda s=s: call("read_history", start=s)))
        print(f"  warm {_median(warm, 0):.1f} ms (cpu {_median(warm, 1):.1f})  "
              f"after a commit {_median(after, 0):.1f} ms (cpu {_median(after, 1):.1f})")
        print("  " + call("read_history", start=69, count=1).split("\n", 1)[0])
        store.close()


def _median(samples: list[tuple[float, float]], i: int) -> float:
    return statistics.median(s[i] for s in samples)


if __name__ == "__main__":
    main()
