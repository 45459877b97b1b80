"""The small process between the app and a stdio MCP server, so that none outlives the app.

A server may start helpers and exit, leave helpers behind when it is killed, or
outlive an app killed with ``kill -9`` (which runs no clean-up at all). So the
app does not start the server itself: it runs this file (``python -I -S``; the
standard library only, nothing of selfref_tui), which

- starts the server in a process group of its own, its stdin, stdout and stderr
  being the app's pipes (nothing is copied through this process); on Linux the
  server is also killed if this process is (``PR_SET_PDEATHSIG``);
- on Linux, becomes a *child subreaper* (``PR_SET_CHILD_SUBREAPER``), so a helper
  that left the group (``setsid``) and lost its parent becomes this process's
  child instead of init's, and can still be found and ended;
- holds the read end of a *lifeline* pipe whose write end only the app holds.
  The kernel closes it however the app ends (a clean exit, an exception,
  SIGTERM, ``kill -9``), and this process reads end-of-file;
- when the server exits, the lifeline ends, or it is sent SIGTERM/SIGHUP/SIGINT:
  sends SIGTERM to the server's group and to every process below it, SIGKILL to
  what is left after :data:`KILL_AFTER_S`, reaps them, and exits with the
  server's status (128 + the signal's number when a signal ended it).

The app stops a server the protocol's way first (its stdin closed, a grace
period), then closes the lifeline. When the app is quitting it writes
:data:`QUIT` on the lifeline first: the person waits for the app to go, so
SIGKILL follows SIGTERM after :data:`QUIT_KILL_AFTER_S` instead.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time
from collections.abc import Sequence

#: seconds between SIGTERM and SIGKILL for what is left of a server's processes
KILL_AFTER_S = 1.0
#: the same when the app is quitting (it said :data:`QUIT` on the lifeline)
QUIT_KILL_AFTER_S = 0.2
#: what the app writes on the lifeline before closing it when it is quitting
QUIT = b"q"
#: seconds to wait for the processes SIGKILL was sent to
REAP_S = 2.0
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
_DEFAULTS = ("SIGPIPE", "SIGXFSZ", "SIGINT", "SIGTERM", "SIGHUP", "SIGCHLD")


def supervised(command: str, args: Sequence[str], lifeline: int) -> list[str]:
    """The argv that runs ``command args`` under this supervisor (``lifeline``: its fd)."""
    return [sys.executable, "-I", "-S", __file__, str(lifeline), command, *args]


def can_supervise() -> bool:
    """POSIX; elsewhere a server runs without a supervisor."""
    return os.name == "posix" and hasattr(os, "fork")


class Supervisor:
    def __init__(self, lifeline: int, argv: list[str]) -> None:
        self.lifeline = lifeline
        self.argv = argv
        self.server = 0
        self.status: int | None = None
        self.stop = False
        self.kill_after = KILL_AFTER_S

    def run(self) -> int:
        os.set_inheritable(self.lifeline, False)
        _prctl(PR_SET_CHILD_SUBREAPER, 1)
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(sig, self._stop)
        self.server = self.spawn()
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):  # the pipes are the server's: their end must not wait for us
            os.dup2(null, fd)
        while True:
            self.reap()
            if self.status is not None or self.stop:
                break
            ready = select.select([self.lifeline, wake_r], [], [])[0]
            if wake_r in ready:
                os.read(wake_r, 512)
            if self.lifeline in ready:
                if os.read(self.lifeline, 1) == QUIT:
                    self.kill_after = QUIT_KILL_AFTER_S
                break
        self.clean_up()
        if self.status is None:
            return 0
        return self.status if self.status >= 0 else 128 - self.status

    def spawn(self) -> int:
        """The server, in a group of its own (fork + exec: it must die with us on Linux)."""
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:
            try:
                os.setpgid(0, 0)
                _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
                if os.getppid() != parent:
                    os._exit(1)
                signal.set_wakeup_fd(-1)
                for name in _DEFAULTS:
                    signal.signal(getattr(signal, name), signal.SIG_DFL)
                os.execvp(self.argv[0], self.argv)
            except OSError as exc:
                os.write(2, f"cannot run {self.argv[0]}: {exc.strerror}\n".encode())
            finally:
                os._exit(127)
        try:
            os.setpgid(pid, pid)  # also here, so the group exists before we signal it
        except OSError:
            pass
        return pid

    def _stop(self, *_: object) -> None:
        self.stop = True

    def reap(self) -> None:
        while True:
            try:
                pid, code = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.server:
                self.status = os.waitstatus_to_exitcode(code)

    def left(self) -> bool:
        """Anything of the server still running: its group, or a process below us."""
        try:
            os.killpg(self.server, 0)
        except OSError:
            return bool(_descendants())
        return True

    def signal_all(self, sig: int) -> None:
        try:
            os.killpg(self.server, sig)
        except OSError:
            pass
        for pid in _descendants():
            try:
                os.kill(pid, sig)
            except OSError:
                pass

    def clean_up(self) -> None:
        for sig, wait_s in ((signal.SIGTERM, self.kill_after), (signal.SIGKILL, REAP_S)):
            self.signal_all(sig)
            deadline = time.monotonic() + wait_s
            while time.monotonic() < deadline:
                self.reap()
                if not self.left():
                    return
                time.sleep(0.01)


def _prctl(option: int, value: int) -> None:
    """Linux's ``prctl`` (a no-op elsewhere, or where it cannot be reached)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _descendants() -> list[int]:
    """Every process below this one (Linux: from /proc; elsewhere none are known)."""
    try:
        names = [n for n in os.listdir("/proc") if n.isdigit()]
    except OSError:
        return []
    children: dict[int, list[int]] = {}
    for name in names:
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                parent = int(f.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(name))
    found: list[int] = []
    todo = [os.getpid()]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


if __name__ == "__main__":
    sys.exit(Supervisor(int(sys.argv[1]), sys.argv[2:]).run())
