"""Engine benchmark: prints figures, asserts nothing (timing goals live here, not in tests).

    python bench/store_bench.py [--quick]

Measures, in a temporary data dir, the median of several runs of:
  * commit of a one-message turn (user message + assistant answer) at 100,
    10,000 and 100,000 messages of history, and the ratio 100k/100 (goal <= 1.5);
  * load of a 100k-message key (goal <= 1 s), and listing 1,000 keys;
  * compile of the next provider request at a 10k-message history (goal <= 20 ms),
    in full and as the loop does it per call (incremental, with the token count);
  * the streaming ref parser on 1 MB fed one character at a time (goal: linear, <= 2 s).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from selfref_tui.context.mutations import (
    AssistantMessageMutation,
    ExperienceRememberMutation,
    UserMessageMutation,
)
from selfref_tui.selfref import SelfReference

FILLER = "Some ordinary chat text about the work at hand, long enough to be realistic. " * 3


def turn(i: int) -> list:
    return [
        UserMessageMutation({"role": "user", "content": f"question {i}: {FILLER}"}),
        AssistantMessageMutation(content=f"answer {i}: {FILLER}"),
    ]


def build_key(store: SelfReference, key: str, messages: int) -> None:
    """Fill a key through the public API, 1,000 turns per commit to keep set-up short."""
    memory = store.open(key)
    memory.commit([ExperienceRememberMutation("The person likes short answers.")])
    done = 0
    while done < messages // 2:
        n = min(1000, messages // 2 - done)
        memory.commit([m for i in range(done, done + n) for m in turn(i)])
        done += n


def median_time(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bench_commits(store: SelfReference, runs: int) -> dict[int, float]:
    """Round-robin over the three history sizes, so disk noise hits them alike."""
    sizes = (100, 10_000, 100_000)
    memories = {}
    for size in sizes:
        build_key(store, f"commit-{size}", size)
        memories[size] = store.open(f"commit-{size}")
    samples: dict[int, list[float]] = {size: [] for size in sizes}
    for r in range(runs + 3):
        for size in sizes:
            t0 = time.perf_counter()
            memories[size].commit(turn(r))
            if r >= 3:  # the first rounds let the set-up's bulk writes settle
                samples[size].append(time.perf_counter() - t0)
        gc.collect()
    return {size: statistics.median(values) for size, values in samples.items()}


def bench_key_list(data_dir: Path, runs: int) -> float:
    """keys() over 1,000 keys (set up through the public API, one commit each)."""
    for i in range(1000):
        with SelfReference(data_dir) as store:
            store.open(f"k{i:04d}").commit(turn(i))
    return median_time(lambda: SelfReference(data_dir).keys(), runs)


def bench_load(data_dir: Path, runs: int) -> tuple[float, float]:
    """Wall time and CPU time (the CPU figure is what a busy machine cannot inflate)."""
    walls, cpus = [], []
    for _ in range(runs):
        w0, c0 = time.perf_counter(), time.process_time()
        SelfReference(data_dir).open("commit-100000", write=False)
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return statistics.median(walls), statistics.median(cpus)


def bench_compile(store: SelfReference, runs: int) -> tuple[float, str]:
    memory = store.open("commit-10000", write=False)
    pending = [UserMessageMutation({"role": "user", "content": "one more question"})]
    try:
        from selfref_tui.context.compile import InvocationConfig, compile_messages
    except ImportError:
        from selfref_tui.context.apply import apply_mutations

        fallback = median_time(lambda: apply_mutations(memory.messages, pending), runs)
        return fallback, "apply_mutations"
    config = InvocationConfig(base_system_prompt="You are a helpful assistant.")
    return (
        median_time(lambda: compile_messages(config, memory.messages, pending), runs),
        "compile_messages",
    )


def bench_incremental_compile(store: SelfReference, runs: int) -> float:
    """What the loop pays per LLM call at 10k messages: compile + token count of the
    next request after one more tool step, rendering only what changed."""
    from selfref_tui.agent.turn.compile_cache import IncrementalCompile
    from selfref_tui.context.compile import InvocationConfig
    from selfref_tui.context.tokens import TokenCounter

    memory = store.open("commit-10000", write=False)
    config = InvocationConfig(base_system_prompt="You are a helpful assistant.")
    compiler = IncrementalCompile(config, TokenCounter())
    base = list(memory.messages)
    compiler.compile(base, [])
    times = []
    for i in range(runs):
        call = {"id": f"c{i}", "type": "function",
                "function": {"name": "inspect_context", "arguments": "{}"}}
        base += [{"role": "assistant", "content": None, "tool_calls": [call]},
                 {"role": "tool", "tool_call_id": f"c{i}", "content": FILLER}]
        t0 = time.perf_counter()
        compiler.compile(base, [])
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def parser_text(size: int) -> str:
    block = (
        'Here is the function:\n<ref id="fib_iter">\n```python\ndef fib(n):\n'
        "    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n```\n"
        "</ref>\nAnd some prose with a < sign, an <other> tag and `code`.\n"
    )
    return (block * (size // len(block) + 1))[:size]


def bench_parser(size: int, runs: int) -> tuple[float, str]:
    text = parser_text(size)
    try:
        from selfref_tui.refs.parser import StreamingRefParser
    except ImportError:
        return float("nan"), "missing"

    def run() -> None:
        parser = StreamingRefParser()
        feed = parser.feed
        for ch in text:
            feed(ch)
        parser.finish()

    return median_time(run, runs), "StreamingRefParser"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer runs")
    args = ap.parse_args()
    runs = 5 if args.quick else 25
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        store = SelfReference(data_dir)
        t0 = time.perf_counter()
        commits = bench_commits(store, runs)
        setup = time.perf_counter() - t0
        store.close()
        load = bench_load(data_dir, 3 if args.quick else 7)
        store = SelfReference(data_dir)
        compile_s, compile_fn = bench_compile(store, runs)
        incremental = bench_incremental_compile(store, runs)
        store.close()
    with tempfile.TemporaryDirectory() as tmp:
        key_list = bench_key_list(Path(tmp), runs)
    p_runs = 1 if args.quick else 3
    half, half_fn = bench_parser(500_000, p_runs)
    full, _ = bench_parser(1_000_000, p_runs)

    ratio = commits[100_000] / commits[100]
    rows = [
        ("commit 1-message turn @ 100 msgs", f"{commits[100] * 1e3:.3f} ms", ""),
        ("commit 1-message turn @ 10k msgs", f"{commits[10_000] * 1e3:.3f} ms", ""),
        ("commit 1-message turn @ 100k msgs", f"{commits[100_000] * 1e3:.3f} ms", ""),
        ("commit ratio 100k / 100", f"{ratio:.2f}", "<= 1.5"),
        ("load 100k-message key (wall)", f"{load[0]:.3f} s", "<= 1 s"),
        ("load 100k-message key (CPU)", f"{load[1]:.3f} s", ""),
        ("keys() over 1,000 keys", f"{key_list * 1e3:.1f} ms", ""),
        (f"compile @ 10k msgs ({compile_fn})", f"{compile_s * 1e3:.2f} ms", "<= 20 ms"),
        ("compile+count @ 10k msgs, next call (loop)", f"{incremental * 1e3:.2f} ms", ""),
        (f"ref parser 0.5 MB, 1 char/feed ({half_fn})", f"{half:.2f} s", ""),
        ("ref parser 1 MB, 1 char/feed", f"{full:.2f} s", "<= 2 s, linear"),
        ("parser ratio 1 MB / 0.5 MB", f"{full / half:.2f}", "~2 (linear)"),
    ]
    print(f"selfref-tui engine benchmark (medians; {runs} runs; python {sys.version.split()[0]})")
    width = max(len(r[0]) for r in rows)
    print(f"{'measure':<{width}}  {'median':>12}  goal")
    for name, value, goal in rows:
        print(f"{name:<{width}}  {value:>12}  {goal}")
    print(f"(set-up of the 100 / 10k / 100k keys took {setup:.1f} s)")


if __name__ == "__main__":
    main()
