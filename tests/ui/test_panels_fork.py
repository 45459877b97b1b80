"""Pilot tests for the fork panel: rows, statuses, elapsed time and live transcripts."""

from __future__ import annotations

import asyncio

import pytest
from textual import on
from textual.app import App, ComposeResult
from textual.widgets import Markdown, Static

from selfref_tui.ui.widgets.fork_panel import ForkPanel, format_elapsed
from tests.ui.helpers import FakeClock, wait_until, workers_done


class ForkApp(App):
    def __init__(self) -> None:
        super().__init__()
        self.clock = FakeClock(500.0)
        self.chosen: list[str] = []

    def compose(self) -> ComposeResult:
        yield ForkPanel(clock=self.clock)

    @on(ForkPanel.ForkChosen)
    def _chosen(self, event: ForkPanel.ForkChosen) -> None:
        self.chosen.append(event.fork_id)


def _cells(panel: ForkPanel, fork_id: str) -> list[str]:
    return [str(cell) for cell in panel.table.get_row(fork_id)]


def _markdown_text(panel: ForkPanel) -> str:
    return "".join(md.source for md in panel.transcript.query(Markdown))


async def test_rows_status_and_elapsed():
    app = ForkApp()
    async with app.run_test(size=(100, 30)) as pilot:
        panel = app.query_one(ForkPanel)
        panel.fork_spawned("fork_1", "main::fork::1", "Write fib")
        panel.fork_spawned("fork_2", "main::fork::2", "Summarise README")
        await pilot.pause()
        assert panel.table.row_count == 2
        assert panel.chosen == "fork_1"
        panel.fork_progress("fork_2", "tool", 3)
        app.clock.now += 65
        panel._tick()
        assert "tool · step 3" in _cells(panel, "fork_2")[2]
        assert _cells(panel, "fork_2")[3] == "1m 05s"

        panel.fork_finished("fork_2", "completed", "README summary")
        app.clock.now += 100  # a finished fork's elapsed time stops
        panel._tick()
        assert _cells(panel, "fork_2")[2] == "✓ done"
        assert _cells(panel, "fork_2")[3] == "1m 05s"
        assert _cells(panel, "fork_1")[3] == "2m 45s"
        # Finished forks stay listed.
        assert panel.table.row_count == 2
        panel.fork_finished("fork_1", "error", "", "rate limited")
        await pilot.pause()
        assert _cells(panel, "fork_1")[2] == "✗ error"
        errors = [str(w.render()) for w in panel.transcript.query(".fork-error").results(Static)]
        assert errors == ["✗ rate limited"]


def _tool_lines(panel: ForkPanel) -> list[str]:
    return [str(w.render()) for w in panel.transcript.query(".fork-tool").results(Static)]


async def _shows(pilot, panel: ForkPanel, predicate, what: str) -> None:
    """Wait for the panel's view worker (and its Markdown stream) to show ``what``.

    The transcript is reconciled by a worker that mounts widgets and writes to a
    MarkdownStream, whose own task appends: how many passes of the event loop
    that takes depends on the machine's load, so a fixed number of pauses
    does not do.
    """
    try:
        await wait_until(pilot, predicate, what=what)
    except AssertionError as exc:
        raise AssertionError(
            f"{exc}; text {_markdown_text(panel)!r}, tools {_tool_lines(panel)}"
        ) from None


