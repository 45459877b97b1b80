"""write_file / fd_to_file: atomic writes, modes, and hostile paths from the model."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from selfref_tui.refs.fds import FdTable
from selfref_tui.selfref.file_walk import FileWriteError, PathNotAllowed
from selfref_tui.selfref.files import fd_to_file, write_file
from selfref_tui.selfref.temp_files import machine_tag
from tests.refs.helpers import write_past_a_size_limit


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "root"
    r.mkdir()
    return r


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    o = tmp_path / "elsewhere"
    o.mkdir()
    return o


def no_temp_files(directory: Path) -> bool:
    return not any(p.name.startswith(".selfref-") for p in directory.rglob("*"))


def table() -> FdTable:
    t = FdTable()
    t.add_ref("code", "print('hi')\n")
    t.add_fd("big output\n" * 10)
    return t


# -- modes ----------------------------------------------------------------
def test_write_creates_parents_inside_root(root):
    written = write_file("a/b/c.txt", "hello", roots=[root])
    assert written == root / "a/b/c.txt"
    assert written.read_text() == "hello"
    assert no_temp_files(root)


def test_write_replaces_and_keeps_permission_bits(root):
    f = root / "f.sh"
    f.write_text("old")
    f.chmod(0o751)
    write_file("f.sh", "new", roots=[root])
    assert f.read_text() == "new"
    assert stat.S_IMODE(f.stat().st_mode) == 0o751


def test_new_file_gets_umask_mode(root):
    write_file("n.txt", "x", roots=[root])
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE((root / "n.txt").stat().st_mode) == 0o666 & ~umask


def test_append(root):
    f = root / "log.txt"
    write_file(f, "a\n", mode="append")  # missing + create -> new file
    write_file(f, "b\n", mode="append")
    assert f.read_text() == "a\nb\n"


def test_a_separate_append_starts_after_one_blank_line(root):
    f = root / "code.py"
    write_file(f, "one()", mode="append", separate=True)  # a new file: nothing before it
    assert f.read_text() == "one()"
    write_file(f, "two()\n", mode="append", separate=True)  # no newline at the end before
    write_file(f, "three()\n", mode="append", separate=True)
    assert f.read_text() == "one()\n\ntwo()\n\nthree()\n"
    blank = root / "blank.txt"
    blank.write_text("\n\n")
    write_file(blank, "x", mode="append", separate=True)  # only blank lines: kept as they are
    assert blank.read_text() == "\n\nx"


def test_append_keeps_non_utf8_bytes(root):
    f = root / "bin.dat"
    f.write_bytes(b"\xff\xfe\n")
    write_file(f, "x", mode="append", roots=[root])
    assert f.read_bytes() == b"\xff\xfe\nx"


@pytest.mark.parametrize("line,expected", [
    (1, "NEW\none\ntwo\nthree"),
    (2, "one\nNEW\ntwo\nthree"),
    (3, "one\ntwo\nNEW\nthree"),
    (4, "one\ntwo\nthree\nNEW"),
])
def test_insert(root, line, expected):
    f = root / "f.txt"
    f.write_text("one\ntwo\nthree")
    write_file(f, "NEW", mode="insert", insert_at_line=line, roots=[root])
    assert f.read_text() == expected


@pytest.mark.parametrize("line", [0, -1, 5])
def test_insert_out_of_range(root, line):
    f = root / "f.txt"
    f.write_text("one\ntwo\nthree\n")
    with pytest.raises(FileWriteError) as info:
        write_file(f, "NEW", mode="insert", insert_at_line=line, roots=[root])
    assert info.value.kind == "invalid_range" and "1 to 4" in str(info.value)
    assert f.read_text() == "one\ntwo\nthree\n"


def test_insert_needs_a_line_number_and_other_bad_params(root):
    with pytest.raises(FileWriteError) as info:
        write_file(root / "x", "a", mode="insert")
    assert info.value.kind == "invalid_parameter"
    with pytest.raises(FileWriteError) as info:
        write_file(root / "x", "a", mode="write", insert_at_line=2)
    assert info.value.kind == "invalid_parameter"
    with pytest.raises(FileWriteError):
        write_file(root / "x", "a", mode="overwrite")
    assert not (root / "x").exists()


def test_exist_ok_false_and_create_false(root):
    f = root / "f.txt"
    f.write_text("keep")
    with pytest.raises(FileWriteError, match="already exists"):
        write_file(f, "new", exist_ok=False)
    assert f.read_text() == "keep"
    with pytest.raises(FileWriteError) as info:
        write_file(root / "missing.txt", "x", create=False)
    assert info.value.kind == "not_found"
    assert not (root / "missing.txt").exists()


# -- atomicity ------------------------------------------------------------
def test_directory_target_is_refused(root):
    (root / "dir").mkdir()
    with pytest.raises(FileWriteError, match="not a regular file"):
        write_file("dir", "x", roots=[root])
    assert (root / "dir").is_dir() and no_temp_files(root)


def test_write_failing_midway_keeps_the_old_file(root):
    """A real mid-write failure: a child process limited to 64 KiB files writes 1 MB."""
    f = root / "f.txt"
    f.write_text("old content\n")
    proc = write_past_a_size_limit(f, root)
    assert proc.returncode == 3, proc.stderr
    assert "nothing was changed" in proc.stdout
    assert f.read_text() == "old content\n"
    assert no_temp_files(root)


def test_unencodable_content_changes_nothing(root):
    f = root / "f.txt"
    f.write_text("intact")
    with pytest.raises(FileWriteError) as info:
        write_file(f, "bad \ud800 surrogate", roots=[root])
    assert info.value.kind == "invalid_parameter"
    assert f.read_text() == "intact" and no_temp_files(root)


# -- hostile paths ------------------------------------------------------------
@pytest.mark.parametrize("path", ["/etc/passwd", "../../x", "../escape.txt", "a/../../x",
                                  "/", "."])
def test_escapes_refused(root, path):
    with pytest.raises(PathNotAllowed):
        write_file(path, "pwned", roots=[root])
    assert not (root.parent / "escape.txt").exists()
    assert not (root.parent.parent / "x").exists()


def test_absolute_path_inside_root_allowed(root):
    assert write_file(str(root / "abs.txt"), "ok", roots=[root]).read_text() == "ok"


def test_second_root_allowed(root, outside):
    assert write_file(str(outside / "f"), "ok", roots=[root, outside]).read_text() == "ok"


def test_symlinked_dir_pointing_outside_refused(root, outside):
    (root / "link").symlink_to(outside, target_is_directory=True)
    with pytest.raises(PathNotAllowed):
        write_file("link/f.txt", "x", roots=[root])
    with pytest.raises(PathNotAllowed):
        write_file("link/new/deeper.txt", "x", roots=[root])
    assert list(outside.iterdir()) == []


def test_symlinked_file_pointing_outside_refused(root, outside):
    secret = outside / "secret.txt"
    secret.write_text("secret")
    (root / "s.txt").symlink_to(secret)
    for mode in ("write", "append"):
        with pytest.raises(PathNotAllowed):
            write_file("s.txt", "x", mode=mode, roots=[root])
    assert secret.read_text() == "secret"
    (root / "dangling").symlink_to(outside / "not_yet")
    with pytest.raises(PathNotAllowed):
        write_file("dangling", "x", roots=[root])
    assert not (outside / "not_yet").exists()


def test_symlink_inside_root_is_followed(root):
    (root / "real").mkdir()
    (root / "alias").symlink_to(root / "real", target_is_directory=True)
    written = write_file("alias/f.txt", "x", roots=[root])
    assert written == root / "real" / "f.txt" and written.read_text() == "x"
    assert (root / "alias").is_symlink()


def test_root_given_through_a_symlink(tmp_path, root):
    via = tmp_path / "via"
    via.symlink_to(root, target_is_directory=True)
    assert write_file("f.txt", "x", roots=[via]) == root / "f.txt"


def test_nul_bytes_refused(root):
    with pytest.raises(PathNotAllowed):
        write_file("a\x00b", "x", roots=[root])
    with pytest.raises(PathNotAllowed):
        write_file("a\x00b", "x")


def test_very_long_names_are_a_clean_error(root):
    with pytest.raises(FileWriteError):
        write_file("n" * 300 + ".txt", "x", roots=[root])
    with pytest.raises(FileWriteError):
        write_file("/".join(["d" * 200] * 30) + "/f", "x", roots=[root])
    long_ok = "n" * 250
    assert write_file(long_ok, "x", roots=[root]).read_text() == "x"
    assert no_temp_files(root)


def test_empty_path(root):
    with pytest.raises(FileWriteError) as info:
        write_file("  ", "x", roots=[root])
    assert info.value.kind == "invalid_parameter"


# -- fd_to_file -----------------------------------------------------------
def result(text: str) -> ET.Element:
    return ET.fromstring(text)


def test_fd_to_file_ref_and_fd(root):
    t = table()
    el = result(fd_to_file(t, "ref:code", "out/hi.py", roots=(root,)))
    assert el.tag == "fd_to_file_result"
    assert el.get("fd") == "ref:code" and el.get("mode") == "write"
    assert el.get("chars") == str(len("print('hi')\n"))
    assert el.get("path") == str(root / "out/hi.py")
    assert (root / "out/hi.py").read_text() == "print('hi')\n"
    fd_to_file(t, "fd:1", "out/hi.py", mode="append", roots=(root,))
    assert (root / "out/hi.py").read_text().endswith("big output\n")


def test_fd_to_file_default_root_is_cwd(root, outside, monkeypatch):
    monkeypatch.chdir(root)
    t = table()
    assert result(fd_to_file(t, "ref:code", "x.py")).tag == "fd_to_file_result"
    assert (root / "x.py").exists()
    el = result(fd_to_file(t, "ref:code", str(outside / "x.py")))
    assert el.tag == "fd_error" and el.get("type") == "path_not_allowed"
    assert "inside them" in el.text


@pytest.mark.parametrize("kwargs,kind", [
    ({"fd": "fd:9"}, "not_found"),
    ({"file_path": "/etc/passwd"}, "path_not_allowed"),
    ({"file_path": "../../x"}, "path_not_allowed"),
    ({"mode": "insert", "insert_at_line": 99}, "invalid_range"),
    ({"mode": "nope"}, "invalid_parameter"),
    ({"create": False, "file_path": "missing.txt"}, "not_found"),
    ({"exist_ok": False, "file_path": "exists.txt"}, "write_error"),
])
def test_fd_to_file_errors(root, kwargs, kind):
    (root / "exists.txt").write_text("keep\n")
    args = {"fd": "ref:code", "file_path": "exists.txt", **kwargs}
    el = result(fd_to_file(table(), roots=(root,), **args))
    assert el.tag == "fd_error" and el.get("type") == kind
    assert el.text and len(el.text) > 10
    assert (root / "exists.txt").read_text() == "keep\n"


def test_fd_to_file_insert(root):
    (root / "m.py").write_text("import os\nmain()\n")
    el = result(fd_to_file(table(), "ref:code", "m.py", mode="insert", insert_at_line=2,
                           roots=(root,)))
    assert el.get("mode") == "insert"
    assert (root / "m.py").read_text() == "import os\nprint('hi')\nmain()\n"


# -- races: a local process swapping directories for symlinks -------------------
SWAPPER = Path(__file__).with_name("swapper.py")


def _walk_all(top: Path) -> list[Path]:
    found = []
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
        found += [Path(dirpath, n) for n in (*dirnames, *filenames)]
    return found


def test_writes_raced_by_a_directory_swapper_never_land_outside(root, outside):
    """A process exchanges root/d (and root/d/e) with a symlink to ``outside`` non-stop.

    Hundreds of writes run against it. Each must either land inside the root
    at exactly the path its result names, or fail as path_not_allowed having
    written nothing; ``outside`` stays empty; no temp file is left anywhere.
    """
    import time
    import xml.etree.ElementTree as ET

    (root / "d" / "e").mkdir(parents=True)
    (root / "link").symlink_to(outside, target_is_directory=True)
    (root / "d" / "elink").symlink_to(outside, target_is_directory=True)
    t = table()
    proc = subprocess.Popen([sys.executable, str(SWAPPER), str(root), "d", "link",
                             str(root / "d"), "e", "elink"],
                            stdout=subprocess.PIPE, text=True)
    mode = proc.stdout.readline().strip()
    outcomes: list[tuple[Path, ET.Element]] = []
    deadline = time.monotonic() + 4.0
    try:
        i = 0
        while time.monotonic() < deadline:
            rel = f"d/f{i}.txt" if i % 2 else f"d/e/g{i}.txt"
            el = ET.fromstring(fd_to_file(t, "ref:code", rel, roots=(root,)))
            outcomes.append((root / rel, el))
            i += 1
            refused = sum(e.tag == "fd_error" for _, e in outcomes)
            if i >= 400 and 5 <= refused <= i - 5:
                break
    finally:
        proc.terminate()
        swaps = int(proc.communicate(timeout=10)[0].split()[-1])
    assert proc.returncode == 0
    assert (root / "d").is_dir() and not (root / "d").is_symlink()
    written = [p for p, el in outcomes if el.tag == "fd_to_file_result"]
    refused = [(p, el) for p, el in outcomes if el.tag != "fd_to_file_result"]
    print(f"race ({mode}): {len(outcomes)} writes, {len(written)} written, "
          f"{len(refused)} refused, {swaps} swaps")
    assert swaps > 0 and written and refused  # the race really happened both ways
    assert _walk_all(outside) == []
    for path, el in outcomes:
        if el.tag == "fd_to_file_result":
            assert el.get("path") == str(path)
            assert path.read_text() == "print('hi')\n"
        else:
            assert el.get("type") == "path_not_allowed", el.text
            assert not path.exists()
    assert no_temp_files(root)


# -- temp files a killed write left behind ----------------------------------------
def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_the_next_write_removes_temp_files_of_dead_writers_only(root):
    folder = root / "out"
    folder.mkdir()
    ours = f"h{machine_tag()}"
    dead = folder / f".selfref-{ours}-{_dead_pid()}-00ff.tmp"
    live = folder / f".selfref-{ours}-{os.getppid()}-abcd.tmp"  # our parent is alive
    old_live = folder / f".selfref-{ours}-{os.getppid()}-beef.tmp"
    # another machine on a shared folder: its pid means nothing here, only its age counts
    other = "h00000000" if ours != "h00000000" else "h11111111"
    elsewhere = folder / f".selfref-{other}-{_dead_pid()}-0123.tmp"
    old_elsewhere = folder / f".selfref-{other}-{_dead_pid()}-4567.tmp"
    # earlier namings: no machine (cannot be proved ours), or no pid either
    no_machine = folder / f".selfref-{_dead_pid()}-89ab.tmp"
    old_unnamed = folder / ".selfref-0123456789abcdef.tmp"
    young_unnamed = folder / ".selfref-fedcba9876543210.tmp"
    for p in (dead, live, old_live, elsewhere, old_elsewhere, no_machine, old_unnamed,
              young_unnamed):
        p.write_text("half")
    two_hours_ago = __import__("time").time() - 7200
    for p in (old_live, old_elsewhere, old_unnamed):
        os.utime(p, (two_hours_ago, two_hours_ago))
    lookalike = folder / ".selfref-notes.tmp"  # not our name: the person's file
    lookalike.write_text("mine")
    link = folder / f".selfref-{ours}-{_dead_pid()}-0bad.tmp"
    link.symlink_to(root / "victim")
    (root / "victim").write_text("keep")
    write_file("out/new.txt", "x", roots=[root])
    left = sorted(p.name for p in folder.iterdir())
    assert left == sorted([live.name, elsewhere.name, no_machine.name, young_unnamed.name,
                           lookalike.name, link.name, "new.txt"])
    assert (root / "victim").read_text() == "keep"


def test_a_temp_file_is_named_after_this_machine_and_process(root, monkeypatch):
    seen: list[str] = []
    real_open = os.open

    def spy(path, flags, mode=0o777, *, dir_fd=None):
        seen.append(os.fspath(path))
        return real_open(path, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "open", spy)
    write_file("f.txt", "x", roots=[root])
    (tmp,) = [p for p in seen if p.startswith(".selfref-")]
    assert tmp.startswith(f".selfref-h{machine_tag()}-{os.getpid()}-")
    # another process on this machine has the same tag (so it may clean up after a dead one)
    script = ("from selfref_tui.selfref.temp_files import machine_tag; print(machine_tag())")
    same = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[2])
    assert same.stdout.strip() == machine_tag()


def test_a_tilde_path_means_the_home_folder_and_only_inside_the_roots(root, monkeypatch):
    monkeypatch.setenv("HOME", str(root))
    assert write_file("~/notes.txt", "x", roots=[root]) == root / "notes.txt"
    t = FdTable()
    t.add_ref("n", "text")
    el = result(fd_to_file(t, "ref:n", "~/deep/n.txt", roots=(root,)))
    assert el.get("path") == str(root / "deep" / "n.txt")
    sub = root / "sub"
    sub.mkdir()
    with pytest.raises(PathNotAllowed, match=r"'~/notes.txt' is .*/notes.txt, which is "
                                             r"outside the allowed directories"):
        write_file("~/notes.txt", "x", roots=[sub])
    with pytest.raises(PathNotAllowed, match="names a home folder this system does not have"):
        write_file("~no-such-user-here/notes.txt", "x", roots=[sub])
    el = result(fd_to_file(t, "ref:n", "~/n.txt", roots=(sub,)))
    assert el.get("type") == "path_not_allowed"
    assert not (sub / "~").exists() and not (root / "~").exists()  # no literal ~ folder
    assert write_file("./~/n.txt", "x", roots=[sub]) == sub / "~" / "n.txt"  # asked for


def test_a_write_killed_mid_way_leaves_a_temp_file_the_next_write_removes(root):
    """A real SIGKILL between writing the temp file and renaming it."""
    f = root / "f.txt"
    f.write_text("old\n")
    script = textwrap.dedent(f"""
        import os, signal
        from selfref_tui.selfref.files import write_file
        os.fsync = lambda fd: os.kill(os.getpid(), signal.SIGKILL)
        write_file({str(f)!r}, "new\\n", roots=[{str(root)!r}])
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[2])
    assert proc.returncode == -9, proc.stderr
    assert f.read_text() == "old\n"
    assert not no_temp_files(root)  # the killed write left its temp file
    write_file("f.txt", "newer\n", roots=[root])
    assert f.read_text() == "newer\n" and no_temp_files(root)


