"""The person's words survive compaction, and the model can search what it no longer sees.

Over real HTTP: the in-package server is scripted to call ``compact``,
``search_history`` and ``read_history``; what the next request carries is read
from what the server received, and the store is read back from disk.
"""

from __future__ import annotations

import json

from selfref_tui.agent import events as ev
from selfref_tui.context.summary import EXCHANGE_TITLE, HISTORY_TITLE, PERSON_TITLE
from selfref_tui.demo.script import Reply, ToolCall

SUMMARY = {
    "goal": "Port the parser", "instruction": "Small commits", "discoveries": ["uses regex"],
    "completed": ["read the code"], "current_status": "halfway",
    "likely_next_work": "write the tokenizer", "relevant_files_directories": ["parser.py"],
    "errors_and_fixes": ["import cycle: moved the helper"],
    "constraints_and_preferences": ["tabs"], "pending_tasks": ["docs"],
}
TABS = "Please indent with tabs, never spaces — I mean it.\nAlso: keep lines under 80."
DEADLINE = "The deadline is Friday; ship the tokenizer first."
PLAN = ("Here is the migration plan. " + "Step by step we move each rule. " * 100
        + "The codename is blue heron protocol. " + "Then we test. " * 60)


def _settings(**changes):
    from selfref_tui.config import AgentSettings

    return AgentSettings(**{"base_system_prompt": "You are a test agent.", **changes})


async def _compacted(h) -> None:
    """Three turns: two of the person's messages and a long answer, then a compaction."""
    assert await h.agent.run_turn("main", TABS) == "done"
    assert await h.agent.run_turn("main", DEADLINE) == "done"
    h.agent.request_compaction("main")
    assert await h.agent.run_turn("main", None) == "done"
    assert len(h.of(ev.CompactionApplied)) == 1


def _script(*after: Reply) -> list:
    return [Reply(text="Tabs it is."), Reply(text=PLAN),
            Reply(text="Summarising.", tool_calls=[ToolCall("compact", SUMMARY, id="k1")]),
            Reply(text="Compacted."), *after]


async def test_the_next_request_after_a_compaction_holds_the_persons_words(harness):
    async with harness(_script(Reply(text="On it."))) as h:
        await _compacted(h)
        assert await h.agent.run_turn("main", "go on") == "done"
        for request in h.server.requests[3:]:  # the step after compacting, and the next turn
            summary = next(m["content"] for m in request["messages"]
                           if m["role"] == "user" and "[Context summary]" in m["content"])
            assert 'role="user"' in summary and f"\n{TABS}\n</message>" in summary
            assert f"\n{DEADLINE}\n</message>" in summary
            assert summary.index(PERSON_TITLE) < summary.index(EXCHANGE_TITLE)
            assert summary.index(EXCHANGE_TITLE) < summary.index(HISTORY_TITLE)
            assert "search_history(query)" in summary and "read_history(start, count)" in summary
            assert "## Errors and fixes\n- import cycle: moved the helper" in summary
            # the latest (the deadline, 3) goes with the model's last words (its long plan,
            # 4) in the last exchange, after the person's earlier messages
            assert summary.index(TABS) < summary.index(EXCHANGE_TITLE) < summary.index(DEADLINE)
            assert "The codename is blue heron protocol." in summary
    stored = h.reload()
    assert stored.summary["verbatim"]["person"] == [1]
    assert stored.summary["verbatim"]["exchange"] == [3, 4]
    assert stored.summary["pending_tasks"] == ["docs"]


async def test_search_finds_a_compacted_message_and_read_returns_it_whole(harness):
    search = ToolCall("search_history", {"query": '"blue heron"'}, id="s1")
    read = ToolCall("read_history", {"start": 4, "count": 1}, id="r1")
    script = _script(Reply(tool_calls=[search]), Reply(tool_calls=[read]), Reply(text="Found."))
    async with harness(script, settings=_settings(fd_threshold_chars=100_000)) as h:
        await _compacted(h)
        assert await h.agent.run_turn("main", "What was the codename?") == "done"
        ended = {e.name: e.result for e in h.of(ev.ToolCallEnded)}
        found = ended["search_history"]
        assert found.startswith("1 message match '\"blue heron\"', newest first.")
        assert "#4 assistant " in found and "(compacted)" in found
        assert "The codename is blue heron protocol." in found
        whole = ended["read_history"]
        assert whole.startswith("Message 4 of ")
        assert 'role="assistant"' in whole and 'compacted="true">' in whole
        assert f"\n{PLAN}\n</message>" in whole
        # what the model read is what the server received as the tool's result
        results = [m["content"] for m in h.server.requests[-1]["messages"] if m["role"] == "tool"]
        assert results[-2:] == [found, whole]


