"""The loop over real HTTP against the in-package demo server, and the store after each."""

from __future__ import annotations

import asyncio
import json
import socket

from selfref_tui.agent import events as ev
from selfref_tui.agent.abort import AbortSignal
from selfref_tui.agent.turn.inbox import Inbox
from selfref_tui.agent.turn.router import AgentInputRouter
from selfref_tui.demo.script import Drop, HttpError, Malformed, Reply, Stall, ToolCall

from .helpers import HANG_S, wait_until


def _roles(messages):
    return [m["role"] for m in messages]


def _tool_messages(body):
    return [m for m in body["messages"] if m["role"] == "tool"]


async def test_text_answer_streams_and_persists(harness):
    async with harness([Reply(text="Hello from the test model.")]) as h:
        outcome = await h.agent.run_turn("main", "hi")
        assert outcome == "done"
        assert "".join(e.text for e in h.of(ev.TextDelta)) == "Hello from the test model."
        kinds = [type(e).__name__ for e in h.events]
        assert kinds[0] == "TurnStarted" and kinds[-1] == "TurnEnded"
        order = [kinds.index(k) for k in ("LLMCallStarted", "TextDelta", "LLMCallEnded")]
        assert order == sorted(order)
        assert h.of(ev.ContextUsage)[0].window == 128_000 and h.of(ev.ContextUsage)[0].tokens > 0
        body = h.server.requests[0]
        assert body["messages"][0]["role"] == "system"
        assert "You are a test agent." in body["messages"][0]["content"]
        assert body["messages"][-1] == {"role": "user", "content": "hi"}
        assert {t["function"]["name"] for t in body["tools"]} >= {"remember", "fork_spawn"}
    stored = h.reload()
    assert [(m["role"], m.get("content")) for m in stored.messages if m["role"] != "system"] == [
        ("user", "hi"), ("assistant", "Hello from the test model.")]


async def test_refs_streamed_are_usable_by_tools_in_the_same_turn(harness):
    text = 'Here:\n<ref id="fib">\ndef fib(n):\n    return n\n</ref>\nDone.'
    script = [
        Reply(text=text, chunk_chars=3, tool_calls=[ToolCall("get_ref", {"ref_id": "fib"})]),
        Reply(text="The ref holds the function."),
    ]
    async with harness(script) as h:
        assert await h.agent.run_turn("main", "code please") == "done"
        assert [e.ref_id for e in h.of(ev.RefOpened)] == ["fib"]
        closed = h.of(ev.RefClosed)
        assert [c.ref_id for c in closed] == ["fib"] and "def fib(n):" in closed[0].content
        result = _tool_messages(h.server.requests[1])[0]["content"]
        assert "def fib(n):" in result and "ref_content" in result
    stored = h.reload()
    assert "def fib(n):" in stored.refs["fib"][-1]["content"]
    index = stored.refs["fib"][-1]["message_index"]
    assert stored.history[index]["role"] == "assistant"
    assert '<ref id="fib">' in stored.history[index]["content"]


async def test_parallel_tool_calls_each_get_a_result(harness):
    script = [
        Reply(tool_calls=[
            ToolCall("remember", {"text": "The person likes tea."}, id="c1"),
            ToolCall("remember", {"text": "The project uses Python."}, id="c2"),
            ToolCall("inspect_context", {}, id="c3"),
        ]),
        Reply(text="Noted."),
    ]
    async with harness(script) as h:
        assert await h.agent.run_turn("main", "remember things") == "done"
        results = {m["tool_call_id"]: m["content"] for m in _tool_messages(h.server.requests[1])}
        assert json.loads(results["c1"])["experience_id"] == "exp_001"
        assert json.loads(results["c2"])["experience_id"] == "exp_002"
        assert json.loads(results["c3"])["active_key"] == "main"
        # Experiences reach the system prompt of the next call.
        assert "The person likes tea." in h.server.requests[1]["messages"][0]["content"]
        assert [e.experience_id for e in h.of(ev.ExperienceRemembered)] == ["exp_001", "exp_002"]
        assert sorted(e.call_id for e in h.of(ev.ToolCallStarted)) == ["c1", "c2", "c3"]
    stored = h.reload()
    assert [(e["id"], e["text"], e["source"]) for e in stored.experiences] == [
        ("exp_001", "The person likes tea.", "agent"),
        ("exp_002", "The project uses Python.", "agent")]


