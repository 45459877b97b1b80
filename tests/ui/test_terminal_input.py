"""The app's terminal input: a paste holding escape sequences, and bytes that are not UTF-8.

The real program runs on a real pseudo-terminal (Textual's own driver reads it,
as in a person's terminal; Pilot's headless driver has no input thread), and
what it did is read back from the store.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Iterator

import pytest
from textual.events import Paste

from selfref_tui.ui.input_driver import (
    MOUSE_READ_CHARS,
    PASTE_END,
    PASTE_START,
    PAUSE_S,
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


def test_mouse_reports_after_an_end_mark_do_not_put_the_pause_off():
    """The driver takes 0.1 s with only mouse reports after an end mark as the pause
    (:attr:`PasteGuard.moved_only`); they are held with the rest and come after the paste."""
    guard = PasteGuard()
    assert guard.feed(f"{PASTE_START}a{PASTE_END}\x1b[<35;1;5M") == [PASTE_START, "a"]
    assert not guard.moved_only  # the end mark came in this read: input
    for read in ("\x1b[<35;2;5M\x1b[<35;3;5M", "\x1b[<35;1", "0;5M", "\x1b[<0;10;5M\x1b[<0;10;5m"):
        assert guard.feed(read) == [] and guard.moved_only, read
    assert guard.feed("x") == [] and not guard.moved_only  # a key: input
    assert guard.feed("\x1b[<35;4;5M") == [] and guard.moved_only
    assert guard.feed("\x1b[<35;4;") == [] and guard.moved_only  # cut: the rest comes next
    assert guard.feed("5Mz") == [] and not guard.moved_only
    assert guard.idle() == [PASTE_END, "\x1b[<35;1;5M\x1b[<35;2;5M\x1b[<35;3;5M\x1b[<35;10;5M"
                            "\x1b[<0;10;5M\x1b[<0;10;5mx\x1b[<35;4;5M\x1b[<35;4;5Mz"]
    assert not guard.moved_only and guard.feed("\x1b[<35;5;5M") and not guard.moved_only

    reader = TerminalInput()  # through the key parser: the paste, then the mouse's moves
    assert reader.feed(f"{PASTE_START}b{PASTE_END}".encode()) == [] and reader.holding
    assert reader.feed(b"\x1b[<35;7;3M") == [] and reader.moved_only
    assert kinds(reader.idle()) == [("Paste", "b"), ("MouseMove", "")]


def test_text_that_reads_as_mouse_reports_in_a_paste_stays_its_text():
    """After an end mark of the paste's own, text shaped as mouse reports is held as any
    other: a second end mark makes it all text, and past what a hand makes in a moment
    it is input that puts the pause off."""
    reports = "".join(f"\x1b[<0;{x % 200 + 1};1M" for x in range(900))  # clicks
    guard = PasteGuard()
    guard.feed(f"{PASTE_START}a{PASTE_END}")
    for at in range(0, len(reports), 4096):  # read as a terminal gives it
        guard.feed(reports[at:at + 4096])
    assert not guard.moved_only  # more than a hand makes: it counts as input
    assert guard.feed(f"\rrm -rf ~\r{PASTE_END}") == [
        PastedText(f"{PASTE_END}{reports}\rrm -rf ~\r".replace("\x1b", "␛"))]
    assert guard.holding and guard.idle() == [PASTE_END]


def test_more_mouse_reports_in_one_read_than_a_hand_makes_are_input():
    """Reports read at once, more than a hand makes in the pause, were all there already
    (read late, not made as time passed): that read puts the pause off; smaller reads
    after it are a hand again."""
    guard = PasteGuard()
    guard.feed(f"{PASTE_START}a{PASTE_END}")
    hand = "".join(f"\x1b[<35;{x};5M" for x in range(10, 90))
    assert len(hand) <= MOUSE_READ_CHARS < len(hand + hand)
    assert guard.feed(hand) == [] and guard.moved_only
    assert guard.feed(hand + hand) == [] and not guard.moved_only
    assert guard.feed(hand) == [] and guard.moved_only
    assert guard.idle() == [PASTE_END, hand * 4]


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


class PtyApp:
    """The real program on a real pseudo-terminal: what it draws is read (and kept) as it
    comes, so its writes never wait on us."""

    def __init__(self, master: int, proc: subprocess.Popen) -> None:
        self.master, self.proc = master, proc
        self.screen = bytearray()

    def write(self, data: bytes) -> None:
        os.write(self.master, data)

    def read_until(self, done, what: str, timeout: float = 60, ended: bool = False) -> None:
        """Read what the app draws until ``done()``; it must not end meanwhile, unless
        its end is what is ``ended``-waited for."""
        deadline = time.monotonic() + timeout
        while not done():
            assert ended or self.proc.poll() is None, \
                f"the app ended: {bytes(self.screen[-400:])!r}"
            assert time.monotonic() < deadline, f"no {what} within {timeout} s"
            if select.select([self.master], [], [], 0.2)[0]:
                try:
                    self.screen.extend(os.read(self.master, 65536))
                except OSError:
                    pass


@contextlib.contextmanager
def pty_app(tmp_path, *, ends: bool = False) -> Iterator[PtyApp]:
    """``selfref-tui --demo`` at 120x40 on a pty, once it drew its first frame; still
    running at the end unless the test ``ends`` it."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "selfref_tui", "--demo"], stdin=slave, stdout=slave,
        stderr=slave, env=_env({"TERM": "xterm-256color"}), cwd=tmp_path,
        start_new_session=True)
    os.close(slave)
    app = PtyApp(master, proc)
    try:
        app.read_until(lambda: b"F1 help" in app.screen, "first frame")
        yield app
        assert ends or proc.poll() is None
    finally:
        proc.kill()
        proc.wait(30)
        os.close(master)


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX terminal")
def test_a_pasted_terminal_log_and_a_stray_byte_are_sent_as_shown(tmp_path):
    with pty_app(tmp_path) as app:
        app.write(f"{PASTE_START}{PASTED}{PASTE_END}\r".encode())
        app.read_until(lambda: len(_sent()) == 1, "stored message")
        assert _sent() == [SHOWN]
        app.write(b"\xff and more\r")  # not UTF-8 (xterm's 8-bit Alt sends such bytes)
        app.read_until(lambda: len(_sent()) == 2, "second stored message")
        assert _sent()[1] == "\ufffd and more"
        # the end mark inside a paste: one message, nothing of it typed as keys
        app.write(f"{PASTE_START}{TRAP}{PASTE_END}\r".encode())
        app.read_until(lambda: len(_sent()) >= 3, "the pasted message")
        app.write(b"last\r")
        app.read_until(lambda: _sent()[-1:] == ["last"], "the message after it")
        assert _sent()[2:] == ["one␛[201~\nrm -rf ~\n␛[200~", "last"]


