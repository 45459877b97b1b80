"""/save writes the whole conversation; the switcher filters conversations by content."""

from __future__ import annotations

import json

import pytest
from textual.widgets import Input

from selfref_tui.demo.server import DemoServer
from selfref_tui.ui.widgets.find_bar import FindBar
from tests.cli.test_cli_search_export import _seed, _seed_compacted
from tests.context.test_conversation_export import PNG
from tests.ui.helpers import SIZE, make_app, paste_and_send, started, type_and_send, wait_until


def _screen(app) -> str:
    return type(app.screen).__name__


async def _by_content(pilot, app, text: str, keys: list[str]):
    """ctrl+o, then ctrl+f and ``text``: the switcher, once it lists ``keys`` alone."""
    await pilot.press("ctrl+o")
    await wait_until(pilot, lambda: _screen(app) == "KeySwitcher", what="switcher")
    switcher = app.screen
    await pilot.press("ctrl+f", *text)
    await wait_until(pilot, lambda: switcher.visible_keys == keys, what=f"{keys} found")
    return switcher


def _said(app, text: str) -> bool:
    return any(text in n.message for n in app._notifications)


async def test_save_writes_markdown_with_its_images_and_asks_before_replacing(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    _seed()
    async with DemoServer([]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            target = tmp_path / "notes" / "chat.md"
            await paste_and_send(pilot, f"/save {target}")
            await wait_until(pilot, target.exists, what="written")
            text = target.read_text()
            assert text.startswith("# Conversation main\n")
            assert "## 3 · Tool result (read_file) · " in text and "**ref:spot**" in text
            assert (tmp_path / "notes" / "chat-images" / "1-1.png").read_bytes() == PNG
            await wait_until(pilot, lambda: _said(app, "and 1 image beside it"), what="said")
            # again: asked first (replace or keep; nothing to append a conversation to)
            target.write_text("mine")
            await paste_and_send(pilot, f"/save {target}")
            await wait_until(pilot, lambda: _screen(app) == "OverwritePrompt", what="asked")
            assert not app.screen.append
            await pilot.press("c")
            await wait_until(pilot, lambda: _said(app, "Export cancelled."), what="cancelled")
            assert target.read_text() == "mine"
            # no path: the dialog, its suggestion in the folder used last; .json as JSON
            await type_and_send(pilot, "/save")
            await wait_until(pilot, lambda: _screen(app) == "ExportDialog", what="dialog")
            field = app.screen.query_one(Input)
            assert field.value == str(tmp_path / "notes" / "conversation-main.md")
            field.value = str(tmp_path / "chat.json")
            await pilot.press("enter")
            await wait_until(pilot, (tmp_path / "chat.json").exists, what="json written")
            data = json.loads((tmp_path / "chat.json").read_text())
            assert [m["n"] for m in data["messages"]] == [1, 2, 3, 4, 5, 6]


async def test_save_puts_the_compaction_the_transcript_shows_between_its_messages(tmp_path):
    from selfref_tui.ui.transcript.model import DividerItem

    _seed_compacted()
    async with DemoServer([]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            dividers = [i for i in app.transcript.model.items if isinstance(i, DividerItem)]
            assert len(dividers) == 1
            target = tmp_path / "chat.md"
            await paste_and_send(pilot, f"/save {target}")
            await wait_until(pilot, target.exists, what="written")
            text = target.read_text()
            at = text.index("## Compacted (2 messages summarised) · ")
            assert text.index("## 2 · Assistant") < at < text.index("## 3 · You")
            # the text the divider opens to (its copy), control characters shown
            shown = dividers[0].copy_text.replace("\x1b", "\u241b")
            assert f"````text\n{shown}\n````" in text
            await paste_and_send(pilot, f"/save {tmp_path / 'chat.json'}")
            await wait_until(pilot, (tmp_path / "chat.json").exists, what="json written")
            data = json.loads((tmp_path / "chat.json").read_text())["messages"]
            assert [m["role"] for m in data] == ["user", "assistant", "compaction", "user",
                                                  "assistant"]
            assert data[2]["content"] == dividers[0].copy_text


async def test_the_switcher_filters_by_content_and_finds_it_in_the_one_chosen(tmp_path):
    _seed()
    async with DemoServer([]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            switcher = await _by_content(pilot, app, "haystack", ["key:work"])
            hint = str(switcher.query_one("#hint").render())
            assert "enter open and find" in hint and "ctrl+f names  esc cancel" in hint
            assert "create" not in hint  # a text to find is no new conversation's name
            await pilot.press("backspace", "backspace", "backspace", "backspace", "backspace",
                              "backspace", "backspace", "backspace", *"needle")
            await wait_until(pilot, lambda: sorted(switcher.visible_keys)
                             == ["key:main", "key:work"], what="both say needle")
            rows = [str(switcher.option_list.get_option_at_index(i).prompt) for i in (0, 1)]
            assert "● main  3 matches  forget the needle" in rows  # the newest match
            assert any(row.startswith("  work  1 match  ") for row in rows)
            await pilot.press("ctrl+f")  # back to names: no new key named "needle" offered
            await wait_until(pilot, lambda: "new:needle" in switcher.visible_keys, what="names")
            await pilot.press("ctrl+f")
            await wait_until(pilot, lambda: "key:work" in switcher.visible_keys, what="content")
            while switcher.option_list.highlighted_option.id != "key:work":
                await pilot.press("down")
            await pilot.press("enter")
            await wait_until(pilot, lambda: app.key == "work" and app.header.status == "ready",
                             what="work open")
            bar = app.query_one(FindBar)
            await wait_until(pilot, lambda: bar.display and bar.count == "1 of 1",
                             what="the text found in it")


async def test_the_switchers_content_row_shows_the_match_of_a_long_message(tmp_path):
    """The row is narrower than the search's snippet (80 characters each side of the
    match): cut at its end, it showed the words before the match and not the match."""
    from selfref_tui.context.mutations import AssistantMessageMutation, UserMessageMutation
    from selfref_tui.selfref.reference import SelfReference

    before = " ".join(f"word{i}" for i in range(40))  # 300 characters
    with SelfReference(tmp_path / "data") as store:
        store.open("notes").commit([
            UserMessageMutation({"role": "user", "content": f"{before} then the Compass "
                                                            "points north, and more after"}),
            AssistantMessageMutation(content="ok")])
    async with DemoServer([]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            switcher = await _by_content(pilot, app, "compass", ["key:notes"])
            row = str(switcher.option_list.get_option_at_index(0).prompt)
            assert row.startswith("  notes  1 match  …") and "the Compass points" in row, row
            assert row.endswith("…") and len(row) < 80, row


async def test_save_onto_a_link_says_where_it_leads_before_writing_there(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _seed()
    real = tmp_path / "dotfiles" / "chat.md"
    real.parent.mkdir()
    real.write_text("mine")
    link = tmp_path / "chat.md"
    link.symlink_to(real)
    dangling = tmp_path / "new.md"
    dangling.symlink_to(tmp_path / "elsewhere.md")
    async with DemoServer([]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await paste_and_send(pilot, f"/save {link}")
            await wait_until(pilot, lambda: _screen(app) == "OverwritePrompt", what="asked")
            shown = str(app.screen.query_one("#path").render())
            assert shown == f"{link} (a link to {real})"
            assert "a link to a file that exists" in str(app.screen.query_one("#question").render())
            await pilot.press("c")
            await wait_until(pilot, lambda: _said(app, "Export cancelled."), what="cancelled")
            assert real.read_text() == "mine"
            # a link to nothing yet is asked about too, then written where it leads
            await paste_and_send(pilot, f"/save {dangling}")
            await wait_until(pilot, lambda: _screen(app) == "OverwritePrompt", what="asked again")
            assert "which does not exist yet" in str(app.screen.query_one("#path").render())
            assert not (tmp_path / "elsewhere.md").exists()
            await pilot.press("o")
            await wait_until(pilot, (tmp_path / "elsewhere.md").exists, what="written")
            await wait_until(pilot, lambda: _said(app, f"to {tmp_path / 'elsewhere.md'}"),
                             what="said where")


@pytest.mark.parametrize("link", [False, True], ids=["a-name-too-long", "a-link-to-one"])
async def test_save_to_a_path_that_cannot_be_looked_at_says_why_in_the_dialog(tmp_path,
                                                                             monkeypatch, link):
    """stat() raises for the name (too long): pathlib's is_file raised there, and, for a
    link to such a name, the look-up of where it leads; the app ended with a traceback.
    The dialog says why instead, the path kept, and nothing is written."""
    monkeypatch.chdir(tmp_path)
    _seed()
    target = too_long = tmp_path / ("n" * 300 + ".md")
    if link:
        target = tmp_path / "chat.md"
        target.symlink_to(too_long)
    async with DemoServer([]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await paste_and_send(pilot, f"/save {target}")  # a name of 300 letters
            await wait_until(pilot, lambda: _screen(app) == "ExportDialog", what="dialog")
            await wait_until(pilot, lambda: "File name too long" in str(
                app.screen.query_one("#error").render()), what="the reason")
            assert app.screen.query_one(Input).value == str(target)  # kept to edit
            await pilot.press("escape")
            await wait_until(pilot, lambda: _screen(app) == "Screen", what="closed")
            assert app.is_running
    left = ["chat.md", "data"] if link else ["data"]  # the link as it was; nothing written
    assert sorted(p.name for p in tmp_path.iterdir()) == left


async def test_save_onto_a_read_only_file_says_so_before_asking_to_replace_it(tmp_path,
                                                                              monkeypatch):
    """The person made the file read-only (for root: immutable): no answer would let the
    save replace it, so the dialog says why (the path kept to change) instead of the
    question to replace it, and the file is as it was."""
    from tests.selfref.test_store_cli import denied

    monkeypatch.chdir(tmp_path)
    _seed()
    target = tmp_path / "chat.md"
    target.write_text("kept\n")
    async with DemoServer([]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            with denied(target, 0o444):
                await paste_and_send(pilot, f"/save {target}")
                await wait_until(pilot, lambda: _screen(app) in ("ExportDialog",
                                                                 "OverwritePrompt"),
                                 what="the dialog or the question")
                assert _screen(app) == "ExportDialog"
                await wait_until(pilot, lambda: f"{target} is read-only" in str(
                    app.screen.query_one("#error").render()), what="the reason")
                assert app.screen.query_one(Input).value == str(target)
                await pilot.press("escape")
                await wait_until(pilot, lambda: _screen(app) == "Screen", what="closed")
    assert target.read_text() == "kept\n"
    assert not (tmp_path / "chat-images").exists()


async def test_save_never_writes_its_images_through_a_link_planted_beside_it(tmp_path,
                                                                            monkeypatch):
    """The images folder beside the file is not the path the person chose: a link there
    is refused in the dialog (the path kept to change) and nothing is written."""
    monkeypatch.chdir(tmp_path)
    _seed()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    images = tmp_path / "chat-images"
    images.symlink_to(elsewhere, target_is_directory=True)
    target = tmp_path / "chat.md"
    async with DemoServer([]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await paste_and_send(pilot, f"/save {target}")
            await wait_until(pilot, lambda: _screen(app) == "ExportDialog", what="dialog")
            await wait_until(pilot, lambda: f"{images} is a link" in str(
                app.screen.query_one("#error").render()), what="the reason")
            assert app.screen.query_one(Input).value == str(target)
            await pilot.press("escape")
            await wait_until(pilot, lambda: _screen(app) == "Screen", what="closed")
    assert list(elsewhere.iterdir()) == [] and not target.exists()
