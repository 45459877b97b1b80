"""Time to the first frame: selfref-tui against a bare Textual app, in one run.

    .venv/bin/python bench/startup_bench.py [--runs 9] [--imports 15] [--source]

Each measurement is a fresh process (imports included): the parent notes
``perf_counter()`` just before starting it, the child notes it when its first
screen refresh is done (``call_after_refresh`` from ``on_mount``) and exits.
Both clocks are CLOCK_MONOTONIC, so the difference is process start → first
frame. The child also notes its CPU seconds at that frame (``process_time``),
which a busy machine inflates far less than the wall clock: on 2 shared cores
the wall-clock ratio swings ±20 % from run to run, the CPU ratio much less.
For selfref-tui it also notes when the memory key's history is on screen (the
runtime imported, the key opened, its tail mounted).

Bytecode: an installed package has its ``.pyc`` files (pip compiles them), but
an editable install run with ``PYTHONDONTWRITEBYTECODE=1`` (set in this
project's shells) compiles every selfref_tui module from source on every
start, while Textual's come compiled from site-packages: that alone cost the
app ~65 ms of CPU per start here (320 M instructions, a third of the bare
app's), a cost no user has. So the bench compiles the package first, as an
install does; ``--source`` removes its ``.pyc`` files instead, as before.

``--imports N`` adds the N heaviest modules the app imports before its first
frame that the bare app does not (``-X importtime``, self time, one run each).

Stores: an empty data dir, and one with 1,000 keys / 100,000 messages made once
with the real ``SelfReference`` API in a temporary directory. The bare app is a
``Header``, a ``VerticalScroll`` and a ``TextArea``. Goal: ≤ 1.5× the bare app.
"""

from __future__ import annotations

import argparse
import compileall
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_CHILD = r"""
import sys, time
sys.path.insert(0, sys.argv[3])
kind, data_dir = sys.argv[1], sys.argv[2]
FRAME_ONLY = len(sys.argv) > 4  # --imports, --instructions: stop at the first frame
marks = {}

if kind == "bare":
    from textual.app import App
    from textual.containers import VerticalScroll
    from textual.widgets import Header, TextArea

    class Bare(App):
        def compose(self):
            yield Header()
            yield VerticalScroll()
            yield TextArea()

        def on_mount(self):
            self.call_after_refresh(self.first_frame)

        def first_frame(self):
            marks["frame"] = time.perf_counter()
            marks["cpu"] = time.process_time()
            self.exit()

    Bare().run(headless=True, size=(120, 40))
else:
    from pathlib import Path

    from selfref_tui.config import AppConfig, ProviderConfig
    from selfref_tui.ui.app import SelfRefApp

    class Timed(SelfRefApp):
        CSS_PATH = str(Path(sys.modules[SelfRefApp.__module__].__file__).parent / "app.tcss")

        def on_mount(self):
            # Before the app's own on_mount: it queues the start-up worker after
            # the same refresh, and the mark is for the frame, not for that work.
            self.call_after_refresh(self.first_frame)
            super().on_mount()
            self.set_interval(0.002, self.check_ready)

        def first_frame(self):
            marks["frame"] = time.perf_counter()
            marks["cpu"] = time.process_time()
            if FRAME_ONLY:
                self.exit()

        def check_ready(self):
            if "frame" in marks and self.ready and self.header.status == "ready":
                marks["ready"] = time.perf_counter()
                self.exit()

    provider = ProviderConfig(base_url="http://127.0.0.1:9/v1", api_key="x", model="m")
    Timed(AppConfig(provider=provider, data_dir=data_dir, key="main")).run(
        headless=True, size=(120, 40)
    )
if FRAME_ONLY:
    with open(sys.argv[4], "w") as f:
        f.write("\n".join(sys.modules))
print(repr(marks.get("frame", 0.0)), repr(marks.get("ready", 0.0)), repr(marks.get("cpu", 0.0)))
"""


def measure(kind: str, data_dir: Path) -> tuple[float, float, float]:
    """(first frame, history ready, CPU at the first frame), seconds since the process started."""
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, kind, str(data_dir), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if out.returncode:
        raise SystemExit(f"{kind} run failed:\n{out.stderr[-2000:]}")
    frame, ready, cpu = (float(x) for x in out.stdout.split()[-3:])
    return frame - t0, (ready - t0 if ready else float("nan")), cpu


