"""Names that look like another: every place the app shows a conversation's name
shows its invisible characters (zero-width, bidirectional) as escapes, and a new
name holding one is refused with the reason."""

from __future__ import annotations

from typing import Any

from textual.widgets import Input, Static

from selfref_tui.demo.server import DemoServer
from selfref_tui.selfref.keys import write_empty_meta
from selfref_tui.selfref.log_lines import SCHEMA
from selfref_tui.selfref.reference import SelfReference
from tests.selfref.helpers import turn
from tests.ui.helpers import SIZE, make_app, started, wait_until

LOOKALIKE = "ma\u200bin"  # a zero-width space: reads as "main"
REVERSED = "invoice\u202egnp.exe"  # right-to-left override: reads as "invoiceexe.png"


def _old_keys(tmp_path, keys: tuple[str, ...] = (LOOKALIKE, REVERSED)) -> None:
    """Keys made before names were checked (or by hand), beside "main": they still open."""
    store = SelfReference(tmp_path / "data")
    store.open("main").commit(turn(1))
    for key in keys:
        write_empty_meta(store.key_dir(key), key, SCHEMA)
        store.open(key).commit(turn(2))
    store.close()


async def _switcher_rows(pilot, app) -> tuple[Any, list[str]]:
    """ctrl+o: the conversation switcher, and its rows as shown."""
    await pilot.press("ctrl+o")
    await wait_until(pilot, lambda: type(app.screen).__name__ == "KeySwitcher",
                     what="switcher")
    switcher = app.screen
    return switcher, [str(switcher.option_list.get_option_at_index(i).prompt)
                      for i in range(switcher.option_list.option_count)]


async def test_lookalike_names_are_told_apart_and_new_ones_refused(tmp_path):
    _old_keys(tmp_path)
    async with DemoServer([]) as url:
        app = make_app(tmp_path, url, key=LOOKALIKE)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            header = app.header.render_line(0).text
            assert "ma\\u200bin" in header and LOOKALIKE not in header

            switcher, rows = await _switcher_rows(pilot, app)
            assert any(row.split()[0] == "main" for row in rows), rows
            assert any("ma\\u200bin" in row for row in rows), rows
            assert any("invoice\\u202egnp.exe" in row for row in rows), rows
            assert not any(ch in "".join(rows) for ch in (LOOKALIKE[2], REVERSED[7])), rows

            # a new name with an invisible character: refused in the dialog, nothing made
            field = switcher.query_one(Input)
            await pilot.press(*"ne")
            field.insert_text_at_cursor("\u200b")  # as pasted: no key types it
            await pilot.press("w")
            await wait_until(pilot, lambda: len(field.value) == 4, what="the name typed")
            assert field.value == "ne\u200bw"
            await pilot.press("enter")
            error = switcher.query_one("#error", Static)
            await wait_until(pilot, lambda: "invisible character" in str(error.render()),
                             what="the refusal")
            assert "U+200B" in str(error.render())
            assert type(app.screen).__name__ == "KeySwitcher"
    keys = {info.key for info in SelfReference(tmp_path / "data").keys()}  # noqa: SIM118
    assert keys == {"main", LOOKALIKE, REVERSED}


async def test_names_offered_from_a_lookalike_leave_its_invisible_character_out(tmp_path):
    """The branch dialog suggests "<name>-branch-1", and F2 in the switcher starts from
    the name itself: of "ma\\u200bin" both held the invisible character, so Enter was
    refused for a character the person cannot see (nor easily delete). They leave it
    out: Enter makes the branch, and renames the conversation to what it looks like."""
    from selfref_tui.ui.screens.new_key_prompt import NewKeyPrompt

    _old_keys(tmp_path)
    async with DemoServer([]) as url:
        app = make_app(tmp_path, url, key=LOOKALIKE)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await pilot.press(*"/branch")
            await pilot.press("enter")
            await wait_until(pilot, lambda: isinstance(app.screen, NewKeyPrompt),
                             what="the branch dialog")
            assert app.screen.query_one(Input).value == "main-branch-1"
            await pilot.press("enter")
            await wait_until(pilot, lambda: app.key == "main-branch-1",
                             what="the branch on screen")

            await pilot.press("ctrl+o")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "KeySwitcher",
                             what="switcher")
            field = app.screen.query_one(Input)
            await pilot.press(*"invoice")
            await wait_until(pilot, lambda: app.screen._highlighted_key() == REVERSED,
                             what="the lookalike found and highlighted")
            await pilot.press("f2")
            await wait_until(pilot, lambda: field.value == "invoicegnp.exe",
                             what="its name, without the character, to edit")
            await pilot.press("enter")
            said = app.screen.query_one("#error", Static)
            await wait_until(pilot, lambda: "Renamed" in str(said.render()), what="renamed")
            assert str(said.render()) == "Renamed invoice\\u202egnp.exe to invoicegnp.exe."
    with SelfReference(tmp_path / "data") as store:
        [branch] = [i for i in store.keys() if i.key == "main-branch-1"]  # noqa: SIM118
        assert branch.origin_key == LOOKALIKE
        assert {i.key for i in store.keys()} == {  # noqa: SIM118
            "main", LOOKALIKE, "main-branch-1", "invoicegnp.exe"}


MIXED = "m\u0430in"  # a Cyrillic "а" among Latin letters: reads as "main"
SPACED = "my\u00a0chat"  # a no-break space: reads as "my chat"


async def test_a_name_mixing_alphabets_or_with_an_odd_space_is_marked_and_never_made(tmp_path):
    """Made before names were checked, "m\\u0430in" and "my\\u00a0chat" are listed with
    the letter or the space that tells them apart escaped; typed as a new name, they are
    refused with the reason. A name wholly in another alphabet is made as it is."""
    _old_keys(tmp_path, (MIXED, SPACED))
    async with DemoServer([]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            switcher, rows = await _switcher_rows(pilot, app)
            assert {row.split()[-6] for row in rows} == {"main", "m\\u0430in", "my\\u00a0chat"}
            assert not any(ch in "".join(rows) for ch in ("\u0430", "\u00a0")), rows

            field = switcher.query_one(Input)
            error = switcher.query_one("#error", Static)
            for typed, reason in (("h\u0435llo", "mixes Latin and Cyrillic letters"),
                                  ("new\u3000one", "U+3000 IDEOGRAPHIC SPACE")):
                field.value = ""
                field.insert_text_at_cursor(typed)  # as pasted
                await wait_until(pilot, lambda typed=typed: field.value == typed, what="typed")
                await pilot.press("enter")
                await wait_until(pilot, lambda reason=reason: reason in str(error.render()),
                                 what=f"the refusal of {typed!r}")
                assert type(app.screen).__name__ == "KeySwitcher"
            field.value = ""
            field.insert_text_at_cursor("заметки")  # wholly Cyrillic: someone's honest name
            await wait_until(pilot, lambda: field.value == "заметки", what="typed")
            await pilot.press("enter")
            await wait_until(pilot, lambda: app.key == "заметки", what="the new one open")
    keys = {info.key for info in SelfReference(tmp_path / "data").keys()}  # noqa: SIM118
    assert keys == {"main", MIXED, SPACED, "заметки"}
