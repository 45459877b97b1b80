"""Crash safety: torn writes are repaired, committed turns survive kill -9."""

from __future__ import annotations

import json
import random
import signal
import sys
import time

import pytest

from selfref_tui.selfref import SelfReference
from selfref_tui.selfref.store import LOG_NAME

from .helpers import start_writer, turn, wait_ready


def make_key(tmp_path, turns: int = 3):
    store = SelfReference(tmp_path)
    memory = store.open("main")
    for i in range(turns):
        memory.commit(turn(i))
    log = memory.key_dir / LOG_NAME
    store.close()
    return log, log.read_bytes()


@pytest.mark.parametrize(
    ("garbage", "reason"),
    [
        (b'{"t":"m","ts":"x","m":{"type":"UserMessage', "incomplete"),
        (b"{not json at all}\n", "not valid JSON"),
        (
            b'{"t":"m","more":true,"ts":"x","m":{"type":"UserMessageMutation","message":{"content":"lost"}}}\n',
            "batch is incomplete",
        ),
        (b'{"t":"m","ts":"x","m":"\xff\xfe"}\n', "UTF-8"),
        (b"\x00\x00\x00\x00", "incomplete"),
    ],
)
def test_torn_tail_is_dropped_with_a_warning_and_repaired(tmp_path, caplog, garbage, reason):
    log, good = make_key(tmp_path)
    log.write_bytes(good + garbage)
    store = SelfReference(tmp_path)
    memory = store.open("main")
    assert [m["content"] for m in memory.messages][-1] == "answer 2"
    assert len(memory.messages) == 6
    assert any(reason in w for w in memory.warnings), memory.warnings
    assert reason in caplog.text
    assert log.read_bytes() == good  # cut back to the last whole batch
    memory.commit(turn(3))
    store.close()
    again = SelfReference(tmp_path).open("main", write=False)
    assert again.warnings == []
    assert again.messages[-1]["content"] == "answer 3"


def test_reader_drops_a_torn_tail_without_touching_the_file(tmp_path):
    log, good = make_key(tmp_path)
    log.write_bytes(good + b'{"t":"m"')
    memory = SelfReference(tmp_path).open("main", write=False)
    assert len(memory.messages) == 6 and memory.warnings
    assert log.read_bytes() == good + b'{"t":"m"'


def test_half_written_batch_is_not_applied_after_repair(tmp_path):
    """The dropped lines of an unfinished batch must not leak into the fold."""
    log, good = make_key(tmp_path, turns=1)
    first = json.dumps(
        {
            "t": "m",
            "more": True,
            "ts": "x",
            "m": {"type": "ExperienceRememberMutation", "text": "ghost"},
        }
    )
    log.write_bytes(good + first.encode() + b"\n" + b'{"t":"m","ts":"x","m":{"ty')
    memory = SelfReference(tmp_path).open("main")
    assert memory.experiences == []
    assert [m["role"] for m in memory.messages] == ["user", "assistant"]


def test_crash_while_creating_the_key(tmp_path):
    store = SelfReference(tmp_path)
    key_dir = store.key_dir("main")
    key_dir.mkdir(parents=True)
    (key_dir / LOG_NAME).write_bytes(b'{"t":"header","sch')
    memory = store.open("main")
    assert memory.messages == [] and memory.warnings
    memory.commit(turn(1))
    store.close()
    assert SelfReference(tmp_path).open("main", write=False).messages[-1]["content"] == "answer 1"


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
def test_kill_9_at_random_moments_loses_nothing_committed(tmp_path):
    rng = random.Random(20240601)
    committed: set[int] = set()
    for _iteration in range(30):
        proc = start_writer(tmp_path, "main", "loop")
        try:
            wait_ready(proc)
            time.sleep(rng.uniform(0.0, 0.06))
        finally:
            proc.send_signal(signal.SIGKILL)
            out, err = proc.communicate(timeout=30)
        assert proc.returncode == -signal.SIGKILL, err
        committed |= {
            int(line.split()[1]) for line in out.splitlines() if line.startswith("committed")
        }
        memory = SelfReference(tmp_path).open("main", write=False)
        users = [m["content"].split()[1] for m in memory.messages if m["role"] == "user"]
        answers = [m["content"] for m in memory.messages if m["role"] == "assistant"]
        stored = {int(u) for u in users}
        assert committed <= stored, sorted(committed - stored)[:5]
        # Batches are all-or-nothing: every question has its answer, in order.
        assert answers == [f"answer {u}" for u in users]
        assert users == [str(i) for i in range(len(users))]
    assert len(committed) > 30
