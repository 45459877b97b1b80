"""The command line and the agent's memory: provenance, consent, edits, where the tokens go.

The demo model runs over real HTTP (``--demo``: the in-package server) and
calls ``remember`` when asked to remember something (demo/script.py).
"""

from __future__ import annotations

import json
import math
import os
from datetime import datetime

from selfref_tui.agent.tools.consent import NOT_ASKED_REFUSAL
from selfref_tui.context.breakdown import PARTS
from selfref_tui.selfref import SelfReference

from .helpers import cli, one_line


def test_experiences_list_json_carries_provenance():
    assert cli("ask", "--demo", "remember that I use vim").returncode == 0
    assert cli("experiences", "add", "prefers short answers").returncode == 0
    rows = json.loads(cli("experiences", "list", "--json").stdout)
    assert [set(row) for row in rows] == [
        {"id", "text", "created", "source", "message", "edited"}] * 2
    agent, person = rows
    assert (agent["text"], agent["source"]) == ("The person said: I use vim", "agent")
    with SelfReference(os.environ["SELFREF_DATA_DIR"]) as store:
        entries = store.open("main", write=False).entries()
    called = next(e.n for e in entries if e.role == "assistant" and e.message.get("tool_calls"))
    assert agent["message"] == called  # the answer that called remember
    assert (person["source"], person["message"]) == ("person", None)
    for row in rows:
        assert datetime.fromisoformat(row["created"]).utcoffset().total_seconds() == 0
        assert row["edited"] is None
    listed = cli("experiences", "list").stdout.splitlines()
    assert listed[0].startswith(f"exp_001  The person said: I use vim  (agent · #{called} · ")


def test_experiences_edit_keeps_id_and_provenance():
    cli("experiences", "add", "likes tee")
    before = json.loads(cli("experiences", "list", "--json").stdout)[0]
    edited = cli("experiences", "edit", "exp_001", "likes tea")
    assert edited.returncode == 0 and edited.stdout.strip() == "edited exp_001"
    after = json.loads(cli("experiences", "list", "--json").stdout)[0]
    assert after["text"] == "likes tea" and after["edited"]
    assert {k: after[k] for k in ("id", "created", "source", "message")} == {
        k: before[k] for k in ("id", "created", "source", "message")}
    missing = cli("experiences", "edit", "exp_009", "x")
    assert missing.returncode == 1 and "exp_009" in one_line(missing.stderr)
    empty = cli("experiences", "edit", "exp_001", "  ")
    assert empty.returncode == 2 and "experiences forget" in one_line(empty.stderr)


def test_ask_refuses_a_remember_when_memory_writes_ask_and_tells_the_model_why(tmp_path):
    (tmp_path / "config.toml").write_text('[agent]\nmemory_writes = "ask"\n')
    refused = cli("ask", "--demo", "remember that I use vim")
    assert refused.returncode == 0, refused.stderr
    # the model read why (its tool result) and says so in its answer
    assert "I could not store it" in refused.stdout and "--allow-memory" in refused.stdout
    assert json.loads(cli("experiences", "list", "--json").stdout) == []
    with SelfReference(os.environ["SELFREF_DATA_DIR"]) as store:
        results = [e.message["content"] for e in store.open("main", write=False).entries()
                   if e.role == "tool"]
    assert len(results) == 1 and NOT_ASKED_REFUSAL in results[0]
    allowed = cli("ask", "--demo", "--allow-memory", "remember that I use vim")
    assert allowed.returncode == 0 and "Stored it as exp_001" in allowed.stdout
    assert [r["source"] for r in json.loads(cli("experiences", "list", "--json").stdout)] == [
        "agent"]


