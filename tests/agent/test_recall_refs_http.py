"""Recalled history quotes refs: repeating it never redefines one.

Over real HTTP: the in-package server answers a recall with :class:`Echo`, the
way a model repeats what it just read (whole, cut short and closed again, or a
search snippet with its white space folded); the store is read back from disk.
A ref the answer does rewrite right after such a read is kept, and the person
told that the earlier version is still there.
"""

from __future__ import annotations

from selfref_tui.agent import events as ev
from selfref_tui.demo.script import Echo, Reply, ToolCall

PLAN = "1. back up the database\n2. run the migration\n3. switch the traffic over"
DEFINED = f'The plan:\n<ref id="plan">\n{PLAN}\n</ref>\nSay when.'


def _read(n: int) -> Reply:
    return Reply(tool_calls=[ToolCall("read_history", {"start": n, "count": 1}, id=f"r{n}")])


def _the_plan(h) -> list[dict]:
    stored = h.reload()
    return stored.refs["plan"]


async def test_an_answer_repeating_a_read_message_defines_no_ref(harness):
    async with harness([Reply(text=DEFINED), _read(2), Echo(before="It said:\n")]) as h:
        assert await h.agent.run_turn("main", "Plan the migration.") == "done"
        closed = len(h.of(ev.RefClosed))
        assert await h.agent.run_turn("main", "What did you say before?") == "done"
        result = next(e.result for e in h.of(ev.ToolCallEnded) if e.name == "read_history")
        echoed = h.agent.memory("main").messages[-1]["content"]
        assert len(h.of(ev.RefClosed)) == closed  # the answer closed no ref
    assert f'<quoted_ref id="plan">\n{PLAN}\n</quoted_ref>' in result
    assert "<ref id=" not in result and "</ref>" not in result
    assert echoed.startswith("It said:\n") and '<quoted_ref id="plan">' in echoed
    (only,) = _the_plan(h)
    assert only["content"] == PLAN and only["message_index"] == 1


async def test_a_copy_cut_short_and_closed_again_leaves_the_ref_whole(harness):
    # the model copies the read message into the ref's second step, then closes the
    # ref: read as a definition, it would make the plan its first two steps
    cut = Echo(until="2. run the migration", after="\n</ref>")
    async with harness([Reply(text=DEFINED), _read(2), cut]) as h:
        assert await h.agent.run_turn("main", "Plan the migration.") == "done"
        assert await h.agent.run_turn("main", "Repeat it.") == "done"
        echoed = h.agent.memory("main").messages[-1]["content"]
    (only,) = _the_plan(h)
    assert only["content"] == PLAN
    assert echoed.endswith('<quoted_ref id="plan">\n1. back up the database\n'
                           "2. run the migration\n</ref>")


async def test_a_search_snippet_repeated_defines_no_ref(harness):
    # a snippet folds the ref's lines into one: as a definition it would change it
    search = Reply(tool_calls=[ToolCall("search_history", {"query": "migration"}, id="s1")])
    async with harness([Reply(text=DEFINED), search, Echo()]) as h:
        assert await h.agent.run_turn("main", "Plan the migration.") == "done"
        assert await h.agent.run_turn("main", "Find the plan.") == "done"
        result = next(e.result for e in h.of(ev.ToolCallEnded) if e.name == "search_history")
    (only,) = _the_plan(h)
    assert only["content"] == PLAN
    assert '<quoted_ref id="plan"> 1. back up the database 2. run the migration' in result
    assert "<ref id=" not in result


async def test_a_ref_written_again_unchanged_adds_no_version(harness):
    changed = DEFINED.replace("switch the traffic over", "switch over at night")
    script = [Reply(text=DEFINED), Reply(text=DEFINED), Reply(text=changed)]
    async with harness(script) as h:
        assert await h.agent.run_turn("main", "Plan the migration.") == "done"
        assert await h.agent.run_turn("main", "Once more.") == "done"
        after_repeat = list(h.agent.memory("main").refs["plan"])
        assert await h.agent.run_turn("main", "Switch at night.") == "done"
        closed = [e.ref_id for e in h.of(ev.RefClosed)]
    assert closed == ["plan", "plan", "plan"]  # the person sees each block as written
    assert [v["message_index"] for v in after_repeat] == [1]
    first, second = _the_plan(h)
    assert first["content"] == PLAN and second["content"].endswith("switch over at night")
    assert second["message_index"] == 5


async def test_a_ref_rewritten_right_after_a_read_that_quoted_it_is_told(harness):
    # a model that turns the quotation back into a ref, cut short: the ref changes
    # (it could be meant), and the person is told the earlier version is kept
    cut = Reply(text='Here:\n<ref id="plan">\n1. back up the database\n</ref>')
    changed = Reply(text=DEFINED.replace("switch the traffic over", "switch over at night"))
    script = [Reply(text=DEFINED), _read(2), cut, changed]
    async with harness(script) as h:
        assert await h.agent.run_turn("main", "Plan the migration.") == "done"
        assert await h.agent.run_turn("main", "What was the plan?") == "done"
        told = [n for n in h.of(ev.Notice) if "ref plan was rewritten" in n.message]
        assert await h.agent.run_turn("main", "Switch at night.") == "done"
        later = [n for n in h.of(ev.Notice) if "ref plan was rewritten" in n.message]
    assert [n.severity for n in told] == ["warning"]
    assert "the earlier version is kept (the refs list shows it as old)" in told[0].message
    assert later == told  # a change in a turn that read nothing back is not flagged
    kept, cut_short, night = _the_plan(h)
    assert kept["content"] == PLAN and cut_short["content"] == "1. back up the database"
    assert night["content"].endswith("switch over at night")


async def test_a_quotation_read_through_an_fd_counts_too(harness):
    # a long read becomes an fd: its preview shows the quotation XML-escaped
    from selfref_tui.config import AgentSettings

    long_plan = DEFINED + "\n" + "More detail on each step. " * 40
    script = [Reply(text=long_plan), _read(2),
              Reply(text='<ref id="plan">\n1. back up the database\n</ref>')]
    settings = AgentSettings(base_system_prompt="You are a test agent.", fd_threshold_chars=400)
    async with harness(script, settings=settings) as h:
        assert await h.agent.run_turn("main", "Plan the migration.") == "done"
        assert await h.agent.run_turn("main", "What was the plan?") == "done"
        result = next(e.result for e in h.of(ev.ToolCallEnded) if e.name == "read_history")
        told = [n for n in h.of(ev.Notice) if "ref plan was rewritten" in n.message]
    assert result.startswith("<fd_result") and "&lt;quoted_ref id=\"plan\"&gt;" in result
    assert len(told) == 1