async def test_numbers_written_as_strings_are_read_as_numbers(harness):
    """Small local models often write ``"4"`` for ``4``: the call does what it says, as
    the fd tools' do, rather than costing a refusal and a second call."""
    search = ToolCall("search_history", {"query": "deadline", "limit": "5", "before": "9"},
                      id="s1")
    read = ToolCall("read_history", {"start": "4", "count": " 1 "}, id="r1")
    wrong = ToolCall("read_history", {"start": "four"}, id="r2")
    script = _script(Reply(tool_calls=[search, read, wrong]), Reply(text="Found."))
    async with harness(script, settings=_settings(fd_threshold_chars=100_000)) as h:
        await _compacted(h)
        assert await h.agent.run_turn("main", "What was the deadline?") == "done"
        ended = {e.call_id: e.result for e in h.of(ev.ToolCallEnded)}
        failed = {e.call_id: e.error for e in h.of(ev.ToolCallError)}
        assert "#3 user " in ended["s1"] and DEADLINE[:20] in ended["s1"]
        assert ended["r1"].startswith("Message 4 of ") and PLAN in ended["r1"]
        assert set(failed) == {"r2"} and "start must be a message number" in failed["r2"]


async def test_a_long_read_becomes_an_fd_and_rewound_messages_stay_out(harness):
    read = ToolCall("read_history", {"start": 1, "count": 10}, id="r1")
    search = ToolCall("search_history", {"query": "tabs"}, id="s1")
    again = ToolCall("search_history", {"query": "tabs", "include_rewound": True}, id="s2")
    script = _script(Reply(text="Noted."), Reply(tool_calls=[read, search]),
                     Reply(tool_calls=[again]), Reply(text="Read."))
    async with harness(script, settings=_settings(fd_threshold_chars=2_000)) as h:
        await _compacted(h)
        assert await h.agent.run_turn("main", "Forget the tabs, use spaces.") == "done"
        memory = h.agent.memory("main")
        rewound = memory.entries()[-2]
        assert rewound.message["content"] == "Forget the tabs, use spaces."
        memory.commit([memory.rewind_patch(rewound.n)])
        assert await h.agent.run_turn("main", "Read it all back.") == "done"
        ended = [(e.name, e.result) for e in h.of(ev.ToolCallEnded)]
        (read_result,) = [r for name, r in ended if name == "read_history"]
        first, second = [r for name, r in ended if name == "search_history"]
        assert read_result.startswith("<fd_result fd=\"fd:")
        assert "tool:read_history" in read_result
        assert "#1 user" in first and f"#{rewound.n} " not in first
        assert f"#{rewound.n} user" in second and "(rewound)" in second
        # a search's own call and result are never found by the next search
        assert "search_history" not in second
    stored = h.reload()
    (fd,) = stored.fds.values()
    assert PLAN in fd["content"] and TABS in fd["content"]


async def test_the_recall_tools_come_right_after_compact_on_a_small_window(harness):
    async with harness([Reply(text="hi")]) as h:
        from selfref_tui.agent.tools.offer import offer_tools

        tools = h.agent.tools_for("main")
        names = [t["function"]["name"] for t in tools]
        assert {"search_history", "read_history"} <= set(names)
        compact = [t for t in tools if t["function"]["name"] == "compact"]
        recall = [t for t in tools if t["function"]["name"] in ("search_history",
                                                                "read_history")]
        count = h.agent._count_tools
        window = int((count(compact + recall) + 5) / 0.45)
        offered = offer_tools(tools, count, window)
        assert sorted(t["function"]["name"] for t in offered.tools) == [
            "compact", "read_history", "search_history"]