async def test_invalid_json_and_unknown_tool_get_error_results_and_loop_goes_on(harness):
    script = [
        Reply(tool_calls=[ToolCall("remember", '{"text": "unterminated', id="bad"),
                          ToolCall("launch_rockets", {}, id="nope")]),
        Reply(text="Sorry, fixed."),
    ]
    async with harness(script) as h:
        assert await h.agent.run_turn("main", "go") == "done"
        results = {m["tool_call_id"]: m["content"] for m in _tool_messages(h.server.requests[1])}
        assert "not valid JSON" in results["bad"]
        assert "unknown tool 'launch_rockets'" in results["nope"]
        assert {e.call_id for e in h.of(ev.ToolCallError)} == {"bad", "nope"}
    stored = h.reload()
    assert stored.messages[-1] == {"role": "assistant", "content": "Sorry, fixed."}
    assert stored.experiences == []


async def _assert_error_turn(h, kind, *, user="hi"):
    outcome = await h.agent.run_turn("main", user)
    assert outcome == "error"
    errors = h.of(ev.ErrorEvent)
    assert errors and errors[-1].kind == kind, errors
    assert h.of(ev.TurnEnded)[-1].outcome == "error"
    return errors[-1]


async def test_401_names_the_base_url_and_next_turn_works(harness):
    script = [HttpError(401, "Incorrect API key provided", code="invalid_api_key",
                        type="invalid_request_error"), Reply(text="works now")]
    async with harness(script) as h:
        error = await _assert_error_turn(h, "auth")
        assert h.server.base_url.rstrip("/") in error.message or "127.0.0.1" in error.message
        assert await h.agent.run_turn("main", "again") == "done"
    stored = h.reload()
    assert [r for r in _roles(stored.messages) if r != "system"] == ["user", "user", "assistant"]


async def test_unknown_model_is_named(harness):
    script = [HttpError(404, "The model `selfref-demo` does not exist", code="model_not_found",
                        type="invalid_request_error")]
    async with harness(script) as h:
        error = await _assert_error_turn(h, "model")
        assert "selfref-demo" in error.message


async def test_429_retry_after_is_visible_then_succeeds(harness):
    script = [HttpError(429, "slow down", headers={"Retry-After": "0"}, type="rate_limit"),
              Reply(text="after the wait")]
    async with harness(script) as h:
        assert await h.agent.run_turn("main", "hi") == "done"
        retries = h.of(ev.Retrying)
        assert len(retries) == 1 and retries[0].attempt == 1
        assert "".join(e.text for e in h.of(ev.TextDelta)) == "after the wait"


async def test_server_error_ends_turn_with_valid_transcript(harness):
    async with harness(lambda body, i: HttpError(503, "overloaded"), max_retries=0) as h:
        error = await _assert_error_turn(h, "server")
    stored = h.reload()
    # kept for the person, marked failed: left out of later requests until retried
    assert stored.messages[-1] == {"role": "user", "content": "hi", "failed": error.message}


async def test_connection_refused_names_the_url(harness):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    async with harness([], base_url=url, max_retries=0) as h:
        error = await _assert_error_turn(h, "connection")
        assert f"127.0.0.1:{port}" in error.message


async def test_stream_dropped_midway_keeps_partial_text_as_truncated(harness):
    async with harness([Drop(text="The first half of an ans")], max_retries=0) as h:
        await _assert_error_turn(h, "connection")
    last = h.reload().messages[-1]
    assert last["role"] == "assistant" and last["truncated"] is True
    assert last["content"] == "The first half of an ans"
    assert last["abort_reason"] == "connection lost"


