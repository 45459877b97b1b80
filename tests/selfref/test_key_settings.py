"""A conversation's model, profile and instructions, kept beside its log."""

from __future__ import annotations

import os
import stat

import pytest

from selfref_tui.selfref.errors import StoreError
from selfref_tui.selfref.key_settings import (
    MAX_INSTRUCTIONS,
    SETTINGS_NAME,
    KeySettings,
    check_instructions,
)
from selfref_tui.selfref.reference import SelfReference
from tests.selfref.helpers import turn


def test_settings_are_kept_privately_and_read_back_by_another_process(tmp_path):
    data = tmp_path / "data"
    with SelfReference(data) as store:
        memory = store.open("main")
        assert memory.settings == KeySettings()
        memory.commit(turn(1))
        memory.save_settings(KeySettings(model="m1", instructions="Be brief."))
        assert memory.settings.model == "m1"
        path = memory.key_dir / SETTINGS_NAME
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        log_before = memory.log_path.read_bytes()
    assert log_before == (memory.key_dir / "log.jsonl").read_bytes()  # no patch: not history
    with SelfReference(data) as store:
        assert store.open("main", write=False).settings == KeySettings(
            model="m1", instructions="Be brief.")


def test_a_read_only_key_refuses_and_a_rename_keeps_them(tmp_path):
    data = tmp_path / "data"
    with SelfReference(data) as store:
        memory = store.open("main")
        memory.commit(turn(1))
        memory.save_settings(KeySettings(profile="local"))
        store.release("main")
        with pytest.raises(StoreError):
            store.open("main", write=False).save_settings(KeySettings())
        store.release("main")
        store.rename("main", "renamed")
        assert store.open("renamed", write=False).settings.profile == "local"


def test_a_link_or_garbage_reads_as_nothing_chosen(tmp_path):
    data = tmp_path / "data"
    with SelfReference(data) as store:
        key_dir = store.open("main").key_dir
    outside = tmp_path / "outside.json"
    outside.write_text('{"instructions": "from elsewhere"}')
    os.symlink(outside, key_dir / SETTINGS_NAME)
    with SelfReference(data) as store:
        assert store.open("main", write=False).settings == KeySettings()
    os.unlink(key_dir / SETTINGS_NAME)
    (key_dir / SETTINGS_NAME).write_text('{"model": 3, "instructions": "kept"}')
    with SelfReference(data) as store:
        assert store.open("main", write=False).settings == KeySettings(instructions="kept")


def test_instructions_are_trimmed_and_bounded():
    assert check_instructions("  hi \n") == "hi"
    with pytest.raises(ValueError, match="characters long"):
        check_instructions("x" * (MAX_INSTRUCTIONS + 1))


def test_a_settings_file_that_cannot_be_replaced_is_named_not_its_temporary_copy(tmp_path):
    """The error names the file in the way (settings.json), which the person can look at:
    it named the temporary copy the rename came from, gone by the time it was read."""
    with SelfReference(tmp_path / "data") as store:
        memory = store.open("main")
        (memory.key_dir / SETTINGS_NAME / "in-the-way").mkdir(parents=True)
        with pytest.raises(StoreError) as info:
            memory.save_settings(KeySettings(model="m1"))
    said = str(info.value)
    assert f"Cannot write {memory.key_dir / SETTINGS_NAME}: Is a directory" in said
    assert ".tmp" not in said
    assert memory.settings == KeySettings()
