"""SVG snapshots of the states a person judges the app by.

Kept steady on purpose: a fixed 120x40 terminal, no cursor blink (the app turns
it off when headless), a clock that never moves (elapsed times and tokens/s
render the same), scripted answers, tool durations pinned, and no temporary
path on screen. Regenerate after a deliberate UI change with
``pytest tests/ui/test_snapshots.py --snapshot-update`` and look at the SVGs.

``snap_compare`` runs the app on its own event loop, so these tests are plain
functions and the demo server runs in a thread.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from pathlib import Path

import pytest

from selfref_tui.config import AppConfig
from selfref_tui.context.mutations import ExperienceRememberMutation, UserMessageMutation
from selfref_tui.demo.script import DEMO_SCRIPT, Reply, Stall
from selfref_tui.selfref.reference import SelfReference
from selfref_tui.ui.app import SelfRefApp
from tests.ui.helpers import (
    DOWN_URL,
    SIZE,
    TWO_REFS,
    fixed_clock,
    make_app,
    started,
    steady_durations,
    steady_usage,
    thread_server,
    turn_done,
    type_and_send,
    wait_until,
)

EXPERIENCES = (
    "The person prefers Python with type hints.",
    "Tests run with pytest -q; keep them fast.",
    "Answer briefly; show code in refs.",
)


def test_welcome_screen(snap_compare, tmp_path, monkeypatch):
    # The welcome screen names the config file; show the usual one, not a temporary path.
    monkeypatch.setenv("SELFREF_CONFIG", "/home/you/.config/selfref-tui/config.toml")
    app = SelfRefApp(AppConfig(data_dir=tmp_path / "data", unconfigured=True), clock=fixed_clock)

    async def run_before(pilot) -> None:
        await wait_until(pilot, lambda: type(app.screen).__name__ == "WelcomeScreen")

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


async def ask_for_two_refs(pilot, app) -> None:
    """Start, ask the scripted TWO_REFS answer, and wait for its turn to end."""
    await started(pilot, app)
    await type_and_send(pilot, "write fibonacci two ways")
    await turn_done(pilot, app)


def test_streamed_answer_with_two_refs(snap_compare, tmp_path):
    with thread_server([Reply(text=TWO_REFS, chunk_chars=7)]) as url:
        app = make_app(tmp_path, url, clock=fixed_clock)

        async def run_before(pilot) -> None:
            await ask_for_two_refs(pilot, app)
            await wait_until(pilot, lambda: len(app.sidebar.ref_list.refs) == 2, what="refs")
            await steady_usage(pilot, app)

        assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_streamed_answer_at_80_columns(snap_compare, tmp_path):
    """The narrow layout: no sidebar, and a compact footer whose keys all fit (Keys, Help)."""
    with thread_server([Reply(text=TWO_REFS, chunk_chars=7)]) as url:
        app = make_app(tmp_path, url, clock=fixed_clock)

        async def run_before(pilot) -> None:
            await ask_for_two_refs(pilot, app)
            await steady_usage(pilot, app)

        assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


@pytest.fixture
def utc_clock():
    """Local time is UTC for the test: times shown in the machine's zone render the same."""
    saved = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    yield
    if saved is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = saved
    time.tzset()


def test_sidebar_with_experiences(snap_compare, tmp_path, utc_clock):
    store = SelfReference(tmp_path / "data")
    memory = store.open("main")
    # where each came from (shown in the machine's zone: UTC here, see utc_clock)
    sources = [("agent", 2, "2026-11-26T13:58:00+00:00"),
               ("person", 0, "2026-11-26T14:02:00+00:00"), ("", 0, "")]
    memory.commit([ExperienceRememberMutation(text, *source)
                   for text, source in zip(EXPERIENCES, sources, strict=True)])
    memory.commit([UserMessageMutation({"role": "user", "content": "What do you remember?"})])
    store.close()
    with thread_server([]) as url:
        app = make_app(tmp_path, url, clock=fixed_clock)

        async def run_before(pilot) -> None:
            await started(pilot, app)
            experiences = app.sidebar.experience_list
            await wait_until(pilot, lambda: len(experiences.experiences) == 3, what="experiences")
            await wait_until(pilot, lambda: app.sidebar.meter.window > 0, what="token count")
            experiences.option_list.focus()
            await pilot.press("down")

        assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def _two_finished_forks(app):
    """The demo's two forks, finished, and the panel shown again (ctrl+t)."""

    async def run_before(pilot) -> None:
        await started(pilot, app)
        await type_and_send(pilot, "fork two helpers")
        await turn_done(pilot, app, timeout=30)
        panel = app.fork_panel
        await wait_until(
            pilot,
            lambda: (
                len(panel.forks) == 2
                and all(f["status"] in ("completed", "done") for f in panel.forks)
            ),
            timeout=30,
            what="two finished forks",
        )
        await wait_until(pilot, lambda: not panel.display, what="the panel gone by itself")
        await pilot.press("ctrl+t")  # the person looks at the forks again
        steady_durations(app)
        await steady_usage(pilot, app)

    return run_before


