"""Time to the first frame: selfref-tui against a bare Textual app, in one run.

    .venv/bin/python bench/startup_bench.py [--runs 7]

Each measurement is a fresh process (imports included): the parent notes
``perf_counter()`` just before starting it, the child notes it when its first
screen refresh is done (``call_after_refresh`` from ``on_mount``) and exits.
Both clocks are CLOCK_MONOTONIC, so the difference is process start → first
frame. For selfref-tui it also notes when the memory key's history is on
screen (the runtime imported, the key opened, its tail mounted).

Stores: an empty data dir, and one with 1,000 keys / 100,000 messages made once
with the real ``SelfReference`` API in a temporary directory. The bare app is a
``Header``, a ``VerticalScroll`` and a ``TextArea``. Goal: ≤ 1.5× the bare app.
"""

from __future__ import annotations

import argparse
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

        def check_ready(self):
            if "frame" in marks and self.ready and self.header.status == "ready":
                marks["ready"] = time.perf_counter()
                self.exit()

    provider = ProviderConfig(base_url="http://127.0.0.1:9/v1", api_key="x", model="m")
    Timed(AppConfig(provider=provider, data_dir=data_dir, key="main")).run(
        headless=True, size=(120, 40)
    )
print(repr(marks.get("frame", 0.0)), repr(marks.get("ready", 0.0)))
"""


def measure(kind: str, data_dir: Path) -> tuple[float, float]:
    """(first frame, history ready) in seconds since the process was started."""
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, kind, str(data_dir), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if out.returncode:
        raise SystemExit(f"{kind} run failed:\n{out.stderr[-2000:]}")
    out = out.stdout.split()
    frame, ready = float(out[-2]), float(out[-1])
    return frame - t0, (ready - t0 if ready else float("nan"))


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


def main(runs: int) -> None:
    with tempfile.TemporaryDirectory(prefix="selfref-startup-") as tmp:
        empty = Path(tmp) / "empty"
        empty.mkdir()
        big = Path(tmp) / "big"
        made = make_big_store(big)
        size = sum(p.stat().st_size for p in big.rglob("*") if p.is_file())
        print(
            f"Big store: 1,000 keys / 100,000 messages, {size / 1e6:.1f} MB, "
            f"written in {made:.1f} s with SelfReference; {runs} runs each, median"
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
        samples: list[list[tuple[float, float]]] = [[] for _ in cases]
        for _ in range(runs):
            for index, (kind, data_dir, _label) in enumerate(cases):
                samples[index].append(measure(kind, data_dir))
        bare = statistics.median(s[0] for s in samples[0])
        for (kind, _dir, label), runs_of_case in zip(cases, samples, strict=True):
            frames = [s[0] for s in runs_of_case]
            frame = statistics.median(frames)
            line = f"  {label:<54} first frame {frame * 1000:7.1f} ms"
            if kind != "bare":
                ready = statistics.median(s[1] for s in runs_of_case)
                line += f" = {frame / bare:.2f}x bare   history on screen {ready * 1000:7.1f} ms"
            print(line + f"   (runs: {', '.join(f'{x * 1000:.0f}' for x in frames)})")
        print("Goal: first frame ≤ 1.5x the bare app.")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    main(parser.parse_args().runs)
