"""SelfRefSession against the real store: ids it promises are the ids the fold assigns."""

from __future__ import annotations

from selfref_tui.context.mutations import UserMessageMutation
from selfref_tui.selfref import SelfReference
from selfref_tui.selfref.session import SelfRefSession


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
    assert again.experiences == [
        {"id": "exp_001", "text": "likes tea"},
        {"id": "exp_002", "text": "uses vim"},
    ]


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
    assert memory.experiences == [{"id": "exp_002", "text": "one"}]
    assert report.forgotten == ["exp_001"]
    ref.close()


def test_inspect_reports_queue_and_counts(tmp_path):
    ref, memory = _fresh(tmp_path)
    memory.commit([UserMessageMutation({"role": "user", "content": "hi"})])
    session = SelfRefSession(memory, token_usage=lambda: {"tokens": 12, "window": 100})
    session.remember("fact")
    info = session.inspect()
    assert info["active_key"] == "main"
    assert info["experiences"] == [{"id": "exp_001", "text": "fact"}]
    assert info["message_count"] == len(memory.messages)
    assert info["token_usage"] == {"tokens": 12, "window": 100}
    assert info["has_pending_compaction"] is False
    assert session.has_pending
    session.finalize()
    assert not session.has_pending
    assert memory.experiences == [{"id": "exp_001", "text": "fact"}]
    ref.close()
