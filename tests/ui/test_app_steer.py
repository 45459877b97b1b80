"""The person steers in the app: rewind, edit and resend, regenerate, branch, undo.

Real app (Pilot), real store files, the demo server over real HTTP.
"""

from __future__ import annotations

import pytest

from selfref_tui.demo.script import Reply, ToolCall
from selfref_tui.demo.server import DemoServer
from selfref_tui.selfref.reference import SelfReference
from selfref_tui.ui.screens.new_key_prompt import NewKeyPrompt
from tests.ui.helpers import (
    fixed_clock,
    make_app,
    started,
    turn_done,
    type_and_send,
    wait_until,
)

SIZE = (100, 34)


def said(messages: list[dict]) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in messages if m["role"] != "system"]


def entries(tmp_path, key: str = "main") -> list[tuple[int, str, str, bool]]:
    memory = SelfReference(tmp_path / "data").open(key, write=False)
    return [(e.n, e.role, e.message.get("content"), e.rewound) for e in memory.entries()]


async def two_turns(pilot, app) -> None:
    await started(pilot, app)
    await type_and_send(pilot, "first question")
    await turn_done(pilot, app)
    await type_and_send(pilot, "second question")
    await turn_done(pilot, app)


def shown(app) -> str:
    return "\n".join(app.transcript.visible_text())


async def undo_from_the_actions(pilot, app, undone) -> None:
    """F8, then "undo" among the actions on the last message; until ``undone()``."""
    await pilot.press("f8")
    await wait_until(pilot, lambda: type(app.screen).__name__ == "ChoiceList",
                     what="the actions")
    rows = [row for row, _ in app.screen.rows]
    for _ in range(rows.index("undo")):
        await pilot.press("down")
    await pilot.press("enter")
    await wait_until(pilot, undone, what="undone")
    await pilot.pause()


async def test_edit_puts_your_last_message_back_and_sends_it_from_there(tmp_path):
    script = [Reply(text="one"), Reply(text="two"), Reply(text="two, better")]
    async with DemoServer(script) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await two_turns(pilot, app)
            await pilot.press("f9")  # edit your last message
            await wait_until(pilot, lambda: app.chat_input.text == "second question",
                             what="the message back in the input")
            await app.transcript.settle()
            await pilot.pause()
            assert "⟲ Rewound #3–#4 · 2 messages" in shown(app)
            assert "two" not in [i.text for i in app.transcript.items_of("answer")
                                 if not i.hidden]
            await pilot.press("end", *" please")
            await pilot.press("enter")
            await turn_done(pilot, app)
            sent = app.agent.memory("main").messages
            assert said(sent) == [("user", "first question"), ("assistant", "one"),
                                  ("user", "second question please"),
                                  ("assistant", "two, better")]
    assert entries(tmp_path) == [
        (1, "user", "first question", False), (2, "assistant", "one", False),
        (3, "user", "second question", True), (4, "assistant", "two", True),
        (5, "user", "second question please", False), (6, "assistant", "two, better", False)]


async def test_undoing_an_edit_takes_the_untouched_message_out_of_the_input(tmp_path):
    """F9 then F8 → undo: the message came back into the context and stayed in the
    input as well, and Enter sent it a second time. A draft typed before the edit comes
    back; a message edited since stays, as the person's own text."""
    script = [Reply(text="one"), Reply(text="two")]
    async with DemoServer(script) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await two_turns(pilot, app)

            async def undo() -> None:
                await undo_from_the_actions(
                    pilot, app, lambda: not app.transcript.items_of("rewound"))

            await pilot.press(*"a draft")
            await pilot.press("f9")
            await wait_until(pilot, lambda: app.chat_input.text == "second question\n\n"
                             "a draft", what="the message back before the draft")
            await undo()
            assert app.chat_input.text == "a draft"
            app.chat_input.clear()
            await pilot.press("f9")
            await wait_until(pilot, lambda: app.chat_input.text == "second question",
                             what="the message back in the input")
            await pilot.press("end", *"!")
            await undo()
            assert app.chat_input.text == "second question!"  # edited: the person's now


