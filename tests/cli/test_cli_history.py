"""``history``, ``rewind`` and ``branch`` on the command line, over real HTTP.

Every command is a fresh load of the key from its log (``cli`` makes a new
store each time), so each check after a rewind is also a check that the log
replays to the same state.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from selfref_tui.demo import DemoServer, Reply
from selfref_tui.demo.script import ToolCall
from tests.cli.helpers import cli

ENV = {"OPENAI_API_KEY": "sk-test"}


@pytest.fixture
def server():
    servers: list[DemoServer] = []

    def start(replies: list[Reply]) -> tuple[DemoServer, str]:
        s = DemoServer(replies, api_key="sk-test", models=("m1",), context_window=32000)
        servers.append(s)
        return s, s.start_in_thread()

    yield start
    for s in servers:
        s.stop_thread()


def run(url: str, *args: str) -> tuple[int, str, str]:
    result = cli(*args, "--base-url", url, "--model", "m1", env=ENV) if args[0] in (
        "ask", "context") else cli(*args, env=ENV)
    return result.returncode, result.stdout, result.stderr


def said(messages: list[dict]) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in messages if m["role"] != "system"]


def history(*args: str) -> list[dict]:
    result = cli("history", "--json", *args)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_rewind_then_ask_sends_the_prefix_and_history_keeps_the_rest(server):
    srv, url = server([Reply(text="answer one"), Reply(text="answer two"),
                       Reply(text="answer three")])
    assert run(url, "ask", "one")[0] == 0
    assert run(url, "ask", "two")[0] == 0
    assert [(h["n"], h["role"], h["content"]) for h in history()] == [
        (1, "user", "one"), (2, "assistant", "answer one"), (3, "user", "two"),
        (4, "assistant", "answer two")]

    code, out, err = run(url, "rewind", "3")
    assert code == 0, err
    assert "2 messages (3–4) left the model's context" in out

    code, out, err = run(url, "context", "show", "--json")
    assert code == 0, err
    shown = json.loads(out)["messages"]
    assert json.loads(out)["rewound"] == 2
    assert "2 messages were rewound out of this context" in run(url, "context", "show")[1]
    assert shown[0]["role"] == "system"
    assert said(shown) == [("user", "one"), ("assistant", "answer one")]

    assert run(url, "ask", "three")[0] == 0
    sent = srv.requests[-1]["messages"]
    assert said(sent) == [("user", "one"), ("assistant", "answer one"), ("user", "three")]

    rows = history("--all")
    assert [(h["n"], h["content"], h["rewound"]) for h in rows] == [
        (1, "one", False), (2, "answer one", False), (3, "two", True),
        (4, "answer two", True), (5, "three", False), (6, "answer three", False)]
    assert all(h["time"].endswith("+00:00") for h in rows)
    assert [h["n"] for h in history()] == [1, 2, 5, 6]  # rewound ones only with --all
    text = cli("history").stdout
    assert "#5  user" in text and "2 rewound messages not shown" in text

    result = cli("rewind", "9")
    assert result.returncode == 1
    assert "no message 9" in result.stderr and "1 to 6" in result.stderr


def test_undoing_a_rewind_brings_the_messages_back(server):
    _, url = server([Reply(text="a1"), Reply(text="a2")])
    run(url, "ask", "q1")
    run(url, "ask", "q2")
    assert cli("rewind", "2").returncode == 0
    again = cli("rewind", "2")  # run twice: the second changes nothing, and says so
    assert again.returncode == 0
    assert again.stdout == ("conversation 'main' is already rewound to just before message 2: "
                            "nothing changed\n")
    code, out, _ = run(url, "rewind", "--undo")
    assert code == 0 and "3 messages (2–4) back in the model's context" in out
    nothing = cli("rewind", "--undo")  # every rewind is undone: an undo does not redo one
    assert nothing.returncode == 1 and "has no rewind to undo" in nothing.stderr
    assert not any(h["rewound"] for h in history("--all"))
    shown = json.loads(run(url, "context", "show", "--json")[1])["messages"]
    assert said(shown) == [("user", "q1"), ("assistant", "a1"), ("user", "q2"),
                           ("assistant", "a2")]


def test_rewinding_past_a_remember_takes_the_experience_away(server):
    _, url = server([Reply(tool_calls=[ToolCall("remember", {"text": "likes tea"})]),
                     Reply(text="Noted.")])
    assert run(url, "ask", "remember that I like tea")[0] == 0
    listed = json.loads(cli("experiences", "list", "--json").stdout)
    assert [e["text"] for e in listed] == ["likes tea"]
    assert [h["role"] for h in history()] == ["user", "assistant", "tool", "assistant"]

    code, out, err = run(url, "rewind", "2")
    assert code == 0, err
    assert "experiences taken back: exp_001 likes tea" in out
    assert json.loads(cli("experiences", "list", "--json").stdout) == []


@pytest.fixture
def work(tmp_path: Path, monkeypatch) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "exists.txt").write_text("old\n")
    monkeypatch.chdir(folder)
    return folder


def writes() -> list[Reply]:
    return [Reply(text='<ref id="note">new text</ref>', tool_calls=[
        ToolCall("fd_to_file", {"fd": "ref:note", "file_path": "new.txt"}, id="w1"),
        ToolCall("fd_to_file", {"fd": "ref:note", "file_path": "exists.txt",
                                "exist_ok": True}, id="w2"),
    ]), Reply(text="Both written.")]


def test_rewinding_past_file_writes_lists_them_and_restores_on_request(server, work):
    _, url = server(writes())
    assert run(url, "ask", "--allow-overwrite", "save it")[0] == 0
    assert (work / "new.txt").read_text() == "new text"
    assert (work / "exists.txt").read_text() == "new text"

    code, out, err = run(url, "rewind", "2")
    assert code == 0, err
    assert f"{work / 'new.txt'}  (restoring removes it: it did not exist before)" in out
    assert f"{work / 'exists.txt'}  (restoring puts back its earlier content)" in out
    assert "--restore-files" in out
    assert (work / "exists.txt").read_text() == "new text"  # listed, not restored

    assert cli("rewind", "--undo").returncode == 0
    code, out, err = run(url, "rewind", "2", "--restore-files")
    assert code == 0, err
    assert (work / "exists.txt").read_text() == "old\n"
    assert not (work / "new.txt").exists()
    assert f"restored {work / 'exists.txt'}" in out
    assert f"removed {work / 'new.txt'} (it did not exist before)" in out

    # undoing the rewind can put the model's files back, too
    code, out, err = run(url, "rewind", "--undo", "--restore-files")
    assert code == 0, err
    assert (work / "new.txt").read_text() == "new text"
    assert (work / "exists.txt").read_text() == "new text"


def test_the_same_rewind_again_with_restore_files_restores_the_files_it_kept(server, work):
    """The rewind's own hint: "rewind with --restore-files to restore them". Given the
    same rewind again, it said "nothing changed" and restored nothing."""
    _, url = server(writes())
    assert run(url, "ask", "--allow-overwrite", "save it")[0] == 0
    code, out, err = run(url, "rewind", "2")
    assert code == 0 and "rewind with --restore-files to restore them" in out, err
    assert (work / "exists.txt").read_text() == "new text"  # kept
    code, out, err = run(url, "rewind", "2", "--restore-files")
    assert code == 0, err
    assert "already rewound to just before message 2: nothing changed" in out
    assert f"restored {work / 'exists.txt'}" in out
    assert f"removed {work / 'new.txt'} (it did not exist before)" in out
    assert (work / "exists.txt").read_text() == "old\n"
    assert not (work / "new.txt").exists()
    code, out, err = run(url, "rewind", "2")  # nothing left to put back: said so
    assert code == 0, err
    assert "to undo" not in out and "--restore-files" not in out


def test_an_undo_that_leaves_a_file_says_the_rewind_was_undone(server, work):
    _, url = server(writes())
    assert run(url, "ask", "--allow-overwrite", "save it")[0] == 0
    assert run(url, "rewind", "2", "--restore-files")[0] == 0
    (work / "new.txt").write_text("the person's own new file\n")
    code, out, err = run(url, "rewind", "--undo", "--restore-files")
    assert code == 1
    assert f"left {work / 'new.txt'} as it is: it was created again since" in out
    assert "1 of 2 files were not restored (see above); the rewind was undone" in err
    assert (work / "new.txt").read_text() == "the person's own new file\n"


def test_the_files_listed_by_a_rewind_say_which_were_changed_since(server, work):
    """A file the person replaced since (here by a link) is not restored: the list says
    so before --restore-files is asked for, as the app's dialog does."""
    _, url = server(writes())
    assert run(url, "ask", "--allow-overwrite", "save it")[0] == 0
    (work / "new.txt").unlink()
    (work / "new.txt").symlink_to(work / "exists.txt")
    code, out, err = run(url, "rewind", "2")
    assert code == 0, err
    assert f"{work / 'new.txt'}  (changed since the model wrote it: left as it is)" in out
    assert f"{work / 'exists.txt'}  (restoring puts back its earlier content)" in out