async def test_malformed_chunk_is_a_protocol_error(harness):
    async with harness([Malformed(text_before="Start")], max_retries=0) as h:
        await _assert_error_turn(h, "protocol")
    messages = h.reload().messages
    assert messages[-1]["role"] in ("user", "assistant")
    if messages[-1]["role"] == "assistant":
        assert messages[-1]["truncated"] is True


async def test_abort_while_streaming_keeps_partial_and_next_turn_is_normal(harness):
    release = asyncio.Event()
    stall = Stall(event=release, text_before="Half an answer")
    async with harness([stall, Reply(text="A fresh answer.")]) as h:
        signal = AbortSignal()
        turn = asyncio.create_task(h.agent.run_turn("main", "long please", abort=signal))
        await wait_until(lambda: "".join(e.text for e in h.of(ev.TextDelta)) == "Half an answer")
        signal.fire("user pressed Esc")
        assert await asyncio.wait_for(turn, HANG_S) == "aborted"
        assert await h.server.wait_disconnect(HANG_S)  # the HTTP stream was closed, not drained
        aborted = h.of(ev.Aborted)
        assert [(a.stage, a.reason) for a in aborted] == [("stream", "user pressed Esc")]
        last = h.reload().messages[-1]
        assert last == {"role": "assistant", "content": "Half an answer", "truncated": True,
                        "abort_reason": "user pressed Esc"}
        assert await h.agent.run_turn("main", "next") == "done"
        sent = h.server.requests[-1]["messages"]
        assert [m["role"] for m in sent[-3:]] == ["user", "assistant", "user"]
        assert "Half an answer" in sent[-2]["content"]
    assert h.reload().messages[-1] == {"role": "assistant", "content": "A fresh answer."}


async def test_abort_while_tools_run_keeps_finished_results(harness, tmp_path):
    (tmp_path / "exists.txt").write_text("old\n")
    text = '<ref id="note">new content</ref>'
    script = [
        Reply(text=text, tool_calls=[
            ToolCall("remember", {"text": "kept fact"}, id="fast"),
            ToolCall("fd_to_file", {"fd": "ref:note", "file_path": "exists.txt"}, id="slow"),
        ]),
    ]
    async with harness(script) as h:
        h.agent.settings = h.settings = h.with_settings(allowed_roots=(tmp_path,)).settings
        h.agent.interactive = True
        signal = AbortSignal()
        turn = asyncio.create_task(h.agent.run_turn("main", "save it", abort=signal))
        await wait_until(lambda: h.of(ev.QuestionAsked) and h.of(ev.ToolCallEnded))
        signal.fire("Esc during tools")
        assert await asyncio.wait_for(turn, HANG_S) == "aborted"
        assert [a.stage for a in h.of(ev.Aborted)] == ["tools"]
    assert (tmp_path / "exists.txt").read_text() == "old\n"
    stored = h.reload()
    tools = {m["tool_call_id"]: m for m in stored.messages if m["role"] == "tool"}
    assert json.loads(tools["fast"]["content"])["experience_id"] == "exp_001"
    assert tools["slow"]["cancelled"] is True
    assert tools["slow"]["abort_reason"] == "Esc during tools"
    assert [(e["id"], e["text"]) for e in stored.experiences] == [("exp_001", "kept fact")]


async def test_question_answered_through_router_overwrites(harness, tmp_path):
    (tmp_path / "exists.txt").write_text("old\n")
    script = [
        Reply(text='<ref id="note">new content</ref>', tool_calls=[
            ToolCall("fd_to_file", {"fd": "ref:note", "file_path": "exists.txt"}, id="w")]),
        Reply(text="Saved."),
    ]
    async with harness(script) as h:
        h.agent.settings = h.with_settings(allowed_roots=(tmp_path,)).settings
        h.agent.interactive = True
        router = AgentInputRouter(h.agent)
        assert router.submit("save") == "started"
        await wait_until(lambda: h.of(ev.QuestionAsked))
        question = h.of(ev.QuestionAsked)[0]
        assert question.choices == ("overwrite", "keep")
        router.answer(question.question_id, "overwrite")
        await router.wait_idle()
        assert router.outcomes == ["done"]
    assert (tmp_path / "exists.txt").read_text().startswith("new content")


