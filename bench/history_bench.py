"""The person's side of the log at a long key: history, rewind, branch, reopening.

    .venv/bin/python bench/history_bench.py [--messages 20000] [--runs 3] [--no-app]

Builds a key of ``--messages`` messages (10,000 turns; one experience, a ref
every 100 turns) in a temporary data dir, through the public API, and prints
medians of ``--runs`` runs of:

- ``history --json``: the command line as a person runs it (a fresh process,
  its output read to the end) — goal ≤ 1 s;
- ``rewind``: the rewind itself on a loaded key (``selfref.rewind.rewind`` to
  the middle message and its undo: patch, fsync, fold, report) — goal ≤ 0.3 s —
  and the ``rewind N`` command (a fresh process: it loads the key first);
- ``branch``: ``SelfReference.branch`` at the middle message (log prefix copied,
  the new key opened) and the ``branch N --name`` command — goal ≤ 1 s;
- loading the key (``SelfReference.open``, CPU and wall, fresh processes) before
  any rewind, and after a rewind to its middle message — goal: no slower;
- the app reopening the key (a headless 120x40 app from its start to the key's
  last message on screen), before and after the rewind — goal: no slower.

Timing goals live here, not in tests; figures vary with the machine's load.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

FILLER = "Some ordinary chat text about the work at hand, long enough to be realistic. " * 3


def build(data: Path, messages: int) -> None:
    from selfref_tui.context.mutations import (
        AssistantMessageMutation,
        ExperienceRememberMutation,
        UserMessageMutation,
    )
    from selfref_tui.selfref import SelfReference

    store = SelfReference(data)
    memory = store.open("main")
    memory.commit([ExperienceRememberMutation("The person likes short answers.")])
    turns = messages // 2
    for start in range(0, turns, 500):
        batch, records = [], []
        for i in range(start, min(turns, start + 500)):
            batch += [UserMessageMutation({"role": "user", "content": f"question {i}: {FILLER}"}),
                      AssistantMessageMutation(content=f"answer {i}: {FILLER}")]
            if i % 100 == 0:
                records.append({"t": "ref", "id": f"note_{i % 700}", "content": f"note {i}"})
        memory.commit(batch, records=records)
    store.close()


def cli(data: Path, *args: str, source: Path = ROOT) -> tuple[float, float]:
    """(wall, CPU) seconds of ``selfref-tui ARGS`` in a fresh process run from ``source``
    (this checkout, or another copy to compare), output read to the end.

    CPU is the child's own (user + system): a loaded machine stretches the wall
    clock far more than the work, so compare runs by it when the load differs. The
    person's config.toml is not read (a missing one in the data folder stands for it).
    """
    env = {**os.environ, "SELFREF_DATA_DIR": str(data), "PYTHONPATH": str(source),
           "SELFREF_CONFIG": str(data / "config.toml")}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "selfref_tui", *args], capture_output=True,
                          env=env, cwd=source)
    took = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} ({source}): exit {proc.returncode}: "
                         f"{proc.stderr.decode()[-300:]}")
    return took, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


_LOAD = r"""
import sys, time, json
sys.path.insert(0, sys.argv[2])
from selfref_tui.selfref import SelfReference
store = SelfReference(sys.argv[1])
wall, cpu = time.perf_counter(), time.process_time()
memory = store.open("main", write=False)
print(json.dumps([time.perf_counter() - wall, time.process_time() - cpu, memory.last_number]))
"""


def load(data: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of opening the key in a fresh process."""
    out = subprocess.run([sys.executable, "-c", _LOAD, str(data), str(ROOT)],
                         capture_output=True, text=True, check=True).stdout
    wall, cpu, _ = json.loads(out)
    return wall, cpu


_REOPEN = r"""
import asyncio, sys, time, json
sys.path.insert(0, sys.argv[2])
start = time.perf_counter()
from selfref_tui.config import AppConfig, ProviderConfig
from selfref_tui.ui.app import SelfRefApp

async def main():
    provider = ProviderConfig(base_url="http://127.0.0.1:9/v1", api_key="bench", model="bench",
                              max_retries=0, timeout_s=5, context_window=128000)
    app = SelfRefApp(AppConfig(provider=provider, data_dir=sys.argv[1]))
    async with app.run_test(size=(120, 40)) as pilot:
        while not (app.ready and app.header.status == "ready"):
            await pilot.pause(0.01)
        await app.transcript.settle()
        painted = asyncio.Event()
        app.screen.call_after_refresh(painted.set)
        await painted.wait()
        shown = time.perf_counter() - start
        seen = "\n".join(app.transcript.visible_text())
        print(json.dumps([shown, sys.argv[3] in seen]))

asyncio.run(main())
"""


