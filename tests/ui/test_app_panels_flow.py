"""The sidebar and fork panel inside the whole app, over real HTTP to the demo server.

What a person does (keys), what the screen shows, and what the store kept —
read back read-only after the app has exited and released the key.
"""

from __future__ import annotations

import json

from selfref_tui.context.mutations import ExperienceRememberMutation
from selfref_tui.demo.script import Reply, ToolCall
from selfref_tui.demo.server import DemoServer
from selfref_tui.selfref.reference import SelfReference
from tests.ui.helpers import (
    SIZE,
    click,
    make_app,
    started,
    stored_experiences,
    turn_done,
    type_and_send,
    wait_until,
)


def seed_experiences(tmp_path, texts: list[str]) -> None:
    store = SelfReference(tmp_path / "data")
    try:
        store.open("main").commit([ExperienceRememberMutation(t) for t in texts])
    finally:
        store.close()


async def test_forget_experience_from_sidebar_is_persisted(tmp_path):
    seed_experiences(tmp_path, ["Likes Python", "Uses tabs", "Works in Berlin"])
    async with DemoServer([]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            experiences = app.sidebar.experience_list
            assert [e.text for e in experiences.experiences] == [
                "Likes Python",
                "Uses tabs",
                "Works in Berlin",
            ]
            await click(pilot, experiences.option_list)
            assert app.focused is experiences.option_list
            await pilot.press("home", "down")
            assert experiences.highlighted_id == "exp_002"
            # Any key but y cancels: nothing is forgotten.
            await pilot.press("delete")
            assert experiences.confirming == "exp_002"
            await pilot.press("n")
            assert experiences.confirming is None
            assert len(experiences.experiences) == 3
            # Delete, y: forgotten, on screen and in the running agent.
            await pilot.press("delete", "y")
            await wait_until(
                pilot, lambda: len(experiences.experiences) == 2, what="sidebar refresh"
            )
            assert [e.id for e in experiences.experiences] == ["exp_001", "exp_003"]
            assert app.focused is experiences.option_list
    # Persisted: a fresh read-only load folds the ExperienceForgetMutation from the log.
    assert [e["text"] for e in stored_experiences(tmp_path)] == ["Likes Python", "Works in Berlin"]
    store = SelfReference(tmp_path / "data")
    log = (store.key_dir("main") / "log.jsonl").read_text()
    store.close()
    assert "exp_002" in log.splitlines()[-1]  # the last commit is the forget


async def test_forgetting_the_last_experience_hands_the_keys_back_to_the_input(tmp_path):
    seed_experiences(tmp_path, ["Likes Python"])
    async with DemoServer([Reply(text="noted")]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            experiences = app.sidebar.experience_list
            await pilot.press("tab")  # from the input to the experiences
            assert app.focused is experiences.option_list
            await pilot.press("delete", "y")
            await wait_until(pilot, lambda: not experiences.experiences, what="forgotten")
            # The emptied list is hidden; what is typed next must reach the input.
            assert app.focused is app.chat_input
            await type_and_send(pilot, "still here")
            await turn_done(pilot, app)
            assert app.transcript.items_of("user")[-1].text == "still here"


CHILD_MARK = "CHILD TASK"


def fork_model(body: dict, call_index: int):
    """Parent: spawn two children, then gather them, then answer. Children: one line."""
    messages = body.get("messages") or []
    last = messages[-1]
    content = last.get("content") or ""
    if last.get("role") == "user" and CHILD_MARK in content:
        letter = content.split(CHILD_MARK, 1)[1].strip()[:1]
        return Reply(text=f"Child {letter} finished its part.", tokens_per_s=200)
    if last.get("role") == "tool":
        assistant = next(m for m in reversed(messages) if m.get("role") == "assistant")
        called = [c["function"]["name"] for c in assistant.get("tool_calls") or []]
        if "fork_spawn" in called:
            return Reply(text="Gathering.", tool_calls=[ToolCall("fork_gather_all", {})])
        return Reply(text="Both children are done.")
    return Reply(
        text="Splitting the work.",
        tool_calls=[
            ToolCall("fork_spawn", {"task": f"{CHILD_MARK} A: list the inputs"}),
            ToolCall("fork_spawn", {"task": f"{CHILD_MARK} B: list the outputs"}),
        ],
    )


async def test_fork_panel_shows_two_children_that_finish(tmp_path):
    async with DemoServer(fork_model) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            panel = app.fork_panel
            assert not panel.display
            await type_and_send(pilot, "split this in two")
            # (It opens by itself at the first spawn and goes when the turn is over:
            # tests/ui/test_app_fork_panel.py holds it open to look at it.)
            await wait_until(pilot, lambda: len(panel.forks) == 2, what="two rows")
            assert panel.table.row_count == 2
            await turn_done(pilot, app, timeout=20)
            await wait_until(pilot, lambda: not panel.display, what="the panel gone")
            forks = panel.forks
            assert [f["fork_id"] for f in forks] == ["fork_1", "fork_2"]
            assert [f["task"] for f in forks] == [
                f"{CHILD_MARK} A: list the inputs",
                f"{CHILD_MARK} B: list the outputs",
            ]
            assert all(f["status"] in ("completed", "done") for f in forks)
            assert [f["response"] for f in forks] == [
                "Child A finished its part.",
                "Child B finished its part.",
            ]
            # The chosen fork's live transcript got the child's streamed text.
            assert forks[0]["text"] == "Child A finished its part."
            rows = [[str(cell) for cell in panel.table.get_row_at(i)] for i in range(2)]
            assert all("done" in row[2] for row in rows)
            # Finished forks stay listed; the parent shows its tool cards.
            names = [card.tool_name for card in app.transcript.items_of("tool")]
            assert names == ["fork_spawn", "fork_spawn", "fork_gather_all"]
            # Opened again, moving the table cursor shows the other child's transcript.
            await pilot.press("ctrl+t")
            panel.table.focus()
            await pilot.press("down")
            await wait_until(pilot, lambda: panel.chosen == "fork_2", what="choose fork")
    store = SelfReference(tmp_path / "data")
    try:
        memory = store.open("main", write=False)
        assert {f["status"] for f in memory.forks.values()} <= {"completed", "done"}
        assert len(memory.forks) == 2
        gathered = next(m for m in reversed(memory.messages) if m.get("role") == "tool")
        assert "Child B finished its part." in json.dumps(gathered)
    finally:
        store.close()


def seed_refs_and_experiences(tmp_path) -> None:
    store = SelfReference(tmp_path / "data")
    try:
        store.open("main").commit(
            [ExperienceRememberMutation("Likes Python")],
            records=[{"t": "ref", "id": "fib", "content": "def fib(): ...", "message_index": 0}],
        )
    finally:
        store.close()


async def test_tab_cycles_input_experiences_refs_and_hiding_a_panel_returns_focus(tmp_path):
    seed_refs_and_experiences(tmp_path)
    async with DemoServer([]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            experiences = app.sidebar.experience_list.option_list
            refs = app.sidebar.ref_list.option_list
            assert app.focused is app.chat_input
            await pilot.press("tab")
            assert app.focused is experiences
            await pilot.press("tab")
            assert app.focused is refs
            await pilot.press("tab")
            assert app.focused is app.chat_input
            await pilot.press("shift+tab")
            assert app.focused is refs
            # ctrl+b hides the list that holds focus: focus goes back to the input,
            # and what is typed next lands there instead of vanishing.
            await pilot.press("ctrl+b")
            assert not app.sidebar.display and app.focused is app.chat_input
            await pilot.press(*"/remember x")
            assert app.chat_input.text == "/remember x"
            # With the sidebar hidden, Tab stays on the input.
            await pilot.press("tab")
            assert app.focused is app.chat_input


async def test_a_printable_key_with_no_text_widget_focused_goes_to_the_input(tmp_path):
    seed_refs_and_experiences(tmp_path)
    async with DemoServer([]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            app.set_focus(None)
            await pilot.press("h", "i")
            assert app.focused is app.chat_input and app.chat_input.text == "hi"
            app.chat_input.clear()
            await pilot.press("tab", "tab")  # the refs list
            assert app.focused is app.sidebar.ref_list.option_list
            await pilot.press("o", "k")
            assert app.focused is app.chat_input and app.chat_input.text == "ok"
            # Bound keys still do their job: ctrl+b is not typed into the input.
            await pilot.press("ctrl+b")
            assert app.chat_input.text == "ok"


async def test_hiding_the_fork_panel_that_holds_focus_returns_it_to_the_input(tmp_path):
    async with DemoServer([]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await pilot.press("ctrl+t")
            assert app.fork_panel.display
            app.fork_panel.table.focus()
            await pilot.pause()
            await pilot.press("ctrl+t")
            assert not app.fork_panel.display and app.focused is app.chat_input


async def test_under_100_columns_panels_open_over_the_chat_not_beside_it(tmp_path):
    seed_refs_and_experiences(tmp_path)
    async with DemoServer([]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=(80, 24)) as pilot:
            await started(pilot, app)
            chat = app.query_one("#chat")
            assert not app.sidebar.display and chat.size.width == 80
            await pilot.press("ctrl+b")
            await pilot.pause()
            assert app.sidebar.display and app.sidebar.region.width >= 30
            assert chat.size.width == 80  # the chat keeps its width under the drawer
            await pilot.press("ctrl+b", "ctrl+t")
            await pilot.pause()
            panel = app.fork_panel
            assert panel.display and chat.size.width == 80
            # The fork table's columns all fit: nothing is cut at the right edge.
            table = panel.table
            columns = sum(c.get_render_width(table) for c in table.columns.values())
            assert columns <= table.scrollable_content_region.width


async def test_the_footer_names_the_palette_key_readably(tmp_path):
    async with DemoServer([]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            # Textual's footer recomposes (after a refresh) whenever the bindings change,
            # as focus moves at start-up: wait for the key as the settled footer shows it,
            # not whatever a recompose under way has mounted but not yet styled.
            try:
                await wait_until(pilot, lambda: "ctrl+p Palette" in _palette(app),
                                 what="the palette key in the footer")
            except AssertionError as exc:
                raise AssertionError(f"{exc}; the footer shows {_palette(app)!r}") from None


def _palette(app) -> str:
    """The footer's palette key as drawn ("" while the footer is between compositions)."""
    from textual.css.query import NoMatches

    try:
        return str(app.query_one("Footer .-command-palette").render())
    except NoMatches:
        return ""


async def test_hundreds_of_rows_in_the_sidebar_show_scroll_forget_and_export(tmp_path, monkeypatch):
    """Past ``EAGER`` rows the lists wrap only the rows they show: what a person does
    with them is the same (End, Delete then y, Enter on a ref, ctrl+s)."""
    from textual.geometry import Region

    from selfref_tui.context.mutations import AssistantMessageMutation, UserMessageMutation
    from selfref_tui.ui.widgets.lazy_option_list import EAGER

    monkeypatch.chdir(tmp_path)
    facts = [f"fact {k}: the build runs on the machine in the cellar, not the laptop"
             for k in range(EAGER + 100)]
    refs = EAGER + 50
    store = SelfReference(tmp_path / "data")
    try:
        memory = store.open("main")
        memory.commit([ExperienceRememberMutation(text) for text in facts])
        for k in range(refs):
            code = f"```python\nx = {k}\n```"
            # the answer, and its ref's record as the runtime writes it with the answer
            memory.commit([UserMessageMutation({"role": "user", "content": f"q{k}"}),
                           AssistantMessageMutation(content=f'<ref id="r{k}">\n{code}\n</ref>')],
                          records=[{"t": "ref", "id": f"r{k}", "content": code,
                                    "message_index": memory.last_number + 2}])
    finally:
        store.close()

    def shown(option_list) -> str:
        size = option_list.scrollable_content_region.size
        return "\n".join(strip.text for strip in option_list.render_lines(Region(0, 0, *size)))

    async with DemoServer([]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            experiences = app.sidebar.experience_list
            await wait_until(pilot, lambda: len(experiences.experiences) == len(facts),
                             what="the experiences listed")
            option_list = experiences.option_list
            assert "fact 0:" in shown(option_list)
            assert option_list.measured_rows < 50  # not every row wrapped to be shown
            await click(pilot, option_list)
            await pilot.press("end")
            last = f"exp_{len(facts):03d}"
            assert experiences.highlighted_id == last
            await pilot.pause()
            assert f"fact {len(facts) - 1}:" in shown(option_list)
            await pilot.press("delete", "y")
            await wait_until(pilot, lambda: len(experiences.experiences) == len(facts) - 1,
                             what="forgotten")
            assert experiences.highlighted_id == f"exp_{len(facts) - 1:03d}"
            await pilot.pause()
            assert f"fact {len(facts) - 2}:" in shown(option_list)
            # the refs: the last but three chosen with Enter, found in the transcript
            ref_list = app.sidebar.ref_list
            assert len(ref_list.refs) == refs
            await click(pilot, ref_list.option_list)
            await pilot.press("end", "up", "up", "up", "enter")
            chosen = f"r{refs - 4}"
            await wait_until(pilot, lambda: getattr(app.transcript.highlighted, "ref_id", None)
                             == chosen, what="the ref highlighted in the transcript")
            assert ref_list.highlighted_ref.id == chosen
            assert f"ref:{chosen}" in shown(ref_list.option_list)
            await pilot.press("ctrl+s")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "ExportDialog",
                             what="the export dialog")
            target = tmp_path / f"{chosen}.py"
            assert app.screen.query_one("Input").value == str(target)
            await pilot.press("enter")
            await wait_until(pilot, target.exists, what="the ref written")
            assert target.read_text() == f"x = {refs - 4}\n"
    kept = [e["text"] for e in stored_experiences(tmp_path)]
    assert kept == facts[:-1]
