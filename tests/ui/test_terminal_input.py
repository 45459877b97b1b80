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
from textual.events import Paste

from selfref_tui.ui.input_driver import (
    PASTE_END,
    PASTE_START,
    PastedText,
    PasteGuard,
    TerminalInput,
)
from tests.cli.helpers import _env, cli

PASTED = ("log [bold]x[/] \x1b[31mred\x1b[0m \x1b]52;c;SGVsbG8=\x07 two \x1b\x1b then "
          "\x1b\x0f end")
#: what the input shows and sends for it: every control made visible, nothing typed as keys
SHOWN = "log [bold]x[/] ␛[31mred␛[0m ␛]52;c;SGVsbG8=␇ two ␛␛ then ␛␏ end"


def fed(guard: PasteGuard, *chunks: str | None) -> str:
    """What the guard gives for ``chunks`` (None: a pause in the input), then for a pause."""
    return "".join([piece for chunk in chunks
                    for piece in (guard.idle() if chunk is None else guard.feed(chunk))]
                   + guard.idle())


def test_the_guard_leaves_no_escape_inside_a_paste_however_the_input_is_cut():
    # two bursts (two pastes a moment apart), each cut anywhere
    first = f"a\x1b[A{PASTE_START}{PASTED}{PASTE_END}"
    then = f"\x1b{PASTE_START}\x1b\x1b{PASTE_END}z"
    whole = fed(PasteGuard(), first, None, then)
    assert whole == (f"a\x1b[A{PASTE_START}{PASTED.replace(chr(27), '␛')}{PASTE_END}"
                     f"\x1b{PASTE_START}␛␛{PASTE_END}z")
    for cut in range(1, len(first)):
        assert fed(PasteGuard(), first[:cut], first[cut:], None, then) == whole, cut
    for cut in range(1, len(then)):
        assert fed(PasteGuard(), first, None, then[:cut], then[cut:]) == whole, cut
    assert fed(PasteGuard(), *first, None, *then) == whole


def test_outside_a_paste_nothing_waits():
    guard = PasteGuard()
    assert guard.feed("\x1b") == ["\x1b"]  # the Esc key, now
    assert guard.feed("[20") == ["[20"]
    assert guard.feed("0~hi\x1b") == ["0~", "hi"]  # the start mark came in three pieces
    text = guard.feed("x")
    assert text == ["␛x"] and isinstance(text[0], PastedText)  # that ESC began no end mark
    assert guard.feed(PASTE_END + "\x1b") == []  # is that the end? what follows says
    assert guard.holding
    assert guard.idle() == [PASTE_END, "\x1b"]  # the input paused: it was
    assert guard.feed("q") == ["q"] and not guard.holding


#: a paste that holds the end mark, then a line end and a command, then a start mark: a
#: terminal that does not filter the marks sends them as they are, and the rest was typed
#: as keys, Enter and all
TRAP = f"one{PASTE_END}\rrm -rf ~\r{PASTE_START}"


def kinds(events: list) -> list[tuple[str, str]]:
    return [(type(e).__name__, getattr(e, "text", None) or getattr(e, "key", "")) for e in events]


def test_an_end_mark_inside_a_paste_is_its_text_however_the_input_is_cut():
    stream = f"{PASTE_START}{TRAP}{PASTE_END}\r"  # the paste, then Enter typed after it
    expected = [("Paste", "one␛[201~\rrm -rf ~\r␛[200~"), ("Key", "enter")]
    whole = TerminalInput()
    assert kinds(whole.feed(stream.encode()) + whole.idle()) == expected
    data = stream.encode()
    for cut in range(1, len(data)):
        reader = TerminalInput()
        assert kinds(reader.feed(data[:cut]) + reader.feed(data[cut:]) + reader.idle()) == \
            expected, cut
    # pastes a moment apart are each their own, an empty one too
    later = TerminalInput()
    events = later.feed(f"{PASTE_START}two{PASTE_END}".encode()) + later.idle()
    events += later.feed(f"{PASTE_START}{PASTE_END}".encode()) + later.idle()
    assert kinds(events) == [("Paste", "two"), ("Paste", "")]


def test_two_pastes_in_one_burst_are_one_with_their_marks_shown():
    """A start mark after an end mark may be the pasted text's own (:data:`TRAP`): taken
    as a second paste, everything between the two was typed as keys, Enter and all."""
    reader = TerminalInput()
    assert kinds(reader.feed(f"{PASTE_START}a{PASTE_END}{PASTE_START}b{PASTE_END}x"
                             .encode()) + reader.idle()) == \
        [("Paste", "a␛[201~␛[200~b"), ("Key", "x")]


def test_keys_after_a_paste_wait_only_for_the_pause():
    reader = TerminalInput()
    assert reader.feed(f"{PASTE_START}a{PASTE_END}".encode()) == []  # was that the end?
    assert kinds(reader.idle()) == [("Paste", "a")]
    assert kinds(reader.feed(b"b")) == [("Key", "b")]  # no paste waits: at once
    assert kinds(reader.feed(f"{PASTE_START}c{PASTE_END}d".encode()) + reader.idle()) == \
        [("Paste", "c"), ("Key", "d")]


def test_a_start_mark_cut_by_a_pause_loses_no_paste(monkeypatch):
    """The parser gives up on a sequence after a pause and types what it has as keys. A
    start mark cut there is the start to the guard, not to the parser: the paste's text
    was dropped, then came out at the front of the next paste."""
    now = [0.0]
    monkeypatch.setattr("textual._parser.get_time", lambda: now[0])
    data = f"{PASTE_START}hello\r{PASTE_END}".encode()
    for cut in range(1, len(PASTE_START)):
        reader = TerminalInput()
        events = reader.feed(data[:cut])
        now[0] += 1  # a pause: the parser's escape delay has passed
        events += reader.idle()
        events += reader.feed(data[cut:]) + reader.idle()
        events += reader.feed(f"{PASTE_START}second{PASTE_END}".encode()) + reader.idle()
        pasted = [e.text for e in events if isinstance(e, Paste)]
        assert pasted == ["hello\r", "second"], cut
        assert ("Key", "enter") not in kinds(events), cut  # nothing of the paste typed
        assert kinds(events)[-2:] == [("Paste", "hello\r"), ("Paste", "second")], cut


@pytest.mark.parametrize("head", ["", f"a{PASTE_END}\r"], ids=["plain", "an-end-mark-first"])
def test_a_large_paste_goes_round_the_key_parser_whole(head):
    """Read as a terminal gives it, 4 KiB at a time; an end mark near its start holds
    the rest back until what follows shows it was text."""
    text = head + ("x" * 79 + "\n") * 26_000 + "\x00end"
    data = f"{PASTE_START}{text}{PASTE_END}".encode()
    reader = TerminalInput()
    events = [e for at in range(0, len(data), 4096) for e in reader.feed(data[at:at + 4096])]
    events += reader.idle()
    assert len(events) == 1
    assert events[0].text == text.replace("\x00", "").replace("\x1b", "␛")


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
        # the end mark inside a paste: one message, nothing of it typed as keys
        os.write(master, f"{PASTE_START}{TRAP}{PASTE_END}\r".encode())
        read_until(lambda: len(_sent()) >= 3, "the pasted message")
        os.write(master, b"last\r")
        read_until(lambda: _sent()[-1:] == ["last"], "the message after it")
        assert _sent()[2:] == ["one␛[201~\nrm -rf ~\n␛[200~", "last"]
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait(30)
        os.close(master)