async def test_live_transcript_follows_chosen_fork():
    app = ForkApp()
    async with app.run_test(size=(100, 30)) as pilot:
        panel = app.query_one(ForkPanel)
        panel.fork_spawned("fork_1", "k::fork::1", "one")
        panel.fork_spawned("fork_2", "k::fork::2", "two")
        panel.child_text("k::fork::1", "Hello ")
        panel.child_text("k::fork::2", "Other child")
        panel.child_text("k::fork::1", "world")
        await _shows(pilot, panel, lambda: _markdown_text(panel) == "Hello world",
                     "fork_1's text")

        panel.child_tool("k::fork::1", "read_fd", "running")
        await _shows(pilot, panel, lambda: _tool_lines(panel), "the tool line")
        tools = _tool_lines(panel)
        assert len(tools) == 1 and "read_fd" in tools[0] and "running" in tools[0]
        panel.child_tool("k::fork::1", "read_fd", "done")
        panel.child_text("k::fork::1", "\n\nDone.")
        await _shows(pilot, panel, lambda: "Done." in _markdown_text(panel), "Done.")
        await _shows(pilot, panel, lambda: "running" not in _tool_lines(panel)[0],
                     "the tool's end")
        tools = _tool_lines(panel)
        assert len(tools) == 1 and "done" in tools[0]

        # The person moves to fork_2: its own text, nothing of fork_1.
        panel.table.focus()
        await pilot.press("down")
        await _shows(pilot, panel, lambda: app.chosen == ["fork_1", "fork_2"], "fork_2 chosen")
        assert panel.chosen == "fork_2"
        await _shows(pilot, panel, lambda: "Done." not in _markdown_text(panel),
                     "fork_1's text gone")
        await _shows(pilot, panel, lambda: _markdown_text(panel), "fork_2's text")
        assert _markdown_text(panel) == "Other child"
        # Text for a fork that is not shown is kept and appears when chosen again.
        panel.child_text("k::fork::1", " More.")
        await pilot.press("up")
        await _shows(pilot, panel, lambda: _markdown_text(panel).endswith("Done. More."),
                     "fork_1's text again, with what came meanwhile")
        assert panel.forks[0]["tools"] == [("read_fd", "done")]


async def test_each_call_ends_its_own_line_and_a_fork_that_ends_ends_its_calls():
    app = ForkApp()
    async with app.run_test(size=(100, 30)) as pilot:
        panel = app.query_one(ForkPanel)
        panel.fork_spawned("fork_1", "k::fork::1", "one")
        # Two calls of one tool, ending in the other order: each ends its own line.
        panel.child_tool("k::fork::1", "read_fd", "running", "call_1")
        panel.child_tool("k::fork::1", "read_fd", "running", "call_2")
        panel.child_tool("k::fork::1", "read_fd", "error", "call_1")
        assert panel.forks[0]["tools"] == [("read_fd", "error"), ("read_fd", "running")]
        # The fork ends (stopped) while the second runs: that call ended with it.
        panel.fork_finished("fork_1", "cancelled", "", "stopped")
        assert panel.forks[0]["tools"] == [("read_fd", "error"), ("read_fd", "cancelled")]
        await _shows(pilot, panel, lambda: len(_tool_lines(panel)) == 2, "both lines")
        await workers_done(pilot, app, "fork-view")
        assert _tool_lines(panel) == ["⚙ read_fd  ✗ error", "⚙ read_fd  ⊘ cancelled"]


async def test_what_changes_while_a_line_mounts_is_shown():
    """A tool that ends, or text that streams on, while its widget is being mounted.

    The view worker awaits each mount; an event handled meanwhile changes the
    block the new widget was made from, and the next pass must still see that
    change (it saw none, and the line said "running" for good).
    """
    app = ForkApp()
    async with app.run_test(size=(100, 30)) as pilot:
        panel = app.query_one(ForkPanel)
        panel.fork_spawned("fork_1", "k::fork::1", "one")
        transcript = panel.transcript
        mount = transcript.mount

        def mount_then_feed(*widgets, **kwargs):
            awaited = mount(*widgets, **kwargs)
            if any(widget.has_class("fork-tool") for widget in widgets):
                panel.child_tool("k::fork::1", "read_fd", "done")
            elif any(isinstance(widget, Markdown) for widget in widgets):
                panel.child_text("k::fork::1", " and more")
            return awaited

        transcript.mount = mount_then_feed
        panel.child_text("k::fork::1", "Start")
        await _shows(pilot, panel, lambda: _markdown_text(panel) == "Start and more",
                     "the text that came while its block mounted")
        panel.child_tool("k::fork::1", "read_fd", "running")
        await _shows(pilot, panel, lambda: _tool_lines(panel), "the tool line")
        await workers_done(pilot, app, "fork-view")
        assert _tool_lines(panel) == ["⚙ read_fd  ✓ done"]