def imports_at_first_frame(kind: str, data_dir: Path) -> dict[str, int]:
    """Module → self import time (µs) of what ``kind`` imported before its first frame."""
    with tempfile.TemporaryDirectory(prefix="selfref-imports-") as tmp:
        listed = Path(tmp) / "modules"
        out = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", _CHILD, kind, str(data_dir), str(ROOT),
             str(listed)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if out.returncode:
            raise SystemExit(f"{kind} run failed:\n{out.stderr[-2000:]}")
        loaded = set(listed.read_text().split())
    times: dict[str, int] = {}
    for line in out.stderr.splitlines():
        found = re.match(r"import time:\s+(\d+) \|\s+\d+ \|\s*(\S+)", line)
        if found and found[2] in loaded:
            times[found[2]] = int(found[1])
    return times


def print_imports(data_dir: Path, top: int, runs: int = 3) -> None:
    """What the app imports before its first frame beyond the bare app, heaviest first
    (each module's median self time over ``runs`` runs of each, taken in turn)."""
    bare_runs, app_runs = [], []
    for _ in range(runs):
        bare_runs.append(imports_at_first_frame("bare", data_dir))
        app_runs.append(imports_at_first_frame("selfref", data_dir))

    def medians(samples: list[dict[str, int]]) -> dict[str, float]:
        names = set().union(*samples)
        return {n: statistics.median(s.get(n, 0) for s in samples) for n in names}

    bare, app = medians(bare_runs), medians(app_runs)
    extra = sorted(((us, name) for name, us in app.items() if name not in bare), reverse=True)
    print(
        f"Imports before the first frame (-X importtime, self time, median of {runs} runs): "
        f"bare app {len(bare)} modules {sum(bare.values()) / 1000:.0f} ms; selfref-tui "
        f"{len(app)} modules {sum(app.values()) / 1000:.0f} ms, of which {len(extra)} not in "
        f"the bare app {sum(us for us, _ in extra) / 1000:.0f} ms; the heaviest of those:"
    )
    for us, name in extra[:top]:
        print(f"  {us / 1000:6.1f} ms  {name}")


def instructions(kind: str, data_dir: Path) -> int:
    """Instructions ``kind`` executes from its start to its exit at the first frame."""
    with tempfile.TemporaryDirectory(prefix="selfref-callgrind-") as tmp:
        out = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/out",
             sys.executable, "-c", _CHILD, kind, str(data_dir), str(ROOT), os.devnull],
            capture_output=True,
            text=True,
            timeout=1800,
            env={**os.environ, "PYTHONHASHSEED": "0"},  # the same dict layouts every run
        )
    found = re.search(r"Collected : (\d+)", out.stderr)
    if out.returncode or not found:
        raise SystemExit(f"valgrind run of {kind} failed:\n{out.stderr[-2000:]}")
    return int(found[1])


def spread(values: list[float], scale: float = 1000.0, digits: int = 0) -> str:
    """``median [min–max]``, so one reading shows both the figure and its noise."""
    return (
        f"{statistics.median(values) * scale:.{digits}f} "
        f"[{min(values) * scale:.{digits}f}–{max(values) * scale:.{digits}f}]"
    )


def compile_package(source: bool) -> None:
    """The package's ``.pyc`` files, as ``pip install`` writes them (see the module doc);
    with ``source``, none: the caches are removed and the children write none."""
    if source:
        for cache in list((ROOT / "selfref_tui").rglob("__pycache__")):
            shutil.rmtree(cache)
        os.environ["PYTHONDONTWRITEBYTECODE"] = "1"  # inherited by every child
    elif not compileall.compile_dir(ROOT / "selfref_tui", quiet=1):
        raise SystemExit("could not compile selfref_tui")


