"""The app run with standard input that is not a terminal: it ends at once, saying why.

Textual's input loop read the end of a pipe or of ``/dev/null`` over and over: the
app drew its screen, no key was ever read, and a core was spent until someone
killed it. Real processes, each given a deadline; what they used is their CPU
time (``wait4``), which a spinning loop runs up whatever the machine's load.
"""

from __future__ import annotations

import os
import pty
import signal
import subprocess
import sys
import time

import pytest

from selfref_tui.ui.input_driver import INPUT_ENDED

from .helpers import _env

#: a child still running after this is stuck: it is killed and the test fails
DEADLINE_S = 90
#: far above what starting Python and the app takes; a spinning loop passes it
CPU_LIMIT_S = 20

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process accounting")


def finish(args: list[str], stdin, tmp_path) -> tuple[int, str, float]:
    """Run ``args`` until it ends: its exit code, stderr and CPU seconds (user + system)."""
    err = tmp_path / "stderr"
    with err.open("wb") as sink:
        proc = subprocess.Popen(args, stdin=stdin, stdout=subprocess.DEVNULL, stderr=sink,
                                env=_env({"TERM": "xterm-256color"}), cwd=tmp_path,
                                start_new_session=True)
    deadline = time.monotonic() + DEADLINE_S
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            _pid, status, usage = os.wait4(proc.pid, 0)
            pytest.fail(f"still running after {DEADLINE_S} s, {usage.ru_utime + usage.ru_stime:.1f}"
                        f" s of CPU: {err.read_text(errors='replace')[-300:]!r}")
        time.sleep(0.05)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, err.read_text(errors="replace"), usage.ru_utime + usage.ru_stime


@pytest.mark.parametrize("source", ["devnull", "pipe"])
def test_the_app_without_a_terminal_ends_at_once_with_exit_2(tmp_path, source):
    app = [sys.executable, "-m", "selfref_tui", "--demo", "--data-dir", str(tmp_path / "d")]
    if source == "devnull":
        code, said, cpu = finish(app, subprocess.DEVNULL, tmp_path)
    else:
        read, write = os.pipe()
        os.write(write, b"hello\n")
        os.close(write)
        try:
            code, said, cpu = finish(app, read, tmp_path)
        finally:
            os.close(read)
    assert code == 2, said
    assert said.strip() == (
        "selfref-tui: the app reads its keys from a terminal, and standard input is not one (a "
        "pipe or a file); run it in a terminal, or send a message from a script with "
        '`selfref-tui ask "..."`')
    assert cpu < CPU_LIMIT_S
    assert not (tmp_path / "d").exists()  # refused before anything was made


def test_the_app_with_its_screen_redirected_ends_at_once_with_exit_2(tmp_path):
    """Keys from a terminal, the screen (standard error) into a file: the app ran unseen,
    and what was typed blind was sent. Standard output alone may be redirected."""
    master, slave = pty.openpty()
    try:
        code, said, _cpu = finish([sys.executable, "-m", "selfref_tui", "--demo", "--data-dir",
                                   str(tmp_path / "d")], slave, tmp_path)
    finally:
        os.close(slave)
        os.close(master)
    assert code == 2, said[-300:]
    assert said.strip() == (
        "selfref-tui: the app draws its screen on standard error, and it is not a terminal "
        "(2> FILE); leave standard error on the terminal, or send a message from a script "
        'with `selfref-tui ask "..."`')
    assert not (tmp_path / "d").exists()


def test_the_refusal_of_a_redirected_screen_is_seen_on_the_terminal(tmp_path):
    """`selfref-tui 2> FILE` typed at a terminal: the refusal went into FILE alone, and the
    person saw the prompt come back with no word. Standard output on the terminal says it
    too."""
    import select

    master, slave = pty.openpty()
    err = tmp_path / "stderr"
    with err.open("wb") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "selfref_tui", "--demo", "--data-dir",
                                 str(tmp_path / "d")], stdin=slave, stdout=slave, stderr=sink,
                                env=_env({"TERM": "xterm-256color"}), cwd=tmp_path,
                                start_new_session=True)
    os.close(slave)
    shown = bytearray()
    try:
        assert proc.wait(DEADLINE_S) == 2
        while select.select([master], [], [], 0)[0]:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child's end closed: all was read
                break
            if not chunk:
                break
            shown.extend(chunk)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        os.close(master)
    said = " ".join(shown.decode(errors="replace").split())
    assert "selfref-tui: the app draws its screen on standard error" in said, said
    assert "the app draws its screen on standard error" in err.read_text()


def test_the_app_whose_input_ends_stops_reading_it_and_ends(tmp_path):
    """Past the command line's check (the app started from Python): the driver's loop
    meets the input's end, stops asking it and ends the app with exit 2."""
    config = tmp_path / "config.toml"
    config.write_text("", encoding="utf-8")
    script = ("import sys\n"
              "from selfref_tui.config_load import load_config\n"
              "from selfref_tui.ui.app import run_app\n"
              "sys.exit(run_app(load_config(config_path=sys.argv[1], demo=True, "
              "data_dir=sys.argv[2])))\n")
    code, said, cpu = finish([sys.executable, "-c", script, str(config), str(tmp_path / "d")],
                             subprocess.DEVNULL, tmp_path)
    assert code == 2, said[-500:]
    assert " ".join(INPUT_ENDED.split()) in " ".join(said.split())
    assert "Traceback" not in said and "Error" not in said
    assert cpu < CPU_LIMIT_S
