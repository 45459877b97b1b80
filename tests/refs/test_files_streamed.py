"""Appends and inserts into existing files, a piece at a time: same bytes as whole-file
editing, the file never held in memory, and checkpoints that still restore."""

from __future__ import annotations

import hashlib
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from selfref_tui.refs.fds import FdTable
from selfref_tui.selfref import file_edit
from selfref_tui.selfref.checkpoints import TOO_LARGE, Checkpoints, changes, restore
from selfref_tui.selfref.file_walk import FileWriteError
from selfref_tui.selfref.files import fd_to_file, write_file
from tests.refs.helpers import write_past_a_size_limit


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def lines_of(data: bytes) -> list[bytes]:
    """``data`` split after each newline, a last line without one kept."""
    parts = data.split(b"\n")
    out = [p + b"\n" for p in parts[:-1]]
    return [*out, parts[-1]] if parts[-1] else out


def inserted(old: bytes, data: bytes, line: int) -> bytes | int:
    """What inserting ``data`` before ``line`` makes of ``old`` (the whole-file rule), or
    the line count when ``line`` is out of range."""
    lines = lines_of(old)
    if not 1 <= line <= len(lines) + 1:
        return len(lines)
    before, after = lines[: line - 1], lines[line - 1:]
    if before and not before[-1].endswith(b"\n"):
        before[-1] += b"\n"
    if after and data and not data.endswith(b"\n"):
        data += b"\n"
    return b"".join(before) + data + b"".join(after)


def appended(old: bytes, data: bytes, separate: bool) -> bytes:
    if separate and old.strip():
        old = old.rstrip(b"\n") + b"\n\n"
    return old + data


#: the fixtures are set up once for all examples: each example writes its own file anew
REUSED = HealthCheck.function_scoped_fixture
TEXT = st.binary(max_size=60).map(lambda b: b.replace(b"\x00", b"\n").replace(b"\x01", b"\n"))


@pytest.fixture
def small_pieces(monkeypatch):
    """Pieces of 1–7 bytes: every line end falls on a piece's edge somewhere."""
    def use(size: int) -> None:
        monkeypatch.setattr(file_edit, "CHUNK_BYTES", size)
    return use


@settings(max_examples=300, deadline=None, suppress_health_check=[REUSED])
@given(old=TEXT, new=st.text(alphabet="ab\n", max_size=6), line=st.integers(-1, 14),
       piece=st.integers(1, 7))
def test_an_insert_makes_the_same_bytes_as_whole_file_editing(tmp_path, small_pieces, old,
                                                              new, line, piece):
    small_pieces(piece)
    target = tmp_path / "f.txt"
    target.write_bytes(old)
    want = inserted(old, new.encode(), line)
    if isinstance(want, int):
        with pytest.raises(FileWriteError) as info:
            write_file(target, new, mode="insert", insert_at_line=line, roots=[tmp_path])
        assert info.value.kind == "invalid_range"
        assert f"has {want} lines; insert_at_line must be 1 to {want + 1}" in str(info.value)
        assert target.read_bytes() == old
    else:
        write_file(target, new, mode="insert", insert_at_line=line, roots=[tmp_path])
        assert target.read_bytes() == want
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".selfref-")]


@settings(max_examples=200, deadline=None, suppress_health_check=[REUSED])
@given(old=st.binary(max_size=40).map(lambda b: b.replace(b"\x00", b"\n")),
       new=st.text(alphabet="ab\n ", max_size=6), separate=st.booleans(),
       linked=st.booleans(), piece=st.integers(1, 7))
def test_an_append_makes_the_same_bytes_as_whole_file_editing(tmp_path, small_pieces, old, new,
                                                              separate, linked, piece):
    small_pieces(piece)
    target = tmp_path / "f.txt"
    target.write_bytes(old)
    other = tmp_path / "other-name"
    if linked:
        other.unlink(missing_ok=True)
        os.link(target, other)
    write_file(target, new, mode="append", separate=separate, roots=[tmp_path])
    assert target.read_bytes() == appended(old, new.encode(), separate)
    if linked:  # the file's other name keeps its content, as a rename leaves it
        assert other.read_bytes() == old
        other.unlink()


def _read_by_this_process() -> int:
    with open("/proc/self/io") as f:
        return int(next(line for line in f if line.startswith("rchar:")).split()[1])


