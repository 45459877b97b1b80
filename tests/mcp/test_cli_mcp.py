"""``selfref-tui mcp list`` against real server processes."""

from __future__ import annotations

import json
import sys

from selfref_tui.cli import main

from .conftest import SERVER


def test_mcp_list_shows_states_and_tools(tmp_path, capsys):
    config = tmp_path / "config.toml"
    config.write_text(f'''
[mcp.servers.test]
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(SERVER))}]
trust = ["echo"]
[mcp.servers.broken]
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(SERVER))}, "--crash"]
[mcp.servers.off]
command = "whatever"
enabled = false
''', encoding="utf-8")
    assert main(["mcp", "list", "--json", "--config", str(config)]) == 1  # one failed
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["test"]["state"] == "ready" and rows["test"]["start_s"] > 0
    assert "mcp__test__echo" in [t["name"] for t in rows["test"]["tools"]]
    assert rows["broken"]["state"] == "failed"
    assert "refuses to start" in rows["broken"]["error"]
    assert rows["off"]["state"] == "disabled" and rows["off"]["tools"] == []


def test_mcp_list_without_servers_says_how_to_add_one(tmp_path, capsys):
    config = tmp_path / "config.toml"
    config.write_text('key = "main"\n', encoding="utf-8")
    assert main(["mcp", "list", "--config", str(config)]) == 0
    assert "[mcp.servers.NAME]" in capsys.readouterr().out
    assert main(["mcp", "list", "--config", str(tmp_path / "none.toml")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_ask_runs_allowed_tools_and_says_the_rest_are_not_allowed_here(tmp_path):
    """Nobody is asked in ``ask``: an untrusted tool is refused for what it is (not allowed
    in this run, never "the person declined"), and stderr names the flag once per tool."""
    from selfref_tui.demo import DemoServer, Reply
    from selfref_tui.demo.script import ToolCall
    from tests.cli.helpers import cli

    config = tmp_path / "config.toml"
    config.write_text(f'''
[mcp.servers.test]
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(SERVER))}]
''', encoding="utf-8")
    script = [Reply(tool_calls=[ToolCall("mcp__test__echo", {"text": "hi"}, id="c1"),
                                ToolCall("mcp__test__fail", {}, id="c2")]),
              Reply(tool_calls=[ToolCall("mcp__test__fail", {}, id="c3")]),
              Reply(text="Done.")]
    server = DemoServer(script)
    url = server.start_in_thread()
    try:
        result = cli(
            "ask", "go", "--base-url", url, "--config", str(config), "--allow-tools",
            "mcp__test__ec*, mcp__test__long_text", "--data-dir", str(tmp_path / "data"),
            env={"OPENAI_API_KEY": "sk-test"})
    finally:
        server.stop_thread()
    code, out, err = result.returncode, result.stdout, result.stderr
    assert code == 0, err
    assert out == "Done.\n"
    results = {m["tool_call_id"]: m["content"] for m in server.requests[2]["messages"]
               if m["role"] == "tool"}
    assert results["c1"] == "echo: hi"  # allowed by --allow-tools
    for refused in ("c2", "c3"):  # nobody to ask: the model hears the truth
        assert "declined" not in results[refused]
        assert results[refused].startswith(
            "Error: mcp__test__fail is not allowed in this non-interactive run")
        assert "--allow-tools mcp__test__fail" in results[refused]
    hints = [line for line in err.splitlines() if "--allow-tools mcp__test__fail" in line]
    assert len(hints) == 1, err  # once per tool per run, though it was called twice
    assert hints[0].startswith("[warning] mcp__test__fail did not run")
    assert '[mcp.servers.test] trust = ["fail"]' in hints[0]


def test_compact_with_an_mcp_server_configured_compacts(tmp_path):
    """``compact`` has no --allow-tools: the servers start with only trusted tools allowed."""
    from selfref_tui.demo import DemoServer, Reply
    from selfref_tui.demo.script import ToolCall
    from tests.cli.helpers import cli

    config = tmp_path / "config.toml"
    config.write_text(f'''
[mcp.servers.test]
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(SERVER))}]
''', encoding="utf-8")
    summary = {"goal": "g", "instruction": "i", "discoveries": [], "completed": ["chat"],
               "current_status": "summarised", "likely_next_work": "n",
               "relevant_files_directories": []}
    server = DemoServer([Reply(text="First answer."),
                         Reply(tool_calls=[ToolCall("compact", summary, id="k")]),
                         Reply(text="Compacted.")])
    url = server.start_in_thread()
    try:
        base = ("--base-url", url, "--config", str(config), "--data-dir", str(tmp_path / "d"))
        env = {"OPENAI_API_KEY": "sk-test"}
        assert cli("ask", "hello", *base, env=env).returncode == 0
        result = cli("compact", *base, env=env)
    finally:
        server.stop_thread()
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Compacted.\n"
    tools = [t["function"]["name"] for t in server.requests[1]["tools"]]
    assert "compact" in tools and "mcp__test__echo" in tools


def test_ask_says_what_it_waits_for_while_a_server_starts(tmp_path):
    """A server slow to start kept `ask` silent (14 s on a loaded machine), as if it hung:
    it says once which servers it waits for, and goes on when they are up."""
    import subprocess

    from tests.cli.helpers import ROOT, _env

    config, gate = tmp_path / "config.toml", tmp_path / "start"
    config.write_text(f'''
[mcp.servers.slow]
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(SERVER))}, "--wait-for", {json.dumps(str(gate))}]
''', encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, "-m", "selfref_tui", "ask", "hi", "--demo", "--config", str(config),
         "--data-dir", str(tmp_path / "data")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(), cwd=ROOT, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()  # the server waits for the gate: the note comes first
        assert line == ("[information] waiting for the MCP server slow to start "
                        "(Ctrl+C stops)\n"), line
        gate.touch()
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert out.startswith("[demo model]")
    assert "waiting for" not in err  # said once