def test_files_written_in_another_working_folder_are_listed_as_not_restorable(
        server, work, tmp_path, monkeypatch):
    """Rewound from another folder (the allowed one when none is configured), the files
    are listed as ones that cannot be restored from here, not as ones --restore-files
    would put back and then refuse."""
    _, url = server(writes())
    assert run(url, "ask", "--allow-overwrite", "save it")[0] == 0
    other = tmp_path / "other"
    other.mkdir()
    monkeypatch.chdir(other)
    code, out, err = run(url, "rewind", "2")
    assert code == 0, err
    assert (f"{work / 'exists.txt'}  (it is outside the allowed directories ({other}), so it "
            "cannot be restored from here;") in out
    assert "restoring puts back" not in out
    assert (work / "exists.txt").read_text() == "new text"


def test_a_file_changed_since_is_never_overwritten_unasked(server, work):
    _, url = server(writes())
    run(url, "ask", "--allow-overwrite", "save it")
    (work / "exists.txt").write_text("the person's own edit\n")
    code, out, err = run(url, "rewind", "2", "--restore-files")
    assert code == 1
    assert "was changed since the model wrote it" in out
    assert "1 of 2 files were not restored" in err
    assert (work / "exists.txt").read_text() == "the person's own edit\n"
    assert not (work / "new.txt").exists()  # the other one was restored