async def test_undoing_another_rewind_leaves_an_edits_message_in_the_input(tmp_path):
    """F9 puts the message into the input; F5 then regenerates the answer before it (a
    rewind of its own), and F8 → undo takes that one back. The edit is still in force,
    so its message stays in the input: the undo took it out, as if the edit was undone."""
    script = [Reply(text="one"), Reply(text="two"), Reply(text="one, again")]
    async with DemoServer(script) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await two_turns(pilot, app)
            await pilot.press("f9")
            await wait_until(pilot, lambda: app.chat_input.text == "second question",
                             what="the message back in the input")
            await pilot.press("f5")
            await wait_until(pilot, lambda: "one, again" in shown(app), what="regenerated")
            await turn_done(pilot, app)
            await undo_from_the_actions(pilot, app, lambda: any(
                "Undid the rewind" in str(n.message) for n in app._notifications))
            await pilot.pause()
            assert app.chat_input.text == "second question"
    assert [e[1:3] for e in entries(tmp_path) if not e[3]] == [  # the edit in force
        ("user", "first question"), ("assistant", "one")]


async def test_regenerate_asks_again_and_keeps_the_old_answer_rewound(tmp_path):
    script = [Reply(text="one"), Reply(text="two"), Reply(text="another two")]
    async with DemoServer(script) as server_url:
        app = make_app(tmp_path, server_url)
        async with app.run_test(size=SIZE) as pilot:
            await two_turns(pilot, app)
            await pilot.press(*"/regenerate")
            await pilot.press("enter")
            await wait_until(pilot, lambda: app.router.busy or len(entries_live(app)) > 4,
                             what="the turn asked again")
            await turn_done(pilot, app)
            assert said(app.agent.memory("main").messages) == [
                ("user", "first question"), ("assistant", "one"),
                ("user", "second question"), ("assistant", "another two")]
            assert app.chat_input.text == ""
    assert [(n, c, r) for n, _, c, r in entries(tmp_path)][2:] == [
        (3, "second question", True), (4, "two", True), (5, "second question", False),
        (6, "another two", False)]


def entries_live(app) -> list:
    return list(app.agent.memory("main").entries())


async def test_f5_after_a_turn_that_went_well_regenerates(tmp_path):
    script = [Reply(text="one"), Reply(text="one again")]
    async with DemoServer(script) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "hello")
            await turn_done(pilot, app)
            await pilot.press("f5")
            await wait_until(pilot, lambda: len(entries_live(app)) == 4, what="asked again")
            await turn_done(pilot, app)
            assert said(app.agent.memory("main").messages) == [("user", "hello"),
                                                               ("assistant", "one again")]


async def test_rewind_picker_undo_and_the_rewound_section(tmp_path):
    script = [Reply(tool_calls=[ToolCall("remember", {"text": "likes tea"})]),
              Reply(text="Noted."), Reply(text="two")]
    async with DemoServer(script) as url:
        app = make_app(tmp_path, url, clock=fixed_clock)  # Esc Esc: a double press, however slow
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "remember tea")
            await turn_done(pilot, app)
            await type_and_send(pilot, "second question")
            await turn_done(pilot, app)
            assert [e.text for e in app.sidebar.experiences] == ["likes tea"]
            await pilot.press("escape", "escape")  # idle: your messages to rewind to
            await wait_until(pilot, lambda: type(app.screen).__name__ == "ChoiceList",
                             what="the rewind list")
            await pilot.press("down", "enter")  # the second newest: "remember tea"
            await wait_until(pilot, lambda: app.chat_input.text == "remember tea",
                             what="its text back in the input")
            await wait_until(pilot, lambda: not app.sidebar.experiences,
                             what="the experience taken back")
            assert said(app.agent.memory("main").messages) == []
            sections = app.transcript.items_of("rewound")
            assert [(s.first, s.last, s.count, s.expanded) for s in sections] == [
                (1, 6, 6, False)]
            await app.transcript.settle()
            await pilot.pause()
            assert "Rewound #1–#6 · 6 messages" in shown(app)
            assert "second question" not in shown(app)  # collapsed
            app.transcript.toggle_section(sections[0])
            await pilot.pause()
            assert "second question" in shown(app)  # open: still readable, marked
            app.chat_input.clear()
            await pilot.press(*"/rewind undo")
            await pilot.press("enter")
            await wait_until(pilot, lambda: [e.text for e in app.sidebar.experiences]
                             == ["likes tea"], what="the experience back")
            assert not app.transcript.items_of("rewound")
            assert len(app.agent.memory("main").messages) == 7  # system + six


