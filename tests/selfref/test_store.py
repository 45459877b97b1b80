"""The fold, reloading, records, permissions, the key list and the data dir."""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import platformdirs
import pytest

from selfref_tui.context.apply import apply_mutations
from selfref_tui.context.mutations import (
    AssistantMessageMutation,
    AssistantTruncatedMutation,
    ContextReplaceMutation,
    ContextSummaryMutation,
    ExperienceForgetMutation,
    ExperienceRememberMutation,
    ToolResultMutation,
    UserMessageMutation,
)
from selfref_tui.selfref import SCHEMA, SelfReference, StoreError
from selfref_tui.selfref.store import LOG_NAME, META_NAME

from .helpers import turn


def reload(data_dir: Path, key: str = "main"):
    return SelfReference(data_dir).open(key, write=False)


def state(memory):
    return (
        memory.messages,
        memory.history,
        memory.refs,
        memory.fds,
        memory.forks,
        memory.summary,
        memory.experiences,
        memory.updated,
    )


def test_commit_then_reload_gives_the_same_state(tmp_path):
    store = SelfReference(tmp_path)
    memory = store.open("main")
    batches = [
        [ExperienceRememberMutation("prefers dark mode")],
        turn(1),
        [
            AssistantMessageMutation(
                content=None,
                tool_calls=[
                    {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
                ],
            )
        ],
        [ToolResultMutation("c1", "a.txt")],
        [AssistantTruncatedMutation("half an ans", "user pressed Esc")],
    ]
    for batch in batches:
        memory.commit(batch)
    flat = [m for b in batches for m in b]
    assert memory.messages == apply_mutations([], flat)
    assert memory.experiences == [{"id": "exp_001", "text": "prefers dark mode"}]
    again = reload(tmp_path)
    assert state(again) == state(memory)
    assert again.messages[-1]["truncated"] is True


def test_experience_batches_keep_commit_boundaries(tmp_path):
    """A forget committed after a remember removes it (per-batch flush survives reload)."""
    memory = SelfReference(tmp_path).open("main")
    memory.commit([ExperienceRememberMutation("likes tea")])
    memory.commit([ExperienceForgetMutation("exp_001")])
    memory.commit([ExperienceRememberMutation("likes coffee"), ExperienceForgetMutation("exp_002")])
    assert memory.experiences == [{"id": "exp_002", "text": "likes coffee"}]
    assert reload(tmp_path).experiences == memory.experiences


def test_compaction_archives_history_and_keeps_the_summary(tmp_path):
    memory = SelfReference(tmp_path).open("main")
    memory.commit(turn(1))
    memory.commit(turn(2))
    summary = {
        "role": "user",
        "content": "Summary: two questions",
        "compaction": {"goal": "answer"},
    }
    memory.commit([ContextSummaryMutation(summary, [{"text": "keep this"}])])
    memory.commit(turn(3))
    assert [m["content"] for m in memory.messages] == [
        "",
        "Summary: two questions",
        "question 3",
        "answer 3",
    ]
    history = memory.history
    assert [m.get("content") for m in history[:4]] == [
        "question 1",
        "answer 1",
        "question 2",
        "answer 2",
    ]
    assert all(m["archived"] is True for m in history[:4])
    # The marker says how many messages it took out of the model's view, and when.
    marker = dict(history[4])
    assert memory.entry(4).time <= marker.pop("time") <= memory.entry(5).time
    assert marker == {"role": "compaction", "summary": {"goal": "answer"}, "messages_before": 4}
    assert memory.last_compacted == 4
    assert [m["content"] for m in history[5:]] == [
        "Summary: two questions",
        "question 3",
        "answer 3",
    ]
    assert memory.summary == {"goal": "answer"}
    assert [e["text"] for e in memory.experiences] == ["keep this"]
    # the person's messages: four compacted and two after; the summary has no number
    assert memory.message_count == 6
    assert [(e.n, e.compacted) for e in memory.entries()] == [
        (1, True), (2, True), (3, True), (4, True), (5, False), (6, False)]
    memory.commit([ContextReplaceMutation([{"role": "user", "content": "fresh"}])])
    assert {**memory.history[-2], "time": ""} == {
        "role": "compaction", "summary": {}, "messages_before": 3, "time": ""}
    seeded = SelfReference(tmp_path).open("main::fork::1")
    seeded.commit([ContextReplaceMutation([{"role": "user", "content": "seed"}])])
    assert [m["role"] for m in seeded.history] == ["user"]  # nothing hidden: no marker
    assert memory.messages[-1]["content"] == "fresh"
    assert state(reload(tmp_path)) == state(memory)


def test_ref_fd_and_fork_records(tmp_path):
    memory = SelfReference(tmp_path).open("main")
    memory.commit(
        turn(1),
        records=[
            {"t": "ref", "id": "fib", "content": "v1", "created": "t1", "message_index": 2},
            {"t": "fd", "id": "fd:1", "content": "x" * 9000, "created": "t1", "source": "ls"},
            {"t": "fork", "fork_id": "f1", "child_key": "main::fork::1", "status": "running"},
        ],
    )
    memory.commit(
        records=[
            {"t": "ref", "id": "fib", "content": "v2", "created": "t2", "message_index": 4},
            {
                "t": "fork",
                "fork_id": "f1",
                "child_key": "main::fork::1",
                "status": "done",
                "response": "ok",
            },
        ]
    )
    assert [r["content"] for r in memory.refs["fib"]] == ["v1", "v2"]
    assert memory.fds["fd:1"]["source"] == "ls"
    assert memory.forks["f1"]["status"] == "done" and memory.forks["f1"]["response"] == "ok"
    assert "t" not in memory.forks["f1"] and "ts" not in memory.refs["fib"][0]
    assert state(reload(tmp_path)) == state(memory)


@pytest.mark.parametrize(
    "bad",
    [
        {"t": "ref", "content": "no id"},
        {"t": "fd", "id": 3, "content": "x"},
        {"t": "fork"},
        {"t": "nope", "id": "x"},
        {"t": "ref", "id": "a", "content": "b", "message_index": "two"},
    ],
)
def test_malformed_input_is_refused_and_nothing_is_written(tmp_path, bad):
    memory = SelfReference(tmp_path).open("main")
    memory.commit(turn(1))
    size = memory.log_size
    with pytest.raises(ValueError):
        memory.commit(turn(2), records=[bad])
    with pytest.raises(TypeError):
        memory.commit([UserMessageMutation({"role": "user", "content": object()})])
    with pytest.raises(TypeError):
        memory.commit(["not a mutation"])  # type: ignore[list-item]
    assert memory.log_size == size == (memory.key_dir / LOG_NAME).stat().st_size
    assert len(memory.messages) == 2


def test_caller_dicts_are_not_aliased(tmp_path):
    memory = SelfReference(tmp_path).open("main")
    message = {"role": "user", "content": "hi"}
    memory.commit([UserMessageMutation(message)])
    message["content"] = "changed later"
    assert memory.messages[-1]["content"] == "hi"


def test_read_only_key_refuses_commits_and_sees_new_turns(tmp_path):
    writer = SelfReference(tmp_path)
    w = writer.open("main")
    w.commit(turn(1))
    viewer = SelfReference(tmp_path)
    r = viewer.open("main", write=False)
    with pytest.raises(StoreError, match="read-only"):
        r.commit(turn(2))
    w.commit(turn(2))
    assert viewer.open("main", write=False).messages[-1]["content"] == "answer 2"
    writer.close()
    with pytest.raises(StoreError):
        w.commit(turn(3))


def test_open_returns_one_shared_object(tmp_path):
    store = SelfReference(tmp_path)
    assert store.open("main") is store.open("main") is store.open("main", write=False)


def test_files_are_private(tmp_path):
    data = tmp_path / "data"
    store = SelfReference(data)
    store.open("main").commit(turn(1))
    store.open("other::fork::1").commit(turn(2))
    seen = 0
    for root, _dirs, files in os.walk(data):
        assert stat.S_IMODE(os.stat(root).st_mode) == 0o700, root
        for name in files:
            path = os.path.join(root, name)
            assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, path
            seen += 1
    assert seen >= 6  # log, meta, lock (and writer info) for each key


def test_no_api_key_is_ever_written(tmp_path, monkeypatch):
    fake = "sk-test-FAKE0123456789abcdefDO-NOT-STORE"
    monkeypatch.setenv("OPENAI_API_KEY", fake)
    store = SelfReference(tmp_path)
    memory = store.open("main")
    memory.commit(
        [*turn(1), AssistantMessageMutation(content="done")],
        records=[{"t": "fork", "fork_id": "f", "status": "done"}],
    )
    store.close()
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert files
    for path in files:
        data = path.read_bytes()
        assert fake.encode() not in data and b"Authorization" not in data, path


def test_header_and_meta_carry_the_schema(tmp_path):
    memory = SelfReference(tmp_path).open("main::fork::2")
    memory.commit(turn(1))
    header = json.loads((memory.key_dir / LOG_NAME).read_text().splitlines()[0])
    meta = json.loads((memory.key_dir / META_NAME).read_text())
    assert header["schema"] == meta["schema"] == SCHEMA == 1
    assert header["key"] == meta["key"] == "main::fork::2"
    assert meta["messages"] == 2 and meta["updated"] == memory.updated


def test_keys_are_listed_newest_first_from_meta(tmp_path):
    store = SelfReference(tmp_path)
    for name in ["a", "b", "c"]:
        store.open(name).commit(turn(1))
        time.sleep(0.002)  # "updated" has millisecond resolution: keep the order unambiguous
    store.open("a").commit(turn(2))
    store.open("empty")  # opened, never written: not listed
    infos = store.keys()
    assert [i.key for i in infos] == ["a", "c", "b"]
    assert infos[0].messages == 4 and infos[0].updated == store.open("a").updated


def test_keys_survive_a_corrupt_meta_file(tmp_path):
    store = SelfReference(tmp_path)
    store.open("good").commit(turn(1))
    store.open("main::fork::1").commit(turn(1))
    (store.key_dir("main::fork::1") / META_NAME).write_text("{not json")
    listed = store.keys()
    infos = {i.key: i for i in listed}
    assert infos["good"].problem == ""
    assert "meta.json" in infos["main::fork::1"].problem
    # Opening for write rebuilds the meta file from the log.
    store.close()
    SelfReference(tmp_path).open("main::fork::1")
    listed = SelfReference(tmp_path).keys()
    infos = {i.key: i for i in listed}
    assert infos["main::fork::1"].problem == "" and infos["main::fork::1"].messages == 2


def test_default_data_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("SELFREF_DATA_DIR", str(tmp_path / "env"))
    assert SelfReference().data_dir == tmp_path / "env"
    monkeypatch.delenv("SELFREF_DATA_DIR")
    assert SelfReference().data_dir == Path(platformdirs.user_data_dir("selfref-tui"))
    assert SelfReference(tmp_path / "x").data_dir == tmp_path / "x"


def test_key_list_reads_meta_not_logs(tmp_path):
    store = SelfReference(tmp_path)
    store.open("main").commit(turn(1))
    store.close()
    log = store.key_dir("main") / LOG_NAME
    log.write_bytes(log.read_bytes() + b"{damaged}\n" + b"x" * 1000 + b"\n")
    (info,) = SelfReference(tmp_path).keys()
    assert (info.key, info.messages, info.problem) == ("main", 2, "")


def test_odd_but_json_able_input_round_trips(tmp_path):
    """Lone surrogates, NaN and non-text dict keys neither crash nor differ after reload."""
    memory = SelfReference(tmp_path).open("main")
    weird = {"role": "user", "content": "bad \udc80 half", "score": float("inf"), 1: "int key"}
    memory.commit([UserMessageMutation(weird)])
    assert memory.messages[-1]["1"] == "int key"
    again = reload(tmp_path)
    assert again.messages[-1]["content"] == "bad \udc80 half"
    assert again.messages[-1]["score"] == float("inf") and again.messages[-1]["1"] == "int key"


@pytest.mark.parametrize("leftover", ["stale", "empty"])
def test_meta_left_stale_or_empty_by_a_power_loss_is_rebuilt(tmp_path, leftover):
    """meta.json is written without fsync: after a power loss it may hold an older
    version or nothing. The log (fsynced) is the truth; opening for write repairs it."""
    store = SelfReference(tmp_path)
    memory = store.open("main")
    memory.commit(turn(1))
    meta = memory.key_dir / META_NAME
    old = meta.read_bytes()
    memory.commit(turn(2))
    store.close()
    meta.write_bytes(old if leftover == "stale" else b"")
    (info,) = SelfReference(tmp_path).keys()
    assert info.key == "main"
    assert (info.messages, info.problem == "") == ((2, True) if leftover == "stale" else (0, False))
    reopened = SelfReference(tmp_path)
    assert reopened.open("main").message_count == 4  # nothing of the log lost
    reopened.close()
    (info,) = SelfReference(tmp_path).keys()
    assert (info.messages, info.problem, info.updated) == (4, "", memory.updated)


def test_a_key_locked_before_its_holder_said_who_it_is_names_no_pid_none(tmp_path):
    """Between taking the lock and writing ``writer.json`` the holder is nameless: two
    rewinds of one conversation at once said "pid None on None, since None". An entry
    the holder did not write whole is no name either."""
    import fcntl

    from selfref_tui.selfref.errors import StoreLockedError

    data = tmp_path / "data"
    with SelfReference(data) as store:
        store.open("main")
    key_dir = next((data / "keys").iterdir())
    with open(key_dir / "writer.lock", "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)  # another holder, no note yet
        for note in (None, '{"pid": "1", "host": null}', '{"pid": 4321, "host": "box"}'):
            if note is not None:
                (key_dir / "writer.json").write_text(note)
            with SelfReference(data) as store, pytest.raises(StoreLockedError) as refused:
                store.open("main")
            said = str(refused.value)
            assert "None" not in said, said
            assert said.startswith("Conversation 'main' is open for writing in another "
                                   "selfref-tui ")
            assert ("(pid 4321 on box)" in said if note and "4321" in note
                    else "in another selfref-tui process;" in said)
