"""The command line as a new user meets it: keys, bad data dirs, exports, read-only.

Each test runs the command line against a real store made in this process (the
data dir comes from the autouse fixture's ``SELFREF_DATA_DIR``); the locked key
is tried from a real second process, as a person would beside the app.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from selfref_tui.selfref.reference import SelfReference
from tests.cli.helpers import cli, one_line, run
from tests.selfref.helpers import turn


def _data() -> Path:
    return Path(os.environ["SELFREF_DATA_DIR"])


def test_keys_list_shows_empty_keys_and_hides_forks_unless_all():
    with SelfReference(_data()) as store:
        store.open("main").commit(turn(1))
        store.open("main::fork::1").commit(turn(1))
        assert store.create("drafts") is True  # made in the app, no message yet
        assert store.create("drafts") is False
    listed = json.loads(cli("keys", "list", "--json").stdout)
    assert {row["key"]: row["messages"] for row in listed} == {"main": 2, "drafts": 0}
    every = json.loads(cli("keys", "list", "--all", "--json").stdout)
    assert {row["key"] for row in every} == {"main", "drafts", "main::fork::1"}
    text = cli("keys", "list").stdout
    assert "drafts" in text and "fork" not in text
    with SelfReference(_data()) as store:
        store.open("one").commit(turn(1)[:1])
    rows = {line.split()[0]: line for line in cli("keys", "list").stdout.splitlines()}
    assert "     1 message  " in rows["one"] and "     2 messages  " in rows["main"]
    assert "     0 messages" in rows["drafts"]


def test_a_data_dir_that_is_a_file_is_a_usage_error_naming_its_setting(tmp_path):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    listed = cli("keys", "list", "--data-dir", str(not_a_dir))
    assert listed.returncode == 2
    assert "--data-dir" in one_line(listed.stderr) and "not a folder" in listed.stderr
    asked = cli("ask", "--demo", "hi", env={"SELFREF_DATA_DIR": str(not_a_dir)})
    assert asked.returncode == 2
    assert "SELFREF_DATA_DIR" in one_line(asked.stderr) and "--data-dir" not in asked.stderr
    below = cli("refs", "list", "--data-dir", str(not_a_dir / "sub"))
    assert below.returncode == 2 and "not a folder" in one_line(below.stderr)


def test_a_missing_config_file_is_a_usage_error(tmp_path):
    result = cli("--config", str(tmp_path / "nonexistent.toml"), "ask", "--demo", "hi")
    assert result.returncode == 2
    assert "nonexistent.toml" in one_line(result.stderr) and "--config" in result.stderr


def test_a_config_that_is_no_file_is_one_line_and_never_hangs(tmp_path):
    """In real children with a timeout: a FIFO's open blocked, /dev/zero was read without
    end. A dangling link is "no such file" as before; a link to a good file is read."""
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    big = tmp_path / "big.toml"
    big.write_text("# " + "x" * (2 << 20) + "\n")
    latin = tmp_path / "latin.toml"
    latin.write_bytes(b'# mine\ntheme = "caf\xe9"\n')
    for path, said in [(fifo, "is a FIFO, not a file"), (tmp_path, "is a folder, not a file"),
                       (Path("/dev/zero"), "is a device or socket, not a file"),
                       (big, "is over 1 MB"), (latin, "is not UTF-8 text (line 2)")]:
        result = run("mcp", "list", "--config", str(path), timeout=60)
        assert result.returncode == 2, (path, result.stderr)
        assert f"config file {path} {said}" in one_line(result.stderr)
    by_env = run("mcp", "list", env={"SELFREF_CONFIG": str(fifo)}, timeout=60)
    assert by_env.returncode == 2 and "is a FIFO" in one_line(by_env.stderr)
    dangling = tmp_path / "dangling.toml"
    dangling.symlink_to(tmp_path / "nowhere.toml")
    gone = cli("mcp", "list", "--config", str(dangling))
    assert gone.returncode == 2 and "no such file" in one_line(gone.stderr)
    real = tmp_path / "dotfiles.toml"
    real.write_text('[mcp.servers.t]\ncommand = "true"\nenabled = false\n')
    linked = tmp_path / "linked.toml"
    linked.symlink_to(real)
    listed = cli("mcp", "list", "--config", str(linked))
    assert listed.returncode == 0 and "t" in listed.stdout, listed.stderr


def _store_refs() -> None:
    with SelfReference(_data()) as store:
        store.open("main").commit(
            turn(1),
            records=[
                {"t": "ref", "id": "fib", "content": "```python\nprint(1)\n```\n"},
                {"t": "ref", "id": "-dash", "content": "starts with a dash\n"},
            ],
        )


def test_export_to_a_folder_or_a_trailing_slash_writes_the_refs_name_inside(tmp_path):
    _store_refs()
    existing = tmp_path / "exports"
    existing.mkdir()
    done = cli("refs", "export", "fib", str(existing))
    assert done.returncode == 0, done.stderr
    assert (existing / "fib.py").read_text() == "print(1)\n"
    fresh = tmp_path / "newdir"
    done = cli("refs", "export", "fib", f"{fresh}/")
    assert done.returncode == 0, done.stderr
    assert fresh.is_dir() and (fresh / "fib.py").read_text() == "print(1)\n"
    dashed = cli("refs", "export", "--", "-dash", str(tmp_path / "dash.txt"))
    assert dashed.returncode == 0, dashed.stderr
    assert (tmp_path / "dash.txt").read_text() == "starts with a dash\n"
    assert "refs export -- -" in cli("refs", "export", "--help").stdout


def test_read_only_reads_a_key_another_process_writes():
    _store_refs()
    holder = SelfReference(_data())
    holder.open("main")  # this process holds the writer lock, as a running app would
    try:
        locked = run("experiences", "add", "a fact")
        assert locked.returncode == 3
        assert "--read-only" in one_line(locked.stderr)
        assert "open the key read-only" not in locked.stderr
        # reading takes no lock: these need no second process
        refused = cli("--read-only", "experiences", "add", "a fact")
        assert refused.returncode == 2 and "--read-only" in one_line(refused.stderr)
        listed = cli("refs", "list", "--read-only", "--json")
        assert listed.returncode == 0 and {r["id"] for r in json.loads(listed.stdout)} == {
            "fib", "-dash"}
        shown = cli("context", "show", "--read-only", "--demo", "--json")
        assert shown.returncode == 0, shown.stderr
        assert json.loads(shown.stdout)["messages"][-1]["content"] == "answer 1"
    finally:
        holder.close()


def test_a_name_that_looks_like_another_is_shown_escaped_and_never_made():
    """"ma\\u200bin" (a zero-width space) and "invoice\\u202egnp.exe" (a right-to-left
    override) read as "main" and "invoiceexe.png"; made before names were checked, they
    are listed and exported with the character as its escape, and no new one is made."""
    from selfref_tui.selfref.keys import write_empty_meta
    from selfref_tui.selfref.log_lines import SCHEMA

    lookalike, reversed_ = "ma\u200bin", "invoice\u202egnp.exe"
    with SelfReference(_data()) as store:
        store.open("main").commit(turn(1))
        for key in (lookalike, reversed_):
            write_empty_meta(store.key_dir(key), key, SCHEMA)
            store.open(key).commit(turn(2))
    listed = cli("keys", "list").stdout
    names = sorted(line.split()[0] for line in listed.splitlines())
    assert names == ["invoice\\u202egnp.exe", "ma\\u200bin", "main"], listed
    assert lookalike not in listed and "\u202e" not in listed
    # the value itself stays exact where a program reads it
    assert {row["key"] for row in json.loads(cli("keys", "list", "--json").stdout)} == {
        "main", lookalike, reversed_}
    exported = cli("export", "--key", lookalike)
    assert exported.returncode == 0, exported.stderr
    assert exported.stdout.startswith("# Conversation ma\\u200bin\n")
    history = cli("history", "--key", lookalike)
    assert history.returncode == 0 and "answer 2" in history.stdout
    # a new name with one: refused with its reason, nothing made
    for args in (("branch", "1", "--name", "ne\u200bw"),
                 ("keys", "instructions", "ne\u2060w", "be brief")):
        result = cli(*args)
        assert result.returncode != 0, args
        assert "invisible character" in result.stderr, args
    missing = cli("history", "--key", "ne\ufeffw")  # read, not made: there is none
    assert missing.returncode == 1 and "no conversation 'ne\\ufeffw'" in missing.stderr
    assert len(json.loads(cli("keys", "list", "--json").stdout)) == 3


def test_every_line_naming_a_lookalike_conversation_shows_its_hidden_character():
    """Made before names were checked, "ma\\u200bin" reads as "main": the lines that name
    it when it holds no experiences or refs, when a message number or an undo is wrong,
    show the character as its escape, as the lists and exports do."""
    from selfref_tui.selfref.keys import write_empty_meta
    from selfref_tui.selfref.log_lines import SCHEMA

    lookalike = "ma\u200bin"
    with SelfReference(_data()) as store:
        write_empty_meta(store.key_dir(lookalike), lookalike, SCHEMA)
        store.open(lookalike).commit(turn(1))
    said = [cli("experiences", "list", "--key", lookalike),
            cli("refs", "list", "--key", lookalike),
            cli("refs", "show", "nope", "--key", lookalike),
            cli("rewind", "9", "--key", lookalike),
            cli("rewind", "--undo", "--key", lookalike),
            cli("search", "nowhere", "--key", lookalike)]
    for result in said:
        out = result.stdout + result.stderr
        assert "'ma\\u200bin'" in out and lookalike not in out, (result.args, out)
    found = cli("search", "answer")  # its matches, among those of the other conversations
    assert found.returncode == 0 and lookalike not in found.stdout, found.stdout
    assert [line.split()[0] for line in found.stdout.splitlines()[:-1]] == ["ma\\u200bin"]


def test_keys_list_marks_a_name_that_mixes_alphabets_and_branch_refuses_one():
    """"m\\u0430in" (a Cyrillic "а") reads as "main": listed with that letter escaped, its
    exact name kept for programs; a new name like it is refused, an honest one is made."""
    from selfref_tui.selfref.keys import write_empty_meta
    from selfref_tui.selfref.log_lines import SCHEMA

    mixed = "m\u0430in"
    with SelfReference(_data()) as store:
        store.open("main").commit(turn(1))
        write_empty_meta(store.key_dir(mixed), mixed, SCHEMA)
        store.open(mixed).commit(turn(2))
    listed = cli("keys", "list").stdout
    assert sorted(line.split()[0] for line in listed.splitlines()) == ["m\\u0430in", "main"]
    assert mixed not in listed
    assert {row["key"] for row in json.loads(cli("keys", "list", "--json").stdout)} == {
        "main", mixed}
    refused = cli("branch", "1", "--name", "m\u0430in-2")
    assert refused.returncode != 0
    assert "mixes Latin and Cyrillic letters in one word" in refused.stderr
    made = cli("branch", "1", "--name", "ветка")
    assert made.returncode == 0, made.stderr
    assert len(json.loads(cli("keys", "list", "--json").stdout)) == 3
