"""`selfref-tui search` and `selfref-tui export` against real stores."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from selfref_tui.context.images import data_url
from selfref_tui.context.mutations import (
    AssistantMessageMutation,
    ToolResultMutation,
    UserMessageMutation,
)
from selfref_tui.selfref.reference import SelfReference
from tests.cli.helpers import cli, one_line, run
from tests.context.test_conversation_export import PNG


def _seed() -> None:
    with SelfReference(os.environ["SELFREF_DATA_DIR"]) as store:
        work = store.open("work")
        work.commit([UserMessageMutation({"role": "user", "content": "Where is the needle?"}),
                     AssistantMessageMutation(content="In the haystack.")])
        main = store.open("main")
        call = {"id": "c1", "type": "function",
                "function": {"name": "read_file", "arguments": '{"path": "hay.txt"}'}}
        main.commit([UserMessageMutation({"role": "user", "content": [
                         {"type": "text", "text": "a picture of a needle"},
                         {"type": "image_url", "image_url": {"url": data_url("image/png", PNG)}}]}),
                     AssistantMessageMutation(content="", tool_calls=[call]),
                     ToolResultMutation("c1", "hay hay NEEDLE hay"),
                     AssistantMessageMutation(
                         content='Found it:\n\n<ref id="spot">\n```text\nline 3\n```\n</ref>\n')])
        main.commit([UserMessageMutation({"role": "user", "content": "forget the needle"}),
                     AssistantMessageMutation(content="Taken back.")])
        main.commit([main.rewind_patch(5)])  # messages 5 and 6 are rewound, still stored


def test_search_every_conversation_newest_first_with_numbers_and_flags():
    _seed()
    result = cli("search", "needle")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[-1] == "4 messages in 2 conversations"
    assert [line.split(" ")[:3] for line in lines[:-1]] == [
        ["main", "#5", "user"], ["main", "#3", "tool"], ["main", "#1", "user"],
        ["work", "#1", "user"]]
    assert "(rewound)" in lines[0] and "forget the needle" in lines[0]
    # the time, its flags, two spaces and the snippet (a colon after 12:34 read as cut short)
    assert re.match(r"main #5 user \d{4}-\d\d-\d\d \d\d:\d\d \(rewound\)  \S", lines[0])
    found = json.loads(cli("search", "needle", "--key", "work", "--json").stdout)
    assert found == [{"key": "work", "n": 1, "role": "user", "time": found[0]["time"],
                      "snippet": "Where is the needle?", "rewound": False,
                      "compacted": False}]
    # every word must occur; a quoted phrase whole
    assert cli("search", "needle haystack").returncode == 1
    assert cli("search", '"picture of a"', "--json").stdout.count('"n": 1') == 1
    limited = cli("search", "needle", "--limit", "1").stdout.splitlines()
    assert limited[-1] == ("4 messages in 2 conversations (2 shown: at most 1 per "
                           "conversation; 2 more: --limit 0 for all)")
    assert [line.split(" ")[:2] for line in limited[:-1]] == [["main", "#5"], ["work", "#1"]]
    nothing = cli("search", "nowhere")
    assert nothing.returncode == 1 and "no message in any conversation" in nothing.stdout
    missing = cli("search", "x", "--key", "nope")
    assert missing.returncode == 1 and "keys list" in one_line(missing.stderr)
    assert cli("search", '""').returncode == 2


def test_a_word_in_many_messages_shows_the_newest_and_counts_them_all():
    with SelfReference(os.environ["SELFREF_DATA_DIR"]) as store:
        store.open("log").commit([UserMessageMutation({"role": "user", "content": f"tick {i}"})
                                  for i in range(1, 26)])
    shown = cli("search", "TICK")
    assert shown.returncode == 0
    lines = shown.stdout.splitlines()
    assert [line.split(" ")[1] for line in lines[:-1]] == [f"#{n}" for n in range(25, 5, -1)]
    assert lines[-1] == ("25 messages in 1 conversation (20 shown: at most 20 per "
                         "conversation; 5 more: --limit 0 for all)")
    every = cli("search", "tick", "--limit", "0").stdout.splitlines()
    assert len(every) == 26 and every[-1] == "25 messages in 1 conversation"
    assert len(cli("search", "tick", "--limit", "30").stdout.splitlines()) == 26
    # the JSON form: as many, and how many more on stderr (stdout stays JSON)
    found = cli("search", "tick", "--json", "--limit", "3")
    assert [m["n"] for m in json.loads(found.stdout)] == [25, 24, 23]
    assert one_line(found.stderr) == ("selfref-tui: 22 more matches (at most 3 per "
                                      "conversation shown; --limit 0 for all)")
    found = cli("search", "tick", "--json", "--limit", "0")
    assert len(json.loads(found.stdout)) == 25 and found.stderr == ""
    assert len(json.loads(cli("search", "tick", "--json").stdout)) == 20
    assert cli("search", "tick", "--limit", "-1").returncode == 2


def test_every_match_is_printed_in_order_as_it_is_into_a_pipe_and_inert_on_a_terminal():
    """More matches than are written at once (``LINES_AT_ONCE``): into a pipe each line is
    the text exactly, control characters and all; on a terminal every line shows them."""
    from selfref_tui.cli.common import LINES_AT_ONCE
    from tests.cli.test_cli_hostile import run_tty
    from tests.hostile import assert_inert

    count = 2 * LINES_AT_ONCE + 3
    with SelfReference(os.environ["SELFREF_DATA_DIR"]) as store:
        store.open("log").commit([UserMessageMutation(
            {"role": "user", "content": f"tick {i} \x1b[31mred\x1b[0m"})
            for i in range(1, count + 1)])
    piped = cli("search", "tick", "--limit", "0")
    assert piped.returncode == 0, piped.stderr
    lines = piped.stdout.splitlines()
    assert lines[-1] == f"{count:,} messages in 1 conversation"
    assert [line.split("  ", 1)[1] for line in lines[:-1]] == [
        f"tick {i} \x1b[31mred\x1b[0m" for i in range(count, 0, -1)]
    code, out, err = run_tty("search", "tick", "--limit", "0")
    assert code == 0, err
    assert_inert(out)
    shown = out.split("\n")
    assert shown[-1] == "" and shown[-2] == f"{count:,} messages in 1 conversation"
    assert [line.split("  ", 1)[1] for line in shown[:-2]] == [
        f"tick {i} ␛[31mred␛[0m" for i in range(count, 0, -1)]


def test_export_markdown_to_stdout_and_to_a_file_with_its_images(tmp_path):
    _seed()
    shown = cli("export")
    assert shown.returncode == 0
    text = shown.stdout
    assert text.startswith("# Conversation main\n")
    assert "## 3 · Tool result (read_file) · " in text
    assert "**ref:spot**" in text and "```text\nline 3\n```" in text
    assert "## 5 · You · " in text and " · rewound" in text
    assert "image 1-1.png: image/png" in text  # stdout: named, not written
    target = tmp_path / "out" / "chat.md"
    written = cli("export", "-o", str(target))
    assert written.returncode == 0, written.stderr
    assert "and 1 image in" in written.stdout
    assert "![image 1.1](chat-images/1-1.png)" in target.read_text()
    assert (tmp_path / "out" / "chat-images" / "1-1.png").read_bytes() == PNG
    again = cli("export", "-o", str(target))
    assert again.returncode == 1 and "--force" in one_line(again.stderr)
    assert cli("export", "-o", str(target), "--force").returncode == 0
    # a folder gets the conversation's name; .json the stored messages
    folder = tmp_path / "exports"
    assert cli("export", "--key", "work", "-o", f"{folder}/").returncode == 0
    assert (folder / "conversation-work.md").exists()
    assert cli("export", "-o", str(tmp_path / "all.json")).returncode == 0
    data = json.loads((tmp_path / "all.json").read_text())
    assert [m["n"] for m in data["messages"]] == [1, 2, 3, 4, 5, 6]
    assert data["messages"][4]["rewound"] and data["messages"][2]["role"] == "tool"
    assert json.loads(cli("export", "--format", "json").stdout)["key"] == "main"
    missing = cli("export", "--key", "nope")
    assert missing.returncode == 1 and "keys list" in one_line(missing.stderr)
    assert not Path("conversation-main.md").exists()


def test_an_export_marks_the_pinned_messages():
    """`pin 4` keeps message 4 word for word in every compaction; the export said
    "compacted" or nothing, never which messages were pinned."""
    _seed()
    assert cli("pin", "4").returncode == 0
    text = cli("export").stdout
    assert re.search(r"^## 4 · Assistant · [^\n]* · pinned$", text, re.MULTILINE)
    assert not re.search(r"^## 2 · [^\n]*pinned", text, re.MULTILINE)
    messages = json.loads(cli("export", "--format", "json").stdout)["messages"]
    assert [m["n"] for m in messages if m["pinned"]] == [4]


def test_an_export_of_one_message_says_one_message(tmp_path):
    with SelfReference(os.environ["SELFREF_DATA_DIR"]) as store:
        store.open("one").commit([UserMessageMutation({"role": "user", "content": "hi"})])
    written = cli("export", "--key", "one", "-o", str(tmp_path / "one.md"))
    assert written.returncode == 0, written.stderr
    assert written.stdout.startswith("wrote 1 message of 'one' to ")  # not "1 messages"


def test_export_takes_json_as_every_command_printing_json_does():
    """`export --json` was "unrecognized arguments" (history, search, refs list … take it)."""
    _seed()
    shown = cli("export", "--json")
    assert shown.returncode == 0, shown.stderr
    assert [m["n"] for m in json.loads(shown.stdout)["messages"]] == [1, 2, 3, 4, 5, 6]
    both = cli("export", "--json", "--format", "md")
    assert both.returncode == 2 and "two formats" in both.stderr and both.stdout == ""


@pytest.mark.parametrize("planted", ["image", "folder"])
def test_an_export_never_writes_its_images_through_a_link_planted_beside_it(tmp_path, planted):
    """The person chose the export's path (and is asked before it is replaced), not the
    images folder beside it: a link there, or an image name there linking to another
    file, is refused and nothing is written, the file it leads to untouched."""
    _seed()
    victim = tmp_path / "victim.txt"
    victim.write_text("mine")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    images = tmp_path / "out" / "chat-images"
    if planted == "image":
        images.mkdir(parents=True)
        (images / "1-1.png").symlink_to(victim)
    else:
        images.parent.mkdir()
        images.symlink_to(elsewhere, target_is_directory=True)
    target = tmp_path / "out" / "chat.md"
    result = cli("export", "-o", str(target))
    assert result.returncode == 1
    said = one_line(result.stderr)
    assert f"{images / '1-1.png' if planted == 'image' else images} is a link" in said
    assert victim.read_text() == "mine" and list(elsewhere.iterdir()) == []
    assert not target.exists()  # refused before the conversation's file was written
    (images / "1-1.png").unlink() if planted == "image" else images.unlink()
    assert cli("export", "-o", str(target)).returncode == 0  # out of the way: written
    assert (images / "1-1.png").read_bytes() == PNG and victim.read_text() == "mine"


@pytest.mark.parametrize("leads", ["out", "inside"])
def test_a_link_at_a_later_image_name_is_refused_before_any_image_is_written(tmp_path, leads):
    """Every image name is looked at first: a link at the second one (leading out of the
    folder, or to the first image inside it) refused the export only after the first
    image had been written, leaving it half-made."""
    with SelfReference(os.environ["SELFREF_DATA_DIR"]) as store:
        picture = {"type": "image_url", "image_url": {"url": data_url("image/png", PNG)}}
        store.open("main").commit([
            UserMessageMutation({"role": "user", "content": [
                {"type": "text", "text": "two pictures"}, picture, picture]}),
            AssistantMessageMutation(content="Seen.")])
    victim = tmp_path / "victim.txt"
    victim.write_text("mine")
    images = tmp_path / "out" / "chat-images"
    images.mkdir(parents=True)
    (images / "1-2.png").symlink_to(victim if leads == "out" else images / "1-1.png")
    target = tmp_path / "out" / "chat.md"
    result = cli("export", "-o", str(target))
    assert result.returncode == 1
    assert f"{images / '1-2.png'} is a link" in one_line(result.stderr)
    assert sorted(p.name for p in images.iterdir()) == ["1-2.png"]  # no image written
    assert victim.read_text() == "mine" and not target.exists()
    (images / "1-2.png").unlink()
    assert cli("export", "-o", str(target)).returncode == 0
    assert sorted(p.name for p in images.iterdir()) == ["1-1.png", "1-2.png"]


def test_the_program_answers_and_exits_and_a_child_of_its_own_keeps_the_cache():
    """As a process, the search's cache is written by a child that nothing waits for: the
    command (and a pipe reading it) ends with its answer; the cache appears whole, and the
    next search reads it."""
    import time

    from selfref_tui.selfref import search_cache
    from selfref_tui.selfref.conversation_search import ConversationSearch

    _seed()
    data = Path(os.environ["SELFREF_DATA_DIR"])
    result = run("search", "needle")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "4 messages in 2 conversations"
    assert result.stderr == ""
    store = SelfReference(data)
    key_dirs = {key: store.key_dir(key) for key in ("main", "work")}
    deadline = time.monotonic() + 60  # (a state waited for; the deadline only ends a hang)
    while any(search_cache.load(data, key, key_dir) is None
              for key, key_dir in key_dirs.items()):
        assert time.monotonic() < deadline, "the search's cache was never written"
        time.sleep(0.05)
    with ConversationSearch(data) as search:
        search.search("needle")
        assert search.folded == set()  # both read from the caches the child wrote
    again = run("search", "needle")
    assert again.stdout == result.stdout and again.returncode == 0
    nothing = run("search", "nowhere")  # the exit status the process ends with, as before
    assert nothing.returncode == 1 and "no message in any conversation" in nothing.stdout


def test_an_export_onto_a_link_says_where_it_leads_and_asks_for_force(tmp_path):
    _seed()
    real = tmp_path / "dotfiles" / "notes.md"
    real.parent.mkdir()
    real.write_text("mine\n")
    link = tmp_path / "notes.md"
    link.symlink_to(real)
    refused = cli("export", "-o", str(link))
    assert refused.returncode == 1
    assert f"{link} already exists (a link to {real}); pass --force" in one_line(refused.stderr)
    assert real.read_text() == "mine\n"
    # a link to nothing yet is not written through without --force either
    dangling = tmp_path / "new.md"
    dangling.symlink_to(tmp_path / "elsewhere" / "new.md")
    refused = cli("export", "-o", str(dangling))
    assert refused.returncode == 1 and (
        f"(a link to {tmp_path / 'elsewhere' / 'new.md'}, which does not exist yet)"
        in one_line(refused.stderr))
    assert not (tmp_path / "elsewhere").exists()
    assert cli("export", "-o", str(dangling), "--force").returncode == 0
    assert (tmp_path / "elsewhere" / "new.md").read_text().startswith("# Conversation main")


def _seed_compacted() -> None:
    """Two messages, a compaction whose summary holds fences and an escape, two more."""
    from selfref_tui.context.summary import Summary, summary_mutation

    with SelfReference(os.environ["SELFREF_DATA_DIR"]) as store:
        main = store.open("main")
        main.commit([UserMessageMutation({"role": "user", "content": "find the needle"}),
                     AssistantMessageMutation(content="Looking in the hay.")])
        main.commit([summary_mutation(Summary.from_dict({
            "goal": "Find the needle",
            "discoveries": ["it is under ``` the hay", "\x1b[31mred\x1b[0m straw"]}))])
        main.commit([UserMessageMutation({"role": "user", "content": "and now?"}),
                     AssistantMessageMutation(content="Found it.")])


def test_an_export_shows_each_compaction_where_it_happened_with_its_summary():
    """The export had the messages the person read, not the summary the model read
    instead of them: a compaction is now there, between the messages around it."""
    _seed_compacted()
    text = cli("export").stdout
    assert text.startswith("# Conversation main\n\n4 messages · 1 compaction · exported ")
    heading = re.search(r"^## Compacted \(2 messages summarised\) · [^\n]+$", text, re.MULTILINE)
    assert heading is not None
    assert text.index("## 2 · Assistant") < heading.start() < text.index("## 3 · You")
    # the summary as the transcript's divider shows it, in a fence its own ``` cannot close
    block = re.search(r"^(`{4,})text\nGoal: Find the needle\nDiscoveries:\n  • it is under "
                      r"``` the hay\n  • ␛\[31mred␛\[0m straw\n\1$", text, re.MULTILINE)
    assert block is not None and "\x1b" not in text
    data = json.loads(cli("export", "--json").stdout)["messages"]
    assert [(m["n"], m["role"]) for m in data] == [
        (1, "user"), (2, "assistant"), (None, "compaction"), (3, "user"), (4, "assistant")]
    mark = data[2]
    assert mark["summarised"] == 2 and not mark["rewound"]
    assert mark["content"].startswith("Goal: Find the needle\nDiscoveries:\n")
    assert mark["summary"]["goal"] == "Find the needle"
    assert data[1]["time"] <= mark["time"] <= data[3]["time"] and mark["time"]
    # a rewind to before it: still there, marked as the messages it took back are
    with SelfReference(os.environ["SELFREF_DATA_DIR"]) as store:
        main = store.open("main")
        main.commit([main.rewind_patch(2)])
    data = json.loads(cli("export", "--json").stdout)["messages"]
    assert [(m["n"], m["rewound"]) for m in data] == [
        (1, False), (2, True), (None, True), (3, True), (4, True)]
    assert re.search(r"^## Compacted \(2 messages summarised\) · [^\n]+ · rewound$",
                     cli("export").stdout, re.MULTILINE)