def move(x: int, y: int = 5) -> str:
    """What a terminal sends as the mouse moves over cell (x, y), no button held (SGR)."""
    return f"\x1b[<35;{x};{y}M"


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX terminal")
def test_a_paste_is_sent_while_the_mouse_never_rests(tmp_path):
    """A hand moving the mouse right after a paste (the terminal reporting a move every few
    milliseconds) is no input that keeps the paste open: the paste, and Enter typed after
    it, went through only once the mouse rested."""
    with pty_app(tmp_path) as app:
        resting = threading.Event()
        moves = [0]

        def mouse() -> None:
            while not resting.wait(0.01):
                moves[0] += 1
                app.write(move(10 + moves[0] % 50).encode())

        mover = threading.Thread(target=mouse, daemon=True)
        mover.start()
        try:
            app.read_until(lambda: moves[0] > 5, "the mouse moving")
            app.write(f"{PASTE_START}pasted as the mouse moved{PASTE_END}\r".encode())
            app.read_until(lambda: _sent() == ["pasted as the mouse moved"],
                           "the paste sent while the mouse moved")
            assert mover.is_alive()  # it never rested
        finally:
            resting.set()
            mover.join(10)


def _unread(tty: int) -> int:
    """Bytes written to the terminal that its reader has not read yet."""
    return struct.unpack("i", fcntl.ioctl(tty, termios.FIONREAD, b"\0" * 4))[0]