async def test_message_typed_mid_turn_is_delivered_at_next_step(harness):
    words = " ".join(f"w{i}" for i in range(30))
    script = [
        Reply(text=words, tokens_per_s=60, tool_calls=[ToolCall("inspect_context", {}, id="i")]),
        Reply(text="Got both."),
    ]
    async with harness(script) as h:
        router = AgentInputRouter(h.agent)
        router.submit("first")
        await wait_until(lambda: h.of(ev.TextDelta))
        assert router.submit("and also this") == "queued"
        await router.wait_idle()
        assert router.outcomes == ["done"]
        assert [e.text for e in h.of(ev.QueuedMessageDelivered)] == ["and also this"]
        sent = h.server.requests[1]["messages"]
        assert sent[-1] == {"role": "user", "content": "and also this"}
        assert sent[-2]["role"] == "tool"
        assert len(h.server.requests) == 2
    assert h.reload().messages[-2] == {"role": "user", "content": "and also this"}



async def test_interrupt_hands_back_only_the_messages_the_model_has_not_seen(harness):
    """Esc: a message taken in at a step stays delivered; one still waiting comes back
    (no turn starts with it); one sent while the turn stops starts the next turn."""
    words = " ".join(f"w{i}" for i in range(30))
    release = asyncio.Event()
    held = Stall(release, text_before="Reading", text_after=" never sent")
    script = [
        Reply(text=words, tokens_per_s=60, tool_calls=[ToolCall("inspect_context", {}, id="i")]),
        held,
        Reply(text="Next one."),
    ]
    async with harness(script) as h:
        router = AgentInputRouter(h.agent)
        router.submit("first")
        await wait_until(lambda: h.of(ev.TextDelta))
        assert router.submit("and also this") == "queued"
        await wait_until(lambda: held.reached.is_set())
        assert [e.text for e in h.of(ev.QueuedMessageDelivered)] == ["and also this"]
        assert router.submit("and one more") == "queued"
        assert router.interrupt("Esc") == ["and one more"]
        assert router.interrupt("Esc") is None  # already stopping
        assert router.submit("after the stop") == "queued"  # the next turn's
        await router.wait_idle()
        assert router.outcomes == ["aborted", "done"]
        assert len(h.server.requests) == 3
        assert h.server.requests[2]["messages"][-1] == {"role": "user",
                                                        "content": "after the stop"}
        release.set()
    contents = [m.get("content") for m in h.reload().messages if m["role"] == "user"]
    assert contents == ["first", "and also this", "after the stop"]


_COMPACT_ARGS = {
    "goal": "Test compaction", "instruction": "Be brief", "discoveries": ["d1"],
    "completed": ["c1"], "current_status": "summarised", "likely_next_work": "continue",
    "relevant_files_directories": ["src/"], "remember": ["compaction keeps this"],
}