def reopen(data: Path, last: str) -> tuple[float, float]:
    """(seconds to the key's end on screen, the app process's CPU seconds in all)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([sys.executable, "-c", _REOPEN, str(data), str(ROOT), last],
                         capture_output=True, text=True, check=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    shown, seen = json.loads(out.strip().splitlines()[-1])
    if not seen:
        raise RuntimeError(f"the key's last message ({last!r}) was not on screen")
    return shown, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def median(values: list[float]) -> float:
    return statistics.median(values)


def row(name: str, value: float | tuple[float, float], goal: str = "") -> None:
    """A figure: seconds, or (wall, CPU) seconds."""
    if isinstance(value, tuple):
        shown = f"{value[0]:7.3f} s  (CPU {value[1]:.3f} s)"
    else:
        shown = f"{value:7.3f} s"
    print(f"{name:<52} {shown:<26} {goal}")


def both(pairs: list[tuple[float, float]]) -> tuple[float, float]:
    return median([w for w, _ in pairs]), median([c for _, c in pairs])


def timed(fn: Any) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-app", action="store_true", help="leave out the app's reopening")
    args = parser.parse_args()
    from selfref_tui.selfref import SelfReference
    from selfref_tui.selfref.rewind import rewind, undo

    load_avg = os.getloadavg()
    print(f"history bench: a key of {args.messages:,} messages; medians of {args.runs} runs; "
          f"python {sys.version.split()[0]}; load average {load_avg[0]:.1f} (wall times grow "
          "with it; CPU times much less)")
    runs = args.runs
    middle = args.messages // 2 + 1  # a question in the middle
    with tempfile.TemporaryDirectory(prefix="selfref-history-bench-") as tmp:
        pristine = Path(tmp) / "pristine"
        started = time.perf_counter()
        build(pristine, args.messages)
        print(f"(set-up took {time.perf_counter() - started:.1f} s)")

        def copy(name: str) -> Path:
            target = Path(tmp) / name
            shutil.copytree(pristine, target)
            return target

        row("history --json (the command, a fresh process)",
            both([cli(pristine, "history", "--json") for _ in range(runs)]), "goal <= 1 s")

        work = copy("work")
        store = SelfReference(work)
        memory = store.open("main")
        rewinds, undos, branches = [], [], []
        for i in range(runs):
            done: list = []
            rewinds.append(timed(lambda done=done: done.append(rewind(memory, middle))))
            assert len(done[0].left) == args.messages - middle + 1
            undos.append(timed(lambda done=done: undo(memory, done[0])))
            branches.append(timed(lambda i=i: store.branch("main", middle, f"side-{i}")))
            store.release(f"side-{i}")
        store.close()
        row(f"rewind to message {middle:,} (a loaded key)", both(rewinds), "goal <= 0.3 s")
        row("undo that rewind (a loaded key)", both(undos))
        row(f"branch before message {middle:,} (SelfReference)", both(branches), "goal <= 1 s")

        once = copy("once")
        row("rewind N (the command: start, load, rewind)", cli(once, "rewind", str(middle)))
        row("branch N --name (the command: start, load, branch)",
            cli(pristine, "branch", str(middle), "--name", "cli-branch"), "goal <= 1 s")

        plain, rewound = [], []
        for _ in range(runs):  # alternated: the machine's load drifts
            plain.append(load(pristine))
            rewound.append(load(once))
        row("load the key, no rewind", both(plain))
        row(f"load the key, rewound to message {middle:,}", both(rewound), "goal: no slower")
        if not args.no_app:
            plain_app, rewound_app = [], []
            for _ in range(runs):  # alternated: the machine's load drifts
                plain_app.append(reopen(pristine, f"answer {args.messages // 2 - 1}"))
                rewound_app.append(reopen(once, f"answer {middle // 2 - 1}"))
            row("app reopens the key: its end on screen", both(plain_app))
            row(f"app reopens the key rewound to message {middle:,}", both(rewound_app),
                "goal: no slower")


if __name__ == "__main__":
    main()