async def test_the_demo_model_finds_a_compacted_message_and_reads_it(harness):
    from selfref_tui.demo.script import DEMO_TAG, demo_script

    async with harness(demo_script) as h:
        assert await h.agent.run_turn("main", "My cat is called Marmalade.") == "done"
        assert await h.agent.run_turn("main", "compact the context") == "done"
        assert len(h.of(ev.CompactionApplied)) == 1
        assert await h.agent.run_turn("main", "search the history for marmalade") == "done"
        names = [e.name for e in h.of(ev.ToolCallEnded)]
        assert names[-2:] == ["search_history", "read_history"]
        answer = h.server.requests[-1]["messages"][-1]["content"]
        assert "My cat is called Marmalade." in answer
        said = "".join(e.text for e in h.of(ev.TextDelta))
        assert said.endswith("My cat is called Marmalade.\n</message>\n```") and DEMO_TAG in said


async def test_asked_what_was_said_earlier_the_demo_model_searches_and_reads_it(harness):
    """A person asks as they would ask a model ("what did I decide about …?"), not with
    the demo's own words: the demo model searches the history and reads the oldest match,
    so the recall tools are seen working offline."""
    from selfref_tui.demo.script import demo_script

    async with harness(demo_script) as h:
        assert await h.agent.run_turn("main", "Invoices are immutable; we issue credit "
                                      "notes.") == "done"
        assert await h.agent.run_turn("main", "compact the context") == "done"
        assert await h.agent.run_turn("main", "What did I decide about invoices "
                                      "earlier?") == "done"
        names = [e.name for e in h.of(ev.ToolCallEnded)]
        assert names[-2:] == ["search_history", "read_history"]
        search = [m for m in h.server.requests[-2]["messages"] if m.get("tool_calls")][-1]
        assert json.loads(search["tool_calls"][0]["function"]["arguments"]) == {
            "query": "invoices"}
        answer = h.server.requests[-1]["messages"][-1]["content"]
        assert "Invoices are immutable; we issue credit notes." in answer


async def test_the_demo_model_gives_its_list_once_then_answers_briefly(harness):
    """Forty messages of a working day were forty copies of the 26-line list of prompts."""
    from selfref_tui.demo.script import DEMO_TAG, demo_script

    async with harness(demo_script) as h:
        for text in ("We use Postgres 16.", "Invoices are immutable.", "help"):
            assert await h.agent.run_turn("main", text) == "done"
        answers = [m["content"] for m in h.reload().messages if m["role"] == "assistant"]
        assert "Try one of these" in answers[0]
        assert answers[1].startswith(DEMO_TAG) and "Try one of these" not in answers[1]
        assert len(answers[1].splitlines()) == 1 and '"help"' in answers[1]
        assert "Try one of these" in answers[2]  # asked for again


async def test_the_demo_model_quoting_a_message_with_refs_leaves_the_refs_alone(harness):
    from selfref_tui.demo.script import demo_script

    async with harness(demo_script) as h:
        assert await h.agent.run_turn("main", "show me some code") == "done"
        before = {ref_id: [v["content"] for v in versions]
                  for ref_id, versions in h.reload().refs.items()}
        assert "fib_recursive" in before
        assert await h.agent.run_turn("main", "search the history for Fibonacci") == "done"
        names = [e.name for e in h.of(ev.ToolCallEnded)]
        assert names[-2:] == ["search_history", "read_history"]
        said = "".join(e.text for e in h.of(ev.TextDelta))
        assert '<ref id="fib_recursive">' in said  # quoted, as literal text
        after = {ref_id: [v["content"] for v in versions]
                 for ref_id, versions in h.reload().refs.items()}
        assert after == before


async def test_two_searches_of_one_batch_over_a_long_history_agree(harness):
    """6,000 stored messages: the first search indexes them in a thread while the other
    search of the same tool batch waits for it; both find what is there."""
    from selfref_tui.context.mutations import AssistantMessageMutation, UserMessageMutation

    calls = [ToolCall("search_history", {"query": "needle"}, id="s1"),
             ToolCall("search_history", {"query": '"odd one"'}, id="s2")]
    async with harness([Reply(tool_calls=calls), Reply(text="Found both.")]) as h:
        memory = h.selfref.open("main")
        batch = []
        for i in range(3_000):
            text = f"note {i}" + (" with the needle" if i % 1_000 == 7 else "")
            batch += [UserMessageMutation({"role": "user", "content": text}),
                      AssistantMessageMutation("the odd one" if i == 2_500 else "ok")]
        memory.commit(batch)
        assert await h.agent.run_turn("main", "Find them.") == "done"
        results = {e.call_id: e.result for e in h.of(ev.ToolCallEnded)}
        assert results["s1"].startswith("3 messages match 'needle'")
        assert [line.split()[0] for line in results["s1"].splitlines()[1:]] == [
            "#4015", "#2015", "#15"]
        assert results["s2"].startswith("1 message match '\"odd one\"'")
        assert "#5002 assistant" in results["s2"]