async def test_auto_compaction_asks_once_and_applies_summary(harness):
    script = [Reply(tool_calls=[ToolCall("compact", _COMPACT_ARGS, id="k")]),
              Reply(text="Continuing from the summary.")]
    async with harness(script, context_window=6000) as h:
        # exact counts throughout: messages and the full tool set are ~4,940 tokens, past 80 %
        from selfref_tui.selfref.encodings import load_encoder

        h.agent.tokens.set_encoder(load_encoder("gpt-4o-mini"))
        big = "lorem ipsum dolor sit amet " * 680
        assert await h.agent.run_turn("main", big) == "done"
        first = h.server.requests[0]["messages"][-1]
        assert first["role"] == "user" and "call the `compact` tool" in first["content"].lower()
        applied = h.of(ev.CompactionApplied)
        assert len(applied) == 1 and applied[0].summary["goal"] == "Test compaction"
        second = h.server.requests[1]["messages"]
        # the summary and the note after it go as one user message (strict templates)
        assert _roles(second) == ["system", "user"]
        note = second[1]["content"]
        assert note.index("Test compaction") < note.index("Your summary has replaced")
        assert "compaction keeps this" in second[0]["content"]
        assert sum("call the `compact` tool" in str(m.get("content")).lower() for m in second) == 0
    stored = h.reload()
    assert stored.summary["goal"] == "Test compaction"
    assert any(m.get("archived") for m in stored.history)
    assert stored.experiences[-1]["text"] == "compaction keeps this"


async def test_requested_compaction_asks_the_model(harness):
    script = [Reply(tool_calls=[ToolCall("compact", _COMPACT_ARGS, id="k")]), Reply(text="ok")]
    async with harness(script) as h:
        h.agent.request_compaction("main")
        preview, tokens = h.agent.preview("main")
        assert "person asked you to compact" in preview[-1]["content"] and tokens > 0
        assert await h.agent.run_turn("main", None) == "done"
        assert "person asked you to compact" in h.server.requests[0]["messages"][-1]["content"]
        assert h.of(ev.CompactionApplied)
    assert h.reload().summary["current_status"] == "summarised"


def _fork_script(child_step=None):
    """Parent spawns two children, gathers, answers; children answer their task."""

    def script(body, index):
        messages = body["messages"]
        users = [m for m in messages if m["role"] == "user"]
        if users and "forked child agent" in str(users[-1]["content"]):
            task = users[-1]["content"].split("Your task:\n", 1)[1].split("\n", 1)[0]
            return child_step(task) if child_step else Reply(text=f"child did {task}")
        assistants = [m for m in messages if m["role"] == "assistant"]
        if not assistants or messages[-1]["role"] == "user":
            return Reply(text="Spawning.", tool_calls=[
                ToolCall("fork_spawn", {"task": "task A", "instruction": "one line"}, id="s1"),
                ToolCall("fork_spawn", {"task": "task B", "instruction": "one line"}, id="s2"),
            ])
        last_call = assistants[-1]["tool_calls"][0]["function"]["name"]
        if last_call == "fork_spawn":
            return Reply(tool_calls=[ToolCall("fork_gather_all", {}, id="g")])
        return Reply(text="All children reported.")

    return script


async def test_forks_spawn_gather_and_persist(harness):
    async with harness(_fork_script()) as h:
        assert await h.agent.run_turn("main", "split the work") == "done"
        gathered = json.loads(_tool_messages(h.server.requests[-1])[-1]["content"])
        assert gathered == {
            "fork_1": {"status": "completed", "response": "child did task A"},
            "fork_2": {"status": "completed", "response": "child did task B"},
        }
        assert {e.child_key for e in h.of(ev.ForkSpawned)} == {"main::fork::1", "main::fork::2"}
        assert {e.status for e in h.of(ev.ForkFinished)} == {"completed"}
        assert h.of(ev.TurnEnded, "main::fork::1")  # child events on the same sink
        child_bodies = [b for b in h.server.requests
                        if "forked child agent" in str(b["messages"][-1].get("content"))]
        assert len(child_bodies) == 2
        for body in child_bodies:
            names = {t["function"]["name"] for t in body["tools"]}
            assert not {"fork_spawn", "fork_gather_all"} & names
            assert "Spawning." not in json.dumps(body["messages"])  # pre-fork snapshot
            # the parent's question and the child's brief: one user message in the request
            last = body["messages"][-1]["content"]
            assert last.startswith("split the work\n\n") and "forked child agent" in last
        # A second turn numbers new forks after the stored ones.
        assert await h.agent.run_turn("main", "again") == "done"
        assert {e.fork_id for e in h.of(ev.ForkSpawned)} == {"fork_1", "fork_2", "fork_3", "fork_4"}
    parent = h.reload("main")
    assert parent.forks["fork_1"]["status"] == "completed"
    assert parent.forks["fork_1"]["response"] == "child did task A"
    assert all("forked child" not in str(m.get("content")) for m in parent.messages)
    child = h.reload("main::fork::2")
    assert child.messages[-1] == {"role": "assistant", "content": "child did task B"}


