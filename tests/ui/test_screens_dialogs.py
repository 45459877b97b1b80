"""Pilot tests for the modal screens: each returns what the person chose through dismiss."""

from __future__ import annotations

from typing import Any, ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Input, Static

from selfref_tui.ui.screens import (
    ConfirmScreen,
    ContextView,
    ExportDialog,
    HelpScreen,
    KeySwitcher,
    OverwritePrompt,
    WelcomeScreen,
)
from selfref_tui.ui.widgets.option_rows import LONG

KEYS = [
    {"key": "main", "messages": 42, "updated": "2025-03-01T10:22:33"},
    {"key": "project-x", "messages": 7, "updated": "2025-02-11T08:00:00"},
    {"key": "notes", "messages": 0, "updated": ""},
]


class HostApp(App):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+b", "noop", "Toggle sidebar", id="sidebar")
    ]

    def __init__(self) -> None:
        super().__init__()
        self.results: list[Any] = []

    def compose(self) -> ComposeResult:
        yield Static("host")

    def action_noop(self) -> None:
        pass

    def open(self, screen: Screen) -> None:
        self.push_screen(screen, self.results.append)


async def _open(pilot, screen: Screen) -> None:
    pilot.app.open(screen)
    await pilot.pause()


async def test_export_dialog_returns_edited_path(tmp_path):
    app = HostApp()
    async with app.run_test(size=(100, 30)) as pilot:
        await _open(pilot, ExportDialog("fib", str(tmp_path / "fib.py"), preview="def fib(): ..."))
        field = app.screen.query_one(Input)
        assert field.value == str(tmp_path / "fib.py")
        await pilot.press("backspace", "backspace", "t", "x", "t", "enter")
        await pilot.pause()
        assert app.results == [str(tmp_path / "fib.txt")]


async def test_export_dialog_says_what_enter_will_do_to_the_disk(tmp_path):
    (tmp_path / "old.py").write_text("x = 1\n")
    app = HostApp()
    async with app.run_test(size=(100, 30)) as pilot:
        await _open(pilot, ExportDialog("fib", str(tmp_path / "new" / "deep" / "fib.py")))
        note = app.screen.query_one("#note", Static)
        assert str(note.render()) == (
            f"Creates 2 folders: {tmp_path / 'new'} down to {tmp_path / 'new' / 'deep'}."
        )
        field = app.screen.query_one(Input)
        field.value = str(tmp_path / "new" / "fib.py")
        await pilot.pause()
        assert str(note.render()) == f"Creates the folder {tmp_path / 'new'}."
        field.value = str(tmp_path / "old.py")
        await pilot.pause()
        assert "exists" in str(note.render()) and "append" in str(note.render())
        field.value = str(tmp_path / "fresh.py")
        await pilot.pause()
        assert str(note.render()) == ""
        field.value = "~no_such_user_here/fib.py"  # expanduser() raises for it
        await pilot.pause()
        assert str(note.render()) == ""
        await pilot.press("enter")
        await pilot.pause()
        assert app.results == [] and app.is_running
        assert "No home folder" in str(app.screen.query_one("#error", Static).render())
        field.value = str(tmp_path / "out") + "/"  # a folder: the ref's name inside it
        await pilot.pause()
        assert str(note.render()) == f"Writes fib.py in this folder (creates {tmp_path / 'out'})."
        field.value = str(tmp_path)
        await pilot.pause()
        assert str(note.render()) == "Writes fib.py in this folder."
        await pilot.press("enter")
        await pilot.pause()
        assert app.results == [str(tmp_path / "fib.py")]


async def test_export_dialog_escape_and_empty_path():
    app = HostApp()
    async with app.run_test(size=(100, 30)) as pilot:
        await _open(pilot, ExportDialog("fib", ""))
        await pilot.press("enter")
        await pilot.pause()
        assert app.results == []  # an empty path is refused, the dialog stays
        assert "Type a file path" in str(app.screen.query_one("#error", Static).render())
        await pilot.press("escape")
        await pilot.pause()
        assert app.results == [None]
        await _open(pilot, ExportDialog("fib", "~/fib.py"))
        await pilot.press("enter")
        await pilot.pause()
        assert not app.results[-1].startswith("~")