def _stopped(pid: int) -> bool:
    """The process is stopped (SIGSTOP took hold), as /proc says."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0] == "T"


def _stopped_after_reading(app: PtyApp, data: bytes) -> bool:
    """``data`` written and the app stopped soon after it has read it, before a pause
    could pass: False when this process was itself kept off the CPU long enough between
    the two that the app may have seen one (the moment was missed; nothing is stopped)."""
    tty = os.open(os.readlink(f"/proc/{app.proc.pid}/fd/0"), os.O_RDONLY | os.O_NOCTTY)
    try:
        app.write(data)
        while _unread(tty):
            pass
        read_at = time.monotonic()
        time.sleep(PAUSE_S / 4)  # for the app to take in what it read (not a check)
        os.kill(app.proc.pid, signal.SIGSTOP)
        if time.monotonic() - read_at > PAUSE_S * 0.8:
            os.kill(app.proc.pid, signal.SIGCONT)
            return False
        return True
    finally:
        os.close(tty)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and a POSIX terminal")
def test_a_paste_padded_with_mouse_reports_holds_while_the_app_is_kept_from_reading(tmp_path):
    """A paste holding an end mark of its own and then more than a terminal's read of
    text shaped as mouse reports, read by an app that was kept off the CPU for a moment
    (a loaded machine, or stopped and continued): the reports were already there, so
    the time that passed was no pause. It was taken as one (the time since the end
    mark, reports alone in the read), the paste ended at its fake end mark and its rest
    was typed as keys, its line end sending it."""
    padding = "".join(move(10 + n % 50) for n in range(420))  # ~5 KB: over 4,095, under 8 KB
    for _attempt in range(5):  # the moment to stop the app at can be missed on a busy machine
        with pty_app(tmp_path) as app:
            if not _stopped_after_reading(app, f"{PASTE_START}a{PASTE_END}".encode()):
                continue
            try:
                app.read_until(lambda: _stopped(app.proc.pid), "the app stopped")
                # the rest of the paste, written while the app cannot read (the kernel
                # holds it all: the write returns)
                app.write(f"{padding}rest{PASTE_END}\r".encode())
                time.sleep(PAUSE_S * 3)  # kept off the CPU for longer than a pause (no check)
            finally:
                os.kill(app.proc.pid, signal.SIGCONT)
            app.read_until(lambda: len(_sent()) == 1, "the pasted message")
            assert _sent() == [f"a␛[201~{padding.replace(chr(27), '␛')}rest"]
            return
    pytest.fail("the app was never stopped right after its read (the machine too busy)")


def _cooked(master: int) -> bool:
    """The terminal reads lines again (the app gave it back as it found it)."""
    return bool(termios.tcgetattr(master)[3] & termios.ICANON)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and a POSIX terminal")
def test_an_app_stopped_and_continued_reads_on_and_quits(tmp_path):
    """Stopped and continued without ctrl+z (``kill -STOP``, a debugger, a CPU limiter),
    the app took the terminal again as if it had given it back: a second reader beside
    the first, and ctrl+q no longer quit. It quits, the terminal given back cooked."""
    with pty_app(tmp_path, ends=True) as app:
        for _ in range(2):
            os.kill(app.proc.pid, signal.SIGSTOP)
            app.read_until(lambda: _stopped(app.proc.pid), "the app stopped")
            os.kill(app.proc.pid, signal.SIGCONT)
            app.read_until(lambda: not _stopped(app.proc.pid), "the app continued")
        app.write(b"after the stop\r")
        app.read_until(lambda: _sent() == ["after the stop"], "the message typed after it")
        app.write(b"\x11")  # ctrl+q
        app.read_until(lambda: app.proc.poll() is not None, "the app quitting", ended=True)
        assert app.proc.returncode == 0 and _cooked(app.master)