async def test_a_stored_fork_id_with_other_digits_does_not_stop_the_next_fork(harness):
    """A log is input: a fork record "fork_²" ("²" is a digit to str.isdigit, not to
    int) made every later fork_spawn of the key fail."""
    async with harness(_fork_script()) as h:
        h.agent.memory("main").commit(records=[{"t": "fork", "fork_id": "fork_²"}])
        assert await h.agent.run_turn("main", "split the work") == "done"
        assert {e.fork_id for e in h.of(ev.ForkSpawned)} == {"fork_1", "fork_2"}


async def test_forks_see_the_instructions_the_parent_runs_with(harness):
    from selfref_tui.context.compile import INSTRUCTIONS_HEADING
    from selfref_tui.selfref.key_settings import KeySettings

    async with harness(_fork_script()) as h:
        h.agent.memory("main").save_settings(KeySettings(instructions="Answer in French."))
        assert await h.agent.run_turn("main", "split the work") == "done"
        bodies = h.server.requests
        children = [b for b in bodies
                    if "forked child agent" in str(b["messages"][-1].get("content"))]
        assert len(children) == 2 and len(bodies) > 2
        for body in bodies:  # the parent's requests and its children's alike
            assert f"{INSTRUCTIONS_HEADING}\nAnswer in French." in body["messages"][0]["content"]
    assert h.reload("main::fork::1").settings.instructions == "Answer in French."


async def test_abort_while_forks_run_cancels_children(harness):
    release = asyncio.Event()
    stalls: list[Stall] = []

    def child_step(task):
        stall = Stall(event=release, text_before=f"working on {task}")
        stalls.append(stall)
        return stall

    async with harness(_fork_script(child_step)) as h:
        signal = AbortSignal()
        turn = asyncio.create_task(h.agent.run_turn("main", "split", abort=signal, inbox=Inbox()))
        # The parent's second call (fork_gather_all) has ended: it is now waiting on children.
        await wait_until(lambda: len(stalls) == 2 and len(h.of(ev.LLMCallEnded, "main")) == 2)
        await wait_until(lambda: len(h.of(ev.TextDelta, "main::fork::2")) > 0)
        signal.fire("stop everything")
        assert await asyncio.wait_for(turn, HANG_S) == "aborted"
        assert [a.stage for a in h.of(ev.Aborted, "main")] == ["forks"]
        assert {e.status for e in h.of(ev.ForkFinished)} == {"cancelled"}
    parent = h.reload("main")
    assert {f["status"] for f in parent.forks.values()} == {"cancelled"}
    gather = next(m for m in parent.messages if m.get("tool_call_id") == "g")
    assert gather["cancelled"] is True
    child = h.reload("main::fork::1")
    assert child.messages[-1]["truncated"] is True
    assert child.messages[-1]["content"] == "working on task A"