async def test_overwrite_prompt_choices():
    app = HostApp()
    async with app.run_test(size=(100, 30)) as pilot:
        for key, expected in [("o", "overwrite"), ("a", "append"), ("c", "cancel")]:
            await _open(pilot, OverwritePrompt("/tmp/x.py"))
            await pilot.press(key)
            await pilot.pause()
            assert app.results[-1] == expected
        await _open(pilot, OverwritePrompt("/tmp/x.py"))
        await pilot.press("escape")
        await pilot.pause()
        assert app.results[-1] == "cancel"
        await _open(pilot, OverwritePrompt("/tmp/x.py"))
        await pilot.click("#append")
        await pilot.pause()
        assert app.results == ["overwrite", "append", "cancel", "cancel", "append"]


async def test_key_switcher_filters_and_chooses():
    app = HostApp()
    async with app.run_test(size=(100, 30)) as pilot:
        await _open(pilot, KeySwitcher(KEYS, "main"))
        screen = app.screen
        assert screen.visible_keys == ["key:main", "key:project-x", "key:notes"]
        await pilot.press("o")
        assert screen.visible_keys == ["key:project-x", "key:notes", "new:o"]
        await pilot.press("t")  # "ot" matches notes only
        assert screen.visible_keys == ["key:notes", "new:ot"]
        await pilot.press("enter")
        await pilot.pause()
        assert app.results == ["notes"]


async def test_a_switcher_of_many_conversations_is_as_tall_and_reaches_the_last():
    """Past ``LONG`` rows the list is not measured row by row: it looks the same."""
    app = HostApp()
    async with app.run_test(size=(100, 30)) as pilot:
        heights = []
        for count in (LONG - 1, LONG + 50):
            keys = [{"key": f"k-{k:04d}", "messages": 2, "updated": ""} for k in range(count)]
            await _open(pilot, KeySwitcher(keys, "k-0000"))
            option_list = app.screen.option_list
            heights.append((app.screen.query_one("#dialog").region.height,
                            option_list.region.height))
            app.screen.action_move(count)  # down, held until the last row
            await pilot.pause()
            assert option_list.highlighted == count - 1
            assert 0 < option_list.scroll_y == option_list.max_scroll_y
            await pilot.press("escape")
            await pilot.pause()
        assert heights[0] == heights[1]


async def test_key_switcher_counts_one_message_as_one():
    keys = [{"key": "one", "messages": 1, "updated": ""}, {"key": "two", "messages": 2,
                                                           "updated": ""}]
    app = HostApp()
    async with app.run_test(size=(100, 30)) as pilot:
        await _open(pilot, KeySwitcher(keys, "one"))
        option_list = app.screen.option_list
        rows = [str(option_list.get_option_at_index(i).prompt).split()
                for i in range(option_list.option_count)]
        assert [row[-2:] for row in rows] == [["1", "message"], ["2", "messages"]]


async def test_key_switcher_new_key_arrows_and_validation():
    def validate(name: str) -> str:
        if " " in name:
            raise ValueError("Key names cannot contain spaces.")
        return name

    app = HostApp()
    async with app.run_test(size=(100, 30)) as pilot:
        await _open(pilot, KeySwitcher(KEYS, "main", validate=validate))
        await pilot.press("down", "enter")
        await pilot.pause()
        assert app.results == ["project-x"]

        await _open(pilot, KeySwitcher(KEYS, "main", validate=validate))
        await pilot.press(*"bad name", "enter")
        await pilot.pause()
        assert len(app.results) == 1
        assert "cannot contain spaces" in str(app.screen.query_one("#error", Static).render())
        await pilot.press(*["backspace"] * 5, "-", "k", "e", "y", "enter")
        await pilot.pause()
        assert app.results == ["project-x", "bad-key"]

        await _open(pilot, KeySwitcher(KEYS, "main"))
        await pilot.press("escape")
        await pilot.pause()
        assert app.results[-1] is None


