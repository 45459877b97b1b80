"""Search and export benchmark: prints figures, asserts nothing.

    python bench/conversation_bench.py [--runs N] [--quick] [--source] [--export-only]

In a temporary data dir, through the public API:
  * ``selfref-tui search`` over 100,000 stored messages (goal <= 1 s): one conversation of
    100,000 messages, and 100 conversations of 1,000 each; what the command does
    (``ConversationSearch``, at most the command's default count of matches made per
    conversation, every one counted: "cached" when the conversations have not changed
    since the last search, "changed" when one of them gained a turn since (its cache is
    brought up to date), "cold" with no search cache, so every key that may match is
    folded), and the whole command as a process (Python's start and imports included;
    answered, exited, and the cache kept by the child it leaves writing it), for a word
    in every message also with every match printed (``--limit 0``);
  * ``selfref-tui export`` of 20,000 messages as Markdown (goal <= 2 s), and as JSON; the
    conversation was compacted about every 2,000 messages (each compaction is exported
    with its summary, where it happened). ``--export-only`` measures only this.

Wall seconds are medians of ``--runs``; CPU seconds beside them are what a busy machine
cannot inflate (compare those on a shared machine). The package is compiled first, as an
install has it (``startup_bench.compile_package``: compiling every module from source at
each start, as an editable install run with ``PYTHONDONTWRITEBYTECODE=1`` does, is about
0.1 s of a process's time that no user has); ``--source`` measures that way instead.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from startup_bench import compile_package  # noqa: E402

from selfref_tui.context.mutations import (  # noqa: E402
    AssistantMessageMutation,
    ToolResultMutation,
    UserMessageMutation,
)
from selfref_tui.selfref import SelfReference  # noqa: E402

FILLER = "Some ordinary chat text about the work at hand, long enough to be realistic. " * 3


def turn(i: int) -> list:
    """A user message and an answer; every tenth turn a tool call and its result too."""
    out = [UserMessageMutation({"role": "user", "content": f"question {i}: {FILLER}"})]
    if i % 10 == 0:
        call = {"id": f"c{i}", "type": "function",
                "function": {"name": "read_file", "arguments": f'{{"path": "f{i}.txt"}}'}}
        out += [AssistantMessageMutation(content="", tool_calls=[call]),
                ToolResultMutation(f"c{i}", f"contents of f{i}.txt: {FILLER}")]
    out.append(AssistantMessageMutation(
        content=f"answer {i}: {FILLER}\n\n<ref id=\"r{i}\">\n```python\nx = {i}\n```\n</ref>"))
    return out


def summary(i: int) -> list:
    """A compaction whose summary is the size a real one is (a few hundred words)."""
    from selfref_tui.context.summary import Summary, summary_mutation

    return [summary_mutation(Summary.from_dict({
        "goal": f"Goal {i}: {FILLER}", "current_status": FILLER,
        "discoveries": [f"discovery {k}: {FILLER}" for k in range(5)],
        "completed": [f"done {k}" for k in range(5)],
        "relevant_files_directories": [f"src/f{k}.py" for k in range(5)]}))]


def build(store: SelfReference, key: str, messages: int, compact: bool = False) -> None:
    """``messages`` messages in turns; ``compact``: a compaction after every batch."""
    memory = store.open(key)
    batch: list = []
    count = 0
    i = 0
    while count < messages:
        mutations = turn(i)
        batch += mutations
        count += len(mutations)
        i += 1
        if len(batch) >= 2000:
            memory.commit(batch)
            batch = []
            if compact:
                memory.commit(summary(i))
    if batch:
        memory.commit(batch)
    store.release(key)


def timed(fn: Callable[[], object], runs: int) -> tuple[float, float]:
    walls, cpus = [], []
    for _ in range(runs):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return statistics.median(walls), statistics.median(cpus)


def search_once(data_dir: Path, query: str) -> int:
    """What ``selfref-tui search QUERY`` does: at most its default count of matches made
    per conversation, every one counted."""
    from selfref_tui.cli.search import DEFAULT_LIMIT
    from selfref_tui.selfref.conversation_search import ConversationSearch

    with ConversationSearch(data_dir) as search:
        return search.search(query, limit=DEFAULT_LIMIT).total


def grow(data_dir: Path, key: str, i: int) -> None:
    """One more turn in ``key``: the conversation changed since the last search."""
    with SelfReference(data_dir) as store:
        store.open(key).commit(turn(1_000_000 + i))


def changed(data_dir: Path, key: str, query: str, runs: int) -> tuple[float, float]:
    """A search after ``key`` grew by a turn (the growing not timed)."""
    walls, cpus = [], []
    for i in range(runs):
        grow(data_dir, key, i)
        w0, c0 = time.perf_counter(), time.process_time()
        search_once(data_dir, query)
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return statistics.median(walls), statistics.median(cpus)


def adopt_orphans() -> bool:
    """Become the parent of the processes our commands leave behind (a search's child that
    writes its caches after the command exits), so each can be waited for: its time
    measured, and the next run not begun while it still writes (Linux only)."""
    try:
        import ctypes

        pr_set_child_subreaper = 36
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(pr_set_child_subreaper, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def wait_orphans() -> None:
    """Wait for every process left behind by the commands run (see :func:`adopt_orphans`)."""
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def command(args: list[str], data_dir: Path, runs: int,
            before: Callable[[int], object] | None = None
            ) -> tuple[float, float, float, float]:
    """The command as a person runs it: a new process (children's CPU counted); ``before``
    runs untimed before each. (Wall seconds to its exit, CPU seconds (its child's too),
    wall seconds to its last line of output, and to the end of the child it leaves
    writing the search cache (its exit when it leaves none).)"""
    walls, cpus, answers, kept = [], [], [], []
    env = dict(os.environ, SELFREF_DATA_DIR=str(data_dir))
    for i in range(runs):
        if before is not None:
            before(i)
        before_times = os.times()
        w0 = time.perf_counter()
        answered = w0
        with subprocess.Popen([sys.executable, "-m", "selfref_tui", *args], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE) as process:
            assert process.stdout is not None
            for _line in process.stdout:
                answered = time.perf_counter()
        # search exits 1 when nothing matches
        walls.append(time.perf_counter() - w0)
        answers.append(answered - w0)
        wait_orphans()
        kept.append(time.perf_counter() - w0)
        after = os.times()
        cpus.append(after.children_user + after.children_system
                    - before_times.children_user - before_times.children_system)
    return (statistics.median(walls), statistics.median(cpus), statistics.median(answers),
            statistics.median(kept))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="a tenth of the sizes")
    parser.add_argument("--source", action="store_true",
                        help="the package's modules compiled at each start, not from .pyc")
    parser.add_argument("--export-only", action="store_true", help="only the export figures")
    args = parser.parse_args()
    compile_package(args.source)
    if not adopt_orphans():
        print("(the processes a search leaves writing its cache cannot be waited for here: "
              "a run may begin while one still writes)")
    scale = 10 if args.quick else 1
    runs = args.runs
    with tempfile.TemporaryDirectory() as tmp:
        one, many, export = Path(tmp, "one"), Path(tmp, "many"), Path(tmp, "export")
        with SelfReference(export) as store:
            build(store, "main", 20_000 // scale, compact=True)
        if not args.export_only:
            searches(one, many, scale, args.source, runs)
        m = 20_000 // scale
        with SelfReference(export) as store:
            marks = len(store.open("main", write=False).compactions())
        print(f"export of {m:,} messages, {marks} compactions (goal <= 2 s), median of "
              f"{max(1, runs // 2)} (half of --runs: each is a process):")
        out = Path(tmp, "out")
        out.mkdir()
        for fmt in ("md", "json"):
            target = out / f"chat.{fmt}"
            wall, cpu, _, _ = command(["export", "--key", "main", "-o", str(target),
                                       "--force"], export, max(1, runs // 2))
            size = target.stat().st_size
            print(f"  {fmt:<4} `selfref-tui export -o` as a process {wall:6.3f} s  "
                  f"(CPU {cpu:.3f} s)  {size / 1e6:.1f} MB")


def searches(one: Path, many: Path, scale: int, source: bool, runs: int) -> None:
    """The search figures (see the module's docstring)."""
    with SelfReference(one) as store:
        build(store, "big", 100_000 // scale)
    with SelfReference(many) as store:
        for k in range(100):
            build(store, f"conversation-{k:03d}", 1_000 // scale)
    n = 100_000 // scale
    print(f"search over {n:,} stored messages (goal <= 1 s), median of {runs}; selfref_tui "
          f"{'from source' if source else 'compiled (.pyc)'}:")
    for label, data_dir, key in (("1 conversation", one, "big"),
                                 ("100 conversations", many, "conversation-042")):
        for query, what in (("question 4242", "a few matches"),
                            ("ordinary chat", "every message matches"),
                            ("nowhere-to-be-found", "no match")):
            total = search_once(data_dir, query)
            wall, cpu = timed(lambda d=data_dir, q=query: search_once(d, q), runs)
            grown, grown_cpu = changed(data_dir, key, query, runs)
            cold, cold_cpu = timed(lambda d=data_dir, q=query: (
                shutil.rmtree(d / "cache", ignore_errors=True), search_once(d, q)), runs)
            print(f"  {label:<18} {what:<22} {total:>7,} hits  cached {wall:6.3f} s "
                  f"(CPU {cpu:.3f} s)  changed {grown:6.3f} s (CPU {grown_cpu:.3f} s)  "
                  f"cold {cold:6.3f} s (CPU {cold_cpu:.3f} s)")
            search_once(data_dir, query)  # cached again for what follows
        search_once(data_dir, "question 4242")  # the cache as a first search leaves it
        args = ["search", "question 4242"]
        wall, cpu, said, _ = command(args, data_dir, max(1, runs // 2))
        grown, grown_cpu, grown_said, grown_kept = command(
            args, data_dir, max(1, runs // 2),
            lambda i, d=data_dir, k=key: grow(d, k, 100 + i))
        cold, cold_cpu, cold_said, cold_kept = command(
            args, data_dir, max(1, runs // 2),
            lambda i, d=data_dir: shutil.rmtree(d / "cache", ignore_errors=True))
        print(f"  {label:<18} `selfref-tui search` as a process (answered / exited / "
              f"cache kept): cached {said:5.3f} / {wall:5.3f} s (CPU {cpu:.3f} s), changed "
              f"{grown_said:5.3f} / {grown:5.3f} / {grown_kept:5.3f} s (CPU "
              f"{grown_cpu:.3f} s), cold {cold_said:5.3f} / {cold:5.3f} / {cold_kept:5.3f} s "
              f"(CPU {cold_cpu:.3f} s)")
        search_once(data_dir, "ordinary chat")  # every key cached (not only those above)
        every, every_cpu, _, _ = command(["search", "ordinary chat"], data_dir,
                                         max(1, runs // 2))
        first, first_cpu, first_said, first_kept = command(
            ["search", "ordinary chat"], data_dir, max(1, runs // 2),
            lambda i, d=data_dir: shutil.rmtree(d / "cache", ignore_errors=True))
        whole, whole_cpu, _, _ = command(["search", "ordinary chat", "--limit", "0"],
                                         data_dir, max(1, runs // 2))
        print(f"  {label:<18} a word in every message as a process: cached {every:5.3f} s "
              f"(CPU {every_cpu:.3f} s), cold {first_said:5.3f} / {first:5.3f} / "
              f"{first_kept:5.3f} s (CPU {first_cpu:.3f} s), every match printed "
              f"(--limit 0) {whole:5.3f} s (CPU {whole_cpu:.3f} s)")


if __name__ == "__main__":
    main()
