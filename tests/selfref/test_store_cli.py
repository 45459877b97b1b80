"""What a person sees on the command line when the store is damaged, hostile or locked down.

Permission problems are made real: ``chmod`` for a normal user; as root (who
ignores permission bits) ``chattr +i``, which refuses root too.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from selfref_tui.selfref import SelfReference
from selfref_tui.selfref.store import LOG_NAME
from tests.cli.helpers import cli, one_line, run

from .helpers import turn

ROOT_USER = os.geteuid() == 0


def make_key(tmp_path: Path, key: str = "main") -> Path:
    store = SelfReference(tmp_path / "data")
    memory = store.open(key)
    memory.commit(turn(1))
    memory.commit(turn(2))
    store.close()
    return memory.log_path


@contextlib.contextmanager
def denied(path: Path, mode: int) -> Iterator[None]:
    """No access to ``path`` for this user (``mode`` for chmod; root: immutable)."""
    if ROOT_USER:
        if shutil.which("chattr") is None:
            pytest.skip("root ignores permission bits and chattr is not available")
        if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode:
            pytest.skip("chattr +i is not supported here")
        try:
            yield
        finally:
            subprocess.run(["chattr", "-i", str(path)], check=True)
    else:
        before = path.stat().st_mode
        path.chmod(mode)
        try:
            yield
        finally:
            path.chmod(before)


def unwritable(data: Path) -> list[Path]:
    """What makes a data folder take no writes at all: every file and folder in it."""
    inside = sorted(data.rglob("*"), key=lambda path: -len(path.parts))  # deepest first
    return [*inside, data]


def test_a_read_only_log_is_exit_3_naming_the_file(tmp_path):
    log = make_key(tmp_path)
    with denied(log, 0o400):
        result = cli("ask", "--demo", "hello")
    assert result.returncode == 3, result.stderr
    line = one_line(result.stderr)
    assert str(log) in line and "chmod" in line and "Traceback" not in result.stderr
    assert "answer 2" in log.read_text()


def test_a_folder_without_access_is_exit_3_naming_it(tmp_path):
    log = make_key(tmp_path)
    folder = log.parent if not ROOT_USER else log.parent.parent  # root: no new key folder
    key = "main" if not ROOT_USER else "fresh"
    with denied(folder, 0o000):
        results = [cli("ask", "--demo", "--key", key, "hello")]
        if not ROOT_USER:
            results.append(cli("refs", "list"))
    for result in results:
        assert result.returncode == 3, result.stderr
        line = one_line(result.stderr)
        assert str(folder) in line and "--data-dir" in line


def test_a_data_dir_that_takes_no_writes_points_at_read_only_and_data_dir(tmp_path):
    """What to do said in the flags that work: --read-only reads it as it is (and does),
    --data-dir names another folder."""
    make_key(tmp_path)
    with contextlib.ExitStack() as stack:
        for path in unwritable(tmp_path / "data"):
            stack.enter_context(denied(path, 0o500 if path.is_dir() else 0o400))
        results = [cli("ask", "--demo", "hello"), cli("ask", "--demo", "--key", "new", "hi")]
        for result in results:
            assert result.returncode == 3, result.stderr
            line = one_line(result.stderr)
            assert "--read-only to read the conversations as they are" in line, line
            assert "--data-dir naming a writable folder" in line, line
        read = cli("--read-only", "history")
    assert read.returncode == 0, read.stderr
    assert "answer 2" in read.stdout


def test_an_empty_data_dir_that_takes_no_writes_is_not_said_to_be_missing(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    with denied(data, 0o500):
        result = cli("ask", "--demo", "hello")
    assert result.returncode == 3, result.stderr
    line = one_line(result.stderr)
    assert line.startswith(f"selfref-tui: Cannot write in the data directory {data}"), line
    # SELFREF_DATA_DIR chose it here (the tests' environment), and is named
    assert "--read-only" in line and "point SELFREF_DATA_DIR at a writable folder" in line


@pytest.mark.parametrize(("code", "said"), [
    (errno.EROFS, "--read-only to read the conversations as they are, or with --data-dir"),
    (errno.ENOSPC, "free some space, or start selfref-tui with --data-dir"),
])
def test_a_disk_that_takes_no_writes_says_which_flags_help(tmp_path, code, said):
    from selfref_tui.selfref.errors import denied as store_denied

    log = tmp_path / "log.jsonl"
    error = OSError(code, os.strerror(code), str(log))
    message = str(store_denied(error, log, "write"))
    assert message.startswith(f"Cannot write {log}: {os.strerror(code)}; ")
    assert said in message and "--read-only" in message


def test_damage_is_salvaged_and_reported_on_stderr(tmp_path):
    log = make_key(tmp_path)
    lines = log.read_bytes().split(b"\n")
    lines[2] = lines[2].replace(b"answer 1", b"answer !")  # a flipped byte, line 3
    lines[4] = b"[" * 100_000  # hostile nesting, line 5
    log.write_bytes(b"\n".join(lines))
    result = cli("context", "show")
    assert result.returncode == 0, result.stderr
    note = one_line(result.stderr)
    assert "skipped 2 damaged records" in note and "line 3" in note and "line 5" in note
    assert "Traceback" not in result.stderr
    result = cli("ask", "--demo", "hello")  # a writer: keeps the original, saves the rest
    assert result.returncode == 0, result.stderr
    assert "kept as" in result.stderr and ".damaged-" in result.stderr
    kept = list(log.parent.glob(f"{LOG_NAME}.damaged-*"))
    assert len(kept) == 1 and kept[0].read_bytes() == b"\n".join(lines)
    again = cli("context", "show")
    assert again.returncode == 0 and again.stderr == ""


def test_the_damage_note_is_said_once_by_the_program(tmp_path):
    """Python's last-resort log handler (none is configured outside tests) printed the
    store's warning raw, before the program's own note said it again."""
    log = make_key(tmp_path)
    lines = log.read_bytes().split(b"\n")
    lines[2] = lines[2].replace(b"answer 1", b"answer !")
    log.write_bytes(b"\n".join(lines))
    result = run("history")
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("skipped 1 damaged record") == 1, result.stderr
    assert result.stderr.startswith("selfref-tui: ")
    assert "open the conversation in the app" in result.stderr  # not "the key"
    assert " key " not in result.stderr


def test_a_fifo_log_is_exit_3_and_never_hangs(tmp_path):
    """In a real child with a timeout: an open that blocked would hang this process."""
    log = make_key(tmp_path)
    log.unlink()
    os.mkfifo(log)
    result = run("refs", "list")
    assert result.returncode == 3, result.stderr
    assert "FIFO" in one_line(result.stderr) and str(log) in result.stderr
