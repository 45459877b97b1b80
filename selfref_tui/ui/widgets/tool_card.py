"""A tool call: name, status and duration in the title; arguments and result inside.

Collapsed by default so a turn with many tool calls stays readable; the
title alone tells whether the call is running, done, failed or cancelled.
"""

from __future__ import annotations

import json

from textual.content import Content
from textual.widgets import Collapsible, Static

from selfref_tui.safety import content, inert_line

_STATUS = {"running": "⋯ running", "done": "✓ done", "error": "✖ error", "cancelled": "■ cancelled"}
_MAX_SHOWN = 4000


def _pretty(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), indent=2, ensure_ascii=False)
    except (ValueError, TypeError):
        return arguments


def _clip(text: str) -> str:
    if len(text) <= _MAX_SHOWN:
        return text
    return text[:_MAX_SHOWN] + f"\n… {len(text) - _MAX_SHOWN} more characters"


class ToolCard(Collapsible):
    DEFAULT_CSS = """
    ToolCard {
        height: auto;
        margin: 1 0 0 2;
        padding: 0;
        border: none;
        border-left: outer $foreground 20%;
        background: $surface 40%;
    }
    ToolCard.-error { border-left: outer $error; }
    ToolCard.-cancelled { border-left: outer $warning; }
    ToolCard.archived { opacity: 60%; }
    ToolCard > Contents { padding: 0 1 0 2; }
    /* Full width: status and duration change the title; see ReasoningView. */
    ToolCard > CollapsibleTitle { width: 1fr; }
    ToolCard .label { color: $text-muted; text-style: bold; }
    ToolCard .args, ToolCard .result { color: $text; }
    """

    def __init__(
        self, call_id: str, name: str, *, arguments: str = "", classes: str | None = None
    ) -> None:
        self.call_id = call_id
        self.tool_name = name
        self.arguments = arguments
        self.result: str | None = None
        self.status = "running"
        self.duration_s: float | None = None
        self._args = Static(content(_pretty(arguments)), classes="args")
        self._result = Static("", classes="result")
        super().__init__(
            Static("arguments", classes="label"),
            self._args,
            Static("result", classes="label"),
            self._result,
            # Content, never the str: Collapsible parses a str title as markup.
            title=Content(self._label_text()),  # type: ignore[arg-type]
            collapsed=True,
            classes=classes,
        )
        self.title = self._label_text()

    def append_arguments(self, delta: str) -> None:
        self.arguments += delta
        self._args.update(content(self.arguments))

    def finish(self, result: str, duration_s: float, *, arguments: str | None = None) -> None:
        self._end("done", result, duration_s, arguments)

    def fail(self, error: str, duration_s: float = 0.0, *, arguments: str | None = None) -> None:
        self._end("error", error, duration_s, arguments)

    def cancel(self, reason: str = "") -> None:
        if self.status == "running":
            self._end("cancelled", reason or "cancelled", None, None)

    def _end(
        self, status: str, result: str, duration_s: float | None, arguments: str | None
    ) -> None:
        self.status = status
        self.result = result
        self.duration_s = duration_s
        if arguments is not None:
            self.arguments = arguments
        self._args.update(content(_pretty(self.arguments)))
        self._result.update(content(_clip(result)))
        self.set_class(status == "error", "-error")
        self.set_class(status == "cancelled", "-cancelled")
        self.title = self._label_text()

    def _watch_title(self, title: str | Content) -> None:
        """The title shown as plain text: the tool name is the model's, and
        ``[@click=…]`` in it must show, not run (Collapsible would parse a str)."""
        self._title.label = title if isinstance(title, Content) else Content(title)

    def _label_text(self) -> str:
        parts = [f"⚙ {inert_line(self.tool_name, 80)}", _STATUS.get(self.status, self.status)]
        if self.duration_s is not None:
            parts.append(f"{self.duration_s:.2f}s")
        return "  ".join(parts)
