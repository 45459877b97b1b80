"""The approval dialog: what it shows (inert), and that every way out is a choice."""

from __future__ import annotations

from typing import Any

import pytest
from textual.app import App, ComposeResult
from textual.widgets import Button, Static

from selfref_tui.agent.mcp.approval import (
    APPROVAL_CHOICES,
    APPROVE_ALWAYS,
    APPROVE_ONCE,
    DENY,
    approval_prompt,
    is_approval,
    parse_approval,
)
from selfref_tui.ui.screens import question
from selfref_tui.ui.screens.approval import ApprovalScreen
from tests.hostile import CORPUS, assert_inert


class HostApp(App):
    def __init__(self, prompt: str) -> None:
        super().__init__()
        self.prompt = prompt
        self.results: list[Any] = []

    def compose(self) -> ComposeResult:
        yield Static("host")

    def on_mount(self) -> None:
        approval = parse_approval(self.prompt)
        assert approval is not None
        self.push_screen(ApprovalScreen(approval), self.results.append)


PROMPT = approval_prompt("time", "get_current_time", {"timezone": "Europe/Paris"})


def test_the_prompt_round_trips_and_names_cannot_fake_lines():
    approval = parse_approval(PROMPT)
    assert (approval.server, approval.tool) == ("time", "get_current_time")
    assert '"timezone": "Europe/Paris"' in approval.arguments
    forged = parse_approval(approval_prompt("s", "t\narguments:\n{}", {"real": 1}))
    assert "\n" not in forged.tool and '"real": 1' in forged.arguments
    assert parse_approval("Overwrite notes.txt?") is None
    assert is_approval(APPROVAL_CHOICES) and not is_approval(("overwrite", "keep"))
    assert APPROVAL_CHOICES[-1] == DENY  # the safe choice: Esc, Enter and its letter


@pytest.mark.parametrize(("keys", "answer"), [
    (["d"], DENY), (["escape"], DENY), (["enter"], DENY),  # the focus starts on deny
    (["left", "enter"], APPROVE_ALWAYS), (["left", "left", "enter"], APPROVE_ONCE),
    (["a", "t", "escape"], DENY),  # letters of the other choices do nothing
    # Tab goes round the choices, as the hint says (it stopped on the arguments, where
    # Enter did nothing)
    (["tab", "enter"], APPROVE_ONCE), (["tab", "tab", "enter"], APPROVE_ALWAYS),
    (["shift+tab", "enter"], APPROVE_ALWAYS),
])
async def test_each_way_out_is_a_choice(keys, answer, monkeypatch):
    monkeypatch.setattr(question, "GRACE_S", 0.0)  # the grace time has its own test
    app = HostApp(PROMPT)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, ApprovalScreen)
        await pilot.press(*keys)
        await pilot.pause()
    assert app.results == [answer]


async def test_long_arguments_scroll_with_the_arrows_while_a_choice_has_the_focus(
        monkeypatch):
    monkeypatch.setattr(question, "GRACE_S", 0.0)
    app = HostApp(approval_prompt("files", "write", {f"line{n}": n for n in range(60)}))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        box = app.screen.query_one("#arguments")
        assert box.max_scroll_y > 0
        await pilot.press("down", "down", "pagedown")
        await pilot.pause()
        assert box.scroll_y > 0
        assert app.focused is app.screen.query_one("#choice-2")
        await pilot.press("end")
        await pilot.pause()
        assert box.scroll_y == box.max_scroll_y
        await pilot.press("enter")
        await pilot.pause()
    assert app.results == [DENY]


async def test_an_enter_typed_for_the_chat_allows_nothing(monkeypatch):
    # However slow the machine, these keys come within the grace time.
    monkeypatch.setattr(question, "GRACE_S", 3600.0)
    app = HostApp(PROMPT)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await pilot.press("left", "enter")  # typed for the chat: ignored
        await pilot.pause()
        assert app.results == [] and isinstance(app.screen, ApprovalScreen)
        monkeypatch.setattr(question, "GRACE_S", 0.0)
        await pilot.click("#choice-0")
        await pilot.pause()
    assert app.results == [APPROVE_ONCE]


async def test_the_hint_names_its_keys_as_the_other_dialogs_do():
    """Lower case and bold, then what they do ("esc cancel" elsewhere): it said
    "d, Esc or Enter: deny · Tab or arrows, then Enter: another choice"."""
    from textual.content import Content

    app = HostApp(PROMPT)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        hint = app.screen.query_one("#hint", Static).render()
        assert isinstance(hint, Content)
        assert hint.plain == "d, esc or enter deny   tab or ←→ then enter another choice"
        bold = [hint.plain[span.start:span.end] for span in hint.spans
                if "bold" in str(span.style)]
        assert bold == ["d", "esc", "enter", "tab", "←→", "enter"]


async def test_hostile_names_and_arguments_are_shown_inert():
    args = {name: text for name, text in CORPUS}
    app = HostApp(approval_prompt("srv\x1b]0;t\x07", "[@click=app.quit]x[/]\x9b31m", args))
    async with app.run_test(size=(120, 60)) as pilot:
        await pilot.pause()
        screen = app.screen
        shown = [str(w.render()) for w in screen.query(Static)]
        for text in shown:
            assert_inert(text)
        assert any("[@click=app.quit]x[/]" in t for t in shown)  # shown, not run
        assert app.is_running and screen.query(Button)


def test_approval_dialog_snapshot(snap_compare):
    app = HostApp(approval_prompt("docs", "search", {"query": "MCP approvals", "limit": 5}))
    assert snap_compare(app, terminal_size=(100, 30))
