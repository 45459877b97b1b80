"""A terminal closed under the app (SIGHUP) or a polite kill (SIGTERM) mid-answer.

The real program on a real pseudo-terminal, the answer read back from the store: the
default action of either signal ended the process at once, and the answer streaming
was lost, where Esc or the quit key keep what arrived.
"""

from __future__ import annotations

import json
import signal
import sys

import pytest

from tests.cli.helpers import cli
from tests.ui.test_terminal_input import pty_app


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGTERM])
def test_a_hangup_or_a_kill_mid_answer_keeps_what_arrived(tmp_path, signum):
    with pty_app(tmp_path, ends=True) as app:
        app.write(b"write something long\r")
        app.read_until(lambda: b"Part 2" in app.screen, "the answer streaming")
        app.proc.send_signal(signum)
        assert app.proc.wait(60) == 128 + signum  # as a shell reports it
    history = json.loads(cli("history", "--json", "--read-only").stdout)
    assert [m["role"] for m in history] == ["user", "assistant"]
    assert history[1]["truncated"] is True
    assert history[1]["content"].startswith("[demo model] Here is a long answer")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_a_closed_terminal_ends_the_app_with_the_answer_kept(tmp_path):
    """The terminal's window closed: its side of the pty is gone, then SIGHUP. The app
    must end (Textual's teardown writing to the dead terminal could block it for good,
    the conversation's lock held) and keep what arrived."""
    import os

    with pty_app(tmp_path, ends=True) as app:
        app.write(b"write something long\r")
        app.read_until(lambda: b"Part 2" in app.screen, "the answer streaming")
        os.close(app.master)
        app.master = os.open(os.devnull, os.O_RDWR)  # what pty_app closes at the end
        app.proc.send_signal(signal.SIGHUP)
        assert app.proc.wait(60) == 128 + signal.SIGHUP
    history = json.loads(cli("history", "--json", "--read-only").stdout)
    assert [m["role"] for m in history] == ["user", "assistant"]
    assert history[1]["truncated"] is True
