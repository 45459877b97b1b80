"""The command line's own speed at a long conversation: each command from its start to its exit.

    .venv/bin/python bench/cli_bench.py [--messages 20000] [--runs 5] [--before DIR]
                                        [--commands version,keys,...] [--instructions]

Builds a conversation of ``--messages`` messages (as ``history_bench.py`` does:
one experience, a ref every 100 turns) in a temporary data dir and runs each
command as a person does, a fresh ``python -m selfref_tui`` whose output is
read to the end, ``--runs`` times; prints the median wall and CPU seconds (the
child's user + system) of each. Goals: ``rewind N`` ≤ 0.3 s, ``history --json``
≤ 1 s, ``branch`` ≤ 1 s.

``--before DIR`` runs the same commands from another copy of the source (say
``git worktree add /tmp/old <commit>``, or ``git archive <commit> | tar -x -C
DIR``) with this interpreter, each run of it beside a run of this one, so both
see the same load: a figure "before" and "after" taken at once. Each rewind and
branch runs on a fresh copy of the data dir.

``--instructions`` also counts the instructions each command executes from its
start to its exit, once, under valgrind (slow: about 50 times the CPU time;
``context`` is left out unless named in ``--commands``): a figure the load does
not change, to compare two versions on a busy machine.

Timing goals live here, not in tests; wall times grow with the machine's
load, CPU times much less.
"""

from __future__ import annotations

import argparse
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
sys.path.insert(0, str(ROOT / "bench"))

from history_bench import build, cli  # noqa: E402  (bench/ is not a package)

#: name → (arguments, goal); "{middle}" is the message in the middle of the conversation
COMMANDS: dict[str, tuple[tuple[str, ...], str]] = {
    "version": (("--version",), ""),
    "keys": (("keys", "list"), ""),
    "history": (("history",), ""),
    "history-json": (("history", "--json"), "goal <= 1 s"),
    "context": (("context", "show"), ""),
    "rewind": (("rewind", "{middle}"), "goal <= 0.3 s"),
    "branch": (("branch", "{middle}", "--name", "side"), "goal <= 1 s"),
}
#: the commands that change the data dir: each run gets a fresh copy
WRITES = {"rewind", "branch"}


def instructions(source: Path, data: Path, args: list[str]) -> int:
    """Instructions ``selfref-tui ARGS`` run from ``source`` executes (valgrind's count)."""
    with tempfile.TemporaryDirectory(prefix="selfref-cli-callgrind-") as tmp:
        env = {**os.environ, "SELFREF_DATA_DIR": str(data), "PYTHONPATH": str(source),
               "SELFREF_CONFIG": str(data / "config.toml"),
               "PYTHONHASHSEED": "0"}  # the same dict layouts every run
        proc = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/out",
             sys.executable, "-m", "selfref_tui", *args],
            capture_output=True, text=True, env=env, cwd=source, timeout=3600)
    found = re.search(r"Collected : (\d+)", proc.stderr)
    if proc.returncode or not found:
        raise SystemExit(f"valgrind run of {' '.join(args)} failed:\n{proc.stderr[-2000:]}")
    return int(found[1])


def shown(pairs: list[tuple[float, float]]) -> str:
    wall = statistics.median(w for w, _ in pairs)
    cpu = statistics.median(c for _, c in pairs)
    return f"{wall:6.3f} s (CPU {cpu:.3f} s)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--before", type=Path, help="another copy of the source to compare")
    parser.add_argument("--commands", help=f"which of {', '.join(COMMANDS)} (default: all)")
    parser.add_argument("--instructions", action="store_true",
                        help="also count each command's instructions under valgrind (slow)")
    args = parser.parse_args()
    named = args.commands is not None
    names = [name for name in (args.commands or ",".join(COMMANDS)).split(",") if name]
    unknown = [name for name in names if name not in COMMANDS]
    if unknown:
        parser.error(f"unknown command {', '.join(unknown)}")
    sources = {"now": ROOT} | ({"before": args.before.resolve()} if args.before else {})
    middle = str(args.messages // 2 + 1)
    print(f"cli bench: a conversation of {args.messages:,} messages; medians of {args.runs} "
          f"runs; python {sys.version.split()[0]}; load average {os.getloadavg()[0]:.1f} at "
          "the start")
    with tempfile.TemporaryDirectory(prefix="selfref-cli-bench-") as tmp:
        pristine = Path(tmp) / "pristine"
        started = time.perf_counter()
        build(pristine, args.messages)
        print(f"(set-up took {time.perf_counter() - started:.1f} s)")
        header = "".join(f"{label:<26}" for label in sources)
        print(f"{'command':<40} {header}")
        for name in names:
            argv = [a.replace("{middle}", middle) for a in COMMANDS[name][0]]
            figures: dict[str, list[tuple[float, float]]] = {label: [] for label in sources}
            for i in range(args.runs):
                for label, source in sources.items():  # side by side: the load drifts
                    data = pristine
                    if name in WRITES:
                        data = Path(tmp) / f"{name}-{label}-{i}"
                        shutil.copytree(pristine, data)
                    figures[label].append(cli(data, *argv, source=source))
                    if data is not pristine:
                        shutil.rmtree(data)
            cells = "".join(f"{shown(figures[label]):<26}" for label in sources)
            print(f"{'selfref-tui ' + ' '.join(argv):<40} {cells} {COMMANDS[name][1]}",
                  flush=True)
        if args.instructions:
            print(f"instructions, start to exit (valgrind)\n{'command':<40} {header}")
            for name in names:
                if name == "context" and not named:
                    continue
                argv = [a.replace("{middle}", middle) for a in COMMANDS[name][0]]
                cells = ""
                for label, source in sources.items():
                    data = pristine
                    if name in WRITES:
                        data = Path(tmp) / f"{name}-{label}-count"
                        shutil.copytree(pristine, data)
                    cells += f"{instructions(source, data, argv) / 1e6:,.0f} M".ljust(26)
                    if data is not pristine:
                        shutil.rmtree(data)
                print(f"{'selfref-tui ' + ' '.join(argv):<40} {cells}", flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
