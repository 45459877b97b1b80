"""The /mcp screen's list: servers, their errors and their tools, drawn a line at a time.

A server may offer 10,000 tools. One ``Static`` per row made the screen mount,
style and lay out 10,000 widgets before it showed anything (7.6 s; over a minute
on a busy machine). This is one Line-API widget: rows are plain ``Content``
(built inert by the screen), cut into lines once per width, and only the lines
on screen are drawn. One-line rows (tools) are cut with an ellipsis at the edge
and may be given as a function that builds their ``Content`` when first drawn;
server rows and errors wrap, since an error cut short cannot be read.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

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


class ServerList(ScrollView, can_focus=True):
    """Scrolls with the keys and the wheel; draws only the lines it shows."""

    DEFAULT_CSS = """
    ServerList { height: auto; max-height: 100%; padding: 0 1; overflow-x: hidden; }
    """

    def __init__(self, rows: Sequence[ListRow], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.rows = list(rows)
        self._lines: dict[int, list[tuple[int, Content | ListRow]]] = {}
        self._built: OrderedDict[int, Content] = OrderedDict()

    def set_rows(self, rows: Sequence[ListRow]) -> None:
        """Show ``rows`` instead (a server's state changed); lines are cut again."""
        self.rows = list(rows)
        self._lines.clear()
        self._built.clear()
        width = self.scrollable_content_region.width
        self.virtual_size = Size(width, len(self.lines(width)))
        self.refresh(layout=True)

    def lines(self, width: int) -> list[tuple[int, Content | ListRow]]:
        """(indent, line) for ``width`` columns: wrapped rows cut, the others whole.

        One-line rows are cut to the width only when drawn, so a new width costs a
        pass over the rows and the wrapping of the few rows that wrap.
        """
        width = max(1, width)
        lines = self._lines.get(width)
        if lines is None:
            lines = []
            for row in self.rows:
                if row.wrap:
                    parts = self._content(row).wrap(max(1, width - row.indent)) or [Content("")]
                    lines += [(row.indent, part) for part in parts]
                else:
                    lines.append((row.indent, row))
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
        indent, line = lines[index]
        if isinstance(line, ListRow):
            line = self._content(line)
        room = max(1, width - indent)
        [strip] = Visual.to_strips(self, line.truncate(room, ellipsis=True), room, 1,
                                   self.visual_style, pad=True)
        if indent:
            strip = Strip.join([Strip.blank(indent), strip])
        return strip.apply_style(self.rich_style)

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
                for indent, line in self.lines(width)]
