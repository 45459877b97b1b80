"""The sidebar's experiences say where each came from, and the person can correct one."""

from __future__ import annotations

from textual import on
from textual.app import App, ComposeResult

from selfref_tui.context.experiences import describe_provenance
from selfref_tui.context.mutations import ExperienceRememberMutation
from selfref_tui.demo.script import Reply
from selfref_tui.demo.server import DemoServer
from selfref_tui.selfref import SelfReference
from selfref_tui.ui.widgets.experience_list import ExperienceList
from tests.hostile import assert_inert
from tests.selfref.helpers import reading

from .helpers import SIZE, make_app, started, wait_until

STORED = [
    {"id": "exp_001", "text": "Prefers tea.", "source": "agent", "message": 12,
     "created": "2026-11-26T13:58:00+00:00"},
    {"id": "exp_002", "text": "Uses vim.", "source": "person",
     "created": "2026-11-26T14:00:00+00:00", "edited": "2026-11-26T14:05:00+00:00"},
    {"id": "exp_003", "text": "From before provenance."},
]


class ListApp(App):
    def __init__(self) -> None:
        super().__init__()
        self.edits: list[tuple[str, str]] = []

    def compose(self) -> ComposeResult:
        yield ExperienceList(STORED)

    @on(ExperienceList.EditRequested)
    def _edit(self, event: ExperienceList.EditRequested) -> None:
        self.edits.append((event.experience_id, event.text))


def test_provenance_in_a_few_words():
    assert describe_provenance(STORED[0], local_time=False) == "agent · #12 · Nov 26 13:58"
    assert describe_provenance(STORED[1], local_time=False) == (
        "person · Nov 26 14:00 · edited")
    assert describe_provenance(STORED[2]) == ""
    hostile = describe_provenance({"source": "agent\x1b]0;x\x07", "created": "\x1b[2J"})
    assert "\x1b[2J" in hostile  # kept as text here; the widget shows it inert


async def test_each_row_says_where_it_came_from_and_e_corrects_the_text():
    app = ListApp()
    async with app.run_test(size=(60, 20)) as pilot:
        exp_list = app.query_one(ExperienceList)
        exp_list.option_list.focus()
        await pilot.pause()
        prompts = [str(exp_list.option_list.get_option_at_index(i).prompt) for i in range(3)]
        assert prompts[0].splitlines()[1].startswith("agent · #12 · ")
        assert prompts[1].splitlines()[1].endswith("· edited")
        assert prompts[2] == "exp_003  From before provenance."  # no line: not known
        await pilot.press("e")
        assert exp_list.editing == "exp_001"
        await pilot.press(*" Green, no sugar.", "enter")
        await pilot.pause()
        assert app.edits == [("exp_001", "Prefers tea. Green, no sugar.")]
        assert exp_list.editing is None and exp_list.option_list.has_focus
        await pilot.press("down", "e", *" and emacs", "escape")  # Esc leaves it
        await pilot.press("e", "enter")  # unchanged: nothing to store
        await pilot.pause()
        assert app.edits == [("exp_001", "Prefers tea. Green, no sugar.")]


async def test_hostile_provenance_is_shown_inert():
    app = ListApp()
    async with app.run_test(size=(60, 20)) as pilot:
        exp_list = app.query_one(ExperienceList)
        exp_list.rows = [{"id": "exp_009", "text": "x", "source": "agent\x1b]52;c;aGk=\x07",
                          "created": "[@click=app.quit]no"}]
        await pilot.pause()
        shown = str(exp_list.option_list.get_option_at_index(0).prompt)
        assert_inert(shown)
        assert app.is_running


async def test_an_edit_in_the_app_is_stored_as_a_patch_and_keeps_provenance(tmp_path):
    with SelfReference(tmp_path / "data") as store:
        store.open("main").commit([ExperienceRememberMutation(
            "The person likes tee.", "agent", 2, "2026-11-26T13:58:00+00:00")])
    async with DemoServer([Reply(text="hi")]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            exp_list = app.sidebar.experience_list
            await wait_until(pilot, lambda: exp_list.experiences, what="the experience")
            exp_list.option_list.focus()
            await pilot.press("e", "backspace", "backspace", "backspace", "backspace",
                              *"tea.", "enter")
            await wait_until(pilot, lambda: exp_list.experiences[0].text
                             == "The person likes tea.", what="the edit shown")
    with reading(tmp_path / "data") as memory:
        (exp,) = memory.experiences
    assert exp["text"] == "The person likes tea." and exp["edited"]
    assert (exp["id"], exp["source"], exp["message"], exp["created"]) == (
        "exp_001", "agent", 2, "2026-11-26T13:58:00+00:00")


async def test_the_editor_shows_the_text_s_control_characters_and_keeps_it_when_unchanged():
    """The text is the model's: the row showed it inert, and the editor put it into its
    field raw, which writes ESC to the terminal (a clear screen, an OSC 52 ended by ST).
    The field shows it as the row does; Enter on it unchanged stores nothing, and a
    correction stores what the person saw and typed."""
    app = ListApp()
    async with app.run_test(size=(60, 20)) as pilot:
        exp_list = app.query_one(ExperienceList)
        exp_list.rows = [{"id": "exp_009", "text": "likes \x1b[2J tea\x1b]52;c;aGk=\x1b\\"}]
        exp_list.option_list.focus()
        await pilot.pause()
        await pilot.press("e")
        field = exp_list.query_one("#experience-editor")
        assert field.value == "likes ␛[2J tea␛]52;c;aGk=␛\\"
        assert_inert(field.value)
        await pilot.press("enter")  # unchanged: nothing to store
        await pilot.pause()
        assert app.edits == []
        await pilot.press("e", *"!", "enter")
        await pilot.pause()
        assert app.edits == [("exp_009", "likes ␛[2J tea␛]52;c;aGk=␛\\!")]