async def test_welcome_choices():
    app = HostApp()
    async with app.run_test(size=(100, 40)) as pilot:
        await _open(pilot, WelcomeScreen("/cfg/config.toml"))
        text = app.screen.query_one("Markdown").source
        for needle in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "localhost:11434/v1", "8000/v1"):
            assert needle in text
        # each setup names every variable it needs: a local server needs its model too
        lines = text.splitlines()
        urls = [n for n, line in enumerate(lines) if line.startswith("export OPENAI_BASE_URL=")]
        assert len(urls) == 2
        for n in urls:
            assert lines[n + 1].startswith("export SELFREF_MODEL="), lines[n + 1]
        # the hints fit the panel at 80 columns (a cut line hides the value)
        block = text.split("```bash\n", 1)[1].split("```", 1)[0]
        assert max(len(line) for line in block.splitlines()) <= 74
        assert "/cfg/config.toml" in text and "[providers.local]" in text
        await pilot.press("d")
        await pilot.pause()
        await _open(pilot, WelcomeScreen("/cfg/config.toml"))
        await pilot.press("q")
        await pilot.pause()
        await _open(pilot, WelcomeScreen("/cfg/config.toml"))
        await pilot.press("enter")  # the demo button has focus
        await pilot.pause()
        assert app.results == ["demo", "quit", "demo"]


async def test_welcome_names_its_keys_where_a_small_terminal_still_shows_them():
    """At 80×24 the buttons are below the fold: the frame's bottom line names the keys."""
    app = HostApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await _open(pilot, WelcomeScreen("/cfg/config.toml"))
        panel = app.screen.query_one("#panel")
        assert panel.region.bottom <= 24
        assert str(panel.border_subtitle) == "d try the demo model · q quit"


async def test_confirm_screen_only_y_confirms():
    app = HostApp()
    async with app.run_test(size=(100, 30)) as pilot:
        for key in ("y", "n", "escape", "enter"):
            await _open(pilot, ConfirmScreen("Start a new key?"))
            await pilot.press(key)
            await pilot.pause()
        assert app.results == [True, False, False, False]


async def test_help_lists_active_bindings_and_commands():
    app = HostApp()
    async with app.run_test(size=(100, 40)) as pilot:
        await _open(pilot, HelpScreen.from_app(app))
        screen = app.screen
        assert ("ctrl+b", "Toggle sidebar") in screen.keys
        assert any(command.startswith("/export") for command, _ in screen.commands)
        screen.query_one("#panel").scroll_end(animate=False, immediate=True)
        await pilot.pause()
        shown = app.export_screenshot().replace("&#160;", " ")
        assert "OSC 52" in shown and "set-clipboard" in shown
        await _open(pilot, HelpScreen([("ctrl+g", "Expand a paste shown as [pasted 3 lines #1]")]))
        assert "[pasted 3 lines #1]" in app.export_screenshot().replace("&#160;", " ")
        await pilot.press("escape")
        await pilot.pause()
        assert app.results == [None]