async def test_branch_from_a_highlighted_message(tmp_path):
    script = [Reply(text="one"), Reply(text="two")]
    async with DemoServer(script) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await two_turns(pilot, app)
            for _ in range(3):  # the newest item, then up to "second question"... then "one"
                await pilot.press("ctrl+up")
            highlighted = app.transcript.highlighted_item()
            assert highlighted is not None and highlighted.number == 2  # the answer "one"
            # without a name, a dialog asks for one and says where the branch starts
            await type_and_send(pilot, "/branch")
            await wait_until(pilot, lambda: isinstance(app.screen, NewKeyPrompt),
                             what="the name dialog")
            assert app.screen.query_one("#dialog").border_title == "New branch, before message 3"
            await pilot.press("escape")
            await wait_until(pilot, lambda: not isinstance(app.screen, NewKeyPrompt),
                             what="the dialog gone")
            assert app.key == "main"
            await pilot.press(*"/branch side")
            await pilot.press("enter")
            await wait_until(pilot, lambda: app.key == "side", what="the branch on screen")
            await wait_until(pilot, lambda: app.header.status == "ready", what="opened")
            assert said(app.agent.memory("side").messages) == [("user", "first question"),
                                                               ("assistant", "one")]
            info = {k["key"]: k for k in await app.controller.person_keys()}
            assert info["side"]["origin"] == "from main up to #2"  # the switcher's row
            # a branch at the end names the last message it holds, not one past it
            await pilot.press(*"/branch end")
            await pilot.press("enter")
            await wait_until(pilot, lambda: app.key == "end", what="the branch at the end")
            info = {k["key"]: k for k in await app.controller.person_keys()}
            assert info["end"]["origin"] == "from side up to #2"
    assert [c for _, _, c, _ in entries(tmp_path)] == ["first question", "one",
                                                       "second question", "two"]


async def test_a_branch_sends_its_origins_instructions(tmp_path):
    from selfref_tui.context.compile import INSTRUCTIONS_HEADING

    server = DemoServer([Reply(text="one"), Reply(text="two"), Reply(text="on the branch")])
    async with server as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await app.controller.set_instructions("Answer in French.")
            await two_turns(pilot, app)
            await type_and_send(pilot, "/branch side")
            await wait_until(pilot, lambda: app.key == "side", what="the branch on screen")
            await wait_until(pilot, lambda: app.header.status == "ready", what="opened")
            assert app.controller.instructions == "Answer in French."
            await type_and_send(pilot, "third question")
            await turn_done(pilot, app)
            sent = server.requests[-1]["messages"]
            assert f"{INSTRUCTIONS_HEADING}\nAnswer in French." in sent[0]["content"]
            assert [m["content"] for m in sent[1:]] == [
                "first question", "one", "second question", "two", "third question"]


async def test_actions_menu_on_a_highlighted_message_rewinds_to_it(tmp_path):
    script = [Reply(text="one"), Reply(text="two")]
    async with DemoServer(script) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await two_turns(pilot, app)
            await pilot.press("ctrl+up")  # the newest item: the answer "two"
            assert app.transcript.highlighted_item().number == 4
            await pilot.press("f8")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "ChoiceList",
                             what="the actions")
            await pilot.press("enter")  # the first row: rewind to here
            await wait_until(pilot, lambda: len(app.agent.memory("main").messages) == 3,
                             what="rewound before the answer")
            assert app.chat_input.text == ""  # an answer's text does not go to the input


