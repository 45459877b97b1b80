"""Shared pieces of the app-level UI tests: waiting, building the app, reading the store.

Pilot tests poll with :func:`wait_until` instead of sleeping a fixed time, so a
slow machine only makes them slower, never flaky. Snapshot tests run the app
through ``snap_compare`` (which owns its own event loop), so their demo server
runs in a thread: :func:`thread_server`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from selfref_tui.config import AppConfig, ProviderConfig
from selfref_tui.config_load import load_config
from selfref_tui.demo.script import Script
from selfref_tui.demo.server import DemoServer
from selfref_tui.ui.app import SelfRefApp
from tests.agent.helpers import STALL_PATIENCE_S, Budget
from tests.selfref.helpers import reading

SIZE = (120, 40)

TWO_REFS = (
    "Two ways:\n\n"
    '<ref id="fib_recursive">\n```python\ndef fib(n):\n'
    "    return n if n < 2 else fib(n - 1) + fib(n - 2)\n```\n</ref>\n\n"
    '<ref id="fib_iterative">\n```python\ndef fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n'
    "        a, b = b, a + b\n    return a\n```\n</ref>\n"
    "Both return the n-th number."
)

#: nothing listens on the discard port: a provider that is down, with a URL that never changes
DOWN_URL = "http://127.0.0.1:9/v1"

#: the arguments of a demo model's `compact` call
COMPACT_SUMMARY = {
    "goal": "Test compaction",
    "instruction": "Be brief",
    "discoveries": ["d1"],
    "completed": ["c1"],
    "current_status": "summarised",
    "likely_next_work": "continue",
    "relevant_files_directories": [],
    "remember": [],
}


def fixed_clock() -> float:
    """A clock that never moves: elapsed times and tokens/s render the same every run."""
    return 1000.0


async def wait_until(
    pilot, predicate: Callable[[], object], timeout: float = 10.0, what: str = ""
) -> None:
    """Let the app run until ``predicate()`` is true; fail with ``what`` past the budget.

    It also waits for the screen on top to be set up (:func:`screen_set_up`): a
    wait for a dialog is true as soon as the dialog is pushed, before it has its
    widgets, and a key pressed or a widget read then misses it.

    ``timeout`` counts CPU seconds of this process (the app, its threads and the
    in-process demo server), not wall time (:class:`~tests.agent.helpers.Budget`):
    at load 20 on two cores the app's start-up took more than 20 s of wall time.
    A wait that burns no CPU still fails, after ``HANG_FACTOR`` times ``timeout``
    of wall time.
    """
    budget = Budget(timeout)
    while not (predicate() and screen_set_up(pilot.app)):
        if budget.spent():
            raise AssertionError(f"timed out waiting for {what or predicate}")
        await pilot.pause(0.02)


def screen_set_up(app) -> bool:
    """The screen on top has composed and mounted its widgets.

    ``push_screen`` puts a screen on top at once and sets it up in later passes
    of the event loop; on a loaded machine a test saw the new screen by name and
    found no ``Input`` in it, or an empty list its ``on_mount`` fills.
    """
    stack = app.screen_stack
    return not stack or stack[-1].is_mounted


async def click(pilot, target, offset: tuple[int, int] = (0, 0), what: str = "") -> bool:
    """Click ``target`` (a widget or a selector) once the screen has placed it.

    ``Pilot.click`` aims at the region the last layout gave the widget, and the
    layout follows a change a few passes of the event loop later: a widget shown
    in the same pass (a list that filled as the app became ready) has no region
    yet, and the click lands in the screen's top-left corner instead.
    """
    widget = pilot.app.screen.query_one(target) if isinstance(target, str) else target
    await wait_until(pilot, lambda: widget.region.area, what=what or f"{widget} on screen")
    return await pilot.click(widget, offset=offset)


def working(app, group: str) -> bool:
    """A worker of ``group`` is pending or running (a finished one leaves ``app.workers``)."""
    return any(worker.group == group and not worker.is_finished for worker in app.workers)


async def workers_done(pilot, app, group: str, timeout: float = 10.0) -> None:
    """Let the app run until no worker of ``group`` is left.

    One group, never ``app.workers.wait_for_complete()``: that waits on every
    worker and raises ``WorkerCancelled`` when an exclusive one (a usage or
    token count) is cancelled by a newer one, which on a loaded machine
    happens whenever the two overlap.
    """
    await wait_until(
        pilot, lambda: not working(app, group), timeout, what=f"no {group!r} worker left"
    )


#: seconds a notification of the tests' app stays in ``app._notifications``: longer than
#: a loaded machine takes between the notice and the test's look at it
NOTICE_PATIENCE_S = 600.0


class PatientApp(SelfRefApp):
    """The app, its notifications kept until the test has looked (:data:`NOTICE_PATIENCE_S`).

    Textual drops a notification from ``app._notifications`` once its timeout
    (5–15 s) of wall time has passed. Tests read what was said from there, and on
    a loaded machine that much time went by between the notice and the look:
    "Export cancelled." was gone before the test saw it. How long a toast stays
    is not what any test is about.
    """

    def notify(self, message: str, *, timeout: float | None = None,  # type: ignore[override]
               **kwargs) -> None:
        super().notify(message, timeout=NOTICE_PATIENCE_S, **kwargs)


def make_app(
    tmp_path: Path,
    url: str,
    *,
    api_key: str = "test",
    key: str = "main",
    clock: Callable[[], float] | None = None,
    context_window: int | None = 128_000,
    mcp_config: Path | None = None,
) -> SelfRefApp:
    """The app on ``url``; ``context_window=None`` makes it ask the server
    (agent/provider/window.py); ``mcp_config`` a config.toml whose MCP servers it
    starts (and reads again on a restart).

    The provider waits as long as a person's would (:data:`STALL_PATIENCE_S`)
    for the next byte: a test holds an answer mid-stream with a ``Stall`` while
    it types, and with 5 s the client gave up first on a loaded machine. The
    stalled turn then ended in an error, the message queued for it went out as
    the next turn, and a rewind found nothing left to give back. What it says is
    kept for the test to read (:class:`PatientApp`).
    """
    provider = ProviderConfig(
        base_url=url,
        api_key=api_key,
        model="test-model",
        max_retries=0,
        timeout_s=STALL_PATIENCE_S,
        context_window=context_window,
    )
    config = AppConfig(provider=provider, data_dir=tmp_path / "data", key=key)
    if mcp_config is not None:
        config = replace(config, config_path=mcp_config, mcp_servers=load_config(
            config_path=mcp_config, env={}).mcp_servers)
    if clock is None:
        return PatientApp(config)
    return PatientApp(config, clock=clock)


async def type_and_send(pilot, text: str) -> None:
    await pilot.press(*text)
    await pilot.press("enter")


async def paste_and_send(pilot, text: str) -> None:
    """``text`` pasted into the empty input (as a terminal delivers a paste), then Enter.

    For a long line whose typing is not what a test is about: each key of a
    path is a completion look-up, and typing a 400-character path took most of
    a test's time.
    """
    from textual import events

    app = pilot.app
    app.post_message(events.Paste(text))
    await wait_until(pilot, lambda: app.chat_input.text == text, what="the paste in the input")
    await pilot.press("enter")


def idle(app: SelfRefApp) -> bool:
    return (
        app.router is not None
        and not app.router.busy
        and not app._events
        and app.transcript.settled
    )


async def started(pilot, app: SelfRefApp, timeout: float = 20.0) -> None:
    """Booted: the runtime imported (a thread, slow on a loaded machine) and the key open."""
    try:
        await wait_until(
            pilot, lambda: app.ready and app.header.status == "ready", timeout, what="app ready"
        )
    except AssertionError as exc:
        raise AssertionError(
            f"{exc}; header {app.header.status!r}, key error {app.key_error!r}"
        ) from None


async def turn_done(pilot, app: SelfRefApp, status: str = "ready", timeout: float = 10.0) -> None:
    try:
        await wait_until(
            pilot,
            lambda: idle(app) and app.header.status == status,
            timeout,
            what=f"status {status}",
        )
    except AssertionError as exc:
        router = app.router
        raise AssertionError(
            f"{exc}; header {app.header.status!r}, router busy "
            f"{router.busy if router else None}, events waiting {len(app._events)}, "
            f"transcript settled {app.transcript.settled}"
        ) from None


def stored(tmp_path: Path, key: str = "main") -> list[dict]:
    """The key's working messages, read back read-only (the app must have released it)."""
    with reading(tmp_path / "data", key) as memory:
        return memory.messages