def writes_note(text: str) -> list[Reply]:
    """The model's turn that writes ``text`` over exists.txt (as ref "note"), then says so."""
    return [Reply(text=f'<ref id="note">{text}</ref>', tool_calls=[
        ToolCall("fd_to_file", {"fd": "ref:note", "file_path": "exists.txt",
                                "exist_ok": True})]), Reply(text="Written.")]


def test_files_kept_at_one_rewind_are_restored_by_a_rewind_further_back(server, work):
    """Rewind past the second write and keep the file, then past the first: the file
    holds what the model wrote (the second write), so it is restored to what it was
    before the first (it was refused as changed since)."""
    _, url = server(writes_note("one") + writes_note("two"))
    assert run(url, "ask", "--allow-overwrite", "write one")[0] == 0
    assert run(url, "ask", "--allow-overwrite", "write two")[0] == 0
    assert (work / "exists.txt").read_text() == "two"
    code, out, err = run(url, "rewind", "5")
    assert code == 0, err
    assert (work / "exists.txt").read_text() == "two"  # listed, kept
    code, out, err = run(url, "rewind", "1", "--restore-files")
    assert code == 0, out + err
    assert f"restored {work / 'exists.txt'}" in out
    assert (work / "exists.txt").read_text() == "old\n"


def test_a_file_written_on_both_sides_of_a_rewind_into_a_rewound_stretch_is_listed_once(
        server, work):
    """Write once, rewind past it (the file kept), write again, then rewind to just after
    the first write: one write leaves the context and the other comes back. The file is
    offered once, and restoring gives it what the write back in the context left; undoing
    that rewind gives it the other write's content again."""
    _, url = server(writes_note("one") + writes_note("two"))
    assert run(url, "ask", "--allow-overwrite", "write one")[0] == 0
    assert run(url, "rewind", "1")[0] == 0
    assert run(url, "ask", "--allow-overwrite", "write two")[0] == 0
    assert (work / "exists.txt").read_text() == "two"

    code, out, err = run(url, "rewind", "4", "--restore-files")
    assert code == 0, out + err
    listed = [line for line in out.splitlines() if line.startswith("  ")]
    assert listed == [f"  {work / 'exists.txt'}  (restoring writes the model's version again)"]
    assert out.count(f"restored {work / 'exists.txt'}") == 1
    assert (work / "exists.txt").read_text() == "one"

    code, out, err = run(url, "rewind", "--undo", "--restore-files")
    assert code == 0, out + err
    assert len([line for line in out.splitlines() if line.startswith("  ")]) == 1
    assert (work / "exists.txt").read_text() == "two"