async def test_actions_menu_with_nothing_highlighted_acts_on_the_last_message(tmp_path):
    script = [Reply(text="one"), Reply(text="two")]
    async with DemoServer(script) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await two_turns(pilot, app)
            assert app.transcript.highlighted_item() is None
            await pilot.press("f8")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "ChoiceList",
                             what="the actions")
            assert app.screen.rows[0] == (
                "rewind", "Rewind to here: the context goes back to just before message 4")
            assert "#4 assistant: two" in app.screen.about
            await pilot.press("enter")
            await wait_until(pilot, lambda: len(app.agent.memory("main").messages) == 3,
                             what="rewound before the last answer")


async def test_rewinding_during_a_turn_stops_it_first_and_keeps_what_was_queued(tmp_path):
    import asyncio

    from selfref_tui.demo.script import Stall

    release = asyncio.Event()
    script = [Reply(text="one"), Stall(release, text_before="A long answer in", text_after=" x")]
    async with DemoServer(script) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "first question")
            await turn_done(pilot, app)
            await type_and_send(pilot, "tell me a long story")
            await wait_until(pilot, lambda: app.transcript.current is not None
                             and "long answer" in app.transcript.current.text,
                             what="the answer streaming")
            await type_and_send(pilot, "and make it funny")  # queued for the running turn
            await wait_until(pilot, lambda: app.router.queued == ["and make it funny"],
                             what="queued")
            await pilot.press(*"/rewind 3")
            await pilot.press("enter")
            await wait_until(pilot, lambda: not app.router.busy and said(
                app.agent.memory("main").messages) == [("user", "first question"),
                                                      ("assistant", "one")],
                what="stopped, then rewound")
            # the rewound message to edit, then what was queued and never sent: nothing lost
            await wait_until(pilot, lambda: "tell me a long story" in app.chat_input.text,
                             what="the input")
            assert "and make it funny" in app.chat_input.text
            # the stop is said after the transcript was drawn again: it marks no answer
            # on screen (it marked the last one before the rewound section "interrupted")
            await wait_until(pilot, lambda: app.header.status == "stopped", what="stopped")
            await pilot.pause()
            assert "one" in shown(app) and "Rewound #3–#4" in shown(app)
            assert "interrupted" not in shown(app)
        release.set()
    memory = SelfReference(tmp_path / "data").open("main", write=False)
    stopped = memory.entry(4)  # the stopped answer: kept as it was, marked, and rewound
    assert stopped.rewound and stopped.message.get("truncated")
    assert stopped.message["content"].startswith("A long answer in")


#: one turn in which the model writes ``new.txt`` (a file that did not exist) with fd_to_file
WRITES_A_FILE = [Reply(text='<ref id="note">new text</ref>', tool_calls=[
    ToolCall("fd_to_file", {"fd": "ref:note", "file_path": "new.txt"}, id="w1")]),
    Reply(text="Written.")]


@pytest.fixture
def work(tmp_path, monkeypatch):
    """The current folder (the allowed root) the model writes into."""
    folder = tmp_path / "work"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder


async def test_rewinding_past_a_file_write_offers_to_restore_it(tmp_path, work):
    async with DemoServer(WRITES_A_FILE) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "save a note")
            await turn_done(pilot, app)
            assert (work / "new.txt").read_text() == "new text"
            await pilot.press(*"/rewind 2")
            await pilot.press("enter")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "RestoreFiles",
                             what="the files offered")
            rows = app.screen.rows
            assert rows == [(str(work / "new.txt"),
                             "restoring removes it: it did not exist before", "")]
            # the highlighted row is also shown whole, under the list (a row may be cut)
            await wait_until(pilot, lambda: "did not exist before" in str(
                app.screen.query_one("#detail").render()), what="the row shown whole")
            app.screen.query_one("#restore").press()
            await wait_until(pilot, lambda: not (work / "new.txt").exists(),
                             what="the file the model made removed")
            # undoing the rewind offers the model's version again, said as such
            await pilot.press(*"/rewind undo")
            await pilot.press("enter")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "RestoreFiles",
                             what="the files offered again")
            assert app.screen.rows == [(str(work / "new.txt"),
                                        "restoring writes the model's version again", "")]
            # and the dialog's own words say so: not "put back as they were before"
            about = str(app.screen.query_one("#about").render())
            assert about.startswith("The rewind was undone.") and "before" not in about
            assert app.screen.query_one("#dialog").border_title == "Files the model wrote there"
            app.screen.query_one("#restore").press()
            await wait_until(pilot, lambda: (work / "new.txt").exists(),
                             what="the model's file written again")
            assert (work / "new.txt").read_text() == "new text"