async def test_fork_limits_per_turn_and_concurrency(harness):
    order: list[str] = []

    def script(body, index):
        messages = body["messages"]
        last_user = next(m for m in reversed(messages) if m["role"] == "user")
        if "forked child agent" in str(last_user["content"]):
            task = last_user["content"].split("Your task:\n", 1)[1].split("\n", 1)[0]
            order.append(task)
            return Reply(text=f"done {task}")
        if messages[-1]["role"] == "user":
            return Reply(tool_calls=[
                ToolCall("fork_spawn", {"task": f"t{i}", "instruction": ""}, id=f"s{i}")
                for i in range(3)
            ])
        if messages[-1]["tool_call_id"].startswith("s"):
            return Reply(tool_calls=[ToolCall("fork_gather_all", {"include_history": True},
                                              id="g")])
        return Reply(text="finished")

    async with harness(script) as h:
        h.agent.settings = h.with_settings(max_concurrent_forks=1, max_forks_per_turn=2).settings
        assert await h.agent.run_turn("main", "three please") == "done"
        parent = [b for b in h.server.requests
                  if "fork_spawn" in {t["function"]["name"] for t in b["tools"]}]
        results = {m["tool_call_id"]: m["content"] for m in _tool_messages(parent[1])}
        assert "at most 2 forks per turn" in results["s2"]
        gathered = json.loads(_tool_messages(parent[-1])[-1]["content"])
        assert set(gathered) == {"fork_1", "fork_2"}
        assert gathered["fork_1"]["history"][-1] == {"role": "assistant", "content": "done t0"}
        # One at a time: each child's "running" comes after the previous one finished.
        timeline = [(type(e).__name__, e.fork_id, getattr(e, "status", ""))
                    for e in h.events if isinstance(e, ev.ForkProgress | ev.ForkFinished)]
        first_done = timeline.index(("ForkFinished", "fork_1", "completed"))
        second_running = timeline.index(("ForkProgress", "fork_2", "running"))
        assert first_done < second_running
        assert order == ["t0", "t1"]


async def test_large_tool_output_becomes_an_fd_readable_later(harness):
    body = "line of the long ref\n" * 60
    script = [
        Reply(text=f'<ref id="big">{body}</ref>',
              tool_calls=[ToolCall("get_ref", {"ref_id": "big"}, id="g")]),
        Reply(tool_calls=[ToolCall("read_fd", {"fd": "fd:1", "mode": "line", "start": 2,
                                               "count": 1}, id="r")]),
        Reply(text="read it"),
    ]
    async with harness(script) as h:
        h.agent.settings = h.with_settings(fd_threshold_chars=300).settings
        assert await h.agent.run_turn("main", "big") == "done"
        first = _tool_messages(h.server.requests[1])[-1]["content"]
        assert first.startswith("<fd_result") and 'fd="fd:1"' in first
        second = _tool_messages(h.server.requests[2])[-1]["content"]
        assert "line of the long ref" in second and "fd_content" in second
    stored = h.reload()
    assert "line of the long ref" in stored.fds["fd:1"]["content"]
    assert stored.fds["fd:1"]["source"] == "tool:get_ref"


async def test_step_limit_ends_turn_with_valid_transcript(harness):
    def script(body, index):
        return Reply(tool_calls=[ToolCall("inspect_context", {}, id=f"c{index}")])

    async with harness(script) as h:
        h.agent.settings = h.with_settings(step_limit=3).settings
        assert await h.agent.run_turn("main", "loop forever") == "step_limit"
        assert len(h.server.requests) == 3
    messages = h.reload().messages
    assert messages[-1]["role"] == "tool" and messages[-1]["tool_call_id"] == "c2"


async def test_person_remembers_during_a_turn_and_model_sees_it_next_step(harness):
    release = asyncio.Event()
    script = [Reply(text="working", tokens_per_s=40,
                    tool_calls=[ToolCall("inspect_context", {}, id="i")]),
              Reply(text="ok")]
    async with harness(script) as h:
        turn = asyncio.create_task(h.agent.run_turn("main", "start"))
        await wait_until(lambda: h.of(ev.TextDelta))
        assert h.agent.remember_experience("main", "Person prefers short answers") == "exp_001"
        assert h.agent.memory("main").experiences == []  # queued until the next compile
        assert await turn == "done"
        release.set()
        assert "Person prefers short answers" in h.server.requests[1]["messages"][0]["content"]
        assert h.agent.forget_experience("main", "exp_001") is True  # idle: committed now
        assert h.agent.memory("main").experiences == []
        assert [type(e).__name__ for e in h.events if isinstance(
            e, ev.ExperienceRemembered | ev.ExperienceForgotten)] == [
            "ExperienceRemembered", "ExperienceForgotten"]