async def test_context_view_shows_every_message_verbatim():
    messages = [
        {"role": "system", "content": "Base prompt <experiences>exp_001</experiences>"},
        {"role": "user", "content": "Write [bold]fib[/bold]"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "function": {"name": "remember", "arguments": '{"text":"x"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "<ok/>"},
    ]
    app = HostApp()
    async with app.run_test(size=(100, 40)) as pilot:
        await _open(pilot, ContextView(messages, 321))
        bodies = [str(w.render()) for w in app.screen.query(".body").results(Static)]
        assert bodies == [
            "Base prompt <experiences>exp_001</experiences>",
            "Write [bold]fib[/bold]",
            '→ remember({"text": "x"})',
            "<ok/>",
        ]
        assert "321 tokens" in str(app.screen.query_one("#dialog").border_subtitle)
        await pilot.press("escape")
        await pilot.pause()
        assert app.results == [None]


async def test_welcome_names_the_config_file_in_use(tmp_path):
    app = HostApp()
    async with app.run_test(size=(100, 40)) as pilot:
        await _open(pilot, WelcomeScreen())
        # tests/conftest.py points SELFREF_CONFIG at tmp_path / "config.toml"
        assert str(tmp_path / "config.toml") in app.screen.query_one("Markdown").source


async def test_the_apps_welcome_names_the_config_given_with_dash_dash_config(tmp_path):
    """``--config FILE``: the welcome tells the person to edit that file, not the default."""
    from selfref_tui.config_load import load_config
    from selfref_tui.ui.app import SelfRefApp

    given = tmp_path / "elsewhere" / "mine.toml"
    config = load_config(config_path=given, data_dir=tmp_path / "data", env={})
    assert config.unconfigured
    app = SelfRefApp(config)
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, WelcomeScreen)
        source = app.screen.query_one("Markdown").source
        assert str(given) in source and str(tmp_path / "config.toml") not in source


async def test_new_key_prompt_suggests_a_name_and_refuses_one_in_use():
    from selfref_tui.ui.screens.new_key_prompt import NewKeyPrompt

    app = HostApp()
    async with app.run_test(size=(100, 30)) as pilot:
        await _open(pilot, NewKeyPrompt("chat-2", existing={"main", "chat-1"}))
        assert app.screen.query_one(Input).value == "chat-2"
        await pilot.press(*"chat-1", "enter")  # typing replaces the selected suggestion
        await pilot.pause()
        assert app.results == []
        assert "exists" in str(app.screen.query_one("#error", Static).render())
        await pilot.press("backspace", "x", "enter")
        await pilot.pause()
        assert app.results == ["chat-x"]
        await _open(pilot, NewKeyPrompt("chat-2"))
        await pilot.press("enter")
        await pilot.pause()
        assert app.results[-1] == "chat-2"


async def test_key_switcher_renames_and_deletes_after_a_yes():
    calls: list[tuple] = []
    keys = [dict(k) for k in KEYS]

    async def rename(old: str, new: str):
        calls.append(("rename", old, new))
        next(k for k in keys if k["key"] == old)["key"] = new
        return keys

    async def delete(key: str):
        calls.append(("delete", key))
        keys[:] = [k for k in keys if k["key"] != key]
        return keys

    app = HostApp()
    async with app.run_test(size=(100, 30)) as pilot:
        await _open(pilot, KeySwitcher(keys, "main", rename=rename, delete=delete))
        screen = app.screen
        await pilot.press("down", "f2")  # project-x
        assert screen.renaming == "project-x"
        await pilot.press("backspace", "y", "enter")
        await wait_for(pilot, lambda: screen.renaming is None)
        assert calls == [("rename", "project-x", "project-y")]
        assert screen.visible_keys == ["key:main", "key:project-y", "key:notes"]
        # Delete asks first; any key but y keeps the key.
        await pilot.press("down", "down")
        assert screen.option_list.highlighted == 2
        await pilot.press("f8")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen")
        assert "trash" in str(app.screen.query_one("#question", Static).render())
        await pilot.press("n")
        await wait_for(pilot, lambda: app.screen is screen)
        assert len(calls) == 1
        assert screen.option_list.highlighted == 2, "the highlight stays where the person was"
        await pilot.press("shift+delete")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen")
        await pilot.press("y")
        await wait_for(pilot, lambda: len(calls) == 2)
        assert calls[-1] == ("delete", "notes")
        await wait_for(pilot, lambda: screen.visible_keys == ["key:main", "key:project-y"])
        # the last row went: the highlight is on the row before it, not back on the first
        await wait_for(pilot, lambda: screen.option_list.highlighted == 1)
        assert app.results == []  # still open: switching is a separate choice


async def test_the_switchers_names_are_a_column_so_counts_and_times_line_up():
    """'main  42 messages' above 'project-x  7 messages': the counts stood wherever each
    name ended. A name longer than the column keeps its length."""
    long = "a-conversation-with-a-very-long-name"
    keys = [*KEYS, {"key": long, "messages": 3, "updated": ""}]
    app = HostApp()
    async with app.run_test(size=(100, 30)) as pilot:
        await _open(pilot, KeySwitcher(keys, "main"))
        screen = app.screen
        rows = [str(screen.option_list.get_option_at_index(i).prompt) for i in range(4)]
        starts = [len(row) - len(row.lstrip("● ").split("  ", 1)[1].lstrip())
                  for row in rows]
        assert rows[0].startswith("● main ") and rows[1].startswith("  project-x ")
        assert starts[0] == starts[1] == starts[2], rows  # 42, 7 and 0 in one column
        assert rows[3] == f"  {long}  3 messages", rows


async def test_the_switchers_content_rows_line_up_their_counts_and_snippets():
    """By content (ctrl+f) the rows were "try-a-b  1 match  in try-a…" above
    "try-a  1 match  in try-a…": counts and snippets stood wherever each name ended."""
    found = [("try-a-b", 1, "we will use MySQL instead"),
             ("try-a", 12, "we will use MySQL instead"),
             ("main", 3, "no MySQL here")]

    async def search(text: str):
        return found

    app = HostApp()
    async with app.run_test(size=(100, 30)) as pilot:
        await _open(pilot, KeySwitcher(KEYS, "main", search=search))
        screen = app.screen
        await pilot.press("ctrl+f", *"MySQL")
        await wait_for(pilot, lambda: screen.option_list.option_count == 3)
        rows = [str(screen.option_list.get_option_at_index(i).prompt) for i in range(3)]
        counts = {row.index(f"{n} match") for row, (_, n, _) in zip(rows, found, strict=True)}
        snippets = {row.index("we will") if "we will" in row else row.index("no MySQL")
                    for row in rows}
        assert len(counts) == 1 and len(snippets) == 1, rows


async def test_the_switchers_highlight_stays_in_place_when_a_row_is_deleted():
    """Deleting several conversations in a row: each delete leaves the highlight on the
    row that followed, not on the first (the conversation on screen, refused)."""
    keys = [{"key": name, "messages": 1, "updated": ""} for name in ("main", "a", "b", "c")]

    async def delete(key: str):
        keys[:] = [k for k in keys if k["key"] != key]
        return keys

    app = HostApp()
    async with app.run_test(size=(100, 30)) as pilot:
        await _open(pilot, KeySwitcher(keys, "main", delete=delete))
        screen = app.screen
        await pilot.press("down")
        for left in (["main", "b", "c"], ["main", "c"], ["main"]):
            await pilot.press("shift+delete")
            await wait_for(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen")
            await pilot.press("y")
            await wait_for(pilot, lambda left=left: screen.visible_keys
                           == [f"key:{k}" for k in left])
            await wait_for(pilot, lambda left=left: screen.option_list.highlighted
                           == min(1, len(left) - 1))


async def wait_for(pilot, predicate, tries: int = 100) -> None:
    for _ in range(tries):
        if predicate():
            return
        await pilot.pause(0.02)
    raise AssertionError("condition never became true")


async def test_context_view_lists_the_tools_collapsed_and_marks_estimates():
    from textual.widgets import Collapsible

    tools = [{"type": "function", "function": {
        "name": "[@click=app.quit]evil[/]", "description": "from a server",
        "parameters": {"type": "object"}}}]
    app = HostApp()
    async with app.run_test(size=(100, 40)) as pilot:
        view = ContextView([{"role": "user", "content": "hi"}], 2048, tools, estimated=True,
                           left_out=3)
        await _open(pilot, view)
        (box,) = app.screen.query(Collapsible)
        assert box.collapsed and box.title == "tools (1)"
        bodies = [str(w.render()) for w in app.screen.query(".body").results(Static)]
        assert bodies[0].startswith("[@click=app.quit]evil[/] — from a server")
        subtitle = str(app.screen.query_one("#dialog").border_subtitle)
        assert "1 message · 1 tool · ~2,048 tokens" in subtitle
        assert "3 oldest messages are left out" in str(app.screen.query(".empty").first().render())


async def test_context_view_says_when_a_small_window_gets_a_reduced_tool_set():
    tools = [{"type": "function", "function": {"name": "compact", "parameters": {}}}]
    app = HostApp()
    async with app.run_test(size=(100, 40)) as pilot:
        await _open(pilot, ContextView([{"role": "user", "content": "hi"}], 900, tools,
                                       tools_total=10))
        said = [str(w.render()) for w in app.screen.query(".empty").results(Static)]
        assert said == ["window too small for the full tool set: this request offers 1 of 10 "
                        "tools."]


async def test_context_view_shows_a_tools_control_characters_as_symbols():
    """A tool's schema comes from an MCP server: untrusted, like a message."""
    from tests.hostile import assert_inert

    tools = [{"type": "function", "function": {
        "name": "shot\x1b]0;title\x07", "description": "grabs \x1b]52;c;aGk=\x07 the screen",
        "parameters": {"type": "object"}}}]
    app = HostApp()
    async with app.run_test(size=(100, 40)) as pilot:
        await _open(pilot, ContextView([{"role": "user", "content": "hi"}], 10, tools))
        bodies = [str(w.render()) for w in app.screen.query(".body").results(Static)]
        assert_inert(bodies[0])
        assert bodies[0].startswith("shot␛]0;title␇ — grabs ␛]52;c;aGk=␇ the screen")


async def test_key_switcher_keeps_the_renamed_key_highlighted():
    """F2, a new name, Enter: the list's highlight is on that key, so Enter opens it."""
    keys = [dict(k) for k in KEYS]

    async def rename(old: str, new: str):
        next(k for k in keys if k["key"] == old)["key"] = new
        return keys

    app = HostApp()
    async with app.run_test(size=(100, 30)) as pilot:
        await _open(pilot, KeySwitcher(keys, "main", rename=rename))
        screen = app.screen
        await pilot.press("down", "down", "f2", "escape")  # notes; renaming abandoned
        assert screen.renaming is None and screen.option_list.highlighted == 2
        await pilot.press("up", "f2", "backspace", "y", "enter")  # project-x → project-y
        await wait_for(pilot, lambda: screen.renaming is None)
        assert screen.visible_keys[screen.option_list.highlighted] == "key:project-y"
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.results == ["project-y"])


async def test_context_view_names_the_model_and_the_window_like_context_show():
    app = HostApp()
    async with app.run_test(size=(100, 40)) as pilot:
        await _open(pilot, ContextView([{"role": "user", "content": "hi"}], 7322, [],
                                       model="[@click=app.quit]m\x1b", window=32_000))
        dialog = app.screen.query_one("#dialog")
        from textual.content import Content

        # Kept as text (the getter gives it back as escaped markup): nothing to click
        assert Content.from_markup(dialog.border_title).plain == (
            "Next call · [@click=app.quit]m␛")
        assert "7,322 of 32,000 tokens" in str(dialog.border_subtitle)


async def test_context_view_says_where_the_tokens_go_and_when_it_compacts():
    from selfref_tui.context.breakdown import Breakdown

    parts = {"system_prompt": 400, "experiences": 30, "tool_schemas": 1500, "summary": 0,
             "messages": 120, "images": 0}
    app = HostApp()
    async with app.run_test(size=(100, 40)) as pilot:
        await _open(pilot, ContextView([{"role": "user", "content": "hi"}], 2050, [],
                                       breakdown=Breakdown(parts, 2050),
                                       compaction="compacts at 80 %: 25,600 tokens (23,550 to go)"))
        shown = str(app.screen.query_one("#breakdown", Static).render())
        assert "tool schemas       1,500   73.2 %" in shown
        assert shown.splitlines()[-1].split() == ["total", "2,050"]
        said = str(app.screen.query_one("#compaction", Static).render())
        assert said == "compacts at 80 %: 25,600 tokens (23,550 to go)"


async def test_the_dialogs_that_show_something_say_esc_close_alike():
    """Help and /context said "esc closes", /mcp "esc close": one wording, as the
    other hints name a key and what it does ("esc cancel", "ctrl+s accept")."""
    from selfref_tui.ui.screens.mcp_servers import McpServersScreen

    dialogs = {
        "help": HelpScreen([("ctrl+b", "Show or hide the sidebar")]),
        "context": ContextView([{"role": "user", "content": "hi"}], 12),
        "mcp": McpServersScreen([]),
    }
    for name, screen in dialogs.items():
        app = HostApp()
        async with app.run_test(size=(100, 30)) as pilot:
            await _open(pilot, screen)
            box = app.screen.children[0]
            subtitle = str(box.border_subtitle)
            assert subtitle.endswith("esc close") or "esc close ·" in subtitle, (name, subtitle)
            assert "closes" not in subtitle, (name, subtitle)


async def test_context_view_keeps_esc_close_in_view_when_narrow():
    """At 60 columns Textual cut the subtitle at its end: "… 5,497 of 32,000 tokens…",
    without "esc close". The bottom border is read as the terminal shows it."""
    from tests.ui.contrast import screen_cells

    for size, shown in (((100, 30), "1 message · 0 tools · 12 of 32,000 tokens · esc close"),
                        ((40, 20), "esc close")):
        app = HostApp()
        async with app.run_test(size=size) as pilot:
            await _open(pilot, ContextView([{"role": "user", "content": "hi"}], 12,
                                           window=32_000))
            await pilot.pause()
            box = app.screen.query_one("#dialog").region
            bottom = "".join(char for char, _fg, _bg in screen_cells(app)[box.bottom - 1])
            assert f" {shown} " in bottom, (size, bottom)


async def test_context_view_mounts_a_long_request_as_it_is_scrolled_to_its_end():
    """2,000 messages as two widgets each took seconds to open: a screenful or so is
    mounted, the rest as the scroll reaches the end; in the end every message is
    there, in order, each body whole."""
    from selfref_tui.ui.screens.context_view import blocks, message_text

    messages = [{"role": "system", "content": "rules " * 3000}]
    messages += [{"role": "user" if i % 2 else "assistant", "content": f"message {i} " * 30}
                 for i in range(1, 300)]
    messages.append({"role": "user", "content": "\n".join(f"pasted line {k}"
                                                          for k in range(3000))})
    app = HostApp()
    async with app.run_test(size=(100, 30)) as pilot:
        await _open(pilot, ContextView(messages, 321))
        screen = app.screen
        heads = screen.query(".role-user, .role-assistant, .role-system")
        assert 0 < len(heads) < 20
        more = str(screen.query_one(".more", Static).render())
        assert more == f"{len(messages) - len(heads):,} more messages below: scroll on to see them."
        for _ in range(200):
            if not screen.query(".more"):
                break
            await pilot.press("end")
            await pilot.pause()
        assert not screen.query(".more")
        shown = [str(w.render()) for w in screen.query(".role").results(Static)]
        assert [line.split()[1] for line in shown] == [f"#{i}" for i in range(len(messages))]
        bodies = [str(w.render()) for w in screen.query(".body").results(Static)]
        assert bodies == [block for m in messages for block in blocks(message_text(m))]
        assert "\n".join(bodies[-len(blocks(message_text(messages[-1]))):]) == message_text(
            messages[-1])  # a long body: blocks of whole lines


def test_a_long_body_is_shown_in_blocks_of_whole_lines():
    from selfref_tui.ui.screens.context_view import blocks

    lines = "\n".join(f"line {k}: some pasted log output" for k in range(2000))
    parts = blocks(lines, 2000)
    assert len(parts) > 20 and all(len(p) <= 2000 for p in parts)
    assert "\n".join(parts) == lines
    assert all(not p.startswith("\n") for p in parts[1:])
    run = "x" * 5000  # one line longer than a block: cut where it reaches the size
    assert blocks(run, 2000) == ["x" * 2000, "x" * 2000, "x" * 1000]
    assert blocks("short", 2000) == ["short"]


async def test_context_view_says_no_more_once_the_last_batch_ended_on_its_budget():
    """The last widget filled a batch's budget exactly (a body of four whole blocks): the
    "more below" line stayed under everything, telling the person to scroll on for
    nothing."""
    from selfref_tui.ui.screens.context_view import BATCH_CHARS, blocks

    body = "x" * BATCH_CHARS  # one line: blocks that add up to the budget, the last one it
    assert sum(map(len, blocks(body))) == BATCH_CHARS
    app = HostApp()
    async with app.run_test(size=(100, 30)) as pilot:
        await _open(pilot, ContextView([{"role": "user", "content": body}], 100))
        screen = app.screen
        for _ in range(20):
            if not screen.query(".more"):
                break
            await pilot.press("end")
            await pilot.pause()
        assert [str(w.render()) for w in screen.query(".more").results(Static)] == []
        assert "".join(str(w.render()) for w in screen.query(".body").results(Static)) == body


async def test_context_view_mounts_larger_batches_as_it_is_scrolled_on():
    """Each batch twice the last, up to four times the first: pressing End through a
    long request reaches its end in fewer presses, the first frame stays small."""
    from itertools import pairwise

    from selfref_tui.ui.screens.context_view import BATCH_GROWTH, BATCH_WIDGETS

    messages = [{"role": "user" if i % 2 else "assistant", "content": f"message {i}"}
                for i in range(1000)]
    app = HostApp()
    async with app.run_test(size=(100, 30)) as pilot:
        await _open(pilot, ContextView(messages, 321))
        screen = app.screen

        def heads() -> int:
            return len(screen.query(".role"))

        counts = [heads()]
        for _ in range(4):
            await pilot.press("end")
            await wait_for(pilot, lambda: heads() > counts[-1])
            counts.append(heads())
        first = BATCH_WIDGETS // 2  # a head and a body a message
        assert [b - a for a, b in pairwise(counts)] == [
            2 * first, BATCH_GROWTH * first, BATCH_GROWTH * first, BATCH_GROWTH * first]
        assert counts[0] == first
