"""The conversation shown last, kept per data dir with the store's rules."""

from __future__ import annotations

import os
import stat

import pytest

from selfref_tui.selfref.last_used import (
    MAX_STATE_BYTES,
    STATE_NAME,
    read_last_key,
    write_last_key,
)
from selfref_tui.selfref.reference import SelfReference
from tests.selfref.helpers import turn


def _make(data_dir, key: str) -> None:
    with SelfReference(data_dir) as store:
        store.open(key).commit(turn(1))


def test_the_last_key_is_read_back_and_the_file_is_private(tmp_path):
    data = tmp_path / "data"
    _make(data, "teatime")
    assert read_last_key(data) == (None, None)  # nothing recorded yet, nothing odd
    assert write_last_key(data, "teatime") is None
    assert read_last_key(data) == ("teatime", None)
    assert stat.S_IMODE(os.stat(data / STATE_NAME).st_mode) == 0o600


def test_a_key_deleted_since_or_a_fork_is_not_offered(tmp_path):
    data = tmp_path / "data"
    _make(data, "gone")
    write_last_key(data, "gone")
    with SelfReference(data) as store:
        store.trash("gone")
    assert read_last_key(data) == (None, None)  # no problem: gone by the person's hand
    assert write_last_key(data, "main::fork::1") is None
    assert read_last_key(data) == (None, None)  # not recorded
    # nor opened when the file names one that exists: the agent's, hidden from lists
    _make(data, "main::fork::1")
    (data / STATE_NAME).write_text('{"last_key": "main::fork::1"}')
    key, problem = read_last_key(data)
    assert key is None and problem is not None and "not what selfref-tui writes" in problem


def test_garbage_in_its_place_is_ignored_with_a_warning_and_written_anew(tmp_path):
    data = tmp_path / "data"
    _make(data, "main")
    for garbage in ('{"last_key": 3}', "not json", '["main"]', '{"last_key": "../x"}',
                    "[" * 3000, '{"last_key": "\u001b]52;c;x\u0007"}'):
        (data / STATE_NAME).write_text(garbage)
        key, problem = read_last_key(data)
        assert key is None and problem is not None, garbage
        assert problem.startswith(f"{data / STATE_NAME} is not what selfref-tui writes")
        assert "\n" not in problem and "\x1b" not in problem and "52;" not in problem
    assert write_last_key(data, "main") is None  # ours, garbled: replaced
    assert read_last_key(data) == ("main", None)


@pytest.mark.parametrize("kind", ["link", "fifo", "zero", "large"])
def test_a_hostile_entry_is_not_followed_opened_or_replaced(tmp_path, kind):
    """Read with the store's rules (no link, FIFO or device; at most a few KB),
    told in one line, and left as it was: writing the next key does not replace it."""
    data = tmp_path / "data"
    _make(data, "main")
    path = data / STATE_NAME
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text('{"last_key": "main"}')
    if kind == "link":
        os.symlink(elsewhere, path)
    elif kind == "fifo":
        os.mkfifo(path)  # an open without O_NONBLOCK would wait for a writer forever
    elif kind == "zero":
        os.symlink("/dev/zero", path)
    else:
        path.write_bytes(b'{"last_key": "main"' + b" " * (8 * 1024 * 1024) + b"}")
    before = os.lstat(path)
    key, problem = read_last_key(data)
    assert key is None and problem is not None
    said = {"link": "is a symbolic link", "fifo": "is a FIFO (named pipe)",
            "zero": "is a symbolic link", "large": f"is over {MAX_STATE_BYTES:,} bytes"}[kind]
    assert problem.startswith(f"{path} {said}") and "\n" not in problem
    assert "move it out of the way" in problem
    assert write_last_key(data, "main") == problem  # refused, the same line
    after = os.lstat(path)
    assert (after.st_ino, after.st_mode, after.st_size) == (before.st_ino, before.st_mode,
                                                            before.st_size)
    assert elsewhere.read_text() == '{"last_key": "main"}'
    os.unlink(path)  # moved out of the way: used again
    assert write_last_key(data, "main") is None
    assert read_last_key(data) == ("main", None)
