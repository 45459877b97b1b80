"""A key typed during a fast stream, timed from outside the app: tmux in, the screen out.

    .venv/bin/python bench/echo_bench.py [--keys 30] [--tokens 20000] [--pace 2000]

The real app (``python -m selfref_tui``, its real terminal driver) runs in a
detached tmux session of 120x40 against the in-package demo server (in its
own process, as in ``stream_bench``), which streams the 20,000-token reply of
``stream_bench`` at 2,000 tokens/s. Once the answer is streaming, a ``~``
(counted in the input box only) is sent into the input with
``tmux send-keys`` every ~100 ms, and the pane is read with ``capture-pane``
until it shows one more ``~``: echo = that moment − ``send-keys`` returning
(the key is in the app's terminal by then). Printed: p50 / p90 / max over the
keys typed while the answer streamed, and the same with the app idle before
the stream (the floor: tmux, the poll and a quiet app). Goal: echo
p50 ≤ 30 ms during the stream.

The poll runs ``tmux capture-pane`` in a loop, a few ms per round, so each
figure is late by up to one round; the idle row shows that floor.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._common import ServerProcess, pct  # noqa: E402
from bench.stream_bench import long_reply  # noqa: E402

SIZE = (120, 40)
MARK = "~"
#: gap between two typed keys (a fast typist: ~10 keys a second)
GAP_S = 0.1


def tmux(*args: str) -> str:
    return subprocess.run(
        ["tmux", *args], check=True, capture_output=True, text=True
    ).stdout


def screen(session: str) -> str:
    return tmux("capture-pane", "-p", "-t", session)


def typed(text: str) -> int:
    """Marks in the input box (the last box on screen, left of the sidebar)."""
    lines = [line.split("▏")[0] for line in text.splitlines()]
    tops = [i for i, line in enumerate(lines) if line.lstrip().startswith("╭")]
    if not tops:
        return 0
    return sum(line.count(MARK) for line in lines[tops[-1]:])


def wait_for(session: str, predicate, timeout: float, what: str) -> str:
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        text = screen(session)
        if predicate(text):
            return text
        time.sleep(0.02)
    raise SystemExit(f"gave up waiting for {what} after {timeout:.0f} s; the screen:\n"
                     + screen(session))


def echo_times(session: str, keys: int, until=None) -> list[float]:
    """Type ``keys`` marks (fewer if ``until`` says stop); seconds until each is shown."""
    out: list[float] = []
    shown = typed(screen(session))
    for _ in range(keys):
        if until is not None and until():
            break
        tmux("send-keys", "-t", session, "-l", MARK)
        sent = time.perf_counter()
        shown += 1
        while True:
            text = screen(session)
            if typed(text) >= shown:
                out.append(time.perf_counter() - sent)
                break
            if time.perf_counter() - sent > 30:
                out.append(float("inf"))
                break
        time.sleep(GAP_S)
    return out


def figures(name: str, values: list[float]) -> str:
    if not values:
        return f"  {name:<34} no keys"
    ms = sorted(v * 1000 for v in values)
    p90 = pct(ms, 0.9)
    return (
        f"  {name:<34} echo p50 {statistics.median(ms):7.1f} ms  p90 {p90:7.1f} ms"
        f"  max {ms[-1]:7.1f} ms  n={len(ms)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keys", type=int, default=30)
    parser.add_argument("--tokens", type=int, default=20_000)
    parser.add_argument("--pace", type=float, default=2000.0, help="tokens/s (0: as fast as sent)")
    args = parser.parse_args()
    if shutil.which("tmux") is None:
        raise SystemExit("tmux is not installed")
    text = long_reply(args.tokens)
    assert MARK not in text
    session = f"selfref-echo-{os.getpid()}"
    with ServerProcess(text, args.pace or None) as server, tempfile.TemporaryDirectory() as tmp:
        env = {"SELFREF_DATA_DIR": str(Path(tmp) / "data"),
               "SELFREF_CONFIG": str(Path(tmp) / "none.toml"), "OPENAI_API_KEY": "bench",
               "SELFREF_CONTEXT_WINDOW": "200000", "TERM": "xterm-256color",
               "PYTHONPATH": str(ROOT)}  # this checkout's app, whatever the venv installed
        command = f"{sys.executable} -m selfref_tui --base-url {server.url} --model bench"
        options = [part for name, value in env.items() for part in ("-e", f"{name}={value}")]
        tmux("new-session", "-d", "-s", session, "-x", str(SIZE[0]), "-y", str(SIZE[1]),
             *options, command)
        try:
            wait_for(session, lambda s: "ready" in s, 60, "the app to be ready")
            idle = echo_times(session, min(10, args.keys))
            tmux("send-keys", "-t", session, "C-u")  # clear what was typed
            wait_for(session, lambda s: typed(s) == 0, 10, "the input to clear")
            tmux("send-keys", "-t", session, "-l", "go")
            tmux("send-keys", "-t", session, "Enter")
            wait_for(session, lambda s: "Section 2" in s, 60, "the answer to stream")
            started = time.perf_counter()
            streaming = echo_times(session, args.keys, until=lambda: bool(server.sent_done))
            span = time.perf_counter() - started
        finally:
            subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
    load = os.getloadavg()
    print(
        f"terminal {SIZE[0]}x{SIZE[1]} in tmux, {args.tokens} tokens at "
        f"{args.pace:.0f} tok/s, a key every {GAP_S * 1000:.0f} ms; load average "
        f"{load[0]:.1f} / {load[1]:.1f} (1 / 5 min)"
    )
    print(figures("idle, before the stream", idle))
    print(figures(f"during the stream ({span:.1f} s)", streaming))
    if streaming:
        p50 = statistics.median(streaming) * 1000
        verdict = "MET" if p50 <= 30 and len(streaming) >= 20 else "MISSED"
        print(f"goal: echo p50 ≤ 30 ms over ≥ 20 keys during the stream: {verdict}")


if __name__ == "__main__":
    main()
