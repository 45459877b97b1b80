"""End to end against a real llama.cpp server (llama-cpp-python), not our demo server.

What once broke there, checked on the real thing: a conversation
with tool calls continued (``content: null`` was refused), Esc mid-answer,
the window, and a request that does not fit a 1,024-token window. Then what a
strict server could refuse in what came later: every tool schema we send
turned into a grammar, a turn after a rewind and a branch's first turn, a turn
after a compaction whose summary holds the person's words and pins (made on
the scripted server: a 135M model seldom calls tools), a compaction the model
does not make, a long kept-words summary on a 1,024-token window, and a model
asked to repeat a message read back that held a ref. Nothing here depends on
what the model says.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import subprocess
import time

import pytest
from openai import APIError, AsyncOpenAI

from selfref_tui.agent import events as ev
from selfref_tui.agent.abort import AbortSignal
from selfref_tui.agent.provider.client import Provider
from selfref_tui.agent.provider.window import resolve_window
from selfref_tui.agent.tools.consent import NOT_ASKED_REFUSAL
from selfref_tui.agent.turn.loop import Agent
from selfref_tui.config import AgentSettings, ProviderConfig
from selfref_tui.demo import DemoServer, Reply, ToolCall
from selfref_tui.selfref import SelfReference
from selfref_tui.selfref.rewind import rewind

from .conftest import GGUF, MODEL, SERVER_PYTHON, SMALL_MODEL, URL

#: a turn that ended on its own, or at the answer cap ("cut_off": a rambling small model)
FINISHED = ("done", "cut_off")
SETTINGS = AgentSettings(base_system_prompt="You are a terse assistant. Answer in one sentence.")


def provider_config(model: str = MODEL, **kw) -> ProviderConfig:
    # answers capped: a 135M model can ramble to the end of its window, minutes on a busy CPU
    return ProviderConfig(base_url=URL, api_key="none", model=model, max_retries=1,
                          first_byte_timeout_s=120, idle_timeout_s=60,
                          max_output_tokens=256, **kw)


class Run:
    """An agent on the real server over a real store; events collected."""

    def __init__(self, data, model: str = MODEL, window: int = 4096,
                 settings: AgentSettings = SETTINGS) -> None:
        self.events: list = []
        self.store = SelfReference(data)
        self.agent = Agent(self.store, Provider(provider_config(model)), settings,
                           self.events.append, model=model, context_window=window)

    def of(self, cls):
        return [e for e in self.events if isinstance(e, cls)]

    def text(self) -> str:
        return "".join(e.text for e in self.of(ev.TextDelta))

    async def close(self) -> None:
        await self.agent.aclose()
        self.store.close()


async def test_a_plain_turn(tmp_path):
    run = Run(tmp_path / "data")
    try:
        outcome = await run.agent.run_turn("main", "Say hello.")
    finally:
        await run.close()
    assert outcome in FINISHED, run.of(ev.ErrorEvent)
    assert run.text().strip()


async def test_a_turn_after_a_stored_transcript_with_tool_calls_and_results(tmp_path):
    # the tool-calling turn comes from the scripted server (a 135M model seldom
    # calls tools); the store then holds an assistant message with content None
    # beside its calls, and a tool result: what llama.cpp refused before the fix
    data = tmp_path / "data"
    script = [Reply(tool_calls=[ToolCall("remember", {"text": "the person likes tea"},
                                         id="call_1")]),
              Reply(text="Noted: you like tea.")]
    async with DemoServer(script) as demo_url:
        store = SelfReference(data)
        agent = Agent(store, Provider(ProviderConfig(base_url=demo_url, api_key="x",
                                                     model="selfref-demo")),
                      SETTINGS, model="selfref-demo", context_window=4096)
        assert await agent.run_turn("main", "Remember that I like tea.") == "done"
        await agent.aclose()
        store.close()
    run = Run(data)
    try:
        outcome = await run.agent.run_turn("main", "What do I like to drink?")
    finally:
        await run.close()
    assert outcome in FINISHED, run.of(ev.ErrorEvent)
    assert run.text().strip()


async def test_esc_mid_answer_stops_at_once_and_keeps_the_part(tmp_path):
    run = Run(tmp_path / "data")
    abort = AbortSignal()
    try:
        task = asyncio.create_task(run.agent.run_turn(
            "main", "Write a long story about a lighthouse keeper, at least 500 words.",
            abort=abort))
        deadline = time.monotonic() + 120
        while not run.of(ev.TextDelta) and not task.done():
            assert time.monotonic() < deadline, "no answer within 120 s"
            await asyncio.sleep(0.05)
        fired = time.monotonic()
        abort.fire("user pressed Esc")
        outcome = await task
        stopped_after = time.monotonic() - fired
        # the server is free again: the next turn is answered
        after = await run.agent.run_turn("main", "Say hi.")
    finally:
        await run.close()
    assert outcome == "aborted" and stopped_after < 1.0, stopped_after
    assert after in FINISHED


async def test_the_window_is_read_off_the_server():
    window = await resolve_window(provider_config())
    if window.source == "server /props":
        assert window.tokens == 4096
        return
    # llama-cpp-python serves no /props and no window in /v1/models: the
    # window is then assumed, and said (llama.cpp's own llama-server has /props)
    assert window.assumed and "window unknown" in " ".join(window.notices())
    pytest.skip("this server tells no window (llama-cpp-python: no /props); "
                f"assumed {window.tokens} with a notice")


async def test_a_request_over_a_1024_token_window_is_named_an_overflow(tmp_path):
    run = Run(tmp_path / "data", model=SMALL_MODEL, window=1024)
    try:
        outcome = await run.agent.run_turn("main", "Tell me about lighthouses. " * 40)
    finally:
        await run.close()
    errors = run.of(ev.ErrorEvent)
    print(f"outcome: {outcome}; notices: {[n.message for n in run.of(ev.Notice)]}; "
          f"errors: {[e.message for e in errors]}")
    if outcome in FINISHED:
        # it fitted: the small window's reduced tool set leaves room for the prompt
        return
    assert errors and errors[-1].kind == "context_overflow", errors
    assert "no longer fits the model's window" in errors[-1].message


async def test_after_an_overflow_the_conversation_recovers(tmp_path):
    # The full tool set (~1,300 tokens of schemas) alone is larger than 1,024 tokens:
    # the small window gets a reduced set (see agent/tools/offer.py), so requests fit.
    run = Run(tmp_path / "data", model=SMALL_MODEL, window=1024)
    try:
        first = await run.agent.run_turn("main", "Tell me about lighthouses. " * 40)
        outcome = await run.agent.run_turn("main", "Say hi.")
        offered = [t["function"]["name"] for t in run.agent.tools_for("main")]
    finally:
        await run.close()
    notices = [n.message for n in run.of(ev.Notice)]
    print(f"first turn: {first}; second: {outcome}; tools offered: {offered}; "
          f"notices: {notices}; errors: {[e.message for e in run.of(ev.ErrorEvent)]}")
    assert any("window too small for the full tool set" in n for n in notices), notices
    assert outcome in FINISHED, run.of(ev.ErrorEvent)


# ------------------------------------------------------ what came later


async def scripted(data, script: list, *said: str | None, key: str = "main",
                   window: int = 4096, pin: tuple[int, ...] = (),
                   compact_at_end: bool = False, settings: AgentSettings = SETTINGS) -> list:
    """Turns of ``said`` on the in-package server (``script`` answers them) into the
    store at ``data``: what the real server's turn then continues. ``pin`` pins those
    messages before the last turn; ``compact_at_end`` asks for a compaction first."""
    events: list = []
    async with DemoServer(script, context_window=window) as demo_url:
        store = SelfReference(data)
        agent = Agent(store, Provider(ProviderConfig(base_url=demo_url, api_key="x",
                                                     model="selfref-demo")),
                      settings, events.append, model="selfref-demo", context_window=window)
        try:
            for i, text in enumerate(said):
                if i == len(said) - 1:
                    for n in pin:
                        assert store.open(key).set_pinned(n)
                    if compact_at_end:
                        agent.request_compaction(key)
                assert await agent.run_turn(key, text) == "done", events
        finally:
            await agent.aclose()
            store.close()
    return events


def conversation(run: Run, key: str = "main") -> list[tuple[str, str]]:
    """What the key's context holds now, system prompt aside: (role, text)."""
    return [(m["role"], str(m.get("content") or ""))
            for m in run.store.open(key).messages if m["role"] != "system"]