def make_big_store(data_dir: Path, keys: int = 1000, per_key: int = 100) -> float:
    """1,000 keys × 100 messages through the real API (one commit per key); returns seconds."""
    sys.path.insert(0, str(ROOT))
    from selfref_tui.context.mutations import AssistantMessageMutation, UserMessageMutation
    from selfref_tui.selfref.reference import SelfReference

    start = time.perf_counter()
    store = SelfReference(data_dir)
    try:
        for k in range(keys):
            name = "main" if k == 0 else f"key-{k:04d}"
            mutations = []
            for m in range(per_key // 2):
                mutations.append(
                    UserMessageMutation({"role": "user", "content": f"Question {m} for {name}?"})
                )
                mutations.append(
                    AssistantMessageMutation(
                        f"Answer {m}: " + "a few sentences of a realistic reply. " * 8
                    )
                )
            store.open(name).commit(mutations)
            store.close()
            store = SelfReference(data_dir)
    finally:
        store.close()
    return time.perf_counter() - start


def main(runs: int, imports: int, source: bool, count_instructions: bool) -> None:
    compile_package(source)
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="selfref-startup-") as tmp:
        empty = Path(tmp) / "empty"
        empty.mkdir()
        if runs:  # --runs 0: only --imports / --instructions
            big = Path(tmp) / "big"
            made = make_big_store(big)
            size = sum(p.stat().st_size for p in big.rglob("*") if p.is_file())
            print(
                f"Big store: 1,000 keys / 100,000 messages, {size / 1e6:.1f} MB, "
                f"written in {made:.1f} s with SelfReference; {runs} runs each: median [min–max]; "
                f"selfref_tui {'from source' if source else 'compiled (.pyc)'}"
            )
            cases = [
                ("bare", empty, "bare Textual app (Header, VerticalScroll, TextArea)"),
                ("selfref", empty, "selfref-tui, empty store"),
                ("selfref", big, "selfref-tui, 1,000 keys / 100k messages"),
            ]
            for kind, data_dir, _ in cases:
                measure(kind, data_dir)  # warm the OS file cache and .pyc files
            # Interleaved, so a machine that slows down mid-run (page cache reclaimed,
            # a neighbour busy) slows every case alike and the ratios stay fair.
            samples: list[list[tuple[float, float, float]]] = [[] for _ in cases]
            for _ in range(runs):
                for index, (kind, data_dir, _label) in enumerate(cases):
                    samples[index].append(measure(kind, data_dir))
            bare = samples[0]
            for (kind, _dir, label), runs_of_case in zip(cases, samples, strict=True):
                print(f"  {label}")
                print(
                    f"    first frame, wall {spread([s[0] for s in runs_of_case])} ms, "
                    f"CPU {spread([s[2] for s in runs_of_case])} ms"
                )
                if kind == "bare":
                    continue
                # Each round's ratio to the bare run next to it: neighbours share the load.
                wall = [s[0] / b[0] for s, b in zip(runs_of_case, bare, strict=True)]
                cpu = [s[2] / b[2] for s, b in zip(runs_of_case, bare, strict=True)]
                print(
                    f"    x bare, per round: wall {spread(wall, 1, 2)}, CPU {spread(cpu, 1, 2)}; "
                    f"history on screen {spread([s[1] for s in runs_of_case])} ms"
                )
            print(
                f"Goal: first frame ≤ 1.5x the bare app. Load average (1 min) {load:.1f} at the "
                f"start, {os.getloadavg()[0]:.1f} at the end, on {os.cpu_count()} CPUs."
            )
        if imports:
            print_imports(empty, imports)
        if count_instructions:
            bare_ir, app_ir = instructions("bare", empty), instructions("selfref", empty)
            print(
                f"Instructions, start → first frame → exit (valgrind, one run each): bare app "
                f"{bare_ir / 1e6:,.0f} M, selfref-tui (empty store) {app_ir / 1e6:,.0f} M "
                f"= {app_ir / bare_ir:.3f}x"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--imports", type=int, default=0, metavar="N",
                        help="list the N heaviest imports the bare app does not have")
    parser.add_argument("--source", action="store_true",
                        help="remove selfref_tui's .pyc files: each start compiles it")
    parser.add_argument("--instructions", action="store_true",
                        help="also count each app's instructions under valgrind (slow)")
    args = parser.parse_args()
    main(args.runs, args.imports, args.source, args.instructions)