def test_fork_panel_with_two_forks(snap_compare, tmp_path):
    """The tasks take what "✓ done" leaves of the panel's width, cut with "…"."""
    with thread_server(DEMO_SCRIPT) as url:
        app = make_app(tmp_path, url, clock=fixed_clock)
        assert snap_compare(app, terminal_size=SIZE, run_before=_two_finished_forks(app))


def test_fork_panel_at_80x24(snap_compare, tmp_path):
    with thread_server(DEMO_SCRIPT) as url:
        app = make_app(tmp_path, url, clock=fixed_clock)
        assert snap_compare(app, terminal_size=(80, 24), run_before=_two_finished_forks(app))


def test_export_dialog(snap_compare, tmp_path, monkeypatch):
    # The dialog shows the full path in the current directory: make it one that never changes.
    cwd = Path(tempfile.gettempdir()) / "selfref-snapshots"
    cwd.mkdir(exist_ok=True)
    monkeypatch.chdir(cwd)
    with thread_server([Reply(text=TWO_REFS)]) as url:
        app = make_app(tmp_path, url, clock=fixed_clock)

        async def run_before(pilot) -> None:
            await started(pilot, app)
            await type_and_send(pilot, "fib")
            await turn_done(pilot, app)
            await steady_usage(pilot, app)
            await pilot.press("ctrl+up", "ctrl+s")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "ExportDialog")

        assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_interrupted_answer(snap_compare, tmp_path):
    release = asyncio.Event()  # never set: the answer stalls until Esc
    stall = Stall(
        release,
        text_before="Here is the first half of a long answer about append-only logs. "
        "Every edit to the context is",
        text_after=" never sent",
    )
    with thread_server([stall]) as url:
        app = make_app(tmp_path, url, clock=fixed_clock)

        async def run_before(pilot) -> None:
            await started(pilot, app)
            await type_and_send(pilot, "tell me about the log")
            await wait_until(
                pilot,
                lambda: (
                    app.transcript.current is not None
                    and app.transcript.current.text.endswith("context is")
                ),
                what="partial text",
            )
            await pilot.press("escape")
            await turn_done(pilot, app, status="stopped")
            await steady_usage(pilot, app)

        assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_error_block(snap_compare, tmp_path):
    app = make_app(tmp_path, DOWN_URL, clock=fixed_clock)

    async def run_before(pilot) -> None:
        await started(pilot, app)
        await type_and_send(pilot, "are you there?")
        await wait_until(pilot, lambda: app.transcript.items_of("error"), what="error block")
        await turn_done(pilot, app, status="error")
        # The start-up check has found the server down (the header says so).
        await wait_until(pilot, lambda: app.header.provider_note, what="provider check")
        await steady_usage(pilot, app)
        # The notification toast times out; clear it so the frame does not depend on timing.
        app.clear_notifications()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_find_bar(snap_compare, tmp_path):
    """ctrl+f and "fib": every occurrence marked, the current one most, and the count."""
    with thread_server([Reply(text=TWO_REFS)]) as url:
        app = make_app(tmp_path, url, clock=fixed_clock)

        async def run_before(pilot) -> None:
            await ask_for_two_refs(pilot, app)
            await steady_usage(pilot, app)
            await pilot.press("ctrl+f", *"fib")
            bar = app.query_one("#find")
            total = sum(text.lower().count("fib") for text in ("write fibonacci two ways",
                                                                  TWO_REFS))
            await wait_until(pilot, lambda: bar.count == f"{total} of {total}", what="found")
            await pilot.press("enter")
            await wait_until(pilot, lambda: bar.count == f"{total - 1} of {total}",
                             what="the one above")

        assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_model_picker(snap_compare, tmp_path):
    """/model alone: the server's models, the one in use marked, laid out as the
    conversation switcher is (rows one column in, a line before the keys)."""
    with thread_server([], models=("big-model", "test-model")) as url:
        app = make_app(tmp_path, url, clock=fixed_clock)

        async def run_before(pilot) -> None:
            await started(pilot, app)
            await steady_usage(pilot, app)
            await type_and_send(pilot, "/model")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "ModelPicker"
                             and len(app.screen.shown) == 2, what="the picker")

        assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