async def test_finished_fork_renders_final_text_once():
    app = ForkApp()
    async with app.run_test(size=(100, 30)) as pilot:
        panel = app.query_one(ForkPanel)
        panel.fork_spawned("fork_1", "k::fork::1", "code")
        for part in ["```python\n", "def f():\n", "    return 1\n", "```\n"]:
            panel.child_text("k::fork::1", part)
            await pilot.pause()
        panel.fork_finished("fork_1", "completed", "done")

        def ends() -> list[str]:
            return [str(w.render()) for w in panel.transcript.query(".fork-end").results(Static)]

        await _shows(pilot, panel, ends, "the end line")
        await workers_done(pilot, app, "fork-view")
        assert _markdown_text(panel) == "```python\ndef f():\n    return 1\n```\n"
        assert ends() == ["── finished ──"]


async def test_load_forks_from_store_records():
    app = ForkApp()
    async with app.run_test(size=(100, 30)) as pilot:
        panel = app.query_one(ForkPanel)
        panel.load_forks(
            [
                {
                    "fork_id": "fork_1",
                    "child_key": "main::fork::1",
                    "task": "Old task",
                    "status": "completed",
                    "response": "The answer.",
                    "created": "2025-01-01T10:00:00+00:00",
                    "updated": "2025-01-01T10:00:42+00:00",
                }
            ]
        )
        await _shows(pilot, panel, lambda: _markdown_text(panel) == "The answer.",
                     "the stored fork's answer")
        assert _cells(panel, "fork_1")[3] == "42s"


def test_elapsed_format():
    assert format_elapsed(None) == "—"
    assert format_elapsed(9.7) == "9s"
    assert format_elapsed(3725) == "1h 02m"


def _placeholder_texts(panel: ForkPanel) -> list[str]:
    return [str(w.render()) for w in panel.transcript.query(".fork-placeholder")]


async def test_the_detail_follows_a_fork_spawned_in_a_later_turn():
    app = ForkApp()
    async with app.run_test(size=(100, 30)) as pilot:
        panel = app.query_one(ForkPanel)
        panel.fork_spawned("fork_1", "main::fork::1", "First turn's task")
        panel.fork_finished("fork_1", "completed", "done long ago")
        await pilot.pause()
        panel.fork_spawned("fork_2", "main::fork::2", "Second turn's task")
        await pilot.pause()
        assert panel.chosen == "fork_2"

        def heading() -> str:
            return " ".join(str(w.render()) for w in panel.query(".fork-heading").results(Static))

        await _shows(pilot, panel, lambda: "fork_2" in heading(), "the second fork's heading")
        assert "Second turn" in heading()
        # A running fork the person is watching is not taken away by the next spawn.
        panel.fork_spawned("fork_3", "main::fork::3", "Third")
        await pilot.pause()
        assert panel.chosen == "fork_2"


async def test_the_body_never_says_no_forks_while_forks_are_listed():
    app = ForkApp()
    async with app.run_test(size=(100, 30)) as pilot:
        panel = app.query_one(ForkPanel)
        await pilot.pause()
        assert _placeholder_texts(panel) == ["Forks the agent spawns appear here."]

        # A pass over the empty panel is under way (clearing asks for one) when two
        # forks arrive: the panel's view worker takes them in its next pass.
        panel.clear()
        await asyncio.sleep(0)
        panel.fork_spawned("fork_1", "main::fork::1", "A")
        panel.fork_spawned("fork_2", "main::fork::2", "B")
        for _ in range(3):
            await pilot.pause()
        title = str(panel.query_one(".section-title", Static).render())
        assert "2 running" in title
        assert "Forks the agent spawns appear here." not in _placeholder_texts(panel)
        # Caught up, the view's worker has ended (it never runs on with nothing to do).
        await workers_done(pilot, app, "fork-view")


async def test_a_long_task_ends_in_an_ellipsis_and_the_highlighted_one_is_shown_whole():
    """The task column is cut (the panel is 60 cells wide): the cell ends in "…", takes
    the room the other columns leave, and the fork the cursor is on has its whole task
    in the heading under the list."""
    tasks = {"fork_1": "Demo fork task A: name three uses of memoization",
             "fork_2": "Demo fork task B: explain tail calls in one paragraph"}

    class Narrow(ForkApp):
        CSS = "ForkPanel { width: 60; border-left: vkey $foreground 10%; }"

    app = Narrow()
    async with app.run_test(size=(80, 24)) as pilot:
        panel = app.query_one(ForkPanel)
        for n, (fork_id, task) in enumerate(tasks.items(), 1):
            panel.fork_spawned(fork_id, f"main::fork::{n}", task)
        await pilot.pause()
        table = panel.table
        for fork_id, task in tasks.items():
            cell = _cells(panel, fork_id)[1]
            assert cell.endswith("…") and task.startswith(cell[:-1]) and len(cell) > 17
        # every column in view, with room for the list's scrollbar
        assert table.virtual_size.width + 1 <= table.scrollable_content_region.width
        heading = panel.query_one(".fork-heading", Static)
        await wait_until(pilot, lambda: tasks["fork_1"] in str(heading.render()), what="A")
        table.focus()
        await pilot.press("down")
        await wait_until(pilot, lambda: tasks["fork_2"] in str(heading.render()), what="B")


