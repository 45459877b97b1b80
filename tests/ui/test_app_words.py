"""On screen a memory key is a conversation, in the refusals too.

The footer, the palette and the switcher say "conversation"; a switch refused
during a turn still said "switch keys", and a read-only window "writes this key".
"""

from __future__ import annotations

import asyncio

from selfref_tui.demo.script import Stall
from selfref_tui.demo.server import DemoServer
from selfref_tui.ui.app import SelfRefApp
from tests.ui.helpers import SIZE, make_app, started, turn_done, type_and_send, wait_until


def _said(app) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def test_refusals_speak_of_conversations(tmp_path):
    release = asyncio.Event()
    stall = Stall(release, text_before="thinking", text_after=" done")
    async with DemoServer([stall]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "take your time")
            await wait_until(pilot, lambda: stall.reached.is_set(), what="the turn running")
            await type_and_send(pilot, "/key other")
            await wait_until(pilot, lambda: _said(app), what="the refusal")
            assert _said(app) == ["A turn is running; press Esc first, then switch "
                                  "conversations."]
            release.set()
            await turn_done(pilot, app)

        viewer = SelfRefApp(make_app(tmp_path, url).config, read_only=True)
        async with viewer.run_test(size=SIZE) as pilot:
            await started(pilot, viewer)
            await type_and_send(pilot, "/remember tea")
            await wait_until(pilot, lambda: _said(viewer), what="the refusal")
            (said,) = _said(viewer)
            assert said.startswith("Read-only window (--read-only)")
            assert said.endswith("once no other window writes this conversation.")


async def test_the_message_actions_and_the_switcher_speak_of_conversations(tmp_path):
    """F8's "Branch from here", /branch in the help, the name prompt and the delete
    question name a conversation, never a key."""
    from textual.widgets import Input

    from selfref_tui.context.mutations import UserMessageMutation
    from selfref_tui.demo.script import Reply
    from selfref_tui.selfref.reference import SelfReference
    from selfref_tui.ui.screens.choice_list import ChoiceList
    from selfref_tui.ui.screens.confirm import ConfirmScreen
    from selfref_tui.ui.screens.help import HelpScreen
    from selfref_tui.ui.screens.key_switcher import KeySwitcher
    from selfref_tui.ui.screens.new_key_prompt import NewKeyPrompt

    with SelfReference(tmp_path / "data") as store:
        store.open("notes").commit([UserMessageMutation({"role": "user", "content": "a note"})])
    async with DemoServer([Reply("first answer")]) as url:
        app = make_app(tmp_path, url, key="main")
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "hello")
            await turn_done(pilot, app)

            await pilot.press("ctrl+up", "f8")  # the answer highlighted, its actions
            await wait_until(pilot, lambda: isinstance(app.screen, ChoiceList), what="actions")
            text = "\n".join(label for _, label in app.screen.rows)
            assert "Branch from here: a new conversation up to message 2" in text
            assert " key" not in text
            await pilot.press("escape")

            await pilot.press("f1")
            await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen), what="help")
            branch = dict(slash_help_rows())["/branch [NAME]"]
            assert "conversation" in branch and "key" not in branch
            await pilot.press("escape")

            await pilot.press("ctrl+n")
            await wait_until(pilot, lambda: isinstance(app.screen, NewKeyPrompt), what="prompt")
            app.screen.query_one(Input).value = "notes"
            await pilot.press("enter")
            error = app.screen.query_one("#error")
            await wait_until(pilot, lambda: "exists" in str(error.render()), what="refused")
            assert "A conversation named notes exists" in str(error.render())
            await pilot.press("escape")

            await pilot.press("ctrl+o")
            await wait_until(pilot, lambda: isinstance(app.screen, KeySwitcher), what="switcher")
            await wait_until(pilot, lambda: "key:notes" in app.screen.visible_keys,
                             what="notes listed")
            while app.screen.visible_keys[app.screen.option_list.highlighted] != "key:notes":
                await pilot.press("down")
            await pilot.press("shift+delete")
            await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="asked")
            confirm = app.screen
            text = f"{confirm.dialog_title}\n{confirm.question}"
            assert "Delete the conversation notes (1 message)?" in text
            assert confirm.dialog_title == "Delete conversation" and "key" not in text
            await pilot.press("n")


def slash_help_rows() -> list[tuple[str, str]]:
    from selfref_tui.ui.commands import help_rows

    return help_rows()