async def test_the_restore_dialog_comes_first_and_enter_restores_the_ticked_files(
        tmp_path, work):
    """The rewind's notice waits for the dialog to close (a long one lay over its corner)
    and then says what became of the files too; in the list space ticks and Enter
    restores (Enter unticked the row, and nothing on the dialog named a key)."""
    from textual.widgets import SelectionList

    def said() -> list[str]:
        return [str(n.message) for n in app._notifications]

    async with DemoServer(WRITES_A_FILE) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "save a note")
            await turn_done(pilot, app)
            app.clear_notifications()
            await pilot.press(*"/rewind 2")
            await pilot.press("enter")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "RestoreFiles",
                             what="the files offered")
            assert not any("Rewound" in text for text in said())
            hint = str(app.screen.query_one("#hint").render())
            assert "space" in hint and "enter" in hint and "esc" in hint
            ticks = app.screen.query_one(SelectionList)
            await pilot.press("space")
            assert ticks.selected == []
            await pilot.press("space")
            assert ticks.selected == [0]
            await pilot.press("enter")
            await wait_until(pilot, lambda: not (work / "new.txt").exists(),
                             what="the file the model made removed")
            await wait_until(pilot, lambda: any("Rewound" in text for text in said()),
                             what="the rewind said")
            notice = next(text for text in said() if "Rewound" in text)
            assert notice.endswith(f"removed {work / 'new.txt'} (it did not exist before)\n"
                                   "/rewind undo brings it back.")
            assert "files the model wrote there" not in notice  # the dialog listed them


async def test_no_dialog_when_every_file_is_already_as_it_was(tmp_path, work):
    async with DemoServer(WRITES_A_FILE) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "save a note")
            await turn_done(pilot, app)
            (work / "new.txt").unlink()  # the person removed it: as before the model wrote it
            app.clear_notifications()
            await pilot.press(*"/rewind 1")
            await pilot.press("enter")
            said = "The files the model wrote there are already as they were: nothing to restore."
            await wait_until(pilot, lambda: said in [str(n.message) for n in app._notifications],
                             what="the notice instead of a dialog")
            assert type(app.screen).__name__ != "RestoreFiles"
            assert not (work / "new.txt").exists()


async def test_edit_brings_back_the_images_of_your_message(tmp_path):
    from tests.ui.test_app_images import command
    from tests.ui.test_transcript_image import png

    picture = tmp_path / "square.png"
    picture.write_bytes(png())
    script = [Reply(text="A square."), Reply(text="A square, again.")]
    async with DemoServer(script) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await command(pilot, app, f"/attach {picture}")
            await pilot.press(*"what is it?", "enter")
            await turn_done(pilot, app)
            await pilot.press("f9")
            await wait_until(pilot, lambda: len(app.chat_input.attached) == 1,
                             what="the image back as a chip")
            assert "what is it?" in app.chat_input.text
            assert app.chat_input.attached[0].data == png()
            assert app.chat_input.attached[0].name == "square.png"
            await pilot.press("enter")  # sent again, with its image
            await turn_done(pilot, app)
            sent = app.agent.memory("main").messages
            parts = [m for m in sent if m["role"] == "user"][-1]["content"]
            assert parts[0] == {"type": "text", "text": "what is it?"}
            assert parts[1]["image_url"]["url"].startswith("data:image/png;base64,")


