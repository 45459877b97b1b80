"""Child agents at work: one row per fork and the chosen fork's live transcript.

Fork events can arrive faster than the screen can mount widgets, and the
person may switch forks mid-stream. So every feed method only updates plain
data, and one coalesced ``_sync_view`` reconciles the transcript with it: no
fragment is written twice or lost, whatever the interleaving. Text streams
through ``MarkdownStream`` and gets one full render when its block ends.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import DataTable, Static

from selfref_tui.safety import inert, inert_line
from selfref_tui.ui.stream_stop import stop_stream

if TYPE_CHECKING:
    from textual.widgets.markdown import MarkdownStream

FINISHED = frozenset({"completed", "done", "error", "cancelled"})
TASK_WIDTH = 17  # the panel is 60 cells wide: the columns must fit without a scrollbar


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
        return Content.styled("✓ done", "$success")
    if status == "error":
        return Content.styled("✗ error", "$error")
    if status == "cancelled":
        return Content.styled("⊘ cancelled", "$warning")
    if status == "queued":
        return Content.styled("○ queued", "dim")
    label = f"● {inert_line(status)}" + (f" · step {step}" if step else "")
    return Content.styled(label, "$primary")


@dataclass
class _Block:
    kind: str  # "text" | "tool"
    text: str = ""
    name: str = ""
    status: str = ""


@dataclass
class _Fork:
    fork_id: str
    child_key: str
    task: str
    status: str = "queued"
    step: int = 0
    started: float | None = None
    ended: float | None = None
    fixed_elapsed: float | None = None
    response: str = ""
    error: str | None = None
    blocks: list[_Block] = field(default_factory=list)

    @property
    def finished(self) -> bool:
        return self.status in FINISHED

    def elapsed(self, now: float) -> float | None:
        if self.fixed_elapsed is not None:
            return self.fixed_elapsed
        if self.started is None:
            return None
        return (self.ended if self.ended is not None else now) - self.started


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
    ForkPanel > DataTable:focus > .datatable--cursor { background: $primary 30%; }
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
    ForkPanel #fork-transcript > .fork-error { color: $error; }
    ForkPanel #fork-transcript > .fork-placeholder { color: $text-disabled; text-style: italic; }
    """

    @dataclass
    class ForkChosen(Message):
        """The person moved to another fork; its transcript is now shown."""

        fork_id: str
        child_key: str

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
        self._forks: dict[str, _Fork] = {}
        self._by_child: dict[str, str] = {}
        self._chosen: str | None = None
        self._view_fork: str | None = None
        self._view: list[_ViewEntry] = []
        self._view_end: Widget | None = None
        self._placeholder: Widget | None = None
        self._stream: MarkdownStream | None = None
        self._sync_scheduled = False
        #: one reconciliation at a time: two interleaved ones left the "no forks yet"
        #: placeholder under a running fork's transcript
        self._sync_lock = asyncio.Lock()
        self._ticker: Timer | None = None
        # is_mounted only turns true after on_mount returns; this is set inside it.
        self._ready = False

    def compose(self) -> ComposeResult:
        yield Static("", classes="section-title")
        table: DataTable[Any] = DataTable(cursor_type="row", zebra_stripes=False)
        # Fixed widths: cells change as forks progress and must not shift the columns.
        table.add_column("fork", key="fork", width=7)
        table.add_column("task", key="task", width=TASK_WIDTH)
        table.add_column("status", key="status", width=18)
        table.add_column("elapsed", key="elapsed", width=7)
        yield table
        yield Static("", classes="fork-heading")
        yield VerticalScroll(id="fork-transcript")

    def on_mount(self) -> None:
        self._ready = True
        self._ticker = self.set_interval(1.0, self._tick)
        for fork in self._forks.values():
            self._upsert_row(fork)
        self._refresh_title()
        self._schedule_sync()

    # -- typed queries ---------------------------------------------------------------
    @property
    def table(self) -> DataTable[Any]:
        return self.query_one(DataTable)

    @property
    def transcript(self) -> VerticalScroll:
        return self.query_one("#fork-transcript", VerticalScroll)

    @property
    def chosen_fork_id(self) -> str | None:
        return self._chosen

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
                "text": "".join(b.text for b in f.blocks if b.kind == "text"),
                "tools": [(b.name, b.status) for b in f.blocks if b.kind == "tool"],
            }
            for f in self._forks.values()
        ]

    # -- feeding ------------------------------------------------------------------------
    def fork_spawned(self, fork_id: str, child_key: str, task: str) -> None:
        fork = self._forks.get(fork_id)
        if fork is None:
            fork = _Fork(fork_id, child_key, task, status="running", started=self._clock())
            self._forks[fork_id] = fork
        self._by_child[child_key] = fork_id
        self._upsert_row(fork)
        chosen = self._forks.get(self._chosen or "")
        if chosen is None or chosen.finished:
            # Follow the work: a fork spawned in a later turn replaces a finished one
            # on screen (the person's pick among running forks is kept).
            self.choose(fork_id)
        self._refresh_title()

    def fork_progress(self, fork_id: str, status: str, step: int = 0) -> None:
        fork = self._forks.get(fork_id)
        if fork is None or fork.finished:
            return
        fork.status = status or fork.status
        fork.step = step or fork.step
        if fork.started is None and status != "queued":
            fork.started = self._clock()
        self._upsert_row(fork)
        self._refresh_title()

    def fork_finished(
        self, fork_id: str, status: str, response: str = "", error: str | None = None
    ) -> None:
        fork = self._forks.get(fork_id)
        if fork is None:
            return
        fork.status = status
        fork.response = response or ""
        fork.error = error
        fork.ended = self._clock()
        self._upsert_row(fork)
        self._refresh_title()
        if fork_id == self._chosen:
            self._schedule_sync()

    def child_text(self, child_key: str, text: str) -> None:
        fork = self._fork_of(child_key)
        if fork is None or not text:
            return
        if fork.blocks and fork.blocks[-1].kind == "text":
            fork.blocks[-1].text += text
        else:
            fork.blocks.append(_Block("text", text=text))
        if fork.fork_id == self._chosen:
            self._schedule_sync()

    def child_tool(self, child_key: str, name: str, status: str) -> None:
        """A child's tool call started ("running") or ended ("done", "error", ...)."""
        fork = self._fork_of(child_key)
        if fork is None:
            return
        open_block = next(
            (
                b
                for b in reversed(fork.blocks)
                if b.kind == "tool" and b.name == name and b.status in ("running", "started")
            ),
            None,
        )
        if open_block is not None and status not in ("running", "started"):
            open_block.status = status
        else:
            fork.blocks.append(_Block("tool", name=name, status=status))
        if fork.fork_id == self._chosen:
            self._schedule_sync()

    def load_forks(self, forks: Iterable[Mapping[str, Any]]) -> None:
        """Show forks recorded in the store (``MemoryKey.forks`` values)."""
        for record in forks:
            fork_id = str(record.get("fork_id") or "")
            if not fork_id or fork_id in self._forks:
                continue
            fork = _Fork(
                fork_id,
                str(record.get("child_key") or ""),
                str(record.get("task") or ""),
                status=str(record.get("status") or "completed"),
                response=str(record.get("response") or ""),
                error=record.get("error"),
            )
            fork.fixed_elapsed = _iso_span(record.get("created"), record.get("updated"))
            if fork.response:
                fork.blocks.append(_Block("text", text=fork.response))
            self._forks[fork_id] = fork
            self._by_child[fork.child_key] = fork_id
            self._upsert_row(fork)
        if self._chosen is None and self._forks:
            self.choose(next(iter(self._forks)))
        self._refresh_title()

    def clear(self) -> None:
        """Forget every fork (the app switched to another memory key)."""
        self._forks.clear()
        self._by_child.clear()
        self._chosen = None
        if self._ready:
            self.table.clear()
            self._refresh_title()
            self._schedule_sync()

    def choose(self, fork_id: str) -> None:
        if fork_id not in self._forks:
            return
        changed = fork_id != self._chosen
        self._chosen = fork_id
        if self._ready:
            table = self.table
            try:
                row = table.get_row_index(fork_id)
            except Exception:
                row = None
            if row is not None and table.cursor_row != row:
                table.move_cursor(row=row)
        if changed:
            fork = self._forks[fork_id]
            self.post_message(self.ForkChosen(fork_id, fork.child_key))
        self._schedule_sync()

    # -- table ----------------------------------------------------------------------------
    def _fork_of(self, child_key: str) -> _Fork | None:
        fork_id = self._by_child.get(child_key)
        return self._forks.get(fork_id) if fork_id else None

    def _upsert_row(self, fork: _Fork) -> None:
        if not self._ready:
            return  # on_mount adds every row
        table = self.table
        cells = {
            # Content, never str: a DataTable parses a str cell as markup.
            "fork": Content.styled(inert_line(fork.fork_id), "bold"),
            "task": Content(inert_line(fork.task, TASK_WIDTH)),
            "status": status_content(fork.status, fork.step),
            "elapsed": format_elapsed(fork.elapsed(self._clock())),
        }
        if fork.fork_id in table.rows:
            for column, value in cells.items():
                table.update_cell(fork.fork_id, column, value)
        else:
            table.add_row(*cells.values(), key=fork.fork_id)
            if fork.fork_id == self._chosen:
                table.move_cursor(row=table.get_row_index(fork.fork_id))

    def _tick(self) -> None:
        now = self._clock()
        table = self.table
        for fork in self._forks.values():
            if not fork.finished and fork.fork_id in table.rows:
                table.update_cell(fork.fork_id, "elapsed", format_elapsed(fork.elapsed(now)))

    def _refresh_title(self) -> None:
        if not self._ready:
            return
        running = sum(1 for f in self._forks.values() if not f.finished)
        figures = f"{len(self._forks)}" + (f" · {running} running" if running else "")
        self.query_one(".section-title", Static).update(
            Content.assemble("FORKS ", (figures, "dim"))
        )

    @on(DataTable.RowHighlighted)
    def _row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        key = event.row_key.value if event.row_key is not None else None
        if key and key != self._chosen:
            self.choose(key)

    @on(DataTable.RowSelected)
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()

    # -- transcript reconciliation ---------------------------------------------------------
    def _schedule_sync(self) -> None:
        if self._sync_scheduled or not self._ready:
            return
        self._sync_scheduled = True
        self.call_later(self._sync_view)

    async def _end_stream(self) -> None:
        """Stop the live text block and give it one full, exact render."""
        if self._stream is None:
            return
        stream, self._stream = self._stream, None
        await stop_stream(stream)  # the full render below covers what it left
        from textual.widgets import Markdown  # imported: a stream was running

        entry = next((e for e in reversed(self._view) if isinstance(e.widget, Markdown)), None)
        fork = self._forks.get(self._view_fork or "")
        if entry is not None and fork is not None:
            index = self._view.index(entry)
            if index < len(fork.blocks):
                await entry.widget.update(inert(fork.blocks[index].text))  # type: ignore[attr-defined]

    async def _sync_view(self) -> None:
        self._sync_scheduled = False
        async with self._sync_lock:
            await self._reconcile()

    async def _reconcile(self) -> None:
        transcript = self.transcript
        fork = self._forks.get(self._chosen or "")
        if fork is None and self._forks:
            self.choose(next(reversed(self._forks)))  # never "no forks" beside a listed one
            fork = self._forks.get(self._chosen or "")
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
                    (inert_line(fork.fork_id), "bold $primary"), "  ", (inert(fork.task), "italic")
                )
            )
        for index, block in enumerate(fork.blocks):
            if index < len(self._view):
                await self._update_entry(self._view[index], block)
                continue
            await self._end_stream()
            await self._remove_placeholder()
            if block.kind == "text":
                from textual.widgets import Markdown  # not at import: most runs have no forks

                if index == len(fork.blocks) - 1 and not fork.finished:
                    widget: Widget = Markdown("")
                    await transcript.mount(widget, before=self._view_end)
                    self._stream = Markdown.get_stream(widget)  # type: ignore[arg-type]
                    await self._stream.write(inert(block.text))
                else:
                    widget = Markdown(inert(block.text))
                    await transcript.mount(widget, before=self._view_end)
                self._view.append(_ViewEntry(widget, rendered=len(block.text)))
            else:
                widget = Static(_tool_line(block), classes="fork-tool")
                await transcript.mount(widget, before=self._view_end)
                self._view.append(_ViewEntry(widget, status=block.status))
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
    marks = {"running": "…", "started": "…", "done": "✓", "ok": "✓", "error": "✗"}
    mark = marks.get(block.status, "·")
    style = "$error" if block.status == "error" else "$text-muted"
    return Content.assemble(
        ("⚙ ", "$primary"),
        (inert_line(block.name, 80), "bold"),
        (f"  {mark} {inert_line(block.status)}", style),
    )


def _end_line(fork: _Fork) -> Widget:
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
