"""Corrupt files, newer schemas and the single-writer lock."""

from __future__ import annotations

import json
import os
import random
import socket
import stat
import subprocess
import sys
import textwrap
import threading

import pytest

from selfref_tui.context.mutations import ExperienceRememberMutation
from selfref_tui.selfref import (
    CorruptStoreError,
    SelfReference,
    StoreLockedError,
    UnsupportedSchemaError,
    log_lines,
)
from selfref_tui.selfref.checksum import seal, verify
from selfref_tui.selfref.errors import UnsafeStoreFileError
from selfref_tui.selfref.store import LOG_NAME, META_NAME
from tests.hostile import CORPUS, assert_inert

from .helpers import ROOT, start_writer, turn, wait_ready


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


def sealed(text: str) -> str:
    return seal(text) if text.endswith("}") else text


@pytest.mark.parametrize(
    ("line", "what"),
    [
        ("{oops", "no checksum"),
        ('{"t":"mystery","ts":"x"}', "no checksum"),
        (sealed('{"t":"m","ts":"x","m":{"type":"UserMessageMutation","message":"not a dict"}}'),
         "bad patch"),
        (sealed('{"t":"m","ts":"x","m":{"type":"NoSuchMutation"}}'), "unknown mutation type"),
        (sealed('{"t":"ref","ts":"x","id":7,"content":"c"}'), "ref record"),
        (sealed('{"t":"mystery","ts":"x"}'), "unknown record type"),
        (sealed("[1, 2]" + "}")[:-1], "checksum"),
        ("[" * 100_000, "no checksum"),
    ],
)
def test_damage_mid_file_is_salvaged_and_the_original_kept(tmp_path, line, what):
    log = two_keys(tmp_path)
    replace_line(log, 2, line)  # the first question
    damaged = log.read_bytes()
    store = SelfReference(tmp_path)
    reader = store.open("main", write=False)
    report = reader.salvage
    assert report is not None and report.skipped == 1 and report.lines[0][0] == 2
    assert what in report.lines[0][1]
    message = reader.warnings[0]
    assert str(log) in message and "line 2" in message and "\n" not in message
    assert "left as it is" in message
    assert [m["content"] for m in reader.messages] == ["answer 1", "question 2", "answer 2"]
    assert log.read_bytes() == damaged  # a reader never moves or changes it
    store.release("main")
    # A writer keeps the original, saves the key without the damaged record, and says where.
    writer = store.open("main")
    report = writer.salvage
    assert report.saved and report.kept_as.read_bytes() == damaged
    assert str(report.kept_as) in writer.warnings[0]
    assert [m["content"] for m in writer.messages] == ["answer 1", "question 2", "answer 2"]
    writer.commit(turn(3))
    store.close()
    again = SelfReference(tmp_path).open("main", write=False)
    assert again.warnings == [] and again.salvage is None
    assert [m["content"] for m in again.messages][-2:] == ["question 3", "answer 3"]
    assert SelfReference(tmp_path).open("other", write=False).messages[-1]["content"] == "answer 2"


def test_damage_in_the_last_line_of_a_batch_keeps_the_rest_of_it(tmp_path):
    """A committed batch whose closing line is damaged is not a torn write: its lines stay."""
    log = two_keys(tmp_path)
    lines = log.read_bytes().split(b"\n")
    lines[-2] = lines[-2].replace(b"answer 2", b"answer X")  # the last line, after commit
    log.write_bytes(b"\n".join(lines))
    memory = SelfReference(tmp_path).open("main")
    assert memory.salvage.skipped == 1 and memory.salvage.lines[0][0] == 5
    assert [m["content"] for m in memory.messages][-1] == "question 2"
    store = SelfReference(tmp_path)
    memory.close()
    assert store.open("main").warnings == []  # the saved file is whole: nothing torn now


