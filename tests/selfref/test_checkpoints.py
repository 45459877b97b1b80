"""Restoring the files a rewind offers: real files, real checkpoint blobs."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from selfref_tui.selfref.checkpoints import Checkpoints, FileChange, restore, standing


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def place(tmp_path: Path) -> tuple[Checkpoints, Path]:
    work = tmp_path / "work"
    work.mkdir()
    return Checkpoints(tmp_path / "key"), work


def test_a_file_already_as_it_was_is_left_and_not_called_changed(place):
    """Two changes of one path (a rewind that takes one write out and brings an older
    one back): when the file already holds what restoring would write, nothing is
    done and nothing is said to be in the way."""
    checkpoints, work = place
    old = checkpoints.keep(b"old\n")
    target = work / "a.txt"
    target.write_bytes(b"old\n")
    done = restore(checkpoints, [FileChange(str(target), old, sha(b"new\n"))], [work])
    assert done.skipped == [] and done.restored == []
    assert target.read_bytes() == b"old\n"


def test_what_is_not_as_the_model_left_it_is_never_written(place, tmp_path):
    checkpoints, work = place
    old, new = checkpoints.keep(b"old\n"), checkpoints.keep(b"new\n")
    target = work / "a.txt"
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"new\n")

    target.mkdir()  # now a directory
    done = restore(checkpoints, [FileChange(str(target), old, new)], [work])
    assert [p for p, _ in done.skipped] == [str(target)] and target.is_dir()
    target.rmdir()

    target.symlink_to(outside)  # now a link out of the allowed folder, to the same bytes
    for change in (FileChange(str(target), old, new), FileChange(str(target), None, new)):
        done = restore(checkpoints, [change], [work])
        assert done.skipped and not done.restored and not done.removed
    assert target.is_symlink() and outside.read_bytes() == b"new\n"
    target.unlink()

    link = work / "sub"
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "a.txt").write_bytes(b"new\n")
    link.symlink_to(tmp_path / "elsewhere")  # a folder on the way leads out
    done = restore(checkpoints, [FileChange(str(link / "a.txt"), old, new)], [work])
    assert_said_to_the_person(done.skipped[0][1], work)
    assert (tmp_path / "elsewhere" / "a.txt").read_bytes() == b"new\n"

    # a record naming a path outside the roots (another working folder, a crafted log)
    done = restore(checkpoints, [FileChange(str(outside), old, new)], [work])
    assert done.skipped and outside.read_bytes() == b"new\n"  # outside the roots
    assert_said_to_the_person(done.skipped[0][1], work)
    assert done.lines() == [f"left {outside} as it is: {done.skipped[0][1]}"]


def test_a_file_outside_the_roots_is_not_offered_as_one_restoring_would_change(place, tmp_path):
    """What a list of files says before the person chooses (the app's dialog, the command
    line's rewind) agrees with what restoring then does: a file outside the allowed
    directories, though it holds what the model left, is one that cannot be restored."""
    checkpoints, work = place
    old, new = checkpoints.keep(b"old\n"), checkpoints.keep(b"new\n")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "a.txt").write_bytes(b"new\n")
    (work / "sub").symlink_to(tmp_path / "elsewhere")  # a folder on the way leads out
    (work / "b.txt").write_bytes(b"new\n")
    out, inside = FileChange(str(work / "sub" / "a.txt"), old, new), FileChange(
        str(work / "b.txt"), old, new)
    assert out.why_left(sha(b"new\n")) == ""  # as the model left it: only the roots refuse it
    why = standing(out, [work])
    assert f"outside the allowed directories ({work})" in why
    assert "cannot be restored from here" in why and "not touched" not in why
    assert standing(out, None) == "" and standing(inside, [work]) == ""
    done = restore(checkpoints, [out, inside], [work])
    assert [path for path, _ in done.skipped] == [out.path] and done.restored == [inside.path]


def assert_said_to_the_person(why: str, root: Path) -> None:
    """What happened (outside which folders, nothing touched) and what the person can do;
    not the model's instruction to write elsewhere."""
    assert f"outside the allowed directories ({root})" in why and "not touched" in why
    assert "allowed_roots" in why and "rewind to the same message again" in why
    assert "write to a relative path" not in why and "\n" not in why


def test_a_missing_or_changed_copy_is_said_and_the_file_kept(place):
    checkpoints, work = place
    target = work / "a.txt"
    target.write_bytes(b"new\n")
    new = sha(b"new\n")
    old = checkpoints.keep(b"old\n")
    for before, why in (("0" * 64, "is missing"), ("../../etc/passwd", "not a checkpoint")):
        done = restore(checkpoints, [FileChange(str(target), before, new)], [work])
        assert why in done.skipped[0][1]
    blob = checkpoints.folder / old
    os.chmod(blob, 0o600)
    blob.write_bytes(b"tampered")
    done = restore(checkpoints, [FileChange(str(target), old, new)], [work])
    assert "was changed" in done.skipped[0][1]
    assert target.read_bytes() == b"new\n"


def test_a_file_over_the_limit_is_not_kept_and_a_rewind_says_it_cannot_be_restored(place):
    """Overwriting a file of gigabytes read the whole of it for its checkpoint (and kept a
    copy). Over the limit it is neither read nor kept: its record says so, and a restore
    leaves the file and says why. Sparse: the test costs no disk."""
    from selfref_tui.refs.fds import FdTable
    from selfref_tui.selfref.checkpoints import MAX_KEPT_BYTES, TOO_LARGE, changes
    from selfref_tui.selfref.files import fd_to_file

    checkpoints, work = place
    big = work / "big.log"
    with open(big, "wb") as f:
        f.truncate(MAX_KEPT_BYTES + 1)
    small = work / "small.txt"
    small.write_bytes(b"earlier\n")
    table = FdTable()
    fd = table.add_fd("short new text\n")["id"]
    records: list[dict] = []
    for target in (big, small):
        out = fd_to_file(table, fd, str(target), roots=[work],
                         checkpoint=checkpoints.recorder("c1", records, "now"))
        assert "<fd_error" not in out, out
    assert big.read_bytes() == small.read_bytes() == b"short new text\n"
    big_record, small_record = records
    assert big_record["before"] == TOO_LARGE and big_record["before_size"] == MAX_KEPT_BYTES + 1
    assert small_record["before"] == sha(b"earlier\n") and "before_size" not in small_record
    kept = sorted(p.stat().st_size for p in checkpoints.folder.iterdir())
    assert kept == [8, 15]  # the small file's old bytes and the new text: nothing large

    listed = changes(records)
    why = listed[0].why_left(sha(b"short new text\n"))
    assert why.startswith("cannot be restored: it held 32 MiB before the model wrote it")
    assert listed[1].why_left(sha(b"short new text\n")) == ""
    done = restore(checkpoints, listed, [work])
    assert done.skipped == [(str(big), why)] and done.restored == [str(small)]
    assert big.read_bytes() == b"short new text\n" and small.read_bytes() == b"earlier\n"


@pytest.mark.parametrize("swap", ["file-for-a-link", "folder-for-a-link", "content",
                                  "file-for-a-link-when-removing"])
def test_a_file_swapped_after_it_was_looked_at_is_neither_written_nor_removed(
        place, monkeypatch, swap):
    """A restore looks at the file by name, then writes it: in between, someone swaps the
    file (or a folder on its way) for a link to another file inside the allowed folder,
    one holding the very bytes the model left, or changes what it holds. The write or
    removal looks again through its own descriptors: that other file is never written or
    removed in its place, and the change made meanwhile is kept."""
    from selfref_tui.selfref import checkpoints as module

    checkpoints, work = place
    old, new = checkpoints.keep(b"old\n"), checkpoints.keep(b"new\n")
    (work / "sub").mkdir()
    target = work / "sub" / "a.txt"
    target.write_bytes(b"new\n")
    victim = work / "other" / "a.txt"  # inside the allowed folder, as the model left it
    victim.parent.mkdir()
    victim.write_bytes(b"new\n")
    looked = module.state_of

    def look_then_swap(path: str) -> str | None:
        now = looked(path)
        if swap == "folder-for-a-link":
            (work / "sub").rename(work / "sub-moved")
            (work / "sub").symlink_to("other")
        elif swap == "content":
            target.write_bytes(b"the person's edit\n")
        else:
            target.unlink()
            target.symlink_to(victim)
        return now

    monkeypatch.setattr(module, "state_of", look_then_swap)
    change = FileChange(str(target), None if swap.endswith("removing") else old, new)
    done = restore(checkpoints, [change], [work])
    assert done.restored == [] and done.removed == []
    assert [path for path, _ in done.skipped] == [str(target)]
    why = done.skipped[0][1]
    assert (why == "it was changed since the model wrote it" if swap == "content"
            else "a link is on the way" in why and "\n" not in why)
    assert victim.read_bytes() == b"new\n"
    if swap == "content":
        assert target.read_bytes() == b"the person's edit\n"
    elif swap == "folder-for-a-link":
        assert (work / "sub-moved" / "a.txt").read_bytes() == b"new\n"
    else:
        assert target.is_symlink()


@pytest.mark.parametrize("planted", ["fifo", "link"])
def test_a_copy_that_is_a_fifo_or_a_link_is_one_file_left_not_a_failed_restore(
        place, tmp_path, planted):
    """The store refuses such an entry (never followed, never opened to block): it raised
    out of the restore, so no other file was restored and nothing was said, and out of
    the model's next write of those bytes, which failed without an fd_error."""
    from selfref_tui.refs.fds import FdTable
    from selfref_tui.selfref.checkpoints import CheckpointError
    from selfref_tui.selfref.files import fd_to_file

    checkpoints, work = place
    old, new = checkpoints.keep(b"old\n"), checkpoints.keep(b"new\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_bytes(b"old\n")
    blob = checkpoints.folder / old
    blob.unlink()
    if planted == "fifo":
        os.mkfifo(blob)
    else:
        blob.symlink_to(elsewhere)
    first, second = work / "a.txt", work / "b.txt"
    first.write_bytes(b"new\n")
    second.write_bytes(b"new\n")
    other = checkpoints.keep(b"other\n")
    done = restore(checkpoints, [FileChange(str(first), old, new),
                                 FileChange(str(second), other, new)], [work])
    assert done.restored == [str(second)] and second.read_bytes() == b"other\n"
    assert [path for path, _ in done.skipped] == [str(first)]
    assert "not a regular file" in done.skipped[0][1] and first.read_bytes() == b"new\n"
    with pytest.raises(CheckpointError):
        checkpoints.keep(b"old\n")
    table = FdTable()
    fd = table.add_fd("old\n")["id"]  # the copy of what it writes is the planted entry
    records: list[dict] = []
    out = fd_to_file(table, fd, str(first), roots=[work],
                     checkpoint=checkpoints.recorder("c1", records, "now"))
    assert out.startswith("<fd_error") and "nothing was written" in out
    assert first.read_bytes() == b"new\n" and records == []
    assert elsewhere.read_bytes() == b"old\n"


def test_a_folder_on_the_way_that_became_a_link_inside_is_not_offered(place):
    """The list says what the restore will do: a file reached through a link now (though
    it stays inside the allowed folder) is one the restore leaves, and says so in both."""
    checkpoints, work = place
    old, new = checkpoints.keep(b"old\n"), checkpoints.keep(b"new\n")
    (work / "real").mkdir()
    (work / "real" / "a.txt").write_bytes(b"new\n")
    (work / "sub").symlink_to("real")  # the model wrote work/sub/a.txt when sub was a folder
    change = FileChange(str(work / "sub" / "a.txt"), old, new)
    why = standing(change, [work])
    assert why.startswith(f"a link is on the way to {work / 'sub' / 'a.txt'} now")
    done = restore(checkpoints, [change], [work])
    assert done.skipped == [(change.path, why)]
    assert (work / "real" / "a.txt").read_bytes() == b"new\n"


def test_a_file_made_read_only_since_is_not_offered_and_left(place):
    """The person made the model's file read-only after it was written (for root:
    immutable): the list says a restore leaves it, and the restore does, saying the same."""
    from tests.selfref.test_store_cli import denied

    checkpoints, work = place
    old, new = checkpoints.keep(b"old\n"), checkpoints.keep(b"new\n")
    target = work / "notes.txt"
    target.write_bytes(b"new\n")
    change = FileChange(str(target), old, new)
    with denied(target, 0o444):
        why = standing(change, [work])
        assert why == f"{target} is read-only; nothing was changed"
        done = restore(checkpoints, [change], [work])
        assert done.skipped == [(change.path, why)] and done.restored == []
    assert target.read_bytes() == b"new\n"
    assert standing(change, [work]) == ""  # writable again: offered