def stored_experiences(tmp_path: Path, key: str = "main") -> list[dict]:
    with reading(tmp_path / "data", key) as memory:
        return memory.experiences


@contextmanager
def thread_server(script: Script, **kwargs) -> Iterator[str]:
    """A demo server on its own loop in a thread, for apps run by ``snap_compare``."""
    server = DemoServer(script, **kwargs)
    url = server.start_in_thread()
    try:
        yield url
    finally:
        server.stop_thread()


def steady_durations(app: SelfRefApp, seconds: float = 0.01) -> None:
    """Tool durations are measured by the runtime; pin them so a snapshot does not drift."""
    for card in app.transcript.items_of("tool"):
        if card.duration_s is not None:
            card.duration_s = seconds
            card.touch()
    app.transcript.redraw()


async def steady_usage(pilot, app: SelfRefApp) -> None:
    """Wait for the exact token count once tiktoken is loaded, so the meter shows one figure.

    The runtime estimates (chars/4) until its encoder has loaded in a thread; which
    figure the meter shows last depends on that race unless we wait it out.
    """
    agent = app.agent
    await wait_until(pilot, lambda: agent.tokens.ready, timeout=30, what="tiktoken loaded")
    _messages, tokens = agent.preview(app.key)
    app._refresh_usage()
    await wait_until(pilot, lambda: app.sidebar.meter.tokens == tokens, what="exact token count")


class FakeClock:
    """A clock that stands still until a test moves ``now`` (widgets take ``clock=``)."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
