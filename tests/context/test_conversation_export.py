"""A conversation as Markdown or JSON, from its numbered entries (pure)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from selfref_tui.context.conversation_export import (
    RESULT_LINES,
    images_folder,
    suggested_name,
    to_json,
    to_markdown,
)
from selfref_tui.context.images import data_url

PNG = (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00"
       b"\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N"
       b"\x00\x00\x00\x00IEND\xaeB`\x82")
TIME = "2026-05-01T10:02:03.123+00:00"


@dataclass(frozen=True)
class Entry:
    n: int
    role: str
    message: dict[str, Any]
    time: str = TIME
    rewound: bool = False
    compacted: bool = False
    pinned: bool = False


def _entries() -> list[Entry]:
    call = {"id": "c1", "type": "function",
            "function": {"name": "read_file", "arguments": '{"path": "notes.txt"}'}}
    long_result = "\n".join(f"line {i}" for i in range(40))
    return [
        Entry(1, "user", {"role": "user", "content": [
            {"type": "text", "text": "What is in this picture?"},
            {"type": "image_url", "image_url": {"url": data_url("image/png", PNG)}}]},
              compacted=True, pinned=True),
        Entry(2, "assistant", {"role": "assistant", "content": (
            "Here:\n\n<ref id=\"fib\">\n```python\ndef fib(n):\n    return n\n```\n</ref>\n"
            "Done.")}),
        Entry(3, "assistant", {"role": "assistant", "content": "", "tool_calls": [call]},
              rewound=True),
        Entry(4, "tool", {"role": "tool", "tool_call_id": "c1", "content": long_result}),
        Entry(5, "assistant", {"role": "assistant", "content": "It holds ``` fences",
                               "truncated": True, "abort_reason": "stopped"}),
    ]


def test_markdown_headings_refs_tools_and_images_beside_the_file():
    exported = to_markdown("main", _entries(), images_dir="chat-images", now=TIME)
    text = exported.text
    assert text.startswith("# Conversation main\n\n5 messages · exported 2026-05-01 10:02:03 UTC")
    assert "## 1 · You · 2026-05-01 10:02:03 UTC · compacted, pinned" in text
    assert "## 3 · Assistant · 2026-05-01 10:02:03 UTC · rewound" in text
    assert "## 4 · Tool result (read_file) · 2026-05-01 10:02:03 UTC" in text
    # the ref keeps its id, its code stays fenced
    assert "**ref:fib**\n\n```python\ndef fib(n):" in text
    assert "<!-- end ref:fib -->" in text and "<ref" not in text
    # the call on one line, the result an excerpt in a fence
    assert '→ calls `read_file` `{"path": "notes.txt"}`' in text
    assert f"line {RESULT_LINES - 1}\n```" in text and f"line {RESULT_LINES}\n" not in text
    assert "*… 28 more lines" in text
    assert "*[interrupted: stopped]*" in text
    # the image: written beside, linked
    assert [(i.name, i.data) for i in exported.images] == [("1-1.png", PNG)]
    assert "![image 1.1](chat-images/1-1.png)" in text


def test_to_stdout_images_are_named_not_written():
    exported = to_markdown("main", _entries(), images_dir=None)
    assert exported.images == []
    assert "image 1-1.png: image/png" in exported.text


def test_json_is_the_stored_messages_numbered_and_flagged():
    data = json.loads(to_json("main", _entries(), now=TIME))
    assert data["key"] == "main" and data["exported"] == TIME
    first, third = data["messages"][0], data["messages"][2]
    assert (first["n"], first["role"], first["time"], first["compacted"]) == (1, "user", TIME, True)
    assert first["pinned"] and not third["pinned"]
    assert first["message"]["content"][1]["image_url"]["url"].startswith("data:image/png")
    assert third["rewound"] and third["message"]["tool_calls"][0]["id"] == "c1"


def test_names_are_safe():
    assert suggested_name("../etc/passwd", "json") == "conversation-etc_passwd.json"
    assert suggested_name("main") == "conversation-main.md"
    assert images_folder("chat.md") == "chat-images"
    assert images_folder(".hidden") == ".hidden-images"


def test_a_failed_tool_call_is_marked_by_its_flag_or_an_older_records_text():
    calls = [{"id": f"c{i}", "type": "function", "function": {"name": "grep", "arguments": "{}"}}
             for i in (1, 2, 3)]
    entries = [
        Entry(1, "assistant", {"role": "assistant", "content": "", "tool_calls": calls}),
        Entry(2, "tool", {"role": "tool", "tool_call_id": "c1",
                          "content": "Error: 3 lines matched", "error": False}),
        Entry(3, "tool", {"role": "tool", "tool_call_id": "c2",
                          "content": "Error: no such file", "error": True}),
        Entry(4, "tool", {"role": "tool", "tool_call_id": "c3",
                          "content": "Error: declined"}),  # stored before the flag
    ]
    text = to_markdown("main", entries, images_dir=None, now=TIME).text
    heads = [line for line in text.splitlines() if line.startswith("## ")]
    assert [h.endswith(" · the call failed") for h in heads] == [False, False, True, True]
    data = json.loads(to_json("main", entries, now=TIME))
    assert [m.get("error") for m in data["messages"]] == [None, False, True, True]


def test_compactions_stand_between_the_messages_around_them_in_both_formats():
    from selfref_tui.context.history_reads import CompactionMark

    entries = [Entry(2, "user", {"role": "user", "content": "b"}),
               Entry(5, "assistant", {"role": "assistant", "content": "e"})]
    marks = [CompactionMark(after=0, summary={}, summarised=0, time=""),
             CompactionMark(after=2, summary={"goal": "g"}, summarised=1, time=TIME),
             CompactionMark(after=4, summary={"goal": "h"}, summarised=3, time=TIME,
                            rewound=True),
             CompactionMark(after=5, summary={"goal": "last"}, summarised=2, time=TIME)]
    text = to_markdown("main", entries, images_dir=None, compactions=marks, now=TIME).text
    heads = [line for line in text.splitlines() if line.startswith("## ")]
    assert heads == [
        "## Compacted",
        "## 2 · You · 2026-05-01 10:02:03 UTC",
        "## Compacted (1 message summarised) · 2026-05-01 10:02:03 UTC",
        "## Compacted (3 messages summarised) · 2026-05-01 10:02:03 UTC · rewound",
        "## 5 · Assistant · 2026-05-01 10:02:03 UTC",
        "## Compacted (2 messages summarised) · 2026-05-01 10:02:03 UTC",
    ]
    assert "2 messages · 4 compactions · exported" in text
    assert "```text\n(empty summary)\n```" in text and text.endswith("```text\nGoal: last\n```\n")
    data = json.loads(to_json("main", entries, compactions=marks, now=TIME))["messages"]
    assert [(m["n"], m["role"], m.get("summarised")) for m in data] == [
        (None, "compaction", 0), (2, "user", None), (None, "compaction", 1),
        (None, "compaction", 3), (5, "assistant", None), (None, "compaction", 2)]
    assert data[3] == {"n": None, "role": "compaction", "time": TIME, "rewound": True,
                       "summarised": 3, "content": "Goal: h", "summary": {"goal": "h"}}
    # without compactions, nothing about them
    assert "compaction" not in to_markdown("main", entries, images_dir=None).text
