"""Every dialog fits a small terminal: no border or hint line runs past the screen's edge.

A dialog with a fixed width (70, 72, 80 columns) in a 60-column terminal lost its
right border and the end of its hint line ("shift+del/f8 delete" read
"shift+del/f8"). Each dialog is opened for real in a 60x20 app and its box is
compared with the screen's.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.screen import Screen
from textual.widgets import OptionList, Static

from selfref_tui.agent.mcp.approval import Approval
from selfref_tui.agent.tools.consent import Consent
from selfref_tui.ui.screens import (
    ConfirmScreen,
    ExportDialog,
    HelpScreen,
    KeySwitcher,
    OverwritePrompt,
)
from selfref_tui.ui.screens.approval import ApprovalScreen
from selfref_tui.ui.screens.choice_list import ChoiceList
from selfref_tui.ui.screens.compaction_review import CompactionReviewScreen
from selfref_tui.ui.screens.memory_consent import MemoryConsentScreen
from selfref_tui.ui.screens.model_picker import ModelPicker
from selfref_tui.ui.screens.new_key_prompt import NewKeyPrompt
from selfref_tui.ui.screens.question import QuestionScreen
from selfref_tui.ui.screens.restore_files import RestoreFiles

SIZE = (60, 20)

KEYS = [
    {"key": "main", "messages": 42, "updated": "2025-03-01T10:22:33"},
    {"key": "project-x", "messages": 7, "updated": "2025-02-11T08:00:00"},
]

DIALOGS: dict[str, Callable[[], Screen]] = {
    "conversations": lambda: KeySwitcher(KEYS, "main"),
    "models": lambda: ModelPicker(["demo-model", "another-model"], "demo-model"),
    "approval": lambda: ApprovalScreen(Approval("time", "get_current_time", '{"tz": "UTC"}')),
    "memory consent": lambda: MemoryConsentScreen(Consent("remember", "I like Python")),
    "question": lambda: QuestionScreen("Go on?", ("yes", "no")),
    "export": lambda: ExportDialog("fib", "/tmp/looks-fit/fib.py", preview="def fib(): ..."),
    "overwrite": lambda: OverwritePrompt("/tmp/looks-fit/fib.py"),
    "confirm": lambda: ConfirmScreen("Delete conversation 'notes'?"),
    "new conversation": lambda: NewKeyPrompt("project-y"),
    "choices": lambda: ChoiceList("Profiles", [("local", "llama.cpp"), ("demo", "offline")]),
    "restore": lambda: RestoreFiles([("notes.txt", "changed", "3 lines")]),
    "help": lambda: HelpScreen([("ctrl+b", "Show or hide the sidebar")]),
}


class Host(App):
    def compose(self) -> ComposeResult:
        yield Static("host")


def _box(screen: Screen) -> Region:
    """The dialog's box: the screen's first child (``#dialog`` or ``#panel``)."""
    return screen.children[0].region


@pytest.mark.parametrize("name", list(DIALOGS))
async def test_dialog_fits_a_60_by_20_terminal(name):
    app = Host()
    async with app.run_test(size=SIZE) as pilot:
        app.push_screen(DIALOGS[name]())
        await pilot.pause()
        box = _box(app.screen)
        screen = app.screen.region
        assert box.width > 0 and box.height > 0
        assert screen.contains_region(box), f"{name}: {box} runs past the screen {screen}"


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_the_restore_dialogs_keys_stay_on_one_line(size):
    """At 80 columns the hint wrapped, "all" of "esc keep them all" alone on a line."""
    app = Host()
    async with app.run_test(size=size) as pilot:
        app.push_screen(DIALOGS["restore"]())
        await pilot.pause()
        hint = app.screen.query_one("#hint", Static)
        assert hint.region.height == 1, hint.render()
        assert str(hint.render()).endswith("esc keep all")


MANY_FILES = [(f"notes/file-{n}.txt", "restoring writes it back as it was", "") for n in range(8)]
NONE_RESTORABLE = [(f"notes/file-{n}.txt", "", "changed since the model wrote it: left as it is")
                   for n in range(6)]


@pytest.mark.parametrize("rows", [MANY_FILES, NONE_RESTORABLE],
                         ids=["eight files", "none restorable"])
@pytest.mark.parametrize("size", [(80, 24), (120, 24)], ids=["80x24", "120x24"])
async def test_the_restore_dialogs_buttons_and_hint_stay_inside_it(rows, size):
    """With many files the list and the detail under it grew past the dialog's
    bottom, and the hint and the buttons were cut off: the list gives up its rows
    (it scrolls) before the keys and buttons do."""
    app = Host()
    async with app.run_test(size=size) as pilot:
        app.push_screen(RestoreFiles(rows))
        await pilot.pause()
        await pilot.pause()
        dialog = app.screen.query_one("#dialog").region
        for part in ("#hint", "#restore", "#keep"):
            region = app.screen.query_one(part).region
            assert region.height > 0 and dialog.contains_region(region), (
                f"{part} {region} is outside the dialog {dialog}")
        assert app.screen.region.contains_region(dialog)


LONG_LISTS: dict[str, Callable[[], Screen]] = {
    "models": lambda: ModelPicker([f"model-{n}" for n in range(40)], "model-1"),
    "message actions": lambda: ChoiceList(
        "Rewind to", [(f"#{n}", f"message {n}") for n in range(40)],
        about="The context goes back to just before the message you choose; its text comes "
              "back into the input. Nothing is deleted."),
}


@pytest.mark.parametrize("name", list(LONG_LISTS))
@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
async def test_a_long_list_scrolls_inside_its_dialog_and_leaves_the_hint_in_view(name, size):
    """Forty models or messages: the list (14 and 20 rows high) ran past the dialog's
    bottom at 80x24, the hint and the highlighted row out of sight."""
    app = Host()
    async with app.run_test(size=size) as pilot:
        app.push_screen(LONG_LISTS[name]())
        await pilot.pause()
        inside = app.screen.children[0].content_region
        for part in (app.screen.query_one(OptionList), app.screen.query_one("#hint")):
            region = part.region
            assert region.height and inside.y <= region.y, (name, part, region, inside)
            assert region.bottom <= inside.bottom, (name, part, region, inside)


ACTIONS = [
    ("rewind", "Rewind to here: the context goes back to just before message 12 (its text "
               "comes back to edit)"),
    ("edit", "Edit and resend this message"),
    ("branch", "Branch from here: a new conversation from before message 12"),
    ("pin", "Pin: every compaction keeps it verbatim"),
    ("regenerate", "Regenerate the last answer (the old one is kept, rewound)"),
    ("undo", "Undo the last rewind"),
]
LONG_ARGUMENTS = '{"path": "notes.txt", "text": "' + "lorem ipsum " * 80 + '"}'
FILES = [(f"notes/file-{n}.txt", "restoring writes it back as it was", "") for n in range(8)]

#: each dialog as it opens with much to show, and the parts that must stay in view: its
#: keys and buttons (a list's highlighted row is looked at too)
CROWDED: dict[str, tuple[Callable[[], Screen], tuple[str, ...]]] = {
    "conversations": (lambda: KeySwitcher(
        [{"key": f"conv-{n}", "messages": n, "updated": "2025-03-01T10:22:33"}
         for n in range(40)], "conv-3"), ("#hint",)),
    "models": (lambda: ModelPicker([f"model-{n}" for n in range(40)], "model-3"), ("#hint",)),
    "message actions": (lambda: ChoiceList(
        "Message", ACTIONS, about="#12 user: please write a function that computes the "
                                  "fibonacci numbers and explain it"), ("#hint",)),
    "rewind picker": (LONG_LISTS["message actions"], ("#hint",)),
    "restore": (lambda: RestoreFiles(FILES), ("#hint", "#restore", "#keep")),
    "restore after an undo": (lambda: RestoreFiles(
        FILES, undo=True, note="Two files changed since: they are left as they are."),
        ("#hint", "#restore", "#keep")),
    "compaction review": (lambda: CompactionReviewScreen(
        "## Goal\nPlan a trip\n## Facts\n" + "\n".join(f"- fact {n}" for n in range(40))),
        ("#summary", "#accept", "#cancel")),
    "approval": (lambda: ApprovalScreen(Approval("files", "write_file", LONG_ARGUMENTS)),
                 ("#arguments", "#hint", "#choice-0", "#choice-2")),
    "memory consent": (lambda: MemoryConsentScreen(Consent("remember", "I like Python " * 40)),
                       ("#text", "#hint", "#choice-0", "#choice-1")),
    "new conversation": (lambda: NewKeyPrompt("project-y"), ("#hint",)),
    # the question's start went past the screen's top
    "question": (lambda: QuestionScreen("Which of these should I do next? " * 40,
                                        ("yes", "no", "later")),
                 ("#question", "#hint", "#choice-0", "#choice-2")),
}


def _drawn(widget) -> str:
    """The lines ``widget`` draws where it is scrolled to."""
    return "\n".join("".join(segment.text for segment in widget.render_line(y))
                     for y in range(widget.size.height))


def _in_view(app, name: str, parts: tuple[str, ...]) -> None:
    """Each of ``parts`` inside the dialog's box, and each list showing rows with its
    highlighted one among them."""
    dialog = app.screen.children[0]
    inside = dialog.content_region
    assert app.screen.region.contains_region(dialog.region), (name, dialog.region)
    for selector in parts:
        region = app.screen.query_one(selector).region
        assert region.height > 0 and inside.contains_region(region), (
            f"{name}: {selector} {region} is not inside the dialog {inside}")
    for options in app.screen.query(OptionList):
        if not options.display:
            continue
        assert inside.contains_region(options.region), (name, options.region, inside)
        assert options.content_size.height >= 2, (name, options.content_size)
        highlighted = options.highlighted_option
        assert highlighted is not None
        label = str(highlighted.prompt).strip()[:12]
        assert label in _drawn(options), (name, label, _drawn(options))


@pytest.mark.parametrize("name", list(CROWDED))
@pytest.mark.parametrize("size", [(60, 20), (80, 24), (120, 40)], ids=["60x20", "80x24", "120x40"])
async def test_a_crowded_dialog_keeps_its_list_keys_and_buttons_in_view(name, size):
    """At 60x20 the margins, the paragraph about the dialog and the blank lines took the
    height: the switcher's and the model picker's keys, the restore dialog's buttons, an
    approval's buttons under long arguments were cut off at the dialog's bottom. Each
    part that must be seen is inside the dialog's box (its border and padding left
    out), and a list shows rows, its highlighted one among them. A long question was
    cut at the top at every size: it scrolls, its start in view."""
    make, parts = CROWDED[name]
    app = Host()
    async with app.run_test(size=size) as pilot:
        app.push_screen(make())
        await pilot.pause()
        await pilot.pause()
        _in_view(app, name, parts)


@pytest.mark.parametrize("name", ["message actions", "rewind picker", "approval", "restore"])
async def test_a_dialog_fits_again_when_the_terminal_changes_height(name):
    """What a short terminal gave the list (or the body) is given again as the terminal
    grows and shrinks: opened at 60x20, then 80x24, then 60x20 again."""
    make, parts = CROWDED[name]
    app = Host()
    async with app.run_test(size=(60, 20)) as pilot:
        app.push_screen(make())
        for size in ((80, 24), (60, 20)):
            await pilot.pause()
            await pilot.resize_terminal(*size)
            await pilot.pause()
            await pilot.pause()
            _in_view(app, f"{name} at {size}", parts)
