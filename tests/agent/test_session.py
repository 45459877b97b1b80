"""SelfRefSession against the real store: ids it promises are the ids the fold assigns."""

from __future__ import annotations

from datetime import datetime

from selfref_tui.context.mutations import AssistantMessageMutation, UserMessageMutation
from selfref_tui.selfref import SelfReference
from selfref_tui.selfref.session import SelfRefSession


def _id_text(experiences):
    return [(e["id"], e["text"]) for e in experiences]


def _fresh(tmp_path, key="main"):
    ref = SelfReference(tmp_path / "data")
    return ref, ref.open(key)


def test_remember_ids_match_fold_and_survive_reload(tmp_path):
    ref, memory = _fresh(tmp_path)
    session = SelfRefSession(memory)
    a = session.remember("likes tea")
    b = session.remember("uses vim")
    same = session.remember("  likes   tea ")
    assert (a, b, same) == ("exp_001", "exp_002", "exp_001")
    assert memory.experiences == []  # queued, not applied yet
    report = session.commit(session.collect_context_mutations())
    assert [e["id"] for e in memory.experiences] == ["exp_001", "exp_002"]
    assert report.remembered == [("exp_001", "likes tea"), ("exp_002", "uses vim")]
    ref.close()
    again = SelfReference(tmp_path / "data").open("main", write=False)
    assert again.experiences == memory.experiences
    assert _id_text(again.experiences) == [("exp_001", "likes tea"), ("exp_002", "uses vim")]
    assert {e["source"] for e in again.experiences} == {"person"}


def test_forget_then_remember_in_one_batch_never_reuses_ids(tmp_path):
    ref, memory = _fresh(tmp_path)
    session = SelfRefSession(memory)
    session.remember("one")
    session.commit(session.collect_context_mutations())
    assert session.forget("exp_001") is True
    assert session.forget("exp_001") is False  # already queued for removal
    assert session.forget("exp_999") is False
    new = session.remember("one")  # forgotten first in the fold, so a new id
    assert new == "exp_002"
    report = session.commit(session.collect_context_mutations())
    assert _id_text(memory.experiences) == [("exp_002", "one")]
    assert report.forgotten == ["exp_001"]
    ref.close()


def test_inspect_reports_queue_and_counts(tmp_path):
    ref, memory = _fresh(tmp_path)
    memory.commit([UserMessageMutation({"role": "user", "content": "hi"})])
    session = SelfRefSession(memory, token_usage=lambda: {"tokens": 12, "window": 100})
    session.remember("fact")
    info = session.inspect()
    assert info["active_key"] == "main"
    assert _id_text(info["experiences"]) == [("exp_001", "fact")]
    assert info["message_count"] == len(memory.messages)
    assert info["token_usage"] == {"tokens": 12, "window": 100}
    assert info["has_pending_compaction"] is False
    assert session.has_pending
    session.finalize()
    assert not session.has_pending
    assert _id_text(memory.experiences) == [("exp_001", "fact")]
    ref.close()


def test_experiences_say_where_they_came_from_and_edits_keep_it(tmp_path):
    ref, memory = _fresh(tmp_path)
    memory.commit([UserMessageMutation({"role": "user", "content": "I drink tea"}),
                   AssistantMessageMutation("Noted.")])
    session = SelfRefSession(memory)
    assert session.latest_message() == 2  # the answer that would have called remember
    session.remember("The person drinks tea.", source="agent")
    session.remember("typed in the sidebar")
    session.compact(goal="g", instruction="i", remember=["kept by the summary"])
    session.commit(session.collect_context_mutations())
    by_text = {e["text"]: e for e in memory.experiences}
    agent, person, compaction = (by_text["The person drinks tea."],
                                 by_text["typed in the sidebar"],
                                 by_text["kept by the summary"])
    assert agent["source"] == "agent" and agent["message"] == 2
    assert person["source"] == "person" and "message" not in person
    assert compaction["source"] == "compaction" and compaction["message"] == 2
    for exp in (agent, person, compaction):
        assert datetime.fromisoformat(exp["created"]).tzinfo is not None
    assert session.edit(agent["id"], "  The person drinks green tea. ")
    assert not session.edit("exp_999", "nothing")
    assert not session.edit(agent["id"], "   ")  # forgetting is its own action
    report = session.commit(session.collect_context_mutations())
    assert report.edited == [(agent["id"], "The person drinks green tea.")]
    edited = next(e for e in memory.experiences if e["id"] == agent["id"])
    assert edited["text"] == "The person drinks green tea."
    assert {k: edited[k] for k in ("source", "message", "created")} == {
        k: agent[k] for k in ("source", "message", "created")}
    assert datetime.fromisoformat(edited["edited"]) >= datetime.fromisoformat(agent["created"])
    ref.close()
    again = SelfReference(tmp_path / "data").open("main", write=False)
    assert again.experiences == memory.experiences  # the fold of the log, exactly


def test_an_edit_and_a_forget_in_one_batch_fold_in_order(tmp_path):
    ref, memory = _fresh(tmp_path)
    session = SelfRefSession(memory)
    session.remember("one")
    session.remember("two")
    session.commit(session.collect_context_mutations())
    assert session.edit("exp_002", "two, corrected")
    assert session.forget("exp_001")
    assert session.remember("three") == "exp_003"
    assert _id_text(session.inspect()["experiences"]) == [
        ("exp_002", "two, corrected"), ("exp_003", "three")]
    session.commit(session.collect_context_mutations())
    assert _id_text(memory.experiences) == [("exp_002", "two, corrected"), ("exp_003", "three")]
    ref.close()
