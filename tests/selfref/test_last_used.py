"""The conversation shown last, kept per data dir with the store's rules."""

from __future__ import annotations

import os
import stat

from selfref_tui.selfref.last_used import STATE_NAME, read_last_key, write_last_key
from selfref_tui.selfref.reference import SelfReference
from tests.selfref.helpers import turn


def _make(data_dir, key: str) -> None:
    with SelfReference(data_dir) as store:
        store.open(key).commit(turn(1))


def test_the_last_key_is_read_back_and_the_file_is_private(tmp_path):
    data = tmp_path / "data"
    _make(data, "teatime")
    assert read_last_key(data) is None  # nothing recorded yet
    assert write_last_key(data, "teatime")
    assert read_last_key(data) == "teatime"
    assert stat.S_IMODE(os.stat(data / STATE_NAME).st_mode) == 0o600


def test_a_key_deleted_since_or_a_fork_is_not_offered(tmp_path):
    data = tmp_path / "data"
    _make(data, "gone")
    write_last_key(data, "gone")
    with SelfReference(data) as store:
        store.trash("gone")
    assert read_last_key(data) is None
    assert not write_last_key(data, "main::fork::1")


def test_a_link_or_garbage_in_its_place_means_no_last_key(tmp_path):
    data = tmp_path / "data"
    _make(data, "main")
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text('{"last_key": "main"}')
    os.symlink(elsewhere, data / STATE_NAME)
    assert read_last_key(data) is None  # never followed
    os.unlink(data / STATE_NAME)
    for garbage in ('{"last_key": 3}', "not json", '["main"]', '{"last_key": "../x"}'):
        (data / STATE_NAME).write_text(garbage)
        assert read_last_key(data) is None
    # writing replaces whatever was there (a link is replaced, not followed)
    os.unlink(data / STATE_NAME)
    os.symlink(elsewhere, data / STATE_NAME)
    assert write_last_key(data, "main")
    assert not os.path.islink(data / STATE_NAME)
    assert elsewhere.read_text() == '{"last_key": "main"}'
    assert read_last_key(data) == "main"
