"""Corrupt files, newer schemas and the single-writer lock."""

from __future__ import annotations

import json
import os

import pytest

from selfref_tui.selfref import (
    CorruptStoreError,
    SelfReference,
    StoreLockedError,
    UnsupportedSchemaError,
)
from selfref_tui.selfref.store import LOG_NAME, META_NAME

from .helpers import start_writer, turn, wait_ready


def two_keys(tmp_path):
    store = SelfReference(tmp_path)
    for key in ("main", "other"):
        memory = store.open(key)
        memory.commit(turn(1))
        memory.commit(turn(2))
    store.close()
    return store.key_dir("main") / LOG_NAME


def replace_line(path, lineno, text):
    lines = path.read_bytes().split(b"\n")
    lines[lineno - 1] = text.encode()
    path.write_bytes(b"\n".join(lines))


@pytest.mark.parametrize(
    ("line", "what"),
    [
        ("{oops", "not valid JSON"),
        ("[1, 2]", "expected an object"),
        (
            '{"t":"m","ts":"x","m":{"type":"UserMessageMutation","message":"not a dict"}}',
            "bad patch",
        ),
        ('{"t":"m","ts":"x","m":{"type":"NoSuchMutation"}}', "unknown mutation type"),
        ('{"t":"ref","ts":"x","id":7,"content":"c"}', "ref record"),
        ('{"t":"mystery","ts":"x"}', "unknown record type"),
    ],
)
def test_damage_mid_file_fails_that_key_only(tmp_path, line, what):
    log = two_keys(tmp_path)
    original = log.read_bytes()
    replace_line(log, 2, line)
    damaged = log.read_bytes()
    store = SelfReference(tmp_path)
    with pytest.raises(CorruptStoreError) as info:
        store.open("main", write=False)
    message = str(info.value)
    assert str(log) in message and "line 2" in message and what in message
    assert "\n" not in message
    assert log.read_bytes() == damaged  # a reader never moves or changes it
    # A writer moves it aside, keeps it, and the next open starts the key fresh.
    with pytest.raises(CorruptStoreError, match="moved aside"):
        store.open("main")
    aside = [p for p in log.parent.iterdir() if p.name.startswith(f"{LOG_NAME}.corrupt-")]
    assert len(aside) == 1 and aside[0].read_bytes() == damaged != original
    assert store.open("main").messages == []
    assert store.open("other", write=False).messages[-1]["content"] == "answer 2"
    listed = store.keys()
    assert "other" in {i.key for i in listed if not i.problem}


@pytest.mark.parametrize("where", ["header", "meta"])
def test_newer_schema_is_refused_and_never_overwritten(tmp_path, where):
    log = two_keys(tmp_path)
    meta = log.with_name(META_NAME)
    if where == "header":
        header = json.loads(log.read_text().splitlines()[0])
        header["schema"] = 2
        replace_line(log, 1, json.dumps(header))
    else:
        data = json.loads(meta.read_text())
        data["schema"] = 2
        meta.write_text(json.dumps(data))
    before = {p.name: p.read_bytes() for p in (log, meta)}
    store = SelfReference(tmp_path)
    for write in (True, False):
        with pytest.raises(UnsupportedSchemaError) as info:
            store.open("main", write=write)
        message = str(info.value)
        assert "newer selfref-tui (schema 2)" in message and "upgrade" in message
    assert {p.name: p.read_bytes() for p in (log, meta)} == before
    assert not [p for p in log.parent.iterdir() if "corrupt" in p.name]
    # The refused key did not keep its lock: another writer can take it (and be refused too).
    with pytest.raises(UnsupportedSchemaError):
        SelfReference(tmp_path).open("main")
    assert store.open("other").messages


def test_second_writer_process_is_refused_and_readers_still_load(tmp_path):
    store = SelfReference(tmp_path)
    store.open("main").commit(turn(1))
    store.close()
    proc = start_writer(tmp_path, "main", "hold")
    try:
        wait_ready(proc)
        with pytest.raises(StoreLockedError) as info:
            SelfReference(tmp_path).open("main")
        message = str(info.value)
        assert f"pid {proc.pid}" in message and "read-only" in message and "\n" not in message
        reader = SelfReference(tmp_path).open("main", write=False)
        assert reader.messages[-1]["content"] == "answer 1"
        # Other keys are not affected by that lock.
        SelfReference(tmp_path).open("other").commit(turn(2))
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    # Once the holder is gone the key is writable again.
    memory = SelfReference(tmp_path).open("main")
    memory.commit(turn(2))
    assert memory.messages[-1]["content"] == "answer 2"


def test_killed_writer_leaves_no_stale_lock(tmp_path):
    proc = start_writer(tmp_path, "main", "hold")
    wait_ready(proc)
    proc.kill()
    proc.wait(timeout=30)
    SelfReference(tmp_path).open("main").commit(turn(1))


def test_second_writer_in_the_same_process_is_refused(tmp_path):
    first = SelfReference(tmp_path)
    first.open("main")
    with pytest.raises(StoreLockedError, match=f"pid {os.getpid()}"):
        SelfReference(tmp_path).open("main")
    first.close()
    SelfReference(tmp_path).open("main").commit(turn(1))