async def test_the_kept_words_fit_what_the_window_has_left_after_the_compaction(harness):
    """A small window, a long system prompt and tool schemas: the person's messages kept
    verbatim are what fits below the compaction point, the rest named, so the compacted
    request is smaller than the one it replaced and the next message still comes after
    the summary (not in a request that leaves the summary out to fit)."""
    script = [Reply(text="ok")] * 4 + [
        Reply(text="Summarising.", tool_calls=[ToolCall("compact", SUMMARY, id="k1")]),
        Reply(text="Compacted."), Reply(text="Next.")]
    said = [f"Message {i}: " + "please keep this exact wording in mind. " * 15
            for i in range(4)]
    from selfref_tui.config import AgentSettings

    settings = AgentSettings(base_system_prompt="You are a test agent. " + "Follow rules. " * 60)
    async with harness(script, settings=settings, context_window=4096) as h:
        # Counted with the real encoding from the start, as the app counts once it has
        # started: an encoding that finished loading in the middle (later on a busy
        # machine) changed the counts between the compaction and the next message.
        h.agent._ensure_encoder()
        await h.agent._encoder_task
        assert h.agent.tokens.ready
        for text in said:
            assert await h.agent.run_turn("main", text) == "done"
        h.agent.request_compaction("main")
        assert await h.agent.run_turn("main", None) == "done"
        assert len(h.of(ev.CompactionApplied)) == 1
        after = h.agent.preview_request("main")
        assert after.tokens < after.compacts_at
        assert not [e for e in h.of(ev.Notice) if "still" in e.message]
        assert await h.agent.run_turn("main", said[0]) == "done"
        # the next message neither crosses the compaction point again nor pushes the
        # summary out of the request
        last = h.server.requests[-1]["messages"]
        assert "[Context summary]" in str(last[1]["content"])
        assert "compact" not in str(last[-1]["content"]).lower()
        assert not h.agent.preview_request("main").compaction_asked
    kept = h.reload().summary["verbatim"]
    assert kept["left_out"] and sorted(kept["left_out"] + kept["person"]) == [1, 3, 5]
    assert kept["exchange"][0] == 7


async def test_a_long_history_is_taken_in_for_search_right_after_a_compaction(harness):
    """6,000 stored messages, then a compaction: the agent takes them in for
    search_history in a thread at once (the model's next search is likely soon), and
    the model's search finds what an index made from the stored entries then finds."""
    from selfref_tui.context.mutations import AssistantMessageMutation, UserMessageMutation
    from selfref_tui.context.recall_index import HistoryIndex

    search = ToolCall("search_history", {"query": '"odd one" needle'}, id="s1")
    async with harness(_script(Reply(tool_calls=[search]), Reply(text="Found."))) as h:
        memory = h.agent.memory("main")
        batch = []
        for i in range(3_000):
            text = f"note {i}" + (" with the needle" if i % 1_000 == 7 else "")
            batch += [UserMessageMutation({"role": "user", "content": text}),
                      AssistantMessageMutation("the odd one needle" if i == 2_500 else "ok")]
        memory.commit(batch)
        recall = h.agent._history_index("main")
        assert h.agent.prepare_search("main") is None  # nothing out of the model's view yet
        assert len(recall.index) == 0
        await _compacted(h)
        assert recall.preparing is not None  # started by the compaction
        await recall.preparing
        assert len(recall.index) >= 6_000
        assert h.agent.prepare_search("main") is None  # nothing left worth a thread
        assert await h.agent.run_turn("main", "Find the odd one.") == "done"
        (found,) = [e.result for e in h.of(ev.ToolCallEnded) if e.name == "search_history"]
        reference = HistoryIndex().search(list(memory.entries()), '"odd one" needle')
        assert found.startswith("1 message match")
        assert [line.split()[0] for line in found.splitlines()[1:]] == [
            f"#{hit.n}" for hit in reference.hits] == ["#5002"]