def test_random_byte_flips_are_caught_or_harmless_and_nothing_is_lost(tmp_path):
    """Every single-byte change of a sealed log: never loaded silently with other content.

    Each case loads either exactly what was committed (no warning) or all but
    the damaged records, with a report naming them and the original kept.
    """
    rng = random.Random(9)
    store = SelfReference(tmp_path)
    memory = store.open("main")
    for i in range(4):
        memory.commit(turn(i), records=[{"t": "ref", "id": f"r{i}", "content": f"ref {i}"}])
    memory.commit([ExperienceRememberMutation("likes tea")])
    expected = [dict(m) for m in memory.history]
    assert memory.experiences == [{"id": "exp_001", "text": "likes tea"}]
    refs = {k: [dict(v) for v in vs] for k, vs in memory.refs.items()}
    store.close()
    log = memory.log_path
    good = log.read_bytes()
    outcomes = {"same": 0, "salvaged": 0}
    for case in range(300):
        data = bytearray(good)
        at = rng.randrange(len(data))
        data[at] = (data[at] + rng.randrange(1, 256)) % 256
        log.write_bytes(bytes(data))
        for p in log.parent.glob(f"{LOG_NAME}.damaged-*"):
            p.unlink()
        memory = SelfReference(tmp_path).open("main")
        history = memory.history
        if memory.salvage is None:
            assert history == expected and memory.refs == refs, (case, at)
            outcomes["same"] += 1
        else:
            outcomes["salvaged"] += 1
            assert memory.salvage.kept_as.read_bytes() == bytes(data)
            assert all(m in expected for m in history if m.get("role") != "system"), (case, at)
            assert set(memory.refs) <= set(refs)
            assert all(e in [{"id": "exp_001", "text": "likes tea"}] for e in memory.experiences)
            lost = (len(expected) - len(history) + len(refs) - len(memory.refs)
                    + 1 - len(memory.experiences))
            assert 0 <= lost <= 2 * memory.salvage.skipped, (case, at)
        memory.close()
    print("byte flips:", outcomes)
    assert outcomes["salvaged"] > 250


def test_a_log_written_before_checksums_loads_and_a_writer_seals_it(tmp_path):
    store = SelfReference(tmp_path)
    memory = store.open("main")
    memory.commit(turn(1))
    store.close()
    log = memory.log_path
    unsealed = [json.loads(line) for line in log.read_text().splitlines()]
    for rec in unsealed:
        rec.pop("c")
    legacy = "\n".join(json.dumps(r) if r["t"] == "header" else
                        json.dumps(r, separators=(",", ":")) for r in unsealed) + "\n"
    log.write_text(legacy)
    reader = SelfReference(tmp_path).open("main", write=False)
    assert reader.warnings == [] and reader.messages[-1]["content"] == "answer 1"
    assert log.read_text() == legacy
    writer = SelfReference(tmp_path).open("main")
    assert writer.warnings == []
    assert all(verify(line) for line in log.read_bytes().splitlines())
    writer.commit(turn(2))
    writer.close()
    log.write_bytes(log.read_bytes().replace(b"answer 1", b"answer !"))
    flipped = SelfReference(tmp_path).open("main", write=False)
    assert flipped.salvage is not None and flipped.salvage.lines[0][0] == 3


def test_a_log_naming_another_key_is_refused_and_never_moved(tmp_path):
    log = two_keys(tmp_path)
    other = SelfReference(tmp_path).key_dir("other") / LOG_NAME
    log.write_bytes(other.read_bytes())  # a copy of another key's log
    before = sorted(p.name for p in log.parent.iterdir())
    for write in (False, True):
        with pytest.raises(CorruptStoreError, match="holds key 'other'"):
            SelfReference(tmp_path).open("main", write=write)
    assert sorted(p.name for p in log.parent.iterdir()) == before


