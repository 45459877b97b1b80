"""First run: no API key and no base URL anywhere, so explain how to get one going."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Center, Horizontal, VerticalScroll
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Button, Markdown, Static

from selfref_tui.config import default_config_path
from selfref_tui.safety import inert_line


def welcome_markdown(config_path: str) -> str:
    return f"""\
No model provider is configured yet. Set one up, then start `selfref-tui` again:

```bash
# OpenAI (model: gpt-4o-mini unless SELFREF_MODEL names another)
export OPENAI_API_KEY=sk-...
# Ollama: its URL and a model it has pulled (no key needed)
export OPENAI_BASE_URL=http://localhost:11434/v1
export SELFREF_MODEL=llama3.1
# vLLM, llama.cpp, LM Studio: the URL and the model it serves
export OPENAI_BASE_URL=http://localhost:8000/v1
export SELFREF_MODEL=the-served-model  # and OPENAI_API_KEY if it asks
```

or add a profile to `{config_path}` and run `selfref-tui --profile local`:

```toml
[providers.local]
base_url = "http://localhost:11434/v1"
model = "llama3.1"
```

Or try the **offline demo model** now: no network needed, and it shows refs,
memory and forks at work.
"""


class WelcomeScreen(Screen[str]):
    """Dismisses with "demo" or "quit"."""

    DEFAULT_CSS = """
    WelcomeScreen { align: center middle; background: $background; }
    WelcomeScreen > #panel {
        width: 84;
        max-width: 100%;
        height: auto;
        max-height: 100%;
        padding: 1 2;
        border: round $primary;
        border-title-color: $text-primary;
        border-title-style: bold;
        border-subtitle-color: $text-muted;
        background: $surface;
        scrollbar-size-vertical: 1;
    }
    WelcomeScreen #tagline { color: $text-muted; margin-bottom: 1; }
    WelcomeScreen Markdown { margin: 0; padding: 0; background: transparent; }
    /* A command cut at the edge cannot be copied: on a narrow screen it wraps instead
       of scrolling out of sight (a fence scrolls sideways, with no scrollbar). */
    WelcomeScreen MarkdownFence { overflow-x: hidden; }
    WelcomeScreen MarkdownFence > Label { width: 1fr; text-wrap: wrap; }
    WelcomeScreen.-cramped > #panel { padding: 0 1; }
    WelcomeScreen.-cramped MarkdownFence > Label { padding: 1 1; }
    WelcomeScreen #buttons { height: auto; width: auto; margin-top: 1; }
    WelcomeScreen Button { margin: 0 1; }
    """

    #: below 60 columns the panel's padding is the text's room (at 40 it left 30 columns)
    HORIZONTAL_BREAKPOINTS: ClassVar[list[tuple[int, str]]] = [(0, "-cramped"), (60, "-roomy")]

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("d", "choose('demo')", "Demo model", id="welcome.demo"),
        Binding("q", "choose('quit')", "Quit", id="welcome.quit"),
        Binding("escape", "choose('quit')", "Quit", show=False, id="welcome.escape"),
    ]

    def __init__(self, config_path: str | Path | None = None) -> None:
        super().__init__()
        self.config_path = str(config_path) if config_path is not None else None

    def compose(self) -> ComposeResult:
        path = self.config_path or str(default_config_path())  # honours SELFREF_CONFIG
        with VerticalScroll(id="panel") as panel:
            panel.border_title = "Welcome to selfref-tui"
            # Always on screen: at 80×24 the buttons are below the fold.
            panel.border_subtitle = "d try the demo model · q quit"
            yield Static(
                "A chat whose agent keeps its own memory, forks helpers, and hands you refs.",
                id="tagline",
            )
            yield Markdown(welcome_markdown(inert_line(path)))
            with Center(), Horizontal(id="buttons"):
                yield Button(
                    Content.from_markup("Try the [u]d[/u]emo model"), id="demo", variant="primary"
                )
                yield Button(Content.from_markup("[u]Q[/u]uit"), id="quit")

    def on_mount(self) -> None:
        self.query_one("#demo", Button).focus(scroll_visible=False)

    def action_choose(self, choice: str) -> None:
        self.dismiss(choice)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id or "quit")