async def test_a_key_opened_with_a_long_compacted_history_is_taken_in_ahead(harness):
    """What the app does once a key is on screen: a long history partly out of the
    model's view is indexed in a thread; a search then reads only what came since."""
    from selfref_tui.context.mutations import UserMessageMutation

    async with harness([]) as h:
        memory = h.agent.memory("main")
        memory.commit([UserMessageMutation({"role": "user", "content": f"note {i}"})
                       for i in range(6_000)])
        memory.commit([memory.rewind_patch(5_990)])
        task = h.agent.prepare_search("main")
        assert task is not None and h.agent.prepare_search("main") is task  # one at a time
        await task
        recall = h.agent._history_index("main")
        assert len(recall.index) == 6_000 and recall.index.behind(memory) == 0
        found = recall.index.search(memory, "note 5995", include_rewound=True)
        assert [hit.n for hit in found.hits] == [5996] and found.hits[0].rewound
        assert recall.index.search(memory, "note 5995").total == 0


async def test_the_persons_request_stays_verbatim_through_a_second_compaction_in_one_turn(
        harness):
    """A long tool loop compacts twice: the person's message that started it was before the
    previous compaction, yet it is still the request being worked on, so the second
    summary carries it in the last exchange."""
    task = "Rename every foo to bar in src/, but never touch src/vendor."
    look = ToolCall("inspect_context", {}, id="i1")
    script = [Reply(text="Working.", tool_calls=[ToolCall("compact", SUMMARY, id="k1")]),
              Reply(text="Looking.", tool_calls=[look]),
              Reply(text="Still working.", tool_calls=[ToolCall("compact", SUMMARY, id="k2")]),
              Reply(text="Done.")]
    async with harness(script) as h:
        assert await h.agent.run_turn("main", task) == "done"
        assert len(h.of(ev.CompactionApplied)) == 2
        summary = h.server.requests[-1]["messages"][1]["content"]
        exchange = summary[summary.index(EXCHANGE_TITLE):summary.index(HISTORY_TITLE)]
        assert '<message n="1" role="user"' in exchange and f"\n{task}\n</message>" in exchange
    assert h.reload().summary["verbatim"]["exchange"][0] == 1


async def test_a_compaction_right_after_a_compaction_is_refused_without_a_failure(harness):
    """Nothing was added since the summary (its last exchange quotes the person's "compact
    the context"): another summary would say the same, so the call is refused, the model
    told why, and nobody is told that a compaction failed."""
    again = ToolCall("compact", SUMMARY, id="k2")
    script = [Reply(text="Compacting.", tool_calls=[ToolCall("compact", SUMMARY, id="k1")]),
              Reply(text="Again.", tool_calls=[again]), Reply(text="Compacted."),
              Reply(text="You are welcome.")]
    async with harness(script) as h:
        assert await h.agent.run_turn("main", "compact the context") == "done"
        assert len(h.of(ev.CompactionApplied)) == 1
        (refused,) = [e for e in h.of(ev.ToolCallError) if e.call_id == "k2"]
        assert "compacted just now" in refused.error
        assert not h.of(ev.CompactionFailed)
        assert await h.agent.run_turn("main", "thanks") == "done"
    assert h.reload().summary["verbatim"]["exchange"][0] == 1


async def test_the_demo_models_summary_keeps_what_the_focus_names(harness):
    """`/compact keep the Postgres and invoice decisions`: the demo's summary was the same
    whatever the focus said; now it keeps the person's messages that hold its words."""
    from selfref_tui.demo.script import NOTED_TEXT, demo_script

    async with harness(demo_script) as h:
        for text in ("We use Postgres 16 with logical replication.", "Lunch is at noon.",
                     "Invoices are immutable; corrections are credit notes."):
            assert await h.agent.run_turn("main", text) == "done"
        h.agent.request_compaction("main", "keep the Postgres and invoice decisions")
        assert await h.agent.run_turn("main", "go on") == "done"
        summary = h.reload().summary
        assert summary["discoveries"][1:] == [
            "The person said: We use Postgres 16 with logical replication.",
            "The person said: Invoices are immutable; corrections are credit notes."]
        assert summary["current_status"].endswith(
            "focused on: keep the Postgres and invoice decisions")
        # the list of prompts was summed up, not lost: a plain message is answered briefly
        assert await h.agent.run_turn("main", "We need a CSV export.") == "done"
        assert h.reload().messages[-1]["content"] == NOTED_TEXT