@pytest.mark.parametrize("named,shown", [
    ("ot\x1b[2Jher\x1b]52;c;aGk=\x07", "ot\u241b[2Jher\u241b]52;c;aGk=\u2407"),
    ("m\u0430in\u202e", "m\\u0430in\\u202e"),  # a Cyrillic "а", a hidden override
    (7, "7"),
], ids=["escape-sequences", "lookalike-and-override", "not-text"])
def test_the_key_a_log_names_is_shown_as_a_name(tmp_path, named, shown):
    """The key a moved log's header names is disk text: shown as every name is (control
    characters visible, a lookalike letter or a hidden mark as its escape), not as
    Python's repr, which let "m\u0430in" (Cyrillic "а") read as "main"."""
    log = two_keys(tmp_path)
    header = json.loads(log.read_text().splitlines()[0])
    del header["c"]
    header["key"] = named
    replace_line(log, 1, seal(json.dumps(header, separators=(",", ":"))))
    with pytest.raises(CorruptStoreError) as refused:
        SelfReference(tmp_path).open("main", write=False)
    said = str(refused.value)
    assert_inert(said)
    assert f"says it holds key '{shown}';" in said


@pytest.mark.parametrize("line", [
    '{"t":"ref","ts":"x","id":"r","content":"c","message_index":' + "9" * 5000 + "}",
    '{"t":"m","ts":"x","m":' + "[" * 100_000 + "]" * 100_000 + "}",
])
def test_hostile_json_with_a_valid_checksum_is_damage_not_a_traceback(tmp_path, line):
    log = two_keys(tmp_path)
    replace_line(log, 3, seal(line))
    memory = SelfReference(tmp_path).open("main", write=False)
    assert memory.salvage.lines == [(3, memory.salvage.lines[0][1])]
    assert "too" in memory.salvage.lines[0][1]  # too large / too deeply
    assert [m["content"] for m in memory.messages] == ["question 1", "question 2", "answer 2"]


def test_an_overlong_line_is_damage_without_being_parsed(tmp_path, monkeypatch):
    log = two_keys(tmp_path)
    monkeypatch.setattr(log_lines, "MAX_LINE_BYTES", 1000)
    replace_line(log, 3, seal(json.dumps({"t": "ref", "id": "big", "content": "x" * 2000},
                                         separators=(",", ":"))))
    memory = SelfReference(tmp_path).open("main", write=False)
    assert "bytes long" in memory.salvage.lines[0][1] and "big" not in memory.refs


# -- links, FIFOs and devices in the store ----------------------------------------
def test_a_key_folder_linked_to_another_keys_folder_is_refused_and_touches_nothing(tmp_path):
    two_keys(tmp_path)
    store = SelfReference(tmp_path)
    other = store.key_dir("other")
    before = {p.name: p.read_bytes() for p in other.iterdir() if p.is_file()}
    link = store.key_dir("evil")
    link.symlink_to(other, target_is_directory=True)
    for write in (False, True):
        with pytest.raises(UnsafeStoreFileError, match="symbolic link"):
            SelfReference(tmp_path).open("evil", write=write)
    assert {p.name: p.read_bytes() for p in other.iterdir() if p.is_file()} == before
    listed = store.keys()
    assert "evil" not in {i.key for i in listed}
    assert SelfReference(tmp_path).open("other").messages[-1]["content"] == "answer 2"


