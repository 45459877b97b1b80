"""The chat controller without a screen: real store files, the in-package server over HTTP.

What the app does with a person's input — early messages, opening and
letting go of keys, refusals, /compact — is decided here, so it is tested
here the way a front end drives it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from selfref_tui.agent import events as ev
from selfref_tui.agent.chat.controller import ChatController, KeyOpenError, Refused, typed_inputs
from selfref_tui.config import AppConfig, ProviderConfig
from selfref_tui.demo.script import Reply, Script, demo_script
from selfref_tui.demo.server import DemoServer
from selfref_tui.selfref.errors import StoreError
from selfref_tui.selfref.reference import SelfReference
from tests.agent.helpers import STALL_PATIENCE_S, wait_until
from tests.selfref.helpers import stored_history, turn


def _config(tmp_path: Path, url: str) -> AppConfig:
    provider = ProviderConfig(base_url=url, api_key="test", model="test-model", max_retries=0,
                              timeout_s=STALL_PATIENCE_S, context_window=128_000)
    return AppConfig(provider=provider, data_dir=tmp_path / "data", key="main")


@asynccontextmanager
async def running(
    tmp_path: Path, script: Script, *, read_only: bool = False, start: bool = True
) -> AsyncIterator[tuple[ChatController, DemoServer, list[Any]]]:
    """A controller on a demo server; started (not yet on a key) unless ``start=False``."""
    server = DemoServer(script)
    async with server as url:
        controller = ChatController(_config(tmp_path, url), read_only=read_only)
        events: list[Any] = []
        try:
            if start:
                await controller.start(events.append)
            yield controller, server, events
        finally:
            await controller.aclose()


def _writable(tmp_path: Path, key: str) -> bool:
    """Whether another process's store could take ``key``'s lock now."""
    store = SelfReference(tmp_path / "data")
    try:
        store.open(key)
        return True
    except StoreError:
        return False
    finally:
        store.close()


async def test_early_inputs_wait_for_the_key_and_go_out_in_order(tmp_path):
    async with running(tmp_path, [Reply(text="one"), Reply(text="two")], start=False) as (
        controller, server, events
    ):
        assert controller.submit("first") == "early"
        assert controller.submit("second") == "early"
        assert server.requests == []
        await controller.start(events.append)
        opened = await controller.open_key("main")
        assert opened.key == "main" and opened.memory.history == []
        assert controller.early_inputs == ["first", "second"]
        sent = [controller.submit(text) for text in controller.take_early_inputs()]
        assert sent[0] == "started" and sent[1] in ("queued", "started")
        assert controller.take_early_inputs() == []
        await controller.router.wait_idle()
    assert typed_inputs(stored_history(tmp_path / "data")) == ["first", "second"]


async def test_switching_keys_lets_the_previous_one_go(tmp_path):
    async with running(tmp_path, [Reply(text="hi")]) as (controller, _server, _events):
        await controller.open_key("main")
        assert controller.submit("hello") == "started"
        await controller.router.wait_idle()
        assert not _writable(tmp_path, "main")  # this window holds it
        assert controller.check_switch("other")
        assert not controller.check_switch("main")  # on screen already: nothing to open
        await controller.open_key("other")
        assert controller.key == controller.router.key == "other"
        assert _writable(tmp_path, "main")  # let go: another window may write it
        assert not controller.check_switch("other")  # already on screen
        with pytest.raises(Refused, match="path separator"):
            controller.check_switch("../etc")
        assert sorted(k["key"] for k in await controller.person_keys()) == ["main", "other"]


async def test_a_locked_key_refuses_input_until_another_key_opens(tmp_path):
    holder = SelfReference(tmp_path / "data")
    holder.open("main").commit(turn(1, "what is up"))
    try:
        async with running(tmp_path, [Reply(text="in other")]) as (controller, _s, _e):
            with pytest.raises(KeyOpenError, match="--read-only") as caught:
                await controller.open_key("main")
            assert caught.value.expected and controller.key_error
            with pytest.raises(Refused, match="--read-only"):
                controller.submit("hello")
            with pytest.raises(Refused):
                controller.compact()
            assert controller.check_switch("main")  # trying again is allowed
            await controller.open_key("other")
            assert controller.key_error is None
            assert controller.submit("hello") == "started"
            await controller.router.wait_idle()
    finally:
        holder.close()
    assert typed_inputs(stored_history(tmp_path / "data", "other")) == ["hello"]


async def test_a_read_only_window_reads_but_refuses_what_writes(tmp_path):
    holder = SelfReference(tmp_path / "data")
    holder.open("main").commit(turn(1, "what is up"))
    try:
        async with running(tmp_path, [Reply(text="never")], read_only=True) as (
            controller, server, _e
        ):
            opened = await controller.open_key("main")
            assert typed_inputs(opened.memory.history) == ["what is up"]
            for refused in (
                lambda: controller.submit("hello"),
                lambda: controller.remember("a fact"),
                lambda: controller.forget("exp_001"),
                controller.compact,
            ):
                with pytest.raises(Refused, match="--read-only"):
                    refused()
            with pytest.raises(Refused, match="--read-only"):
                await controller.new_key_names()
            assert not controller.busy and server.requests == []
        assert holder.open("main").experiences == []
    finally:
        holder.close()


async def test_remember_forget_and_the_sidebar_lists(tmp_path):
    async with running(tmp_path, []) as (controller, _s, _e):
        await controller.open_key("main")
        exp_id = controller.remember("likes tabs")
        lists = controller.sidebar_lists()
        assert lists is not None and [e["id"] for e in lists.experiences] == [exp_id]
        assert controller.forget(exp_id) and not controller.forget(exp_id)
        assert controller.sidebar_lists().experiences == []
        assert controller.ref_content("nope") is None


async def test_rename_and_delete_keys(tmp_path):
    async with running(tmp_path, [Reply(text="hi")]) as (controller, _s, _e):
        await controller.open_key("main")
        controller.submit("hello")
        await controller.router.wait_idle()
        await controller.open_key("spare")
        with pytest.raises(StoreError, match="on screen"):
            await controller.delete_key("spare")
        await controller.rename_key("main", "renamed")
        await controller.delete_key("renamed")
        assert [k["key"] for k in await controller.person_keys()] == ["spare"]
        suggested, taken = await controller.new_key_names()
        assert suggested == "chat-1" and "spare" in taken


async def test_compact_on_a_window_too_small_for_the_tool_is_refused_without_a_request(
    tmp_path,
):
    # 600 tokens: 45 % is 270, less than compact's schema; the server refuses what is over
    async with running(tmp_path, [Reply(text="hi there"), Reply(text="answered again")]) as (
        controller, server, _events
    ):
        server.context_window, server.enforce_window = 600, True
        await controller.open_key("main")
        controller.agent.context_window = 600
        controller.submit("hello")
        await controller.router.wait_idle()
        before = len(server.requests)
        with pytest.raises(Refused) as refused:
            controller.compact()
        assert str(refused.value).startswith("Cannot compact: the window is too small")
        assert "\n" not in str(refused.value)
        assert not controller.busy
        await controller.router.wait_idle()
        assert len(server.requests) == before and controller.router.outcomes == ["done"]
    history = stored_history(tmp_path / "data")
    assert [m["content"] for m in history] == ["hello", "hi there"]


async def test_compact_when_idle_compacts_once_without_a_made_up_message(tmp_path):
    async with running(tmp_path, demo_script) as (controller, server, events):
        await controller.open_key("main")
        controller.submit("hello")
        await controller.router.wait_idle()
        before = len(server.requests)
        assert controller.compact() == "started"
        await controller.router.wait_idle()
        assert controller.router.outcomes == ["done", "done"]
        assert len([e for e in events if isinstance(e, ev.CompactionApplied)]) == 1
        # one request asked for the summary, one continued from it: no loop
        assert len(server.requests) - before == 2
        started = [e for e in events if isinstance(e, ev.TurnStarted)]
        assert [e.user_text for e in started] == ["hello", ""]
    history = stored_history(tmp_path / "data")
    assert typed_inputs(history) == ["hello"]
    assert sum(1 for m in history if m.get("compaction") is not None) == 1


async def test_a_token_count_under_way_never_opens_a_key_let_go_again(tmp_path):
    """A count of the key on screen still in its thread when a switch (or a rename)
    lets that key go: it opened the key again, lock and all, and deleting or renaming
    it was refused ("open in this window"), nor could another window write it."""
    counting, go = threading.Event(), threading.Event()
    async with running(tmp_path, [Reply(text="hi")]) as (controller, _server, _events):
        await controller.open_key("main")
        agent = controller.agent
        count = agent.preview_request

        def held_count(key: str) -> object:
            counting.set()
            go.wait(10)
            return count(key)

        agent.preview_request = held_count
        worker = asyncio.create_task(controller.usage())
        await asyncio.to_thread(counting.wait, 10)
        switching = asyncio.create_task(controller.open_key("other"))
        # "other" is on screen while main is still counted: main is let go after the count
        await wait_until(lambda: controller.key == "other", what="other on screen")
        go.set()
        await switching
        assert (await worker)[0] == "main"  # the count under way finished, on main
        assert "main" not in controller.selfref.open_keys()
        assert _writable(tmp_path, "main")
        await controller.delete_key("main")

        # A rename lets the key on screen go: a count under way is waited for too.
        counting.clear(), go.clear()
        worker = asyncio.create_task(controller.usage())
        await asyncio.to_thread(counting.wait, 10)
        renaming = asyncio.create_task(controller.rename_key("other", "renamed"))
        await asyncio.sleep(0)  # the rename starts letting "other" go
        go.set()
        await renaming
        await worker
        assert "other" not in controller.selfref.open_keys()
        await controller.open_key("renamed")  # what the app does after a rename
        assert [k["key"] for k in await controller.person_keys()] == ["renamed"]


async def test_close_waits_for_a_token_count_still_in_its_thread(tmp_path):
    """The app cancels its workers at shutdown, but a cancelled ``to_thread`` runs on: a
    token count that opened the key after the store closed kept its lock, and the next
    window on that key (test_app_window's second app) was refused."""
    counting, go, counted = threading.Event(), threading.Event(), threading.Event()
    seen: list[object] = []
    async with running(tmp_path, [Reply(text="hi")]) as (controller, _server, _events):
        await controller.open_key("main")
        agent, store = controller.agent, controller.selfref
        count, close = agent.preview_request, store.close

        def slow_count(key: str) -> object:
            counting.set()
            go.wait(10)
            try:
                return count(key)
            finally:
                counted.set()

        def watched_close() -> None:
            seen.append("closed after the count" if counted.is_set() else "closed under it")
            close()

        agent.preview_request, store.close = slow_count, watched_close
        worker = asyncio.create_task(controller.usage())
        await asyncio.to_thread(counting.wait, 10)
        worker.cancel()  # what the app's shutdown does to its workers
        closing = asyncio.create_task(controller.aclose())
        for _ in range(100):  # let aclose run as far as it goes without the count
            await asyncio.sleep(0)
            if closing.done():
                break
        go.set()
        await closing
        assert await asyncio.to_thread(counted.wait, 10)
        assert seen == ["closed after the count"]
    assert _writable(tmp_path, "main")  # the next window on the key takes it


async def test_the_persons_latest_messages_are_read_newest_first_past_rewound_and_hidden(
        tmp_path):
    from selfref_tui.context.history import is_person_message
    from selfref_tui.context.mutations import (
        AssistantMessageMutation,
        MultimodalToolResultMutation,
        RewindMutation,
        UserMessageMutation,
    )

    call = {"id": "c1", "type": "function", "function": {"name": "shot", "arguments": "{}"}}
    with SelfReference(tmp_path / "data") as store:
        memory = store.open("main")
        for i in range(1, 6):
            memory.commit(turn(i))
        memory.commit([UserMessageMutation({"role": "user", "content": "take a picture"}),
                       AssistantMessageMutation(content="", tool_calls=[call]),
                       MultimodalToolResultMutation("c1", "shot", "{}",
                                                    [{"content": "a picture"}])])
        memory.commit(turn(6))
        memory.commit([RewindMutation(to_patch=memory.patch_of(memory.last_number - 1))])
        assert memory.numbers_hidden() and memory.numbers_rewound()
    async with running(tmp_path, []) as (controller, _s, _e):
        await controller.open_key("main")
        entries = controller._agent().memory("main").entries()
        expected = [e for e in reversed(entries)
                    if not e.rewound and is_person_message(e.message)]
        assert [e.message["content"] for e in expected[:3]] == [
            "take a picture", "question 5", "question 4"]
        assert controller.recent_person_messages(3) == expected[:3]
        assert controller.recent_person_messages() == expected
        assert controller.last_person_message() == expected[0]


async def test_a_message_sent_while_a_model_choice_is_saved_goes_to_the_new_model(tmp_path):
    """The model picker chooses in a worker: the person's next message can arrive
    while the choice is being written. Its turn ran on the old client, which the
    switch then closed under it ("the client has been closed")."""
    async with running(tmp_path, [Reply(text="on big")]) as (controller, server, events):
        await controller.open_key("main")
        switch = asyncio.create_task(controller.choose_model("big-model"))
        await asyncio.sleep(0)  # the switch is under way: its choice is being written
        assert not switch.done()
        assert controller.submit("hi") == "started"
        await switch
        await controller.router.wait_idle()
        assert not [e for e in events if isinstance(e, ev.ErrorEvent)]
        assert [r["model"] for r in server.requests] == ["big-model"]
    assert stored_history(tmp_path / "data")[-1]["content"] == "on big"


async def test_a_count_that_fails_says_why_instead_of_nothing(tmp_path):
    """The meter waited for a figure that never came when the count raised."""
    async with running(tmp_path, [Reply(text="hi")]) as (controller, _server, _events):
        await controller.open_key("main")

        def failing_count(key: str) -> object:
            raise OSError(5, "Input/output error")

        controller.agent.preview_request = failing_count
        with pytest.raises(Refused) as refused:
            await controller.usage()
        assert "'main' could not be counted" in str(refused.value)
        assert "Input/output error" in str(refused.value)
