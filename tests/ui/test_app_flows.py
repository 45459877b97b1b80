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
from selfref_tui.selfref.reference import SelfReference
from selfref_tui.ui.app import SelfRefApp
from selfref_tui.ui.widgets.assistant_message import AssistantMessage
from selfref_tui.ui.widgets.error_block import ErrorBlock
from selfref_tui.ui.widgets.user_message import UserMessage
from tests.ui.helpers import (
    SIZE,
    TWO_REFS,
    idle,
    make_app,
    started,
    stored,
    type_and_send,
    wait_until,
)


async def test_send_and_stream_two_refs(tmp_path):
    async with DemoServer([Reply(text=TWO_REFS, chunk_chars=7)]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "write fibonacci")
            await wait_until(pilot, lambda: app.transcript.query(UserMessage), what="user message")
            await wait_until(
                pilot, lambda: idle(app) and app.header.status == "ready", what="turn end"
            )
            answer = app.transcript.query_one(AssistantMessage)
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
            answer = app.transcript.query_one(AssistantMessage)
            assert answer.interrupted
            assert "interrupted" in str(answer.query_one(".marker").render())
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
            assert queued.text == "also add tests" and queued.has_class("-queued")
            release.set()
            await wait_until(pilot, lambda: not queued.queued, what="delivery")
            await wait_until(
                pilot, lambda: idle(app) and app.header.status == "ready", what="turn end"
            )
            texts = [m.text for m in app.transcript.query(UserMessage)]
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
            assert highlighted.has_class("-highlighted")
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
            # Copy key: the highlighted ref goes to the clipboard.
            await pilot.press("ctrl+r")
            assert app.clipboard == app.transcript.highlighted.content


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
            assert not app.transcript.query(UserMessage)
            assert app.header.key == "work"
            await type_and_send(pilot, "hello work")
            await wait_until(
                pilot,
                lambda: (
                    idle(app)
                    and app.transcript.query(AssistantMessage)
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
            assert [m.text for m in app.transcript.query(UserMessage)] == ["hello main"]
    assert stored(tmp_path, "work")[-1]["content"] == "answer in work"


async def test_provider_down_shows_error_block_and_app_survives(tmp_path):
    server = DemoServer([])
    url = await server.start()
    await server.stop()  # nothing listens on that port any more
    app = make_app(tmp_path, url)
    async with app.run_test(size=SIZE) as pilot:
        await started(pilot, app)
        await type_and_send(pilot, "are you there?")
        await wait_until(pilot, lambda: app.transcript.query(ErrorBlock), what="error block")
        error = app.transcript.query_one(ErrorBlock)
        assert error.kind in ("connection", "timeout")
        await wait_until(pilot, lambda: idle(app), what="turn end")
        assert app.is_running
    assert stored(tmp_path)[-1]["content"] == "are you there?"  # what was typed is kept


async def test_rejected_api_key_shows_error_block(tmp_path):
    async with DemoServer([Reply(text="never")], api_key="right-key") as url:
        app = make_app(tmp_path, url, api_key="wrong-key")
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "hi")
            await wait_until(pilot, lambda: app.transcript.query(ErrorBlock), what="error block")
            assert app.transcript.query_one(ErrorBlock).kind == "auth"


async def test_server_error_shows_error_block(tmp_path):
    async with DemoServer([HttpError(500, "boom")]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "hi")
            await wait_until(pilot, lambda: app.transcript.query(ErrorBlock), what="error block")
            assert app.transcript.query_one(ErrorBlock).kind == "server"


async def test_store_locked_by_another_writer_keeps_typed_text(tmp_path):
    other = SelfReference(tmp_path / "data")
    other.open("main")  # holds the write lock, as another process would
    try:
        async with DemoServer([Reply(text="never")]) as url:
            app = make_app(tmp_path, url)
            async with app.run_test(size=SIZE) as pilot:
                await wait_until(
                    pilot, lambda: app.transcript.query(ErrorBlock), what="error block"
                )
                assert app.transcript.query_one(ErrorBlock).kind == "store"
                await type_and_send(pilot, "do not lose me")
                await pilot.pause()
                assert app.chat_input.text == "do not lose me"
                assert not app.transcript.query(UserMessage)
    finally:
        other.close()


async def test_corrupt_store_file_is_reported_and_key_starts_fresh(tmp_path):
    store = SelfReference(tmp_path / "data")
    memory = store.open("main")
    for text in ("one", "two"):
        memory.commit([UserMessageMutation({"role": "user", "content": text})])
    log = store.key_dir("main") / "log.jsonl"
    store.close()
    lines = log.read_text().split("\n")
    lines[1] = "{oops"  # damage in the middle of the file, not a torn last write
    log.write_text("\n".join(lines))
    async with DemoServer([Reply(text="fresh start")]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.transcript.query(ErrorBlock), what="error block")
            assert app.transcript.query_one(ErrorBlock).kind == "store"
            await wait_until(pilot, lambda: app.header.status == "ready", what="ready")
            await type_and_send(pilot, "hello again")
            await wait_until(
                pilot, lambda: idle(app) and app.transcript.query(AssistantMessage), what="answer"
            )
    assert stored(tmp_path)[-1]["content"] == "fresh start"
    aside = [p for p in log.parent.iterdir() if p.name.startswith("log.jsonl.corrupt-")]
    assert len(aside) == 1  # the damaged log is kept for recovery


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