@pytest.mark.skipif(not os.path.exists("/proc/self/io"), reason="Linux's per-process I/O count")
def test_an_append_does_not_read_the_file_it_adds_to(tmp_path):
    """Appending a line to a 32 MiB log read and rewrote all of it."""
    log = tmp_path / "big.log"
    with open(log, "wb") as f:
        f.write(b"x" * 2**20 * 32)
    before = _read_by_this_process()
    write_file(log, "one more line\n", mode="append", roots=[tmp_path])
    assert _read_by_this_process() - before < 2**20
    assert log.stat().st_size == 2**20 * 32 + 14
    with open(log, "rb") as f:
        f.seek(-15, os.SEEK_END)
        assert f.read() == b"xone more line\n"


def test_an_append_that_fails_leaves_the_file_as_it_was(tmp_path):
    """A real failure half-way: a child process limited to 64 KiB files appends 1 MB to a
    file of 1,000 bytes ending in blank lines (a person's append cuts those first)."""
    f = tmp_path / "f.txt"
    old = b"x" * 997 + b"\n\n\n"
    f.write_bytes(old)
    proc = write_past_a_size_limit(f, tmp_path, mode="append", separate=True)
    assert proc.returncode == 3, proc.stderr
    assert "it was left as it was" in proc.stdout
    assert f.read_bytes() == old


@pytest.mark.parametrize("mode", ["append", "insert"])
def test_a_result_over_the_limit_is_hashed_not_kept_and_still_rewinds(tmp_path, mode):
    """The model creates a file, then grows it past what a checkpoint keeps. The new
    content is not copied into the key's folder, but its hash is right: rewinding both
    writes removes the file it made, and undoing that rewind says it cannot write the
    large version back."""
    work = tmp_path / "work"
    work.mkdir()
    checkpoints = Checkpoints(tmp_path / "key", limit=100)
    table = FdTable()
    first = table.add_fd("line one\nline two\n")["id"]
    more = table.add_fd("z" * 150 + "\n")["id"]
    records: list[dict] = []
    where = {"insert_at_line": 2} if mode == "insert" else {}
    for fd, how, extra in ((first, "write", {}), (more, mode, where)):
        out = fd_to_file(table, fd, "data.txt", mode=how, roots=[work],
                         checkpoint=checkpoints.recorder(fd, records, "now"), **extra)
        assert "<fd_error" not in out, out
    content = (work / "data.txt").read_bytes()
    grown = records[1]
    assert grown["before"] == sha(b"line one\nline two\n")
    assert grown["after"] == sha(content) and grown["after_size"] == len(content) > 100
    assert sorted(p.name for p in checkpoints.folder.iterdir()) == [
        sha(b"line one\nline two\n")]  # the first write's result, nothing larger

    (change,) = changes(records)
    assert change.before is None and change.why_left(sha(content)) == ""
    done = restore(checkpoints, [change], [work])
    assert done.removed == [str(work / "data.txt")] and not (work / "data.txt").exists()
    redo = change.reversed()
    assert redo.before == TOO_LARGE
    why = redo.why_left(None)
    assert why.startswith("cannot be restored: the model's version held")
    assert restore(checkpoints, [redo], [work]).skipped == [(str(work / "data.txt"), why)]


def test_an_insert_over_the_limit_keeps_its_size_not_its_bytes(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (work / "big.txt").write_bytes(b"row\n" * 50)
    checkpoints = Checkpoints(tmp_path / "key", limit=100)
    table = FdTable()
    fd = table.add_fd("new row\n")["id"]
    records: list[dict] = []
    out = fd_to_file(table, fd, "big.txt", mode="insert", insert_at_line=3, roots=[work],
                     checkpoint=checkpoints.recorder("c1", records, "now"))
    assert "<fd_error" not in out, out
    assert (work / "big.txt").read_bytes() == b"row\n" * 2 + b"new row\n" + b"row\n" * 48
    (record,) = records
    assert record["before"] == TOO_LARGE and record["before_size"] == 200
    assert record["after_size"] == 208 and not checkpoints.folder.exists()


@pytest.mark.parametrize("mode", ["write", "append", "insert"])
def test_a_read_only_file_is_changed_by_no_mode(tmp_path, mode):
    """A file the person made read-only (no write permission; for root, immutable) is
    left as it is by every mode, with one line saying so. An append opened it in
    place and was refused ("cannot read" at first), while a write or an insert
    replaced it by rename, which needs only the folder's permission."""
    from tests.selfref.test_store_cli import denied

    target = tmp_path / "notes.txt"
    target.write_bytes(b"kept\n")
    with denied(target, 0o444), pytest.raises(FileWriteError) as refused:
        write_file("notes.txt", "more\n", mode=mode, roots=[tmp_path],
                   insert_at_line=1 if mode == "insert" else None)
    assert str(refused.value).startswith("notes.txt is read-only; nothing was changed")
    assert target.read_bytes() == b"kept\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]  # no temp file left
