"""Every built-in Textual theme is readable everywhere, and a change of theme is followed.

One conversation holds every kind of row the transcript draws (a user message,
reasoning, Markdown with a heading, inline code, a list, a link and a quote,
refs with code, a superseded ref, a tool card opened, a failed turn's error, a
compaction divider and the archived messages it leaves); the app then goes
through every built-in theme while it runs, as ctrl+p → Theme does. On each,
every page of the transcript, the sidebar, the header, the footer, the input
and the dialogs (help, conversations, context) are read for letters and digits
under :data:`~tests.ui.contrast.READABLE` contrast (tests/ui/contrast.py), and
the transcript must be drawn on the new theme's background: it once kept the
first theme's colours until each row was drawn again.

Themes of ANSI colours (``ansi-dark``, ``ansi-light``) use the terminal's own
palette, which no test can read; at the end of each run, one of them is checked
to draw no colour of its own behind the transcript.
"""

from __future__ import annotations

import pytest
from textual.color import Color
from textual.theme import BUILTIN_THEMES

from selfref_tui.demo.script import HttpError, Reply, ToolCall
from selfref_tui.demo.server import DemoServer
from selfref_tui.ui.app import SelfRefApp
from tests.ui.contrast import describe, main_background, screen_cells, unreadable
from tests.ui.helpers import (
    COMPACT_SUMMARY,
    SIZE,
    PatientApp,
    make_app,
    started,
    turn_done,
    type_and_send,
    wait_until,
)

RICH_ANSWER = (
    "## What the demo shows\n\n"
    "Call `compact` when the context grows, read the [guide](https://example.com/guide) "
    "and keep **bold** and *italic* apart.\n\n"
    "> A quote from the documentation.\n\n"
    "1. first step\n2. second step\n\n"
    '<ref id="fib">\n```python\ndef fib(n: int) -> int:\n    """Doc string."""\n'
    "    return n if n < 2 else fib(n - 1) + fib(n - 2)  # comment\n```\n</ref>\n\n"
    '<ref id="note">A note kept as a ref, 42 words long at most.</ref>\n'
)

SCRIPT = [
    Reply(reasoning="Two things to show: Markdown and refs.", text=RICH_ANSWER),
    Reply(tool_calls=[ToolCall("remember", {"text": "The person likes Python"}, id="r1")]),
    Reply(text="Stored it."),
    Reply(text='A newer note: <ref id="note">The note, rewritten.</ref>'),
    HttpError(500, "the server fell over"),
    Reply(tool_calls=[ToolCall("compact", COMPACT_SUMMARY, id="c1")]),
    Reply(text="Compacted; here is what is left."),
]

PROMPTS = ["show me everything", "remember that I like Python", "rewrite the note",
           "this one fails", "compact now"]

THEMES = [name for name in BUILTIN_THEMES if not name.startswith("ansi")]
ANSI_THEMES = [name for name in BUILTIN_THEMES if name.startswith("ansi")]


async def _conversation(pilot, app) -> None:
    await started(pilot, app)
    for prompt in PROMPTS:
        await type_and_send(pilot, prompt)
        status = "error" if prompt == "this one fails" else "ready"
        await turn_done(pilot, app, status=status, timeout=20)
    transcript = app.transcript
    await wait_until(pilot, lambda: transcript.items_of("divider"), what="compaction divider")
    await wait_until(pilot, lambda: len(app.sidebar.ref_list.refs) >= 3, what="refs listed")
    transcript.set_expanded(True)


def _transcript_background(app) -> Color:
    region = app.transcript.scrollable_content_region
    return main_background(app, (region.x, region.y, region.width, region.height))


async def _theme(pilot, app, name: str) -> None:
    """Switch to ``name`` as the palette does, and wait until the transcript is drawn in it."""
    app.theme = name
    await wait_until(pilot, lambda: app.theme_variables.get("background") is not None
                     and app.current_theme.name == name, what=f"theme {name}")
    expected = Color.parse(app.theme_variables["background"])
    app.transcript.scroll_home(animate=False, immediate=True)  # mostly text on no tint
    await wait_until(pilot, lambda: _transcript_background(app) == expected,
                     what=f"the transcript drawn on {name}'s background")


def _readable(app, where: str, dialog: bool = False) -> None:
    """Nothing unreadable on the screen, or in the dialog on top (not the screen it shades)."""
    cells = unreadable(app, region=app.screen.children[0].region if dialog else None)
    assert not cells, f"{app.current_theme.name}, {where}:\n{describe(cells, app)}"


async def _pages(pilot, app):
    """Each page of the transcript, from the top down."""
    transcript = app.transcript
    transcript.scroll_home(animate=False, immediate=True)
    await pilot.pause()
    while True:
        await transcript.settle()
        await pilot.pause()
        yield
        if transcript.scroll_y >= transcript.max_scroll_y:
            return
        transcript.scroll_page_down(animate=False)
        await pilot.pause()


#: the themes in two runs of the app (each switching through its share in turn), so that
#: pytest-xdist spreads them over two workers (its file is handed out first,
#: tests/conftest.py); each run first holds the whole conversation (about 3 s of CPU, then
#: about 1 s per theme), so more runs cost a conversation each; an ANSI theme ends each run
THEME_RUNS = [THEMES[start::2] for start in range(2)]
ANSI_RUNS = [ANSI_THEMES[start::2] for start in range(2)]