async def test_rewinding_to_a_hidden_number_goes_just_before_that_call(tmp_path):
    """A live item of a call whose result had images keeps the number of the message that
    held the call, hidden since: pinning it says why not, rewinding to it goes just before
    the call."""
    from selfref_tui.context.mutations import (
        AssistantMessageMutation,
        MultimodalToolResultMutation,
        UserMessageMutation,
    )

    call = {"id": "c1", "type": "function", "function": {"name": "shot", "arguments": "{}"}}
    with SelfReference(tmp_path / "data") as store:
        memory = store.open("main")
        memory.commit([UserMessageMutation({"role": "user", "content": "look"}),
                       AssistantMessageMutation(content="", tool_calls=[call])])
        memory.commit([MultimodalToolResultMutation("c1", "shot", "{}",
                                                    [{"content": "the picture"}])])
        memory.commit([AssistantMessageMutation(content="A cat.")])
    async with DemoServer([Reply(text="unused")]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await pilot.press(*"/pin 2")
            await pilot.press("enter")
            await wait_until(pilot, lambda: app._notifications, what="the pin refused")
            [refused] = [str(n.message) for n in app._notifications]
            assert refused == ("Message 2 held only a tool call, whose result with images "
                               "follows it: pin that instead.")
            app.clear_notifications()
            app.chat_input.clear()  # a refused command stays in the input
            await pilot.press(*"/rewind 2")
            await pilot.press("enter")
            await wait_until(pilot, lambda: app.transcript.items_of("rewound"),
                             what="the rewound section")
            assert said(app.agent.memory("main").messages) == [("user", "look")]
            assert app.chat_input.text == ""  # a call is no message of the person's
            [note] = [str(n.message) for n in app._notifications]
            assert note.startswith("Rewound conversation 'main' to just before message 2: 3 "
                                   "messages (3–5) left the model's context")


async def test_a_number_that_is_not_one_is_refused_in_a_line(tmp_path):
    """A digit Python's int() does not read ("²" is a digit to str.isdigit) ended the app
    when given to /rewind, /edit, /pin or /unpin."""
    async with DemoServer([Reply(text="one")]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "first question")
            await turn_done(pilot, app)
            for command in ("/rewind ²", "/edit ³", "/pin ²", "/unpin #¹"):
                await type_and_send(pilot, command)
                await wait_until(pilot, lambda: any(
                    "message number" in n.message for n in app._notifications),
                    what=f"{command} refused")
                assert app.chat_input.text == command  # kept, to correct
                app.chat_input.clear()
                app.clear_notifications()
            assert app.is_running and len(app.agent.memory("main").messages) == 2


async def test_undo_is_offered_only_when_there_is_a_rewind_to_take_back(tmp_path):
    """F8 and Esc Esc offered "Undo the last rewind" in a conversation never rewound;
    and once every message was rewound, Esc Esc said there was nothing to rewind to and
    left out the way back."""
    script = [Reply(text="one")]
    async with DemoServer(script) as url:
        app = make_app(tmp_path, url, clock=fixed_clock)  # Esc Esc: a double press, however slow
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "first question")
            await turn_done(pilot, app)
            await pilot.press("f8")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "ChoiceList",
                             what="the actions")
            assert "undo" not in [row for row, _ in app.screen.rows]
            await pilot.press("escape")
            await pilot.press("escape", "escape")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "ChoiceList",
                             what="the rewind list")
            assert [row for row, _ in app.screen.rows] == ["1"]
            await pilot.press("enter")  # back to before the only message
            await wait_until(pilot, lambda: app.chat_input.text == "first question",
                             what="rewound")
            app.chat_input.clear()
            await pilot.press("escape", "escape")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "ChoiceList",
                             what="the rewind list with only the way back")
            assert app.screen.rows == [("undo", "Undo the last rewind")]
            await pilot.press("enter")
            await wait_until(pilot, lambda: not app.transcript.items_of("rewound"),
                             what="undone")
            assert said(app.agent.memory("main").messages) == [
                ("user", "first question"), ("assistant", "one")]