async def test_cancelling_the_turn_task_still_keeps_a_valid_transcript(harness):
    release = asyncio.Event()
    async with harness([Stall(event=release, text_before="Partial")]) as h:
        turn = asyncio.create_task(h.agent.run_turn("main", "go"))
        await wait_until(lambda: h.of(ev.TextDelta))
        turn.cancel()
        await asyncio.gather(turn, return_exceptions=True)
        assert h.of(ev.TurnEnded)[-1].outcome == "aborted"
    last = h.reload().messages[-1]
    assert last["truncated"] is True and last["content"] == "Partial"


async def test_a_fork_key_opened_on_its_own_numbers_fds_in_its_namespace(harness):
    """A fork reloaded from its key (after a restart) must not mint fd ids its parent uses."""
    body = "line of the long ref\n" * 60
    script = [
        Reply(text=f'<ref id="big">{body}</ref>',
              tool_calls=[ToolCall("get_ref", {"ref_id": "big"}, id="g")]),
        Reply(text="done"),
    ]
    async with harness(script) as h:
        h.agent.settings = h.with_settings(fd_threshold_chars=300).settings
        assert await h.agent.run_turn("main::fork::3", "big") == "done"
        first = _tool_messages(h.server.requests[1])[-1]["content"]
        assert 'fd="fd:3.1"' in first
    stored = h.reload("main::fork::3")
    assert list(stored.fds) == ["fd:3.1"]


async def test_a_conversation_with_tool_calls_continues_on_a_strict_server(harness):
    # The stored assistant message beside its calls has content None;
    # llama.cpp refused the next request (500, "validation errors"). The harness's
    # server is strict, so the third request passing proves the render fixed it.
    script = [Reply(tool_calls=[ToolCall("remember", {"text": "likes tea"}, id="r1")]),
              Reply(text="Noted."), Reply(text="Tea it is.")]
    async with harness(script) as h:
        assert await h.agent.run_turn("main", "remember I like tea") == "done"
        stored = [m for m in h.reload().messages if m.get("tool_calls")]
        assert stored[0]["content"] is None  # the store keeps it as it was
        assert await h.agent.run_turn("main", "what do I like?") == "done"
        sent = h.server.requests[2]["messages"]
        assert sent[2] == {"role": "assistant", "content": "", "tool_calls": sent[2]["tool_calls"]}
        assert not h.of(ev.ErrorEvent)


async def test_a_failed_turn_does_not_send_a_run_of_user_messages(harness):
    script = [HttpError(400, "refused once", type="invalid_request_error"),
              Reply(text="Now it works.")]
    async with harness(script, max_retries=0) as h:
        assert await h.agent.run_turn("main", "first try") == "error"
        assert await h.agent.run_turn("main", "second try") == "done"
        sent = h.server.requests[1]["messages"]
        assert _roles(sent) == ["system", "user"]
        # the failed turn's message is marked failed and left out (retry re-sends it), so
        # the new one is not merged with it
        assert sent[1]["content"] == "second try"
    assert [m.get("failed", "") != "" for m in h.reload().messages if m["role"] == "user"] == [
        True, False]


async def test_think_in_content_is_stored_as_reasoning_and_not_sent_back(harness):
    script = [Reply(text="<think>secret plan</think>Visible answer.", chunk_chars=4),
              Reply(text="Next.")]
    async with harness(script) as h:
        assert await h.agent.run_turn("main", "q1") == "done"
        assert await h.agent.run_turn("main", "q2") == "done"
        answer = next(m for m in h.reload().messages if m.get("role") == "assistant")
        assert answer["content"] == "Visible answer."
        assert "secret plan" in json.dumps(answer.get("reasoning_details"))
        assert "".join(e.text for e in h.of(ev.ReasoningDelta)) == "secret plan"
        assert "secret plan" not in json.dumps(h.server.requests[1]["messages"])