@pytest.mark.parametrize("kind", ["symlink", "fifo", "device"])
@pytest.mark.parametrize("name", [LOG_NAME, META_NAME, "writer.lock"])
def test_links_fifos_and_devices_are_refused_without_blocking(tmp_path, kind, name):
    """Run in a child process with a timeout: an open that blocks fails the test, not CI."""
    log = two_keys(tmp_path)
    target = log.with_name(name)
    secret = tmp_path / "secret.txt"
    secret.write_text("not a log\n")
    target.unlink()
    if kind == "symlink":
        target.symlink_to(secret)
    elif kind == "fifo":
        os.mkfifo(target)
    elif os.geteuid() == 0:
        os.mknod(target, 0o600 | stat.S_IFCHR, os.makedev(1, 3))  # like /dev/null
    else:
        pytest.skip("making a device node needs root")
    script = textwrap.dedent(f"""
        from selfref_tui.selfref import SelfReference, StoreError
        store = SelfReference({str(tmp_path)!r})
        print([i.key for i in store.keys()])
        for write in (False, True):
            try:
                m = SelfReference({str(tmp_path)!r}).open("main", write=write)
                print("opened", write, len(m.messages))
                m.close()
            except StoreError as exc:
                print("refused", write, exc)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=30, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert secret.read_text() == "not a log\n"
    if name == META_NAME:  # a cache: ignored, and replaced (never followed) by the writer
        assert "opened False 4" in out and "opened True 4" in out
        assert not target.is_symlink() and stat.S_ISREG(target.lstat().st_mode)
    else:
        assert f"refused True {target} is a" in out
        assert target.is_symlink() or not stat.S_ISREG(target.lstat().st_mode)  # left alone
    if name == LOG_NAME:
        assert f"refused False {target} is a" in out
    if name == "writer.lock":
        assert "opened False 4" in out  # reading needs no lock
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


def test_second_writer_in_the_same_process_is_refused_naming_who_holds_it(tmp_path):
    """A key this process did not let go says which thread and which code took it."""
    first = SelfReference(tmp_path)

    def hold_main() -> None:
        first.open("main")

    holder = threading.Thread(target=hold_main, name="token-count")
    holder.start()
    holder.join()
    with pytest.raises(StoreLockedError, match=f"pid {os.getpid()}") as info:
        SelfReference(tmp_path).open("main")
    message = str(info.value)
    assert "thread 'token-count'" in message and "hold_main (test_damage.py:" in message
    assert "\n" not in message
    first.close()
    SelfReference(tmp_path).open("main").commit(turn(1))


@pytest.mark.parametrize("same_host", [True, False])
def test_who_holds_the_lock_is_shown_inert_whatever_writer_json_says(tmp_path, same_host):
    """writer.json is read back from disk: hostile text in it reaches the error inert."""
    first = SelfReference(tmp_path)
    first.open("main")
    text = "".join(t for _, t in CORPUS)
    [info] = list(tmp_path.rglob("writer.json"))
    info.write_text(json.dumps({
        "schema": 1, "pid": os.getpid() if same_host else text,
        "host": socket.gethostname() if same_host else text,
        "started": text, "thread": "t", "by": text}))
    with pytest.raises(StoreLockedError) as error:
        SelfReference(tmp_path).open("main")
    message = str(error.value)
    assert_inert(message)
    assert ("taken by" in message) is same_host and "\n" not in message
    first.close()


@pytest.mark.parametrize(("key", "hint", "shown"), [
    ("main", "--read-only --key main`", "main"),
    ("my chat", "--read-only --key 'my chat'`", "my chat"),
    ("-dash", "--read-only --key=-dash`", "-dash"),
    ("ma\u200bin", "--read-only --key $'ma\\u200bin'`", "ma\\u200bin"),  # bash reads it back
    ("m\u0430in", "--read-only --key $'m\\u0430in'`", "m\\u0430in"),
])
def test_the_locked_message_names_the_conversation_as_a_shell_word(tmp_path, key, hint,
                                                                    shown):
    """The read-only hint is meant to be copied: a name with a space was two words, and
    an invisible character in a name reached the terminal as it was."""
    from selfref_tui.selfref.keys import write_empty_meta
    from selfref_tui.selfref.log_lines import SCHEMA

    first = SelfReference(tmp_path)
    write_empty_meta(first.key_dir(key), key, SCHEMA)  # made before names were checked
    first.open(key)
    with pytest.raises(StoreLockedError) as error:
        SelfReference(tmp_path).open(key)
    message = str(error.value)
    assert message.endswith(hint + "."), message
    # named as the lists name it, where the message starts too
    assert message.startswith(f"Conversation '{shown}' is open"), message
    assert "\u200b" not in message and "\u0430" not in message
    first.close()