async def test_every_tool_schema_we_send_becomes_a_grammar_the_server_accepts(tmp_path):
    """A call forced to each tool we offer (compact with its long description,
    search_history, read_history, ...), the whole set in every request: each is
    accepted. llama-cpp-python turns the schema into a grammar for a forced call but
    falls back to "any JSON" when it cannot, so the next test checks the conversion."""
    run = Run(tmp_path / "data")
    try:
        tools = run.agent.tools_for("main")
    finally:
        await run.close()
    names = [t["function"]["name"] for t in tools]
    assert {"compact", "search_history", "read_history", "remember"} <= set(names), names
    client = AsyncOpenAI(base_url=URL, api_key="none", max_retries=0, timeout=120)
    refused = {}
    try:
        for name in names:
            try:
                answer = await client.chat.completions.create(
                    model=MODEL, max_tokens=24, tools=tools,
                    tool_choice={"type": "function", "function": {"name": name}},
                    messages=[{"role": "system", "content": "Call the tool."},
                              {"role": "user", "content": "Go."}])
            except APIError as e:  # the refusal is what is checked
                refused[name] = f"{type(e).__name__}: {e}"
                continue
            calls = answer.choices[0].message.tool_calls or []
            print(f"{name}: {[c.function.name for c in calls]}")
    finally:
        await client.close()
    assert not refused, json.dumps(refused, indent=1)