def test_rewinding_past_an_mcp_call_says_it_may_have_changed_files(server):
    _, url = server([Reply(tool_calls=[ToolCall("mcp__fs__write", {"path": "x"})]),
                     Reply(text="done")])
    run(url, "ask", "write with the server")
    code, out, _ = run(url, "rewind", "2")
    assert code == 0
    assert "MCP tools ran there (mcp__fs__write)" in out


def test_a_branch_holds_the_prefix_and_the_original_is_unchanged(server):
    _, url = server([Reply(tool_calls=[ToolCall("remember", {"text": "likes tea"})]),
                     Reply(text="Noted."), Reply(text="a2")])
    run(url, "ask", "remember tea")
    run(url, "ask", "q2")
    before = json.loads(run(url, "context", "show", "--json")[1])["messages"]

    code, out, err = run(url, "branch", "5", "--name", "side")
    assert code == 0, err
    assert "branched conversation 'side' from 'main' before message 5: 4 messages" in out
    branch = json.loads(run(url, "context", "show", "--json", "--key", "side")[1])["messages"]
    assert said(branch) == said(before)[:4]
    assert "likes tea" in branch[0]["content"]  # the experiences of that point
    assert json.loads(run(url, "context", "show", "--json")[1])["messages"] == before
    assert [h["n"] for h in history("--key", "side")] == [1, 2, 3, 4]

    keys = {k["key"]: k for k in json.loads(cli("keys", "list", "--json").stdout)}
    assert keys["side"]["origin"] == {"key": "main", "message": 5}
    assert "origin" not in keys["main"]
    assert "(branch of main up to message 4)" in cli("keys", "list").stdout

    result = cli("branch", "3", "--name", "side")
    assert result.returncode == 2
    assert "A conversation named 'side' already exists; pick another name." in result.stderr
    # a fork's name: hidden from lists, and the agent's next fork took it over
    result = cli("branch", "3", "--name", "main::fork::1")
    assert result.returncode == 2
    assert "contains '::fork::', which names the agent's forks" in result.stderr
    assert "main::fork::1" not in cli("keys", "list", "--all").stdout
    result = cli("branch", "2", "--name", "first")
    assert result.returncode == 0 and "before message 2: 1 message, with" in result.stdout
    result = cli("branch", "40", "--name", "other")
    assert result.returncode == 1 and "no message 40" in result.stderr
    result = cli("branch", "1", "--name", "other", "--key", "empty")
    assert result.returncode == 1  # it said "numbered 1 to 0"
    assert result.stderr == "selfref-tui: conversation 'empty' has no messages yet\n"


