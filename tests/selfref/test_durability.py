"""Crash safety: torn writes are repaired, committed turns survive kill -9."""

from __future__ import annotations

import json
import random
import signal
import sys
import time

import pytest

from selfref_tui.selfref import SelfReference
from selfref_tui.selfref.checksum import seal
from selfref_tui.selfref.store import LOG_NAME

from .helpers import kill_9, start_writer, turn, wait_committed, wait_ready


def make_key(tmp_path, turns: int = 3):
    store = SelfReference(tmp_path)
    memory = store.open("main")
    for i in range(turns):
        memory.commit(turn(i))
    log = memory.key_dir / LOG_NAME
    store.close()
    return log, log.read_bytes()


def sealed(record: dict) -> bytes:
    """A log line as the store writes it (with its checksum)."""
    return seal(json.dumps(record, separators=(",", ":"))).encode()


LOST = {"t": "m", "more": True, "ts": "x",
        "m": {"type": "UserMessageMutation", "message": {"content": "lost"}}}


@pytest.mark.parametrize(
    ("garbage", "reason"),
    [
        (b'{"t":"m","ts":"x","m":{"type":"UserMessage', "incomplete"),
        (b"\x00\x00\x00\x00", "incomplete"),
        (sealed(LOST) + b"\n", "batch is incomplete"),
        (sealed(LOST) + b"\n" + sealed(LOST)[:40], "incomplete"),
        (sealed(LOST)[:-1], "incomplete"),  # cut just before its last byte
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
    assert memory.salvage is None  # a cut write is not damage
    assert reason in caplog.text
    assert log.read_bytes() == good  # cut back to the last whole batch
    memory.commit(turn(3))
    store.close()
    again = SelfReference(tmp_path).open("main", write=False)
    assert again.warnings == []
    assert again.messages[-1]["content"] == "answer 3"


@pytest.mark.parametrize(
    ("garbage", "what"),
    [
        (b"{not json at all}\n", "no checksum"),
        (b'{"t":"m","ts":"x","m":"\xff\xfe"}\n', "no checksum"),
        (sealed({**LOST, "more": False}).replace(b"lost", b"lo\xffst") + b"\n", "checksum"),
        (sealed({**LOST, "more": False}).replace(b"lost", b"LOST") + b"\n", "checksum"),
    ],
)
def test_a_complete_bad_last_line_is_damage_not_a_torn_write(tmp_path, garbage, what):
    """It ends with a newline, so it was written whole: kept aside and reported, not cut."""
    log, good = make_key(tmp_path)
    log.write_bytes(good + garbage)
    memory = SelfReference(tmp_path).open("main")
    assert [m["content"] for m in memory.messages][-1] == "answer 2"
    report = memory.salvage
    assert report is not None and report.skipped == 1 and report.lines[0][0] == 8
    assert what in report.lines[0][1]
    assert report.kept_as.read_bytes() == good + garbage  # the original, byte for byte
    assert "dropped the unfinished" not in " ".join(memory.warnings)
    assert str(report.kept_as) in memory.warnings[0] and "line 8" in memory.warnings[0]


def test_a_changed_last_newline_keeps_the_last_record(tmp_path):
    log, good = make_key(tmp_path)
    log.write_bytes(good[:-1] + b"X")
    memory = SelfReference(tmp_path).open("main")
    assert memory.messages[-1]["content"] == "answer 2" and len(memory.messages) == 6
    assert any("newline" in w for w in memory.warnings)
    assert log.read_bytes() == good


def test_reader_drops_a_torn_tail_without_touching_the_file(tmp_path):
    log, good = make_key(tmp_path)
    log.write_bytes(good + b'{"t":"m"')
    memory = SelfReference(tmp_path).open("main", write=False)
    assert len(memory.messages) == 6 and memory.warnings
    assert log.read_bytes() == good + b'{"t":"m"'


def test_half_written_batch_is_not_applied_after_repair(tmp_path):
    """The dropped lines of an unfinished batch must not leak into the fold."""
    log, good = make_key(tmp_path, turns=1)
    first = sealed(
        {
            "t": "m",
            "more": True,
            "ts": "x",
            "m": {"type": "ExperienceRememberMutation", "text": "ghost"},
        }
    )
    log.write_bytes(good + first + b"\n" + b'{"t":"m","ts":"x","m":{"ty')
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
            # At least two commits of this run first (however slow the machine), then
            # the kill lands at a random moment of the writes that follow.
            seen = [wait_committed(proc) for _ in range(rng.randint(2, 4))]
            time.sleep(rng.uniform(0.0, 0.06))
        finally:
            out, err = kill_9(proc)
        assert proc.returncode == -signal.SIGKILL, err
        committed |= set(seen) | {
            int(line.split()[1]) for line in out.splitlines() if line.startswith("committed")
        }
        memory = SelfReference(tmp_path).open("main", write=False)
        assert memory.salvage is None  # a kill leaves a torn write at most, never damage
        users = [m["content"].split()[1] for m in memory.messages if m["role"] == "user"]
        answers = [m["content"] for m in memory.messages if m["role"] == "assistant"]
        stored = {int(u) for u in users}
        assert committed <= stored, sorted(committed - stored)[:5]
        # Batches are all-or-nothing: every question has its answer, in order.
        assert answers == [f"answer {u}" for u in users]
        assert users == [str(i) for i in range(len(users))]
    assert len(committed) >= 60  # two or more of every run's commits, checked after each kill
