"""The /mcp screen's list: servers, their errors and their tools, drawn a line at a time.

A server may offer 10,000 tools. One ``Static`` per row made the screen mount,
style and lay out 10,000 widgets before it showed anything (7.6 s; over a minute
on a busy machine). This is one Line-API widget: rows are plain ``Content``
(built inert by the screen), cut into lines once per width, and only the lines
on screen are drawn. One-line rows (tools) are cut with an ellipsis at the edge
and may be given as a function that builds their ``Content`` when first drawn;
server rows and errors wrap, since an error cut short cannot be read.

A cursor picks one server (its head row, the one with a ``key``): Up and Down
move it from server to server, scrolling its row into view, and go on scrolling
line by line past the first or last; a click on a server's lines picks it. The
screen acts on :attr:`ServerList.cursor` (the name).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.visual import Visual

#: one-line rows whose built ``Content`` is kept (the lines on screen, and then some)
KEEP_BUILT = 512


@dataclass(frozen=True, eq=False)
class ListRow:
    """One row: ``wrap`` rows take as many lines as they need, others one line.

    ``content`` is a ``Content``, or (one-line rows only) a function making it.
    """

    content: Content | Callable[[], Content]
    wrap: bool = False
    indent: int = 0
    #: the server this row heads (where the cursor goes); None for its other rows
    key: str | None = None


class ServerList(ScrollView, can_focus=True):
    """Scrolls with the keys and the wheel; draws only the lines it shows."""

    DEFAULT_CSS = """
    ServerList { height: auto; max-height: 100%; padding: 0 1; overflow-x: hidden; }
    /* a tint under the row's own colours (a server's state, its command): the theme's
       strong cursor colour left them unreadable (1.0:1 on rose-pine-dawn) */
    ServerList > .server-list--cursor { background: $primary 10%; }
    ServerList:focus > .server-list--cursor { background: $primary 20%; }
    """
    COMPONENT_CLASSES: ClassVar[set[str]] = {"server-list--cursor"}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor(-1)", "Previous server", show=False),
        Binding("down", "cursor(1)", "Next server", show=False),
    ]

    def __init__(self, rows: Sequence[ListRow], *, id: str | None = None,
                 cursor: str | None = None) -> None:
        """``cursor``: the server first picked (the first one when None or not listed)."""
        super().__init__(id=id)
        self.rows: list[ListRow] = []
        self._lines: dict[int, list[tuple[int, Content | ListRow, int]]] = {}
        self._built: OrderedDict[int, Content] = OrderedDict()
        #: the picked server's name (None: no server listed)
        self.cursor: str | None = None
        self._take(rows, cursor)

    def _take(self, rows: Sequence[ListRow], cursor: str | None) -> None:
        self.rows = list(rows)
        self._lines.clear()
        self._built.clear()
        keys = self.keys()
        self.cursor = cursor if cursor in keys else (keys[0] if keys else None)

    def keys(self) -> list[str]:
        """The servers listed, in order."""
        return [row.key for row in self.rows if row.key is not None]

    def set_rows(self, rows: Sequence[ListRow]) -> None:
        """Show ``rows`` instead (a server's state changed); lines are cut again. The
        cursor stays on its server (on the first one if it is gone)."""
        self._take(rows, self.cursor)
        width = self.scrollable_content_region.width
        self.virtual_size = Size(width, len(self.lines(width)))
        self.refresh(layout=True)

    def action_cursor(self, step: int) -> None:
        """The next (or previous) server; past the last (or first), a line's scroll."""
        keys = self.keys()
        at = keys.index(self.cursor) + step if self.cursor in keys else -1
        if not 0 <= at < len(keys):
            self.scroll_relative(y=step, animate=False)
            return
        self.cursor = keys[at]
        self._show_cursor()
        self.refresh()

    def _show_cursor(self) -> None:
        """Scroll so the picked server's head row is in view."""
        width = self.scrollable_content_region.width
        mine = [y for y, (_, _, row) in enumerate(self.lines(width))
                if self.rows[row].key == self.cursor]
        if not mine:
            return
        top, height = self.scroll_offset.y, self.scrollable_content_region.height
        if mine[0] < top:
            self.scroll_to(y=max(0, mine[0] - 1), animate=False)  # its blank line above too
        elif mine[-1] >= top + height:
            self.scroll_to(y=mine[-1] - height + 1, animate=False)

    def on_click(self, event: events.Click) -> None:
        """The server whose lines were clicked (its head or the rows under it)."""
        width = self.scrollable_content_region.width
        lines = self.lines(width)
        index = self.scroll_offset.y + event.y
        if not 0 <= index < len(lines):
            return
        for row in range(lines[index][2], -1, -1):
            if self.rows[row].key is not None:
                self.cursor = self.rows[row].key
                self.refresh()
                return

    def lines(self, width: int) -> list[tuple[int, Content | ListRow, int]]:
        """(indent, line, row's index) for ``width`` columns: wrapped rows cut, the
        others whole.

        One-line rows are cut to the width only when drawn, so a new width costs a
        pass over the rows and the wrapping of the few rows that wrap.
        """
        width = max(1, width)
        lines = self._lines.get(width)
        if lines is None:
            lines = []
            for at, row in enumerate(self.rows):
                if row.wrap:
                    parts = self._content(row).wrap(max(1, width - row.indent)) or [Content("")]
                    lines += [(row.indent, part, at) for part in parts]
                else:
                    lines.append((row.indent, row, at))
            if len(self._lines) >= 4:
                self._lines.clear()
            self._lines[width] = lines
        return lines

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self.lines(width))

    def on_resize(self) -> None:
        width = self.scrollable_content_region.width
        self.virtual_size = Size(width, len(self.lines(width)))

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        lines = self.lines(width)
        index = self.scroll_offset.y + y
        if not 0 <= index < len(lines):
            return Strip.blank(width, self.rich_style)
        indent, line, row = lines[index]
        if isinstance(line, ListRow):
            line = self._content(line)
        room = max(1, width - indent)
        [strip] = Visual.to_strips(self, line.truncate(room, ellipsis=True), room, 1,
                                   self.visual_style, pad=True)
        if indent:
            strip = Strip.join([Strip.blank(indent), strip])
        strip = strip.apply_style(self.rich_style)
        if self.cursor is not None and self.rows[row].key == self.cursor:
            # over the line's own background (apply_style would go under it)
            cursor = self.get_component_rich_style("server-list--cursor")
            strip = Strip(Segment.apply_style(strip, post_style=Style(bgcolor=cursor.bgcolor)),
                          strip.cell_length)
        return strip

    def _content(self, row: ListRow) -> Content:
        if isinstance(row.content, Content):
            return row.content
        built = self._built.get(id(row))
        if built is None:
            built = self._built[id(row)] = row.content()
            if len(self._built) > KEEP_BUILT:
                self._built.popitem(last=False)
        else:
            self._built.move_to_end(id(row))
        return built

    def text(self) -> list[str]:
        """Every line as plain text at the present width (builds every row: for tests)."""
        width = self.scrollable_content_region.width or 80
        return [" " * indent + (self._content(line) if isinstance(line, ListRow) else line).plain
                for indent, line, _ in self.lines(width)]