def test_a_hidden_number_is_no_message_to_read_but_still_a_point_to_rewind_to(tmp_path):
    """Message 2 held only a call whose result had images, so it is hidden: ``entries()``
    leaves it out and ``entry(2)`` refuses it too; ``read_history`` reads around it,
    ``pin 2`` says why in one line, and ``rewind 2`` still goes just before it."""
    import os

    from selfref_tui.context.mutations import (
        AssistantMessageMutation,
        MultimodalToolResultMutation,
        UserMessageMutation,
    )
    from selfref_tui.context.recall import read_history
    from selfref_tui.selfref import SelfReference

    call = {"id": "c1", "type": "function", "function": {"name": "shot", "arguments": "{}"}}
    with SelfReference(Path(os.environ["SELFREF_DATA_DIR"])) as store:
        memory = store.open("main")
        memory.commit([UserMessageMutation({"role": "user", "content": "look"}),
                       AssistantMessageMutation(content="", tool_calls=[call])])
        memory.commit([MultimodalToolResultMutation("c1", "shot", "{}",
                                                    [{"content": "the picture"}])])
        memory.commit([AssistantMessageMutation(content="A cat.")])
        assert [e.n for e in memory.entries()] == [1, 3, 4, 5]
        with pytest.raises(IndexError):
            memory.entry(2)
        assert memory.last_number == 5 and memory.is_hidden(2)
        assert memory.entry(3).message["content"].startswith("I called shot({})")
        read = read_history(memory, 1, 10)
        assert [line for line in read.splitlines() if line.startswith("<message")] == [
            f'<message n="{e.n}" role="{e.role}" time="{e.time}">' for e in memory.entries()]
    assert [row["n"] for row in history()] == [1, 3, 4, 5]

    pin = cli("pin", "2")
    assert pin.returncode == 1 and pin.stdout == ""
    assert pin.stderr == (
        "selfref-tui: message 2 of conversation 'main' is not shown: it held only a tool call, "
        "whose result with images follows as the next messages; see `selfref-tui history`\n")
    far = cli("pin", "9")
    assert far.returncode == 1
    assert "no message 9 in conversation 'main': its messages are numbered 1 to 5" in far.stderr
    assert cli("pin", "3").returncode == 0

    rewound = cli("rewind", "2")
    assert rewound.returncode == 0, rewound.stderr
    assert rewound.stdout.startswith("rewound conversation 'main' to just before message 2: 3 "
                                     "messages (3–5) left the model's context")
    # the rewind undid what hid it: message 2 is its call again, readable and rewound
    assert [(row["n"], row["rewound"]) for row in history("--all")] == [
        (1, False), (2, True), (3, True), (4, True), (5, True)]
    assert cli("rewind", "--undo").returncode == 0
    assert [row["n"] for row in history("--all")] == [1, 3, 4, 5]


def test_a_mistyped_conversation_is_refused_and_not_made(server, tmp_path):
    _, url = server([Reply(text="ok")])
    assert run(url, "ask", "hello")[0] == 0
    for args in (["rewind", "1"], ["pin", "1"], ["unpin", "1"], ["rewind", "--undo"]):
        code, _out, err = run(url, *args, "--key", "mian")
        assert code == 1 and "no conversation 'mian' in this data folder" in err, (args, err)
    assert not (tmp_path / "data" / "keys" / "mian").exists()
    assert run(url, "pin", "1")[0] == 0  # the conversation that exists still works


def test_undoing_a_rewind_says_its_refs_are_offered_again(server):
    _, url = server([Reply(text='<ref id="plan">step one</ref>')])
    assert run(url, "ask", "plan it")[0] == 0
    code, out, err = run(url, "rewind", "1")
    assert code == 0, err
    assert "refs no longer offered: plan" in out
    code, out, err = run(url, "rewind", "--undo")
    assert code == 0, err
    assert "refs offered again: plan" in out
    assert "another version" not in out  # the ref came back as it was, not changed