#: run by the server's own Python: each schema through llama-cpp-python's converter
#: and llama.cpp's grammar parser, the server's path for a forced call minus its
#: silent fallback to "any JSON" (which hides a schema it cannot convert)
GRAMMAR_CHECK = """
import json, sys
import llama_cpp
from llama_cpp.llama_grammar import LlamaGrammar
vocab = llama_cpp.Llama(model_path=sys.argv[1], vocab_only=True, verbose=False)._model.vocab
failed = {}
for name, schema in json.load(sys.stdin).items():
    try:
        g = LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
    except Exception as e:
        failed[name] = f"not converted: {type(e).__name__}: {e}"
        continue
    if not llama_cpp.llama_sampler_init_grammar(vocab, g._grammar.encode(), g._root.encode()):
        failed[name] = "grammar not parsed by llama.cpp"
print(json.dumps(failed))
"""


async def test_every_tool_schema_converts_to_a_grammar_llama_cpp_parses(tmp_path):
    if not (SERVER_PYTHON and GGUF):
        pytest.skip("SELFREF_REAL_SERVER_PYTHON and SELFREF_REAL_SERVER_GGUF are unset "
                    "(scripts/real-server-test.sh sets them)")
    run = Run(tmp_path / "data")
    try:
        schemas = {t["function"]["name"]: t["function"]["parameters"]
                   for t in run.agent.tools_for("main")}
    finally:
        await run.close()
    done = subprocess.run([SERVER_PYTHON, "-c", GRAMMAR_CHECK, GGUF], input=json.dumps(schemas),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {}, done.stdout


async def test_a_turn_after_a_rewind_sends_the_prefix(tmp_path):
    data = tmp_path / "data"
    await scripted(data, [Reply(text="answer one"), Reply(text="answer two")], "one", "two")
    store = SelfReference(data)
    try:
        rewind(store.open("main"), 3)
    finally:
        store.close()
    run = Run(data)
    try:
        sent = [(m["role"], m.get("content")) for m in
                run.agent.preview_request("main").messages if m["role"] != "system"]
        outcome = await run.agent.run_turn("main", "three")
        held = conversation(run)
    finally:
        await run.close()
    assert sent == [("user", "one"), ("assistant", "answer one")]
    assert outcome in FINISHED, run.of(ev.ErrorEvent)
    assert held[:3] == [("user", "one"), ("assistant", "answer one"), ("user", "three")]
    assert held[3][0] == "assistant" and len(held) == 4


async def test_a_branchs_first_turn(tmp_path):
    data = tmp_path / "data"
    await scripted(data, [Reply(text="answer one"), Reply(text="answer two")], "one", "two")
    store = SelfReference(data)
    try:
        store.branch("main", 3, "side")
    finally:
        store.close()
    run = Run(data)
    try:
        outcome = await run.agent.run_turn("side", "three")
        side, main = conversation(run, "side"), conversation(run, "main")
    finally:
        await run.close()
    assert outcome in FINISHED, run.of(ev.ErrorEvent)
    assert side[:3] == [("user", "one"), ("assistant", "answer one"), ("user", "three")]
    assert main == [("user", "one"), ("assistant", "answer one"), ("user", "two"),
                    ("assistant", "answer two")]


SUMMARY = {"goal": "Port the parser", "instruction": "Small commits",
           "discoveries": ["uses regex"], "completed": ["read the code"],
           "current_status": "halfway", "likely_next_work": "write the tokenizer",
           "relevant_files_directories": ["parser.py"],
           "errors_and_fixes": ["import cycle: moved the helper"],
           "constraints_and_preferences": ["tabs"], "pending_tasks": ["docs"]}
TABS = "Please indent with tabs, never spaces. I mean it."
DEADLINE = "The deadline is Friday; ship the tokenizer first."


def compacting(*before: str) -> list:
    return [*(Reply(text=t) for t in before),
            Reply(text="Summarising.", tool_calls=[ToolCall("compact", SUMMARY, id="k1")]),
            Reply(text="Compacted.")]


async def test_a_turn_after_a_compaction_that_kept_the_persons_words_and_a_pin(tmp_path):
    data = tmp_path / "data"
    made = await scripted(data, compacting("Tabs it is.", "Friday it is."), TABS, DEADLINE,
                          None, pin=(1,), compact_at_end=True)
    assert len([e for e in made if isinstance(e, ev.CompactionApplied)]) == 1
    run = Run(data)
    try:
        summary = next(str(m["content"]) for m in run.agent.preview_request("main").messages
                       if "[Context summary]" in str(m.get("content")))
        outcome = await run.agent.run_turn("main", "What is the deadline?")
    finally:
        await run.close()
    assert TABS in summary and DEADLINE in summary
    assert outcome in FINISHED, run.of(ev.ErrorEvent)
    assert run.text().strip()


async def test_a_turn_after_history_searched_read_and_a_memory_write_refused(tmp_path):
    """After a compaction the model searched and read its history and tried to
    remember with ``memory_writes = "ask"`` and no one to ask: the stored tool results
    (numbered history lines, a message read back, the refusal) go to the real server."""
    data = tmp_path / "data"
    asking = dataclasses.replace(SETTINGS, memory_writes="ask")
    script = [*compacting("Tabs it is.", "Friday it is."),
              Reply(tool_calls=[ToolCall("search_history", {"query": "tabs"}, id="s1")]),
              Reply(tool_calls=[ToolCall("read_history", {"start": 1, "count": 2}, id="r1")]),
              Reply(tool_calls=[ToolCall("remember", {"text": "uses tabs"}, id="m1")]),
              Reply(text="You asked for tabs.")]
    await scripted(data, script, TABS, DEADLINE, None, "What did I say about tabs?",
                   settings=asking)
    run = Run(data, settings=asking)
    try:
        results = {m["tool_call_id"]: str(m["content"]) for m in run.store.open("main").messages
                   if m["role"] == "tool"}
        outcome = await run.agent.run_turn("main", "And the deadline?")
        experiences = run.store.open("main").experiences
    finally:
        await run.close()
    assert "match 'tabs'" in results["s1"] and TABS in results["r1"], results
    assert NOT_ASKED_REFUSAL in results["m1"]
    assert outcome in FINISHED, run.of(ev.ErrorEvent)
    assert experiences == []  # whatever the model calls: no one was asked, nothing is kept


async def test_a_compaction_the_model_does_not_make_is_said_once_and_not_asked_again(
        tmp_path):
    run = Run(tmp_path / "data")
    try:
        assert await run.agent.run_turn("main", TABS) in FINISHED, run.of(ev.ErrorEvent)
        run.agent.request_compaction("main")
        outcome = await run.agent.run_turn("main", None)
        steps = len(run.of(ev.LLMCallStarted))
        after = await run.agent.run_turn("main", "Say hi.")
        held = conversation(run)
    finally:
        await run.close()
    applied, failed = run.of(ev.CompactionApplied), run.of(ev.CompactionFailed)
    print(f"applied: {len(applied)}; failed: {[f.reason for f in failed]}; steps: {steps}")
    assert outcome in FINISHED and after in FINISHED, run.of(ev.ErrorEvent)
    # made, or said once: never both, never twice, and not asked again afterwards
    assert len(applied) + len(failed) == 1, (applied, failed)
    assert len([c for r, c in held if "asked you to compact" in c]) <= 1
    assert steps <= 1 + 2 + 2  # the first turn; at most the compact call and its follow-up


async def test_a_long_kept_words_summary_on_a_1024_token_window(tmp_path):
    """The person's long messages, kept verbatim by a compaction made on a 4,096-token
    window; the conversation then goes on with a 1,024-token window."""
    data = tmp_path / "data"
    said = [f"Message {i}: " + "please keep this exact wording in mind. " * 40
            for i in range(3)]
    await scripted(data, compacting("ok", "ok", "ok"), *said, None, compact_at_end=True)
    run = Run(data, model=SMALL_MODEL, window=1024)
    try:
        plan = run.agent.preview_request("main")
        outcome = await run.agent.run_turn("main", "Say hi.")
    finally:
        await run.close()
    errors = run.of(ev.ErrorEvent)
    print(f"planned {plan.tokens} tokens, {plan.left_out} left out, fits: {plan.fits}; "
          f"outcome: {outcome}; notices: {[n.message for n in run.of(ev.Notice)]}; "
          f"errors: {[e.message for e in errors]}")
    assert outcome in FINISHED, errors


PLAN = "1. back up the database\n2. run the migration\n3. switch the traffic over"


async def test_a_model_repeating_a_read_message_leaves_its_ref_alone(tmp_path):
    """A ref written and its message read back with read_history (on the scripted
    server); the real model is then asked to repeat that message word for word.
    Whatever it writes, ref ``plan`` keeps its one version: the read showed the ref
    as a quotation, which defines nothing."""
    data = tmp_path / "data"
    read = ToolCall("read_history", {"start": 2, "count": 1}, id="r1")
    script = [Reply(text=f'The plan:\n<ref id="plan">\n{PLAN}\n</ref>'),
              Reply(text="Reading it.", tool_calls=[read]), Reply(text="Read it.")]
    await scripted(data, script, "Plan the migration.", "Read message 2 back.")
    echoing = dataclasses.replace(
        SETTINGS, base_system_prompt="You repeat text exactly, character for character.")
    run = Run(data, settings=echoing)
    try:
        outcome = await run.agent.run_turn(
            "main", "Copy the tool result above here, unchanged.")
        key = run.store.open("main")
        plan, result = key.refs["plan"], next(str(m["content"]) for m in key.messages
                                              if m["role"] == "tool")
    finally:
        await run.close()
    answer = run.text()
    print(f"outcome: {outcome}; refs closed: {[e.ref_id for e in run.of(ev.RefClosed)]}; "
          f"versions of plan: {len(plan)}; quoted_ref in the answer: "
          f"{'<quoted_ref' in answer}; <ref in the answer: {'<ref ' in answer}\n{answer}")
    assert outcome in FINISHED, run.of(ev.ErrorEvent)
    assert [v["content"] for v in plan] == [PLAN]
    assert f'<quoted_ref id="plan">\n{PLAN}\n</quoted_ref>' in result
