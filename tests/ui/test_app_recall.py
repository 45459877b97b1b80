"""The app takes in a long compacted history for search_history once the key is on screen.

The model's first search is the one it makes soon after the key is opened (or
right after a compaction): the app has the agent index the stored history in a
thread as soon as the key is shown, so that search finds it done. Over real
HTTP with the demo model, which calls ``search_history`` when asked to.
"""

from __future__ import annotations

from selfref_tui.context.mutations import AssistantMessageMutation, UserMessageMutation
from selfref_tui.context.summary import Summary, summary_mutation
from selfref_tui.demo.script import demo_script
from selfref_tui.demo.server import DemoServer
from selfref_tui.selfref.reference import SelfReference
from tests.ui.helpers import SIZE, make_app, started, turn_done, type_and_send, wait_until


def _seed(tmp_path, key: str, exchanges: int, *, compacted: bool) -> None:
    with SelfReference(tmp_path / "data") as store:
        memory = store.open(key)
        batch: list = []
        for i in range(exchanges):
            words = " with the marmalade cat" if i == 1_234 else ""
            batch += [UserMessageMutation({"role": "user", "content": f"question {i}{words}"}),
                      AssistantMessageMutation(f"answer {i}")]
        memory.commit(batch)
        if compacted:
            memory.commit([summary_mutation(Summary("Chat", "short", [], [], "idle", "more",
                                                    []))])


async def test_a_long_compacted_history_is_indexed_once_the_key_is_shown(tmp_path):
    _seed(tmp_path, "main", 3_000, compacted=True)
    _seed(tmp_path, "short", 10, compacted=True)
    async with DemoServer(demo_script) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            agent = app.controller.agent
            memory = agent.memory("main")
            recall = agent._history_index("main")
            await wait_until(pilot, lambda: len(recall.index) == memory.message_count,
                             what="the history indexed")
            await type_and_send(pilot, "search the history for marmalade cat")
            await turn_done(pilot, app)
            search, read = app.transcript.items_of("tool")
            assert (search.tool_name, read.tool_name) == ("search_history", "read_history")
            # the person's question itself, and the compacted message
            assert search.result is not None and search.result.startswith(
                "2 messages match 'marmalade cat'")
            assert "\n#2469 user " in search.result and "(compacted)" in search.result
            # a short key is searched as it comes: nothing taken in ahead
            await type_and_send(pilot, "/key short")
            await wait_until(pilot, lambda: app.key == "short"
                             and app.header.status == "ready", what="short open")
            assert agent.prepare_search("short") is None
            assert len(agent._history_index("short").index) == 0