def test_the_demo_model_writes_a_ref_to_a_file_and_a_rewind_offers_it_back(work):
    assert cli("ask", "write the code to a file", "--demo").stdout.startswith(
        '[demo model] There is no ref to write yet: ask me to "show me some code" first.')
    assert cli("ask", "show me some code", "--demo").returncode == 0
    result = cli("ask", "write the code to a file", "--demo")
    assert result.returncode == 0, result.stderr
    assert "Rewind to before your message (Esc Esc)" in result.stdout
    chars = len((work / "fib_iterative.py").read_text())
    # in words, not the tool's XML line quoted as it came
    assert (f"Wrote ref:fib_iterative to {work / 'fib_iterative.py'}: {chars} characters "
            "(its code fence left out).") in result.stdout
    assert "<fd_to_file_result" not in result.stdout
    assert (work / "fib_iterative.py").read_text().startswith("def fib_iterative(n: int)")
    # asked again, `ask` keeps the file it wrote: no file to put back, so no rewind is offered
    kept = cli("ask", "write the code to a file", "--demo")
    assert "exists" in kept.stdout and "Rewind to before" not in kept.stdout, kept.stdout
    code, out, err = run("", "rewind", "5", "--restore-files")
    assert code == 0, err
    assert f"removed {work / 'fib_iterative.py'} (it did not exist before)" in out
    assert not (work / "fib_iterative.py").exists()


def test_history_says_which_tool_calls_failed_by_their_flag_and_old_records_by_their_text(
        tmp_path):
    """A result that only reads like an error is not marked; one an older version stored
    (no flag: "Error: " meant failed) still is, as it was before the flag."""
    from selfref_tui.context.mutations import (
        AssistantMessageMutation,
        ToolResultMutation,
        UserMessageMutation,
    )
    from selfref_tui.selfref.log_lines import sealed_record
    from selfref_tui.selfref.reference import SelfReference
    from selfref_tui.selfref.store import LOG_NAME

    def call(i: int) -> dict:
        return {"id": f"c{i}", "type": "function", "function": {"name": "grep",
                                                                 "arguments": "{}"}}

    store = SelfReference(tmp_path / "data")
    memory = store.open("main")
    memory.commit([UserMessageMutation({"role": "user", "content": "grep"}),
                   AssistantMessageMutation("", [call(1), call(2)]),
                   ToolResultMutation("c1", "Error: 3 lines matched", 0.1, error=False),
                   ToolResultMutation("c2", "Error: no such file", 0.1, error=True)])
    log = store.key_dir("main") / LOG_NAME
    store.close()
    older = [{"type": "UserMessageMutation", "message": {"role": "user", "content": "again"}},
             {"type": "AssistantMessageMutation", "content": "", "tool_calls": [call(3)],
              "reasoning_details": []},
             {"type": "ToolResultMutation", "tool_call_id": "c3", "content": "Error: declined",
              "duration_s": 0.2}]  # as an older version wrote it: no "error"
    with log.open("ab") as out:
        for patch in older:
            out.write(sealed_record({"t": "m", "ts": "2026-01-02T03:04:05.000+00:00",
                                     "m": patch}) + b"\n")
    rows = {r["tool_call_id"]: r.get("error", False) for r in history() if r["role"] == "tool"}
    assert rows == {"c1": False, "c2": True, "c3": True}
    text = cli("history").stdout
    assert text.count("[error]") == 2 and "Error: 3 lines matched" in text


def test_an_undo_after_going_on_says_what_left_as_well_as_what_came_back(server):
    _, url = server([Reply(text="a1"), Reply(text="a2"), Reply(text="a3")])
    run(url, "ask", "q1")
    run(url, "ask", "q2")
    assert cli("rewind", "3").returncode == 0
    run(url, "ask", "q3")  # went on after the rewind: 5 and 6 follow 1 and 2
    code, out, err = run(url, "rewind", "--undo")
    assert code == 0, err
    assert [h["n"] for h in history()] == [1, 2, 3, 4]
    assert out.splitlines()[0] == (
        "undid the rewind of conversation 'main': 2 messages (3–4) back in the model's "
        "context; 2 messages (5–6) left it (still readable, marked rewound)")