async def test_a_store_that_cannot_write_refuses_a_rewind_or_pin_in_a_line(tmp_path):
    """The disk full (the key's log now writes to /dev/full): a rewind, an edit, a
    regenerate or a pin is said in one line and the window goes on (the store's error
    ended the app)."""
    import os

    script = [Reply(text="one"), Reply(text="two")]
    async with DemoServer(script) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await two_turns(pilot, app)
            memory = app.agent.memory("main")
            before = list(memory.messages)
            full = os.open("/dev/full", os.O_WRONLY)
            os.dup2(full, memory._open_for_append())
            os.close(full)
            for command in ("/rewind 3", "/pin 1", "/edit", "/regenerate"):
                await type_and_send(pilot, command)
                await wait_until(pilot, lambda: any(
                    "Could not save" in n.message for n in app._notifications),
                    what=f"{command} refused")
                app.chat_input.clear()
                app.clear_notifications()
            assert app.is_running and memory.messages == before and memory.pins == set()


async def test_a_branch_from_a_tool_call_keeps_its_results(tmp_path):
    """Branch from here on a call's card (or the answer that made the call) goes on
    past the call's results: a branch cut before them lost what the tool returned."""
    script = [Reply(text="Checking.", tool_calls=[
        ToolCall("remember", {"text": "likes tea"}, id="r1")]), Reply(text="Noted.")]
    async with DemoServer(script) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "remember tea")
            await turn_done(pilot, app)
            [card] = app.transcript.items_of("tool")
            assert card.number == 2  # the call's message
            assert app.branch_point(card) == 4  # after its result (3): before "Noted."
            await pilot.press("ctrl+up", "ctrl+up")
            assert app.transcript.highlighted_item() is card
            await pilot.press(*"/branch side")
            await pilot.press("enter")
            await wait_until(pilot, lambda: app.key == "side", what="the branch on screen")
            assert [m["role"] for m in app.agent.memory("side").messages[1:]] == [
                "user", "assistant", "tool"]


async def test_a_message_back_in_the_input_shows_its_control_characters(tmp_path):
    """A message stored with control characters (piped to ``ask -`` from a terminal log,
    or a log that is input) came back into the input raw on edit or rewind, and a
    TextArea writes its ESC to the terminal: here an OSC 52 that sets the clipboard
    (ended by ST, ESC backslash) and a clear screen. It comes back as a paste does,
    the characters shown, and is sent as shown."""
    from selfref_tui.context.mutations import AssistantMessageMutation, UserMessageMutation

    with SelfReference(tmp_path / "data") as store:
        store.open("main").commit([
            UserMessageMutation({"role": "user",
                                 "content": "see \x1b]52;c;aGk=\x1b\\ \x1b[2J this"}),
            AssistantMessageMutation(content="seen")])
    async with DemoServer([]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await pilot.press("f9")
            await wait_until(pilot, lambda: "this" in app.chat_input.text,
                             what="the message back in the input")
            assert app.chat_input.text == "see ␛]52;c;aGk=␛\\ ␛[2J this"


async def test_the_rewind_list_shows_each_message_on_one_line_its_times_in_a_column(tmp_path):
    """Esc Esc over a long working day: a message of 60 characters wrapped onto a second
    line that began under its number, and "#5" stood a column left of "#16"."""
    from textual.widgets import OptionList

    from selfref_tui.context.mutations import AssistantMessageMutation, UserMessageMutation

    with SelfReference(tmp_path / "data") as store:
        memory = store.open("main")
        for i in range(1, 9):
            memory.commit([UserMessageMutation({"role": "user", "content": (
                f"Decision {i}: the ledgerly module m{i} handles topic-{i} with a retry "
                f"budget of {i * 7} ms, and nothing else")}),
                AssistantMessageMutation(content="Noted.")])
    async with DemoServer([]) as url:
        app = make_app(tmp_path, url, clock=fixed_clock)
        async with app.run_test(size=(80, 24)) as pilot:
            await started(pilot, app)
            await pilot.press("escape", "escape")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "ChoiceList",
                             what="the rewind list")
            labels = [label for _, label in app.screen.rows]
            assert labels[0].startswith("#15  ") and labels[-1].startswith("#1   ")
            assert len({label.index(":") for label in labels}) == 1  # the times' column
            listed = app.screen.query_one(OptionList)
            await pilot.pause()
            assert listed.virtual_size.height == listed.option_count == 8  # a line each