def test_context_show_says_where_the_tokens_go():
    cli("experiences", "add", "likes tea")
    assert cli("ask", "--demo", "hello").returncode == 0
    data = json.loads(cli("context", "show", "--json", "--context-window", "32000").stdout)
    assert list(data["breakdown"]) == list(PARTS)
    assert sum(data["breakdown"].values()) == data["tokens"]
    assert data["breakdown"]["experiences"] > 0 and data["breakdown"]["tool_schemas"] > 0
    auto = data["auto_compaction"]
    assert auto["at"] == math.ceil(0.8 * 32000) and auto["ratio"] == 0.8 and not auto["asked"]
    assert auto["next"].startswith("compacts at 80 %: 25,600 tokens (")
    text = cli("context", "show", "--context-window", "32000").stdout.splitlines()
    at = text.index("where the tokens go:")
    assert text[at + 1].split()[:2] == ["system", "prompt"]
    assert any(line.startswith("auto-compaction: compacts at 80 %: 25,600 tokens")
               for line in text)


def test_compact_help_says_the_review_is_the_app_s():
    shown = cli("compact", "--help").stdout
    assert "review_compaction is for the app" in " ".join(shown.split())


def test_pin_and_unpin_by_number():
    assert cli("ask", "--demo", "hello").returncode == 0
    pinned = cli("pin", "1")
    assert pinned.returncode == 0
    assert pinned.stdout.strip() == "pinned message 1: every compaction keeps it verbatim"
    assert cli("pin", "1").stdout.strip() == "message 1 is already pinned"
    assert cli("unpin", "2").stdout.strip() == "message 2 is not pinned"  # never was
    rows = json.loads(cli("history", "--json").stdout)
    assert [r["n"] for r in rows if r["pinned"]] == [1]
    assert "[pinned]" in cli("history").stdout.splitlines()[0]
    missing = cli("pin", "99")
    assert missing.returncode == 1 and "numbered 1 to 2" in one_line(missing.stderr)
    refused = cli("pin", "1", "--read-only")
    assert refused.returncode == 2 and "--read-only" in one_line(refused.stderr)
    assert cli("unpin", "1").stdout.strip() == "unpinned message 1"
    assert not any(r["pinned"] for r in json.loads(cli("history", "--json").stdout))


def test_compact_with_memory_writes_ask_keeps_the_summary_s_facts_only_with_allow_memory(
        tmp_path):
    """Nobody can be asked on the command line: the summary's facts to remember are refused
    (the model is told to suggest --allow-memory), and --allow-memory is compact's yes too."""
    from selfref_tui.demo import DemoServer, Reply, ToolCall

    (tmp_path / "config.toml").write_text('[agent]\nmemory_writes = "ask"\n')
    summary = {"goal": "g", "instruction": "i", "discoveries": [], "completed": [],
               "current_status": "s", "likely_next_work": "n",
               "relevant_files_directories": [], "remember": ["The person uses vim."]}
    compact = [Reply(tool_calls=[ToolCall("compact", summary, id="k")]), Reply(text="Done.")]
    server = DemoServer([Reply(text="hi"), *compact, Reply(text="again"), *compact],
                        api_key="sk-test", models=("m1",))
    url = server.start_in_thread()
    try:
        base = ("--base-url", url, "--model", "m1")
        env = {"OPENAI_API_KEY": "sk-test"}
        assert cli("ask", *base, "hello", env=env).returncode == 0
        refused = cli("compact", *base, env=env)
        assert refused.returncode == 0, refused.stderr
        with SelfReference(os.environ["SELFREF_DATA_DIR"]) as store:
            (told,) = [json.loads(e.message["content"]) for e in
                       store.open("main", write=False).entries() if e.role == "tool"]
        assert NOT_ASKED_REFUSAL in told["remember"] and "--allow-memory" in told["remember"]
        assert json.loads(cli("experiences", "list", "--json").stdout) == []
        assert cli("ask", *base, "more", env=env).returncode == 0
        allowed = cli("compact", *base, "--allow-memory", env=env)
        assert allowed.returncode == 0, allowed.stderr
    finally:
        server.stop_thread()
    kept = json.loads(cli("experiences", "list", "--json").stdout)
    assert [(e["text"], e["source"]) for e in kept] == [("The person uses vim.", "compaction")]
