"""The app's terminal input: a paste holding escape sequences, and bytes that are not UTF-8.

The real program runs on a real pseudo-terminal (Textual's own driver reads it,
as in a person's terminal; Pilot's headless driver has no input thread), and
what it did is read back from the store.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time

import pytest

from selfref_tui.ui.input_driver import PASTE_END, PASTE_START, PasteGuard
from tests.cli.helpers import _env, cli

PASTED = ("log [bold]x[/] \x1b[31mred\x1b[0m \x1b]52;c;SGVsbG8=\x07 two \x1b\x1b then "
          "\x1b\x0f end")
#: what the input shows and sends for it: every control made visible, nothing typed as keys
SHOWN = "log [bold]x[/] ␛[31mred␛[0m ␛]52;c;SGVsbG8=␇ two ␛␛ then ␛␏ end"


def test_the_guard_leaves_no_escape_inside_a_paste_however_the_input_is_cut():
    stream = f"a\x1b[A{PASTE_START}{PASTED}{PASTE_END}\x1b{PASTE_START}\x1b\x1b{PASTE_END}z"
    whole = PasteGuard().feed(stream)
    assert whole == (f"a\x1b[A{PASTE_START}{PASTED.replace(chr(27), '␛')}{PASTE_END}"
                     f"\x1b{PASTE_START}␛␛{PASTE_END}z")
    for cut in range(1, len(stream)):
        guard = PasteGuard()
        assert guard.feed(stream[:cut]) + guard.feed(stream[cut:]) == whole, cut
    one = PasteGuard()
    assert "".join(one.feed(char) for char in stream) == whole


def test_outside_a_paste_nothing_waits():
    guard = PasteGuard()
    assert guard.feed("\x1b") == "\x1b"  # the Esc key, now
    assert guard.feed("[20") == "[20"
    assert guard.feed("0~hi\x1b") == "0~hi"  # the start mark came in three pieces
    assert guard.feed("x") == "␛x"  # that ESC did not begin the end mark
    assert guard.feed(PASTE_END + "\x1b") == PASTE_END + "\x1b"


def _sent() -> list[str]:
    """The person's messages in the store, as the app stored them."""
    result = cli("history", "--json", "--read-only")
    if result.returncode != 0:  # not written yet
        return []
    return [m["content"] for m in json.loads(result.stdout) if m["role"] == "user"]


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX terminal")
def test_a_pasted_terminal_log_and_a_stray_byte_are_sent_as_shown(tmp_path):
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "selfref_tui", "--demo"], stdin=slave, stdout=slave,
        stderr=slave, env=_env({"TERM": "xterm-256color"}), cwd=tmp_path,
        start_new_session=True)
    os.close(slave)
    screen = bytearray()

    def read_until(done, what: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            assert proc.poll() is None, f"the app ended: {bytes(screen[-400:])!r}"
            assert time.monotonic() < deadline, f"no {what} within {timeout} s"
            if select.select([master], [], [], 0.2)[0]:
                try:
                    screen.extend(os.read(master, 65536))
                except OSError:
                    pass

    try:
        read_until(lambda: b"F1 help" in screen, "first frame")
        os.write(master, f"{PASTE_START}{PASTED}{PASTE_END}\r".encode())
        read_until(lambda: len(_sent()) == 1, "stored message")
        assert _sent() == [SHOWN]
        os.write(master, b"\xff and more\r")  # not UTF-8 (xterm's 8-bit Alt sends such bytes)
        read_until(lambda: len(_sent()) == 2, "second stored message")
        assert _sent()[1] == "\ufffd and more"
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait(30)
        os.close(master)
