"""Child agents at work: one row per fork and the chosen fork's live transcript.

Fork events can arrive faster than the screen can mount widgets, and the
person may switch forks mid-stream. So every feed method only updates plain
data: each fork's row is a frozen :class:`ForkRow` in the ``rows`` reactive
(its watcher updates the table cells that changed), the chosen fork is the
``chosen`` reactive, and the chosen fork's text and tool lines are plain
blocks. One worker at a time reconciles the transcript with them, until it has
caught up: no fragment is written twice or lost, whatever the interleaving,
and no two reconciliations ever run at once. Text streams through
``MarkdownStream`` and gets one full render when its block ends.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.reactive import var
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import DataTable, Static
from textual.widgets.data_table import ColumnKey

from selfref_tui.safety import inert, inert_line
from selfref_tui.ui.stream_stop import stop_stream

if TYPE_CHECKING:
    from textual.widgets.markdown import MarkdownStream

FINISHED = frozenset({"completed", "done", "error", "cancelled"})
#: a tool line's statuses while its call runs
OPEN_TOOL = frozenset({"running", "started"})
#: the columns' widths but the task's: fork 7, elapsed 7 ("1h 05m"); status is as wide as
#: the widest shown ("✓ done" 6, "● running · step 12" 18, never under its heading's 6)
FORK_WIDTH, ELAPSED_WIDTH, STATUS_MIN = 7, 7, 6
#: what else a row takes: a cell of padding either side of its 4 columns, and a column
#: for the list's scrollbar past 8 forks
ROW_EXTRA = 4 * 2 + 1
#: the task's width before the panel has a size, and the least it gets in a narrow one
TASK_WIDTH = 18
TASK_MIN = 8


def format_elapsed(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, secs = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def status_content(status: str, step: int = 0) -> Content:
    if status == "completed" or status == "done":
        return Content.styled("✓ done", "$text-success")
    if status == "error":
        return Content.styled("✗ error", "$text-error")
    if status == "cancelled":
        return Content.styled("⊘ cancelled", "$text-warning")
    if status == "queued":
        return Content.styled("○ queued", "$text-muted")
    label = f"● {inert_line(status)}" + (f" · step {step}" if step else "")
    return Content.styled(label, "$text-primary")


@dataclass
class _Block:
    kind: str  # "text" | "tool"
    text: str = ""
    name: str = ""
    status: str = ""
    #: the tool call's id: two calls of one tool end each their own line
    call_id: str = ""


@dataclass(frozen=True)
class ForkRow:
    """One fork as the table shows it: a value, so a change is seen by comparing rows."""

    fork_id: str
    child_key: str
    task: str
    status: str = "queued"
    step: int = 0
    started: float | None = None
    ended: float | None = None
    #: a fork read back from the store: its time span as recorded
    fixed_elapsed: float | None = None
    response: str = ""
    error: str | None = None

    @property
    def finished(self) -> bool:
        return self.status in FINISHED

    def elapsed(self, now: float) -> float | None:
        if self.fixed_elapsed is not None:
            return self.fixed_elapsed
        if self.started is None:
            return None
        return (self.ended if self.ended is not None else now) - self.started

    def cells(self, now: float, task_width: int = TASK_WIDTH) -> dict[str, Content | str]:
        """The row's cells, its task cut to ``task_width`` (ending in "…")."""
        return {
            # Content, never str: a DataTable parses a str cell as markup.
            "fork": Content.styled(inert_line(self.fork_id), "bold"),
            "task": Content(inert_line(self.task, task_width)),
            "status": status_content(self.status, self.step),
            "elapsed": format_elapsed(self.elapsed(now)),
        }


@dataclass
class _ViewEntry:
    widget: Widget
    rendered: int = 0  # text blocks: characters already written; tool blocks: unused
    status: str = ""


