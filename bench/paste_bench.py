"""A large paste into the input: how long from the terminal's bytes to the input holding it.

Three figures for a paste of ``--mb`` megabytes (80-column lines):

- **terminal → input (real app on a pty):** the real program on a pseudo-terminal,
  the bracketed paste written to it as a terminal writes it; timed from the first
  byte written to the screen showing the paste's chip (``[pasted N lines #1]``).
- **driver:** the driver's own input path (:class:`TerminalInput`: UTF-8 decoding,
  the paste guard, Textual's key parser) from the bytes, read as the driver reads
  them (4 KiB at a time), to the ``Paste`` event; CPU of this process. Beside it,
  for reference, Textual's parser fed the whole paste, text and all, as the
  driver fed it before.
- **Paste event → input (Pilot):** the ``Paste`` event posted to the app's input,
  to the input holding its chip (before it is drawn).
- **the same paste with an end mark near its start** (``ESC[201~``, sent as it is
  by a terminal that does not filter it), on the pty: the rest of the paste is
  held until it shows the mark was text, and was joined again at each read.
- **the same paste, the mouse moving right after it**, on the pty: a mouse report
  (SGR, a move over the next cell) written every 10 ms from the paste's last byte
  until the chip shows; they once held the paste back until the mouse rested.

    python bench/paste_bench.py [--mb 2] [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import os
import pty
import select
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from selfref_tui.ui.input_driver import PASTE_END, PASTE_START, TerminalInput  # noqa: E402

LINE = "x" * 79 + "\n"


def pasted(mb: float) -> str:
    return LINE * int(mb * 2**20 / len(LINE))


def on_a_pty(text: str, timeout: float = 300, mouse: bool = False) -> float:
    """Seconds from the paste's first byte written to the app's screen showing its chip;
    ``mouse``: the mouse reported moving every 10 ms from the paste's last byte on."""
    chip = f"pasted {text.count(chr(10))} lines".encode()
    data = (PASTE_START + text + PASTE_END).encode()
    with tempfile.TemporaryDirectory(prefix="paste-bench-") as tmp:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        env = dict(os.environ, TERM="xterm-256color", PYTHONPATH=str(ROOT))
        proc = subprocess.Popen([sys.executable, "-m", "selfref_tui", "--demo", "--data-dir",
                                 str(Path(tmp) / "data")], stdin=slave, stdout=slave,
                                stderr=slave, env=env, cwd=tmp, start_new_session=True)
        os.close(slave)
        screen = bytearray()
        try:
            def read_until(needle: bytes, since: int = 0) -> None:
                deadline = time.monotonic() + timeout
                while needle not in screen[since:]:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        raise SystemExit(f"no {needle!r}: {bytes(screen[-300:])!r}")
                    if select.select([master], [], [], 0.2)[0]:
                        try:
                            screen.extend(os.read(master, 1 << 16))
                        except OSError:
                            pass

            read_until(b"F1 help")
            time.sleep(1)  # the start-up's own work done
            while select.select([master], [], [], 0.2)[0]:
                screen.extend(os.read(master, 1 << 16))
            mark = len(screen)

            def write() -> None:  # blocks while the app reads: a thread, as a terminal is
                view = memoryview(data)
                while view:
                    view = view[os.write(master, view[:65536]):]

            shown = threading.Event()

            def move() -> None:  # after the paste, as a hand on the mouse would
                writer.join(timeout)
                x = 0
                while not shown.wait(0.01):
                    x = x % 100 + 1
                    os.write(master, f"\x1b[<35;{x};5M".encode())

            started = time.perf_counter()
            writer = threading.Thread(target=write, daemon=True)
            writer.start()
            mover = threading.Thread(target=move, daemon=True)
            if mouse:
                mover.start()
            read_until(chip, mark)
            took = time.perf_counter() - started
            shown.set()
            writer.join(timeout)
            if mouse:
                mover.join(timeout)
            return took
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
            os.close(master)


#: what a paste holding an end mark begins with, in the last figure
MARKED = f"a{PASTE_END}\n"


def through_the_driver(text: str) -> float:
    """CPU seconds from the bytes to the Paste event, 4 KiB at a time as the driver reads."""
    data = (PASTE_START + text + PASTE_END).encode()
    reader = TerminalInput()
    started = time.process_time()
    events = []
    for at in range(0, len(data), 4096):
        events += reader.feed(data[at:at + 4096])
    events += reader.idle()
    took = time.process_time() - started
    assert [type(e).__name__ for e in events] == ["Paste"], events[:3]
    assert len(events[0].text) == len(text)
    return took


def through_textuals_parser(text: str) -> float:
    """CPU seconds of Textual's key parser with the paste's text in it, as the driver fed it
    before: a reference for the figure above."""
    from textual._xterm_parser import XTermParser

    data = PASTE_START + text + PASTE_END
    parser = XTermParser(False)
    started = time.process_time()
    events = [e for at in range(0, len(data), 4096) for e in parser.feed(data[at:at + 4096])]
    took = time.process_time() - started
    assert [type(e).__name__ for e in events] == ["Paste"], events[:3]
    return took


async def into_the_input(text: str) -> float:
    """Seconds from the Paste event posted to the input holding its chip (Pilot)."""
    from textual import events

    from selfref_tui.config import AppConfig, ProviderConfig
    from selfref_tui.ui.app import SelfRefApp

    with tempfile.TemporaryDirectory(prefix="paste-bench-") as tmp:
        config = AppConfig(provider=ProviderConfig(base_url="http://127.0.0.1:9/v1",
                                                   api_key="x", model="m"),
                           data_dir=Path(tmp) / "data", key="main")
        app = SelfRefApp(config)
        async with app.run_test(size=(120, 40)) as pilot:
            box = app.chat_input
            for _ in range(600):  # the start-up's own work done
                if box.has_focus and app.controller.ready:
                    break
                await pilot.pause(0.05)
            await pilot.pause(0.5)
            started = time.perf_counter()
            box.post_message(events.Paste(text))
            while not box.pastes:
                await asyncio.sleep(0)
            return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=2.0)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    text = pasted(args.mb)
    print(f"paste: {len(text):,} characters, {text.count(chr(10)):,} lines")
    for name, measure in [("driver (CPU)", lambda: through_the_driver(text)),
                          ("  for reference: the text through Textual's parser (CPU)",
                           lambda: through_textuals_parser(text)),
                          ("Paste event -> input (Pilot)",
                           lambda: asyncio.run(into_the_input(text))),
                          ("terminal -> input (real app on a pty)", lambda: on_a_pty(text)),
                          ("  the same, an end mark near its start",
                           lambda: on_a_pty(MARKED + text)),
                          ("  the same, the mouse moving right after it",
                           lambda: on_a_pty(text, timeout=60, mouse=True))]:
        runs = [measure() for _ in range(args.runs)]
        print(f"{name:58} median {statistics.median(runs) * 1000:8.0f} ms   "
              f"max {max(runs) * 1000:8.0f} ms   ({args.runs} runs)")


if __name__ == "__main__":
    main()