class DockedForkApp(ForkApp):
    """The panel as the app shows it: 60 columns at the right, a border on its left."""

    CSS = "ForkPanel { dock: right; width: 60; max-width: 100%; border-left: vkey $primary; }"


def _line(panel: ForkPanel, row: int) -> str:
    """What the table draws on ``row`` (0: the headings)."""
    return "".join(segment.text for segment in panel.table.render_line(row)).rstrip()


LONG_TASK = "Read the three config files and list every option that changes the model's context"


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (50, 20)], ids=["80x24", "120x40", "50x20"])
async def test_the_task_column_takes_what_the_status_leaves(size):
    """The status column was 18 cells whatever it said, so a task got 18 cells beside
    "✓ done": the status is as wide as what it says, and the task takes the rest of the
    panel (its end cut with "…"); a running fork's "step 12" is never cut."""
    app = DockedForkApp()
    async with app.run_test(size=size) as pilot:
        panel = app.query_one(ForkPanel)
        panel.fork_spawned("fork_1", "main::fork::1", LONG_TASK)
        panel.fork_spawned("fork_2", "main::fork::2", "Short one")
        panel.fork_progress("fork_1", "running", 12)
        await pilot.pause()
        inside = panel.content_size.width
        table = panel.table

        def widths() -> int:
            return sum(c.get_render_width(table) for c in table.columns.values())

        running = "● running · step 12"
        assert running in _line(panel, 1)
        assert _line(panel, 1).split(" ● ")[0].rstrip().endswith("…")
        if inside >= 59:
            assert widths() + 1 == inside  # the scrollbar's column kept, the rest used
        panel.fork_finished("fork_1", "completed", "done")
        panel.fork_finished("fork_2", "completed", "done")
        await pilot.pause()
        task = _line(panel, 1).split("✓ done")[0].split("fork_1", 1)[1].strip()
        assert task.endswith("…") and LONG_TASK.startswith(task[:-1])
        assert "Short one" in _line(panel, 2) and "✓ done" in _line(panel, 2)
        if inside >= 59:
            assert widths() + 1 == inside
            # the task got the 13 cells "● running · step 12" no longer needs
            assert len(task) == inside - 1 - 8 - 7 - 7 - len("✓ done")
        else:  # too narrow for all: the task keeps a few cells, the table scrolls sideways
            assert len(task) >= 8


async def test_a_panel_narrowed_and_widened_again_scrolls_only_over_its_columns():
    """The terminal narrowed under the panel's 60 columns, then widened: the task column
    is cut again each time, and the table's scrolled width follows its columns (it kept
    the width it had before, so a narrow panel scrolled sideways over blank cells)."""
    app = DockedForkApp()
    async with app.run_test(size=(120, 30)) as pilot:
        panel = app.query_one(ForkPanel)
        panel.fork_spawned("fork_1", "main::fork::1", LONG_TASK)
        panel.fork_finished("fork_1", "completed", "done")
        await pilot.pause()
        table = panel.table

        def columns() -> int:
            return sum(c.get_render_width(table) for c in table.columns.values())

        for width in (45, 120, 30):
            await pilot.resize_terminal(width, 30)
            await wait_until(pilot, lambda w=width: panel.content_size.width == min(59, w - 1),
                             what=f"the panel at {width} columns")
            await pilot.pause()
            assert table.virtual_size.width == columns(), width
            assert "✓ done" in _line(panel, 1) or columns() > panel.content_size.width, width
            assert table.max_scroll_x == max(0, columns() - table.scrollable_content_region.width)