class ForkPanel(Vertical):
    """Forks table on top, the chosen fork's transcript beneath."""

    DEFAULT_CSS = """
    ForkPanel {
        height: 1fr;
        min-height: 10;
        background: $surface;
        border-top: hkey $foreground 10%;
    }
    ForkPanel > .section-title { padding: 0 1; color: $text-muted; text-style: bold; }
    ForkPanel > DataTable {
        height: auto;
        max-height: 8;
        background: transparent;
        scrollbar-size-vertical: 1;
    }
    ForkPanel > DataTable > .datatable--header { background: transparent; color: $text-muted; }
    ForkPanel > DataTable > .datatable--cursor { background: $boost; text-style: none; }
    ForkPanel > DataTable:focus > .datatable--cursor { background: $primary 30%; color: $text; }
    ForkPanel > .fork-heading {
        padding: 0 1;
        margin: 1 0;
        color: $text-muted;
        border-top: hkey $foreground 10%;
    }
    ForkPanel > #fork-transcript { height: 1fr; padding: 0 1; scrollbar-size-vertical: 1; }
    ForkPanel #fork-transcript > Markdown { margin: 0; padding: 0; background: transparent; }
    ForkPanel #fork-transcript > .fork-tool { color: $text-muted; padding: 0 0 1 0; }
    ForkPanel #fork-transcript > .fork-end { color: $text-muted; }
    ForkPanel #fork-transcript > .fork-error { color: $text-error; }
    ForkPanel #fork-transcript > .fork-placeholder { color: $text-muted; text-style: italic; }
    """

    @dataclass
    class ForkChosen(Message):
        """The person moved to another fork; its transcript is now shown."""

        fork_id: str
        child_key: str

    #: every fork of the shown key, in spawn order
    rows: var[dict[str, ForkRow]] = var(dict)
    #: the fork whose transcript is shown
    chosen: var[str | None] = var(None)
    #: "2 · 1 running", "2 · all finished · ctrl+t hides"
    figures: var[str] = var("0")
    #: the key that hides the panel, offered once every fork has finished ("": none)
    hide_key: var[str] = var("")

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._clock = clock
        #: each fork's text and tool lines, in order (appended to as they stream)
        self._blocks: dict[str, list[_Block]] = {}
        self._by_child: dict[str, str] = {}
        self._view_fork: str | None = None
        self._view: list[_ViewEntry] = []
        self._view_end: Widget | None = None
        self._placeholder: Widget | None = None
        self._stream: MarkdownStream | None = None
        #: the transcript is behind the data; the view worker clears it
        self._view_due = False
        #: the view worker is under way (it takes whatever comes due meanwhile)
        self._view_running = False
        self._ticker: Timer | None = None
        #: the task's and the status's columns' widths, as the table has them
        self._widths = (TASK_WIDTH, 18)
        # is_mounted only turns true after on_mount returns; this is set inside it.
        self._ready = False

    def compose(self) -> ComposeResult:
        yield Static("", classes="section-title")
        table: DataTable[Any] = DataTable(cursor_type="row", zebra_stripes=False)
        # Widths set here, not measured by the table from the cells: the task takes what
        # the others leave (_fit_columns), and elapsed times ticking never shift a column.
        task, status = self._widths
        table.add_column("fork", key="fork", width=FORK_WIDTH)
        table.add_column("task", key="task", width=task)
        table.add_column("status", key="status", width=status)
        table.add_column("elapsed", key="elapsed", width=ELAPSED_WIDTH)
        yield table
        yield Static("", classes="fork-heading")
        yield VerticalScroll(id="fork-transcript")

    def on_mount(self) -> None:
        self._ready = True
        self._ticker = self.set_interval(1.0, self._tick)
        self._show_rows({}, self.rows)
        self._show_figures(self.figures)
        self._schedule_sync()

    # -- typed queries ---------------------------------------------------------------
    @property
    def table(self) -> DataTable[Any]:
        return self.query_one(DataTable)

    @property
    def transcript(self) -> VerticalScroll:
        return self.query_one("#fork-transcript", VerticalScroll)

    @property
    def forks(self) -> list[dict[str, Any]]:
        """A plain snapshot, in spawn order (what tests and the app can read)."""
        now = self._clock()
        return [
            {
                "fork_id": f.fork_id,
                "child_key": f.child_key,
                "task": f.task,
                "status": f.status,
                "step": f.step,
                "elapsed": f.elapsed(now),
                "response": f.response,
                "error": f.error,
                "text": "".join(b.text for b in blocks if b.kind == "text"),
                "tools": [(b.name, b.status) for b in blocks if b.kind == "tool"],
            }
            for f in self.rows.values()
            for blocks in [self._blocks.get(f.fork_id, [])]
        ]

    # -- reactives -------------------------------------------------------------------
    @property
    def all_finished(self) -> bool:
        """There are forks, and none is still at work."""
        return bool(self.rows) and all(f.finished for f in self.rows.values())

    def compute_figures(self) -> str:
        running = sum(1 for f in self.rows.values() if not f.finished)
        if running:
            return f"{len(self.rows)} · {running} running"
        if self.rows:
            # Nothing left to watch: the panel says how to put it away.
            offer = f" · {self.hide_key} hides" if self.hide_key else ""
            return f"{len(self.rows)} · all finished{offer}"
        return "0"

    def watch_figures(self, figures: str) -> None:
        if self._ready:
            self._show_figures(figures)

    def watch_rows(self, old: dict[str, ForkRow], new: dict[str, ForkRow]) -> None:
        if self._ready:
            self._show_rows(old, new)

    def validate_chosen(self, fork_id: str | None) -> str | None:
        """Only a listed fork can be chosen (None: the panel was cleared)."""
        return fork_id if fork_id is None or fork_id in self.rows else self.chosen

    def watch_chosen(self, fork_id: str | None) -> None:
        if fork_id is None:
            return
        if self._ready:
            table = self.table
            try:
                row = table.get_row_index(fork_id)
            except Exception:
                row = None
            if row is not None and table.cursor_row != row:
                table.move_cursor(row=row)
        self.post_message(self.ForkChosen(fork_id, self.rows[fork_id].child_key))
        self._schedule_sync()

    # -- feeding ------------------------------------------------------------------------
    def _put(self, fork: ForkRow) -> None:
        """One fork's row changed: a new dict, so the watcher sees old and new."""
        self.rows = {**self.rows, fork.fork_id: fork}

    def fork_spawned(self, fork_id: str, child_key: str, task: str) -> None:
        if fork_id not in self.rows:
            self._blocks[fork_id] = []
            self._put(ForkRow(fork_id, child_key, task, status="running", started=self._clock()))
        self._by_child[child_key] = fork_id
        chosen = self.rows.get(self.chosen or "")
        if chosen is None or chosen.finished:
            # Follow the work: a fork spawned in a later turn replaces a finished one
            # on screen (the person's pick among running forks is kept).
            self.chosen = fork_id

    def fork_progress(self, fork_id: str, status: str, step: int = 0) -> None:
        fork = self.rows.get(fork_id)
        if fork is None or fork.finished:
            return
        started = fork.started
        if started is None and status != "queued":
            started = self._clock()
        self._put(replace(fork, status=status or fork.status, step=step or fork.step,
                          started=started))

    def fork_finished(
        self, fork_id: str, status: str, response: str = "", error: str | None = None
    ) -> None:
        fork = self.rows.get(fork_id)
        if fork is None:
            return
        self._put(
            replace(fork, status=status, response=response or "", error=error,
                    ended=self._clock())
        )
        # A call the fork never ended (its answer's stream broke mid-call, it was
        # stopped) has ended with it: its line must not say "running" for good.
        for block in self._blocks.get(fork_id, []):
            if block.kind == "tool" and block.status in OPEN_TOOL:
                block.status = "cancelled"
        if fork_id == self.chosen:
            self._schedule_sync()

    def child_text(self, child_key: str, text: str) -> None:
        fork_id = self._by_child.get(child_key)
        blocks = self._blocks.get(fork_id or "")
        if blocks is None or not text:
            return
        if blocks and blocks[-1].kind == "text":
            blocks[-1].text += text
        else:
            blocks.append(_Block("text", text=text))
        if fork_id == self.chosen:
            self._schedule_sync()

    def child_tool(self, child_key: str, name: str, status: str, call_id: str = "") -> None:
        """A child's tool call started ("running") or ended ("done", "error", ...).

        The end finds its line by the call's id (by the tool's name when there is
        none): two calls of one tool that end in another order each end their own.
        """
        fork_id = self._by_child.get(child_key)
        blocks = self._blocks.get(fork_id or "")
        if blocks is None:
            return
        open_block = next(
            (
                b
                for b in reversed(blocks)
                if b.kind == "tool" and b.status in OPEN_TOOL and b.call_id == call_id
                and (call_id or b.name == name)
            ),
            None,
        )
        if open_block is not None and status not in OPEN_TOOL:
            open_block.status = status
        else:
            blocks.append(_Block("tool", name=name, status=status, call_id=call_id))
        if fork_id == self.chosen:
            self._schedule_sync()

    def load_forks(self, forks: Iterable[Mapping[str, Any]]) -> None:
        """Show forks recorded in the store (``MemoryKey.forks`` values)."""
        rows = dict(self.rows)
        for record in forks:
            fork_id = str(record.get("fork_id") or "")
            if not fork_id or fork_id in rows:
                continue
            fork = ForkRow(
                fork_id,
                str(record.get("child_key") or ""),
                str(record.get("task") or ""),
                status=str(record.get("status") or "completed"),
                response=str(record.get("response") or ""),
                error=record.get("error"),
                fixed_elapsed=_iso_span(record.get("created"), record.get("updated")),
            )
            self._blocks[fork_id] = [_Block("text", text=fork.response)] if fork.response else []
            rows[fork_id] = fork
            self._by_child[fork.child_key] = fork_id
        self.rows = rows
        if self.chosen is None and rows:
            self.chosen = next(iter(rows))

    def clear(self) -> None:
        """Forget every fork (the app switched to another memory key)."""
        self._blocks.clear()
        self._by_child.clear()
        self.chosen = None
        self.rows = {}
        self._schedule_sync()

    # -- table ----------------------------------------------------------------------------
    def on_resize(self) -> None:
        # _show_rows fits the columns and, if their widths changed, gives every cell
        # again with the table's size measured anew (widths set alone left the table
        # scrolling over the width it had)
        if self._ready and self.rows:
            self._show_rows(self.rows, self.rows)

    def _fit_columns(self) -> bool:
        """Give the task column what the others leave of the panel's width: True when the
        widths changed (every task is then cut again).

        The status column is as wide as the widest status shown, and does not
        narrow while a fork still runs (a step going from 12 to 9 would shift the
        task's end back and forth); once all have finished it fits what they say.
        """
        rows = self.rows.values()
        status = max([STATUS_MIN, *(status_content(f.status, f.step).cell_length
                                    for f in rows)])
        if any(not f.finished for f in rows):
            status = max(status, self._widths[1])
        room = self.content_size.width or 59  # before the first layout: 60 less the border
        task = max(TASK_MIN, room - ROW_EXTRA - FORK_WIDTH - ELAPSED_WIDTH - status)
        if (task, status) == self._widths:
            return False
        self._widths = task, status
        columns = self.table.columns
        columns[ColumnKey("task")].width = task
        columns[ColumnKey("status")].width = status
        return True

    def _show_rows(self, old: Mapping[str, ForkRow], new: Mapping[str, ForkRow]) -> None:
        """Only the rows that changed, and in them only the cells that changed (every
        row's when the columns' widths changed: each task is cut again)."""
        table = self.table
        if not new:
            table.clear()
            return
        refit = self._fit_columns()
        if refit:
            old = {}
        now, width = self._clock(), self._widths[0]
        for fork_id, fork in new.items():
            if old.get(fork_id) == fork and fork_id in table.rows:
                continue
            cells = fork.cells(now, width)
            if fork_id in table.rows:
                before = old.get(fork_id)
                shown = before.cells(now, width) if before is not None else {}
                for column, value in cells.items():
                    if column == "elapsed" or shown.get(column) != value:
                        # the new widths measured with the cells (the table's size)
                        table.update_cell(fork_id, column, value, update_width=refit)
            else:
                table.add_row(*cells.values(), key=fork_id)
                if fork_id == self.chosen:
                    table.move_cursor(row=table.get_row_index(fork_id))

    def _show_figures(self, figures: str) -> None:
        self.query_one(".section-title", Static).update(
            Content.assemble("FORKS ", (figures, "$text-muted"))
        )

    def _tick(self) -> None:
        now = self._clock()
        table = self.table
        for fork in self.rows.values():
            if not fork.finished and fork.fork_id in table.rows:
                table.update_cell(fork.fork_id, "elapsed", format_elapsed(fork.elapsed(now)))

    @on(DataTable.RowHighlighted)
    def _row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        key = event.row_key.value if event.row_key is not None else None
        if key:
            self.chosen = key

    @on(DataTable.RowSelected)
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()

    # -- transcript reconciliation ---------------------------------------------------------
    def _schedule_sync(self) -> None:
        self._view_due = True
        if self._ready and not self._view_running:
            self._view_running = True
            self._sync_view()

    @work(group="fork-view")
    async def _sync_view(self) -> None:
        """The panel's one reconciler: passes until the transcript has caught up, then ends.

        A worker per burst rather than a scheduled call per change: a burst of
        events becomes one pass, and two passes never interleave (two did, and left
        the "no forks yet" placeholder under a running fork's transcript). It ends
        when nothing is due, so waiting for the app's workers never waits on it.
        """
        try:
            while self._view_due:
                self._view_due = False
                await self._reconcile()
        finally:
            self._view_running = False

    async def _end_stream(self) -> None:
        """Stop the live text block and give it one full, exact render."""
        if self._stream is None:
            return
        stream, self._stream = self._stream, None
        await stop_stream(stream)  # the full render below covers what it left
        from textual.widgets import Markdown  # imported: a stream was running

        entry = next((e for e in reversed(self._view) if isinstance(e.widget, Markdown)), None)
        blocks = self._blocks.get(self._view_fork or "", [])
        if entry is not None:
            index = self._view.index(entry)
            if index < len(blocks):
                await entry.widget.update(inert(blocks[index].text))  # type: ignore[attr-defined]

    async def _reconcile(self) -> None:
        transcript = self.transcript
        fork = self.rows.get(self.chosen or "")
        if fork is None and self.rows:
            self.chosen = next(reversed(self.rows))  # never "no forks" beside a listed one
            fork = self.rows.get(self.chosen or "")
        if fork is None or fork.fork_id != self._view_fork:
            await self._end_stream()
            await transcript.remove_children()
            transcript.anchor(False)
            transcript.scroll_home(animate=False, immediate=True)
            self._view = []
            self._view_end = None
            self._placeholder = None
            self._view_fork = fork.fork_id if fork else None
            heading = self.query_one(".fork-heading", Static)
            heading.display = fork is not None
            if fork is None:
                heading.update("")
                self._placeholder = Static(
                    "Forks the agent spawns appear here.", classes="fork-placeholder"
                )
                await transcript.mount(self._placeholder)
                return
            heading.update(
                Content.assemble(
                    (inert_line(fork.fork_id), "bold $text-primary"), "  ",
                    (inert(fork.task), "italic"),
                )
            )
        blocks = self._blocks.get(fork.fork_id, [])
        for index, block in enumerate(blocks):
            if index < len(self._view):
                await self._update_entry(self._view[index], block)
                continue
            await self._end_stream()
            await self._remove_placeholder()
            # The entry records what its widget is given, before any await: a block
            # that changes while the widget mounts (a tool that ends, text that
            # streams on) must differ from its entry, or the next pass skips it.
            if block.kind == "text":
                from textual.widgets import Markdown  # not at import: most runs have no forks

                text = block.text
                if index == len(blocks) - 1 and not fork.finished:
                    widget: Widget = Markdown("")
                    self._view.append(_ViewEntry(widget, rendered=len(text)))
                    await transcript.mount(widget, before=self._view_end)
                    self._stream = Markdown.get_stream(widget)  # type: ignore[arg-type]
                    await self._stream.write(inert(text))
                else:
                    widget = Markdown(inert(text))
                    self._view.append(_ViewEntry(widget, rendered=len(text)))
                    await transcript.mount(widget, before=self._view_end)
            else:
                widget = Static(_tool_line(block), classes="fork-tool")
                self._view.append(_ViewEntry(widget, status=block.status))
                await transcript.mount(widget, before=self._view_end)
        if fork.finished and self._view_end is None:
            await self._end_stream()
            await self._remove_placeholder()
            self._view_end = _end_line(fork)
            await transcript.mount(self._view_end)
        elif not fork.finished and not self._view and self._placeholder is None:
            self._placeholder = Static("Waiting for the first words…", classes="fork-placeholder")
            await transcript.mount(self._placeholder)
        self.call_after_refresh(self._maybe_anchor)

    def _maybe_anchor(self) -> None:
        """Stick to the bottom only once there is something below the fold."""
        transcript = self.transcript
        if not transcript.is_anchored and transcript.max_scroll_y > 0:
            transcript.anchor()

    async def _update_entry(self, entry: _ViewEntry, block: _Block) -> None:
        if block.kind == "text" and len(block.text) > entry.rendered:
            fragment = block.text[entry.rendered :]
            entry.rendered = len(block.text)
            if self._stream is not None and entry is self._view[-1]:
                await self._stream.write(inert(fragment))
            else:
                await entry.widget.update(inert(block.text))  # type: ignore[attr-defined]
        elif block.kind == "tool" and block.status != entry.status:
            entry.status = block.status
            entry.widget.update(_tool_line(block))  # type: ignore[attr-defined]

    async def _remove_placeholder(self) -> None:
        if self._placeholder is not None:
            placeholder, self._placeholder = self._placeholder, None
            await placeholder.remove()


def _tool_line(block: _Block) -> Content:
    marks = {"running": "…", "started": "…", "done": "✓", "ok": "✓", "error": "✗",
             "cancelled": "⊘"}
    mark = marks.get(block.status, "·")
    style = "$text-error" if block.status == "error" else "$text-muted"
    return Content.assemble(
        ("⚙ ", "$text-primary"),
        (inert_line(block.name, 80), "bold"),
        (f"  {mark} {inert_line(block.status)}", style),
    )


def _end_line(fork: ForkRow) -> Widget:
    if fork.error:
        return Static(Content(f"✗ {inert(fork.error)}"), classes="fork-end fork-error")
    label = {"completed": "finished", "done": "finished"}.get(fork.status, fork.status)
    return Static(Content(f"── {inert_line(label)} ──"), classes="fork-end")


def _iso_span(created: object, updated: object) -> float | None:
    try:
        start = datetime.fromisoformat(str(created))
        end = datetime.fromisoformat(str(updated))
    except ValueError:
        return None
    return max(0.0, (end - start).total_seconds())
