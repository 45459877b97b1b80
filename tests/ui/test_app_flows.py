"""The whole app against the in-package demo server over real HTTP.

Each test drives the app as a person would (keys into the input) and checks
what is on screen and, where it matters, what the store kept — read back by
reopening the data directory read-only after the app has exited.
"""

from __future__ import annotations

import asyncio

import pytest

from selfref_tui.config import AppConfig, ProviderConfig
from selfref_tui.context.mutations import UserMessageMutation
from selfref_tui.demo.script import HttpError, Reply, Stall
from selfref_tui.demo.server import DemoServer
from selfref_tui.selfref.errors import StoreLockedError
from selfref_tui.selfref.reference import SelfReference
from selfref_tui.ui.app import SelfRefApp
from tests.ui.helpers import (
    COMPACT_SUMMARY,
    SIZE,
    TWO_REFS,
    fixed_clock,
    idle,
    make_app,
    started,
    stored,
    turn_done,
    type_and_send,
    wait_until,
)


async def test_send_and_stream_two_refs(tmp_path):
    async with DemoServer([Reply(text=TWO_REFS, chunk_chars=7)]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "write fibonacci")
            await wait_until(pilot, lambda: app.transcript.items_of("user"), what="user message")
            await wait_until(
                pilot, lambda: idle(app) and app.header.status == "ready", what="turn end"
            )
            answer = app.transcript.items_of("answer")[0]
            assert answer.finished and not answer.interrupted
            assert [b.ref_id for b in app.transcript.ref_blocks()] == [
                "fib_recursive",
                "fib_iterative",
            ]
            assert all(b.closed for b in app.transcript.ref_blocks())
            assert app.chat_input.text == ""
            assert app.focused is app.chat_input
            # The sidebar lists the stored refs.
            await wait_until(pilot, lambda: len(app.sidebar.ref_list.refs) == 2, what="ref list")
    assert stored(tmp_path)[-1]["content"] == TWO_REFS


async def test_escape_mid_stream_keeps_partial_answer_marked_and_stored(tmp_path):
    release = asyncio.Event()
    stall = Stall(release, text_before="The first half of a long answer", text_after=" never sent")
    async with DemoServer([stall]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "tell me a long story")
            await wait_until(
                pilot,
                lambda: (
                    app.transcript.current is not None
                    and "first half" in app.transcript.current.text
                ),
                what="partial text",
            )
            await pilot.press("escape")
            await wait_until(
                pilot, lambda: idle(app) and app.header.status == "stopped", what="abort"
            )
            answer = app.transcript.items_of("answer")[0]
            assert answer.interrupted
            assert "interrupted" in answer.marker
            assert app.focused is app.chat_input
        release.set()
    messages = stored(tmp_path)
    last = messages[-1]
    assert last["role"] == "assistant" and last.get("truncated")
    assert last["content"].startswith("The first half of a long answer")
    assert "never sent" not in last["content"]


async def test_message_sent_during_a_run_is_queued_then_delivered(tmp_path):
    release = asyncio.Event()
    script = [
        Stall(release, text_before="Working", text_after=" on it."),
        Reply(text="Got your note."),
    ]
    async with DemoServer(script) as server_url:
        app = make_app(tmp_path, server_url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "first task")
            await wait_until(pilot, lambda: app.transcript.current is not None, what="stream start")
            await type_and_send(pilot, "also add tests")
            await wait_until(pilot, lambda: app.transcript.queued_messages(), what="queued message")
            queued = app.transcript.queued_messages()[0]
            assert queued.text == "also add tests" and queued.queued
            release.set()
            await wait_until(pilot, lambda: not queued.queued, what="delivery")
            await wait_until(
                pilot, lambda: idle(app) and app.header.status == "ready", what="turn end"
            )
            texts = [m.text for m in app.transcript.items_of("user")]
            assert texts == ["first task", "also add tests"]
    contents = [m.get("content") for m in stored(tmp_path) if m["role"] == "user"]
    assert contents[-1] == "also add tests"
    assert stored(tmp_path)[-1]["content"] == "Got your note."