# -- links that stay inside, and the person's own export ------------------------
def test_links_are_followed_only_while_they_stay_inside(root, outside):
    (root / "real").mkdir()
    (root / "abs").symlink_to(root / "real", target_is_directory=True)  # absolute, inside
    (root / "real" / "up").symlink_to("../real", target_is_directory=True)  # relative, inside
    assert write_file("abs/up/up/f.txt", "x", roots=[root]) == root / "real" / "f.txt"
    (root / "real" / "climb").symlink_to("../../elsewhere", target_is_directory=True)
    with pytest.raises(PathNotAllowed):
        write_file("real/climb/f.txt", "x", roots=[root])
    (root / "other").symlink_to(outside, target_is_directory=True)  # into a second root: fine
    assert write_file("other/g.txt", "y", roots=[root, outside]) == outside / "g.txt"
    loop = root / "loop"
    loop.symlink_to("loop")
    with pytest.raises(PathNotAllowed):
        write_file("loop/f.txt", "x", roots=[root])
    assert sorted(p.name for p in outside.iterdir()) == ["g.txt"]


def test_the_persons_export_follows_their_links_and_is_atomic(root, outside):
    (root / "to_out").symlink_to(outside, target_is_directory=True)
    written = write_file(root / "to_out" / "new" / "x.txt", "mine", roots=None)
    assert written == outside / "new" / "x.txt" and written.read_text() == "mine"
    assert no_temp_files(outside)


def test_fd_to_file_writes_a_lone_fenced_block_without_its_fence(root):
    t = FdTable()
    t.add_ref("add", "```python\ndef add(a, b):\n    return a + b\n```")
    t.add_ref("notes", "Some text\n```python\nx = 1\n```\n")
    el = result(fd_to_file(t, "ref:add", "add.py", roots=(root,)))
    assert el.get("fence") == "removed"
    code = (root / "add.py").read_text()
    assert code == "def add(a, b):\n    return a + b\n"
    compile(code, "add.py", "exec")  # the file parses
    el = result(fd_to_file(t, "ref:add", "raw.md", roots=(root,), raw=True))
    assert el.get("fence") is None
    assert (root / "raw.md").read_text() == "```python\ndef add(a, b):\n    return a + b\n```"
    fd_to_file(t, "ref:notes", "notes.md", roots=(root,))  # not only a fence: as it is
    assert (root / "notes.md").read_text() == "Some text\n```python\nx = 1\n```\n"