def test_the_runs_go_through_every_theme_once():
    assert sorted(name for run in THEME_RUNS for name in run) == sorted(THEMES)
    assert sorted(name for run in ANSI_RUNS for name in run) == sorted(ANSI_THEMES)
    assert len(THEMES) >= 8
    assert all(ANSI_RUNS)


@pytest.mark.parametrize(("themes", "ansi"), list(zip(THEME_RUNS, ANSI_RUNS, strict=True)),
                         ids=[run[0] for run in THEME_RUNS])
async def test_every_builtin_theme_is_readable_in_the_transcript_and_the_dialogs(
    tmp_path, themes, ansi
):
    async with DemoServer(SCRIPT) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await _conversation(pilot, app)
            for name in themes:
                await _theme(pilot, app, name)
                pages = 0
                async for _ in _pages(pilot, app):
                    pages += 1
                    _readable(app, f"transcript page {pages}")
                assert pages >= 3  # the whole conversation was read, not one screen of it
                for key, screen in (("f1", "HelpScreen"), ("ctrl+o", "KeySwitcher")):
                    await pilot.press(key)
                    await wait_until(pilot, lambda s=screen: type(app.screen).__name__ == s,
                                     what=screen)
                    await pilot.pause()
                    _readable(app, screen, dialog=True)
                    await pilot.press("escape")
                    await wait_until(pilot, lambda: app.screen is app.screen_stack[0],
                                     what=f"{screen} closed")
                app.action_show_context()
                await wait_until(pilot, lambda: type(app.screen).__name__ == "ContextView",
                                 what="context view")
                await pilot.pause()
                _readable(app, "ContextView", dialog=True)
                await pilot.press("escape")
                await wait_until(pilot, lambda: app.screen is app.screen_stack[0],
                                 what="context view closed")
            for name in ansi:
                await _leaves_the_terminal_its_own_colours(pilot, app, name)


async def _leaves_the_terminal_its_own_colours(pilot, app, name: str) -> None:
    """An ANSI theme draws the terminal's background behind every cell of the transcript:
    no tint of a colour guessed for a palette nobody can see (the code block's and the
    cards' included), and none left from the theme before it."""
    app.theme = name
    await pilot.pause()
    await app.transcript.settle()
    await pilot.pause()
    region = app.transcript.scrollable_content_region
    rows = screen_cells(app)[region.y : region.y + region.height]
    backgrounds = {bg.hex for row in rows
                   for _, _, bg in row[region.x : region.x + region.width]}
    assert backgrounds == {Color.parse(app.current_theme.background).hex}, name


CONFIG = """# my settings: kept as they are
key = "main"   # the conversation I use

[agent]
step_limit = 30
"""


async def _pick_theme(pilot, app, name: str) -> None:
    """ctrl+p → Theme → ``name``, as a person does."""
    await pilot.press("ctrl+p")
    await wait_until(pilot, lambda: type(app.screen).__name__ == "CommandPalette", what="palette")
    await pilot.press(*"theme")
    await wait_until(pilot, lambda: _palette_shows(app, "Theme"), what="the Theme command")
    await pilot.press("enter")
    await wait_until(pilot, lambda: _palette_shows(app, name), what="the theme list")
    await pilot.press(*name, "enter")
    await wait_until(pilot, lambda: app.theme == name, what=f"theme {name}")


def _palette_shows(app, text: str) -> bool:
    from textual.command import CommandList

    screen = app.screen
    if type(screen).__name__ != "CommandPalette":
        return False
    options = screen.query_one(CommandList)
    return any(text in str(option.prompt) for option in options.options)


async def test_the_chosen_theme_is_saved_in_config_toml_and_used_at_the_next_start(tmp_path):
    config_file = tmp_path / "config.toml"  # SELFREF_CONFIG (tests/conftest.py)
    config_file.write_text(CONFIG)
    async with DemoServer([]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await _pick_theme(pilot, app, "solarized-light")
            await wait_until(pilot, lambda: 'theme = "solarized-light"' in config_file.read_text(),
                             what="the theme saved")
        # Only that line was added: every comment and setting is where it was.
        assert config_file.read_text() == CONFIG.replace(
            'key = "main"   # the conversation I use\n',
            'key = "main"   # the conversation I use\ntheme = "solarized-light"\n')

        from selfref_tui.config_load import load_config

        config = load_config(base_url=url)
        assert config.theme == "solarized-light"
        again = SelfRefApp(config)
        async with again.run_test(size=SIZE) as pilot:
            await started(pilot, again)
            assert again.theme == "solarized-light"
            await again.transcript.settle()
            expected = Color.parse(again.theme_variables["background"])
            await wait_until(pilot, lambda: _transcript_background(again) == expected,
                             what="the transcript in the saved theme")
            await _pick_theme(pilot, again, "nord")
            await wait_until(pilot, lambda: 'theme = "nord"' in config_file.read_text(),
                             what="the new theme saved")
        assert "solarized-light" not in config_file.read_text()


async def test_a_theme_config_toml_names_wrongly_is_said_once_and_the_app_starts(tmp_path):
    (tmp_path / "config.toml").write_text('theme = "solarised"\n')
    async with DemoServer([]) as url:
        from selfref_tui.config_load import load_config

        app = PatientApp(load_config(base_url=url))  # the notice kept until looked at
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            shown = [str(n.message) for n in app._notifications]
            assert any("theme 'solarised' in config.toml is not a theme" in n and "nord" in n
                       for n in shown), shown
            assert app.theme == "textual-dark"
    assert (tmp_path / "config.toml").read_text() == 'theme = "solarised"\n'  # left to fix