async def test_ref_highlight_export_and_overwrite_prompt(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    async with DemoServer([Reply(text=TWO_REFS)]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "fib")
            await wait_until(
                pilot, lambda: idle(app) and app.header.status == "ready", what="turn end"
            )
            await pilot.press("ctrl+up")
            highlighted = app.transcript.highlighted
            assert highlighted is not None and highlighted.ref_id == "fib_iterative"
            assert highlighted.highlighted
            await pilot.press("ctrl+up")
            assert app.transcript.highlighted.ref_id == "fib_recursive"
            await pilot.press("ctrl+down")
            # Export: dialog prefilled from the ref id and fence language.
            await pilot.press("ctrl+s")
            await wait_until(
                pilot, lambda: type(app.screen).__name__ == "ExportDialog", what="dialog"
            )
            path_input = app.screen.query_one("Input")
            target = tmp_path / "fib_iterative.py"
            assert path_input.value == str(target)
            await pilot.press("enter")
            await wait_until(pilot, lambda: target.exists(), what="file written")
            assert target.read_text() == (
                "def fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n"
                "        a, b = b, a + b\n    return a\n"
            )
            assert any(str(target) in n.message for n in app._notifications)
            # Again: the file exists, so the overwrite prompt asks; append.
            await pilot.press("ctrl+s")
            await wait_until(
                pilot, lambda: type(app.screen).__name__ == "ExportDialog", what="dialog"
            )
            await pilot.press("enter")
            await wait_until(
                pilot, lambda: type(app.screen).__name__ == "OverwritePrompt", what="prompt"
            )
            await pilot.press("a")
            await wait_until(pilot, lambda: target.read_text().count("def fib") == 2, what="append")
            first = "def fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n"
            first += "        a, b = b, a + b\n    return a\n"
            assert target.read_text() == first + "\n" + first  # one blank line between copies
            # Copy key: the highlighted ref goes to the clipboard as an export writes
            # it — a ref that is one code fence copies as the code alone.
            await pilot.press("ctrl+r")
            assert app.transcript.highlighted.content.startswith("```python")
            assert app.clipboard == (
                "def fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n"
                "        a, b = b, a + b\n    return a\n"
            )


async def test_switch_key_with_slash_command(tmp_path):
    async with DemoServer([Reply(text="answer in main"), Reply(text="answer in work")]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "hello main")
            await wait_until(
                pilot, lambda: idle(app) and app.header.status == "ready", what="turn 1"
            )
            await type_and_send(pilot, "/key work")
            await wait_until(
                pilot, lambda: app.key == "work" and app.header.status == "ready", what="switch"
            )
            assert not app.transcript.items_of("user")
            assert app.header.key == "work"
            assert "last answer" not in str(app.sidebar.meter.render())  # that was main's
            await type_and_send(pilot, "hello work")
            await wait_until(
                pilot,
                lambda: (
                    idle(app)
                    and app.transcript.items_of("answer")
                    and app.header.status == "ready"
                ),
                what="turn 2",
            )
            await type_and_send(pilot, "/key main")
            await wait_until(
                pilot,
                lambda: app.key == "main" and app.header.status == "ready",
                what="switch back",
            )
            assert [m.text for m in app.transcript.items_of("user")] == ["hello main"]
    assert stored(tmp_path, "work")[-1]["content"] == "answer in work"


async def test_provider_down_shows_error_block_and_app_survives(tmp_path):
    server = DemoServer([])
    url = await server.start()
    await server.stop()  # nothing listens on that port any more
    app = make_app(tmp_path, url)
    async with app.run_test(size=SIZE) as pilot:
        await started(pilot, app)
        await type_and_send(pilot, "are you there?")
        await wait_until(pilot, lambda: app.transcript.items_of("error"), what="error block")
        error = app.transcript.items_of("error")[0]
        assert error.error_kind in ("connection", "timeout")
        await wait_until(pilot, lambda: idle(app), what="turn end")
        assert app.is_running
    assert stored(tmp_path)[-1]["content"] == "are you there?"  # what was typed is kept


async def test_rejected_api_key_shows_error_block(tmp_path):
    async with DemoServer([Reply(text="never")], api_key="right-key") as url:
        app = make_app(tmp_path, url, api_key="wrong-key")
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "hi")
            await wait_until(pilot, lambda: app.transcript.items_of("error"), what="error block")
            assert app.transcript.items_of("error")[0].error_kind == "auth"


async def test_server_error_shows_error_block(tmp_path):
    async with DemoServer([HttpError(500, "boom")]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "hi")
            await wait_until(pilot, lambda: app.transcript.items_of("error"), what="error block")
            assert app.transcript.items_of("error")[0].error_kind == "server"