def test_reading_a_conversation_that_does_not_exist_is_an_error_not_an_empty_one():
    """`history --key mian --json` printed [] and exited 0: a mistyped name read as an
    empty conversation (export and search said there is none). A fresh data folder's
    `main`, named by no flag, is still empty, not an error."""
    fresh = cli("history", "--json")
    assert fresh.returncode == 0 and fresh.stdout.strip() == "[]"
    assert cli("ask", "--demo", "hello").returncode == 0
    for command in (("history", "--json"), ("history",), ("refs", "list", "--json"),
                    ("experiences", "list"), ("context", "show", "--demo"),
                    ("context", "show", "--json", "--demo"), ("compact", "--demo")):
        result = cli(*command, "--key", "mian")
        assert result.returncode == 1, command
        assert result.stdout == ""
        assert "no conversation 'mian'" in result.stderr and "keys list" in result.stderr
    # nothing was made for the mistyped name (compact made it, to compact its empty history)
    assert json.loads(cli("keys", "list", "--json").stdout)[0]["key"] == "main"
    assert len(json.loads(cli("keys", "list", "--json").stdout)) == 1
    assert json.loads(cli("history", "--json", "--key", "main").stdout)[0]["content"] == "hello"


def test_context_show_counts_one_message_in_the_singular(server):
    """A new conversation's request is its system prompt alone: "1 messages" it said;
    one rewound message "1 messages were rewound"."""
    import re

    first = cli("context", "show", "--demo").stdout.splitlines()[0]
    assert re.search(r" · 1 message · \d+ tools · ", first), first
    _, url = server([Reply(text="a1")])
    run(url, "ask", "q1")
    assert cli("rewind", "2").returncode == 0
    shown = run(url, "context", "show")[1]
    assert "1 message was rewound out of this context" in shown


def test_an_empty_key_is_refused_not_read_as_main(server):
    """`rewind 3 --key "$K"` with K unset rewound main: an empty --key is a usage error."""
    _, url = server([Reply(text="a1"), Reply(text="a2")])
    run(url, "ask", "q1")
    run(url, "ask", "q2")
    for command in (("rewind", "3"), ("history", "--json"), ("pin", "1"), ("export",),
                    ("search", "q1")):
        result = cli(*command, "--key", "")
        assert result.returncode == 2, command
        assert "conversation name is empty" in result.stderr and result.stdout == ""
    assert not any(h["rewound"] or h["pinned"] for h in history("--all"))


def test_rewind_json_says_what_changed_for_a_script(server, work):
    """`rewind 2 --json` was "unrecognized arguments": a script had to read the lines."""
    _, url = server(writes())
    assert run(url, "ask", "--allow-overwrite", "save it")[0] == 0
    code, out, err = run(url, "rewind", "2", "--json")
    assert code == 0, err
    row = json.loads(out)
    assert (row["key"], row["message"], row["undo"], row["already"]) == ("main", 2, False,
                                                                         False)
    assert row["left"] == [2, 3, 4, 5] and row["back"] == [] and row["refs_left"] == ["note"]
    assert row["files"] == [
        {"path": str(work / "new.txt"), "restoring": "restoring removes it: it did not exist "
                                                     "before"},
        {"path": str(work / "exists.txt"), "restoring": "restoring puts back its earlier "
                                                        "content"}]
    assert "restored" not in row and (work / "new.txt").exists()  # listed, not restored
    code, out, err = run(url, "rewind", "--undo", "--json")
    assert code == 0, err
    undone = json.loads(out)
    assert (undone["message"], undone["undo"], undone["back"]) == (None, True, [2, 3, 4, 5])
    code, out, err = run(url, "rewind", "2", "--restore-files", "--json")
    assert code == 0, err
    done = json.loads(out)
    assert done["restored"] == [str(work / "exists.txt")]
    assert done["removed"] == [str(work / "new.txt")] and done["skipped"] == []
    assert (work / "exists.txt").read_text() == "old\n"