async def test_store_locked_by_another_writer_keeps_typed_text(tmp_path):
    other = SelfReference(tmp_path / "data")
    other.open("main")  # holds the write lock, as another process would
    try:
        async with DemoServer([Reply(text="never")]) as url:
            app = make_app(tmp_path, url)
            async with app.run_test(size=SIZE) as pilot:
                await wait_until(
                    pilot, lambda: app.transcript.items_of("error"), what="error block"
                )
                assert app.transcript.items_of("error")[0].error_kind == "store"
                await type_and_send(pilot, "do not lose me")
                await pilot.pause()
                assert app.chat_input.text == "do not lose me"
                assert not app.transcript.items_of("user")
                # A new key is the way out, and the text is still there to send in it.
                await pilot.press("ctrl+n")  # it asks for a name, chat-1 suggested: Enter takes it
                await wait_until(pilot, lambda: type(app.screen).__name__ == "NewKeyPrompt")
                await pilot.press("enter")
                await wait_until(pilot, lambda: app.key == "chat-1" and not app.key_error)
                await pilot.press("enter")
                await wait_until(pilot, lambda: app.transcript.items_of("user"))
                assert app.transcript.items_of("user")[0].text == "do not lose me"
    finally:
        other.close()


async def test_damaged_store_file_is_salvaged_and_reported(tmp_path):
    store = SelfReference(tmp_path / "data")
    memory = store.open("main")
    for text in ("one", "two"):
        memory.commit([UserMessageMutation({"role": "user", "content": text})])
    log = store.key_dir("main") / "log.jsonl"
    store.close()
    lines = log.read_text().split("\n")
    lines[1] = "{oops"  # damage in the middle of the file, not a torn last write
    log.write_text("\n".join(lines))
    damaged = log.read_bytes()
    async with DemoServer([Reply(text="salvaged")]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(
                pilot,
                lambda: any("damaged record" in str(n.message) for n in app._notifications),
                what="the salvage notice",
            )
            await wait_until(pilot, lambda: app.header.status == "ready", what="ready")
            await type_and_send(pilot, "hello again")
            await wait_until(
                pilot, lambda: idle(app) and app.transcript.items_of("answer"), what="answer"
            )
    # "one" was on the damaged line; everything else stays, and the original is kept.
    assert [m["content"] for m in stored(tmp_path)] == ["two", "hello again", "salvaged"]
    aside = [p for p in log.parent.iterdir() if p.name.startswith("log.jsonl.damaged-")]
    assert len(aside) == 1 and aside[0].read_bytes() == damaged


@pytest.mark.parametrize("demo", [True])
async def test_demo_model_badge_and_first_frame_before_runtime(tmp_path, demo):
    app = SelfRefApp(AppConfig(provider=ProviderConfig(demo=demo), data_dir=tmp_path / "data"))
    async with app.run_test(size=SIZE) as pilot:
        # The first frame has the layout before the runtime exists.
        assert app.query_one("#input") is not None
        await started(pilot, app)
        assert app.header.demo and "demo" in str(app.header.render())
        await type_and_send(pilot, "write fibonacci")
        await wait_until(
            pilot,
            lambda: idle(app) and app.transcript.ref_blocks() and app.header.status == "ready",
            what="demo answer",
        )


async def test_page_keys_scroll_the_transcript_and_end_returns_to_the_bottom(tmp_path):
    long_text = "\n\n".join(f"Paragraph {i} of a long answer." for i in range(80))
    async with DemoServer([Reply(text=long_text, chunk_chars=200)]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "a long one please")
            await wait_until(pilot, lambda: idle(app) and app.header.status == "ready")
            t = app.transcript
            await wait_until(pilot, lambda: t.max_scroll_y > 0 and t.scroll_y == t.max_scroll_y)
            bottom = t.scroll_y
            await pilot.press("pageup")  # the input is empty: it has nothing to page
            await wait_until(pilot, lambda: t.scroll_y < bottom, what="paged up")
            assert app.focused is app.chat_input
            up_once = t.scroll_y
            await pilot.press("pageup")
            await wait_until(pilot, lambda: t.scroll_y < up_once, what="paged up again")
            up_twice = t.scroll_y
            await pilot.press("pagedown")
            await wait_until(pilot, lambda: t.scroll_y > up_twice, what="paged down")
            assert t.scroll_y < bottom
            await pilot.press("end")  # End on an empty input: back to the bottom
            await wait_until(pilot, lambda: t.scroll_y == t.max_scroll_y, what="bottom")


async def test_an_empty_conversation_says_what_it_can_do_until_its_first_message(tmp_path):
    async with DemoServer([Reply(text="hello back")]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            hint = app.transcript.empty_hint
            assert hint is not None and "A new conversation named main" in hint
            assert "ctrl+s" in hint and "/context" in hint
            assert "demo model" not in hint  # only the demo model gets its prompts listed
            await type_and_send(pilot, "hi")
            await wait_until(pilot, lambda: idle(app) and app.header.status == "ready", what="turn")
            assert app.transcript.empty_hint is None
            await type_and_send(pilot, "/key work")
            await wait_until(
                pilot, lambda: app.key == "work" and app.header.status == "ready", what="switch"
            )
            assert "named work" in (app.transcript.empty_hint or "")
            await type_and_send(pilot, "/key main")
            await wait_until(
                pilot, lambda: app.key == "main" and app.header.status == "ready", what="back"
            )
            assert app.transcript.empty_hint is None  # main has a history now


class _GatedStart(SelfRefApp):
    """Start-up waits for ``gate``: what is typed meanwhile takes the early-input path."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.gate = asyncio.Event()

    async def load_runtime(self) -> None:
        await self.gate.wait()
        await super().load_runtime()


async def test_messages_typed_before_start_up_finishes_are_sent_in_order(tmp_path):
    async with DemoServer([Reply(text="first answer"), Reply(text="second answer")]) as url:
        provider = ProviderConfig(base_url=url, api_key="test", model="test-model", max_retries=0,
                                  context_window=128_000)
        app = _GatedStart(AppConfig(provider=provider, data_dir=tmp_path / "data", key="main"))
        async with app.run_test(size=SIZE) as pilot:
            await type_and_send(pilot, "one")
            await type_and_send(pilot, "two")
            assert not app.ready
            assert [(m.text, m.queued) for m in app.transcript.items_of("user")] == [
                ("one", True),
                ("two", True),
            ]
            hint_seen: list[str] = []

            async def watch_hint() -> None:
                while True:
                    if app.transcript.empty_hint:
                        hint_seen.append(app.transcript.empty_hint)
                    await asyncio.sleep(0.001)

            watcher = asyncio.create_task(watch_hint())
            app.gate.set()
            try:
                await wait_until(
                    pilot,
                    # "two" may start its own turn or reach the model at the first
                    # step of "one"'s (it was queued while that turn began): either way
                    # both are delivered and answered.
                    lambda: (
                        idle(app)
                        and app.header.status == "ready"
                        and app.transcript.items_of("answer")
                        and not app.transcript.queued_messages()
                    ),
                    what="both delivered",
                )
            finally:
                watcher.cancel()
            assert [(m.text, m.queued) for m in app.transcript.items_of("user")] == [
                ("one", False),
                ("two", False),
            ]
            assert hint_seen == []  # the empty-conversation hint never flashed up before them
    users = [m["content"] for m in stored(tmp_path) if m["role"] == "user"]
    assert users == ["one", "two"]


async def test_a_compaction_reads_the_same_after_a_reload(tmp_path):
    from selfref_tui.demo.script import ToolCall

    script = [
        Reply(text="first answer"),
        Reply(tool_calls=[ToolCall("compact", COMPACT_SUMMARY, id="k")]),
        Reply(text="Compacted."),
        Reply(text="in other"),
    ]
    async with DemoServer(script) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "hello")
            await turn_done(pilot, app)
            await type_and_send(pilot, "/compact")
            await wait_until(
                pilot,
                lambda: idle(app) and app.transcript.items_of("divider"),
                what="compaction",
            )
            await turn_done(pilot, app)
            live = app.transcript.items_of("divider")[0].messages_before
            live_users = [m.text for m in app.transcript.items_of("user")]
            assert live > 0
            await type_and_send(pilot, "/key other")
            await wait_until(pilot, lambda: app.key == "other" and app.header.status == "ready")
            await type_and_send(pilot, "/key main")
            await wait_until(pilot, lambda: app.key == "main" and app.header.status == "ready")
            # Reloaded from the store: the same count, and the runtime's own prompt to the
            # model stays hidden as it was live.
            assert app.transcript.items_of("divider")[0].messages_before == live
            reloaded_users = [m.text for m in app.transcript.items_of("user")]
            assert reloaded_users == live_users
            assert not any("selfref-tui runtime" in text for text in reloaded_users)


def _said(app) -> list[str]:
    return [n.message for n in app._notifications]


async def test_esc_puts_the_queued_message_back_in_the_input_ahead_of_the_draft(tmp_path):
    """Esc means stop: the message queued behind the answer starts no turn; it goes
    back into the input, ahead of what the person is typing, and its row leaves."""
    release = asyncio.Event()
    server = DemoServer([Stall(release, text_before="A long answer", text_after=" never sent")])
    async with server as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "write a lot")
            await wait_until(pilot, lambda: app.transcript.current is not None, what="stream")
            await type_and_send(pilot, "also mention pandas")
            await wait_until(pilot, lambda: app.router.queued == ["also mention pandas"],
                             what="queued")
            await pilot.press(*"and numpy")  # a draft, not sent
            await pilot.press("escape")
            await wait_until(pilot, lambda: idle(app) and app.header.status == "stopped",
                             what="stopped")
            await wait_until(pilot, lambda: "pandas" in app.chat_input.text, what="put back")
            assert app.chat_input.text == "also mention pandas\n\nand numpy"
            assert [m.text for m in app.transcript.items_of("user")] == ["write a lot"]
            assert not app.transcript.queued_messages()
            assert app.transcript.items_of("answer")[0].interrupted  # kept, marked
            assert "Stopped; your queued message is back in the input." in _said(app)
            await pilot.pause()
            assert not app.router.busy and len(server.requests) == 1  # no turn started
        release.set()
    said = [(m["role"], m["content"]) for m in stored(tmp_path)]
    assert said[0] == ("user", "write a lot") and said[-1][0] == "assistant"
    assert not any("pandas" in str(content) for _, content in said)  # never stored


async def test_esc_puts_several_queued_messages_back_in_order_and_enter_sends_them(tmp_path):
    release = asyncio.Event()
    server = DemoServer([Stall(release, text_before="A long answer", text_after=" never sent"),
                         Reply(text="Both noted.")])
    async with server as url:
        # A clock that never moves: the second Esc is always "right after" the first.
        app = make_app(tmp_path, url, clock=fixed_clock)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "write a lot")
            await wait_until(pilot, lambda: app.transcript.current is not None, what="stream")
            await type_and_send(pilot, "first thing")
            await type_and_send(pilot, "second thing")
            await wait_until(pilot, lambda: len(app.transcript.queued_messages()) == 2,
                             what="two queued")
            await pilot.press("escape")
            await pilot.press("escape")  # the same press, repeated: ignored
            await wait_until(pilot, lambda: idle(app) and app.header.status == "stopped",
                             what="stopped")
            await wait_until(pilot, lambda: app.chat_input.text, what="put back")
            assert app.chat_input.text == "first thing\n\nsecond thing"
            assert "Stopped; your queued messages are back in the input." in _said(app)
            assert type(app.screen).__name__ != "ChoiceList"  # no rewind list
            assert len(server.requests) == 1
            await pilot.press("enter")  # sent again, as one message
            await wait_until(pilot, lambda: idle(app) and app.header.status == "ready",
                             what="the next turn")
            assert len(server.requests) == 2
        release.set()
    assert [m["content"] for m in stored(tmp_path)][-2:] == [
        "first thing\n\nsecond thing", "Both noted."]


async def test_the_key_switcher_lists_the_persons_keys_and_the_one_on_screen(tmp_path):
    store = SelfReference(tmp_path / "data")
    try:
        for key in ("main", "main::fork::1", "work"):
            store.open(key).commit([UserMessageMutation({"role": "user", "content": "hi"})])
    finally:
        store.close()
    async with DemoServer([]) as url:
        app = make_app(tmp_path, url, key="fresh")  # nothing written under it yet
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await pilot.press("ctrl+o")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "KeySwitcher")
            listed = {key.split(":", 1)[1] for key in app.screen.visible_keys}
            assert listed == {"fresh", "main", "work"}  # no fork keys: they are the agent's


async def test_switching_away_from_a_key_lets_another_window_write_it(tmp_path):
    async with DemoServer([Reply(text="answer in main")]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "hello main")
            await turn_done(pilot, app)
            other = SelfReference(tmp_path / "data")  # another window on the same store
            try:
                with pytest.raises(StoreLockedError):
                    other.open("main")
                await type_and_send(pilot, "/key work")
                await wait_until(pilot, lambda: app.key == "work" and app.header.status == "ready")
                memory = other.open("main")  # released: this one may write it now
                assert memory.history[-1]["content"] == "answer in main"
                other.release("main")
                # Back again: the app takes the key once more and shows its history.
                await type_and_send(pilot, "/key main")
                await wait_until(pilot, lambda: app.key == "main" and app.header.status == "ready")
                assert [m.text for m in app.transcript.items_of("user")] == ["hello main"]
            finally:
                other.close()


async def test_up_recalls_what_was_sent_before_a_restart(tmp_path):
    store = SelfReference(tmp_path / "data")
    try:
        store.open("main").commit(
            [
                UserMessageMutation({"role": "user", "content": "first question"}),
                UserMessageMutation({"role": "user", "content": "second question"}),
            ]
        )
    finally:
        store.close()
    async with DemoServer([]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await pilot.press("up")
            assert app.chat_input.text == "second question"
            await pilot.press("up")
            assert app.chat_input.text == "first question"


async def test_quit_with_an_unsent_draft_asks_first(tmp_path):
    async with DemoServer([]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await pilot.press(*"half a thought")
            await pilot.press("ctrl+q")
            await wait_until(
                pilot, lambda: type(app.screen).__name__ == "ConfirmScreen", what="question"
            )
            question = app.screen.query_one("#question")
            await pilot.pause()
            # Laid out where a person reads it (an auto-width dialog once shrank to nothing).
            assert question.size.width >= 40 and question.size.height >= 1
            assert "has not been sent" in str(question.render())
            await pilot.press("n")  # any other key: stay, draft and focus intact
            await wait_until(pilot, lambda: app.focused is app.chat_input, what="back")
            assert app.is_running and app.chat_input.text == "half a thought"
            await pilot.press("ctrl+q")
            await wait_until(
                pilot, lambda: type(app.screen).__name__ == "ConfirmScreen", what="again"
            )
            await pilot.press("ctrl+q")  # the quit key twice quits
            await wait_until(pilot, lambda: not app.is_running, what="exit")
        assert app.return_code == 0


async def test_a_draft_typed_just_before_the_quit_key_still_asks_first(tmp_path):
    """A terminal can deliver typed keys and ctrl+q in one burst: the quit key, a
    priority binding, must not look at the input before it has taken those keys."""
    from textual import events

    async with DemoServer([]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            for key in [*"my draft", "ctrl+q"]:
                app.post_message(events.Key(key, key if len(key) == 1 else None))
            await wait_until(
                pilot, lambda: not app.is_running
                or type(app.screen).__name__ == "ConfirmScreen", what="question")
            assert app.is_running, "quit without asking: the draft was lost"
            assert app.chat_input.text == "my draft"


async def test_quit_with_an_empty_input_does_not_ask(tmp_path):
    async with DemoServer([]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await pilot.press("ctrl+q")
            await wait_until(pilot, lambda: not app.is_running, what="exit")


@pytest.mark.parametrize("command", ["/quit", "/exit"])
async def test_quit_and_exit_as_commands_quit_as_the_quit_key_does(tmp_path, command):
    """People come from chat apps where /quit or /exit ends them: "Unknown command /quit"
    it said. The command's own text is no unsent draft to ask about."""
    async with DemoServer([]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, command)
            await wait_until(pilot, lambda: not app.is_running, what="exit")
        assert app.return_code == 0


@pytest.mark.parametrize(("command", "screen"), [("/key", "KeySwitcher"),
                                                 ("/resume", "KeySwitcher"),
                                                 ("/clear", "NewKeyPrompt")])
async def test_key_alone_resume_and_clear_open_the_switcher_and_a_new_conversation(
        tmp_path, command, screen):
    """/key alone said "Usage: /key NAME" where /model alone is a picker; /resume and
    /clear, what Claude Code and Codex users type for these, were unknown commands."""
    async with DemoServer([]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, command)
            await wait_until(pilot, lambda: type(app.screen).__name__ == screen, what=screen)
            await pilot.press("escape")
            await wait_until(pilot, lambda: app.screen is app.screen_stack[0], what="closed")
            assert app.key == "main" and app.chat_input.text == ""

