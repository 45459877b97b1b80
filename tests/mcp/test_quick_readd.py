"""A server's table removed and added back at once, and what "always allow" was said to.

Real subprocesses: the hostile server (tests/hostile_servers/mcp_stdio.py) keeps
running after its stdin closes (``--linger``) and has a helper deaf to SIGTERM, so
stopping it takes the whole grace and a SIGKILL; each start writes down which
processes of the earlier starts it found still running (``--alive-at-start``).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from selfref_tui.agent.mcp.approval import APPROVE_ALWAYS, APPROVE_ONCE
from selfref_tui.agent.mcp.manager import McpManager
from selfref_tui.agent.tools.builtin import ToolError
from tests.agent.helpers import wait_until
from tests.hostile_servers import mcp_stdio_command, read_pids, wait_gone

from .test_config_reload import said, table
from .test_hostile_mcp import notices
from .test_manager import Ctx, SlowPerson
from .test_restart_any import from_file


def slow_to_stop(name: str, pids: Path, seen: Path, *extra: str) -> str:
    """The table of a server that takes a while to stop: it outlives its stdin, and its
    helper ignores SIGTERM."""
    command, args = mcp_stdio_command("--pids", str(pids), "--helpers", "1",
                                      "--stubborn-helpers", "--linger",
                                      "--alive-at-start", str(seen))
    return "\n".join([f"[mcp.servers.{json.dumps(name)}]", f"command = {json.dumps(command)}",
                      f"args = {json.dumps(list(args))}", *extra, ""]) + "\n"


def starts(seen: Path) -> list[str]:
    """One line per start of the server: the earlier processes it found running."""
    return seen.read_text().splitlines() if seen.exists() else []


async def ready(manager: McpManager, name: str) -> None:
    await wait_until(lambda: manager.status.get(name) is not None
                     and manager.status[name].state not in ("starting",), timeout=60,
                     what=f"{name} started")
    status = manager.status[name]
    assert status.state == "ready", status.error


async def test_a_table_removed_and_added_back_at_once_starts_once_the_old_group_is_gone(
        tmp_path):
    """Removed and added back by two reloads, by two restarts, disabled and enabled again:
    each time the new process started while the old one and its helper still ran."""
    config_path, pids, seen = tmp_path / "config.toml", tmp_path / "pids", tmp_path / "seen"
    server = slow_to_stop("h", pids, seen)
    config_path.write_text(server, encoding="utf-8")
    manager, events = await from_file(config_path)
    try:
        assert manager.status["h"].state == "ready", manager.status["h"].error
        count = 2
        for how in ("reload", "restart", "enabled"):
            old = await asyncio.to_thread(read_pids, pids, count)
            config_path.write_text(server + "enabled = false\n" if how == "enabled" else "",
                                   encoding="utf-8")
            assert (manager.reload()[1] if how != "restart" else manager.restart("h") == "")
            config_path.write_text(server, encoding="utf-8")
            assert (manager.reload()[1] if how != "restart" else manager.restart("h") == "")
            assert manager.status["h"].state == "starting"  # waiting for the old one
            await ready(manager, "h")
            count += 2
            await asyncio.to_thread(read_pids, pids, count)
            assert starts(seen) == [""] * (count // 2), how  # none found the old running
            assert await asyncio.to_thread(wait_gone, old) == []
        assert not [n for n in notices(events) if "did not" in n or "failed" in n]
    finally:
        await manager.aclose()
    assert await asyncio.to_thread(wait_gone, read_pids(pids, count)) == []


async def test_an_old_process_slower_than_the_bound_leaves_the_new_one_unstarted(tmp_path):
    """The wait is bounded: past it the server is failed, saying so, and no second process
    is started beside the first; a restart once the old one is gone starts it."""
    config_path, pids, seen = tmp_path / "config.toml", tmp_path / "pids", tmp_path / "seen"
    server = slow_to_stop("h", pids, seen)
    config_path.write_text(server, encoding="utf-8")
    manager, events = await from_file(config_path)
    manager.restart_hint = "/mcp restart {server}"
    manager.stop_wait_s = 0.05  # its stop takes its grace and a SIGKILL: longer than that
    try:
        old = await asyncio.to_thread(read_pids, pids, 2)
        supervisor = manager._runs["h"].link.pid
        config_path.write_text("", encoding="utf-8")
        assert manager.reload()[1]
        config_path.write_text(server, encoding="utf-8")
        assert manager.reload()[1]
        lines = await said(events, "did not start")
        assert [n for n in lines if "did not start" in n] == [
            f"MCP server 'h' did not start: its previous process (pid {supervisor}) was still "
            "stopping 0.05 s after it was told to, and a second one beside it could clash "
            "over the same files or ports; once it is gone, /mcp restart h"]
        assert manager.status["h"].state == "failed" and not manager.handles("mcp__h__echo")
        assert await asyncio.to_thread(wait_gone, old) == []
        assert starts(seen) == [""]  # only the first start: no second process was started

        manager.stop_wait_s = 10.0
        await said(events, "'h' was removed")  # the old run has ended
        assert manager.restart("h") == ""
        await ready(manager, "h")
        assert starts(seen) == ["", ""]
    finally:
        await manager.aclose()


async def test_always_allow_holds_for_the_server_approved_not_for_its_name(tmp_path):
    """An answer kept in memory alone (a config that cannot be written): a table removed
    takes it with it, and another command under the same name is asked about anew."""
    config_path = tmp_path / "config.toml"
    config_path.write_text(table("h"), encoding="utf-8")
    manager, _events = await from_file(config_path)
    try:
        ask = Ctx(answer=APPROVE_ALWAYS)
        assert await manager.call("mcp__h__echo", {"text": "a"}, ask) == "echo: a"
        assert len(ask.asked) == 1 and manager.is_trusted("mcp__h__echo")
        assert manager.restart("h") == ""  # the same server again: still trusted
        await ready(manager, "h")
        assert manager.is_trusted("mcp__h__echo")

        # the same name, another program (other arguments)
        config_path.write_text(table("h", tmp_path / "pids"), encoding="utf-8")
        assert manager.reload()[1]
        await ready(manager, "h")
        assert not manager.is_trusted("mcp__h__echo")  # never approved for this one
        other = Ctx(answer=APPROVE_ONCE)
        assert await manager.call("mcp__h__echo", {"text": "b"}, other) == "echo: b"
        assert len(other.asked) == 1

        config_path.write_text(table("h"), encoding="utf-8")  # the approved one back
        assert manager.reload()[1]
        await ready(manager, "h")
        assert manager.is_trusted("mcp__h__echo")

        config_path.write_text("", encoding="utf-8")
        assert manager.reload()[1] and "h" not in manager.status
        config_path.write_text(table("h"), encoding="utf-8")  # back at once, the same table
        assert manager.reload()[1]
        await ready(manager, "h")
        assert not manager.is_trusted("mcp__h__echo")  # removed: its answers went with it
    finally:
        await manager.aclose()


async def test_an_answer_given_while_the_table_changed_is_not_kept_and_runs_nothing(tmp_path):
    """The question stays up while the table is pointed at another command and reloaded:
    "always allow" then was about the server that ran before, so it is neither kept nor
    saved, and the tool does not run on the new one."""
    config_path = tmp_path / "config.toml"
    config_path.write_text(table("h"), encoding="utf-8")
    manager, _events = await from_file(config_path)
    saved: list = []
    manager.on_trust = lambda server, tool: saved.append((server, tool))
    person = SlowPerson(APPROVE_ALWAYS)
    try:
        call = asyncio.create_task(manager.call("mcp__h__echo", {"text": "hi"}, person))
        await asyncio.wait_for(person.asked.wait(), 30)
        config_path.write_text(table("h", tmp_path / "pids"), encoding="utf-8")  # another
        assert manager.reload()[1]
        await ready(manager, "h")
        person.answered.set()
        with pytest.raises(ToolError) as error:
            await call
        assert str(error.value) == (
            "the MCP server 'h' was changed in the config by the person while they were asked "
            "about echo (it runs something else now), so the call did not run and the answer "
            "was not kept; call the tool again if it is still needed, and the person is asked "
            "about the server as it is now")
        assert saved == [] and not manager.is_trusted("mcp__h__echo")
    finally:
        await manager.aclose()


async def test_always_allow_is_not_written_to_a_table_that_runs_something_else_now(tmp_path):
    """The table was pointed at another command in the file, not reloaded yet, when the
    person answered "always allow" on the server still running: the answer holds for that
    one, and is not written into the table (the next reload would have run the other
    program's tool unasked)."""
    from selfref_tui.agent.mcp.trust import add_trust

    config_path = tmp_path / "config.toml"
    config_path.write_text(table("h"), encoding="utf-8")
    manager, events = await from_file(config_path)
    manager.on_trust = lambda server, tool: add_trust(config_path, server, tool)
    try:
        other = table("h", tmp_path / "pids")
        config_path.write_text(other, encoding="utf-8")  # not reloaded yet
        ask = Ctx(answer=APPROVE_ALWAYS)
        assert await manager.call("mcp__h__echo", {"text": "a"}, ask) == "echo: a"
        assert manager.is_trusted("mcp__h__echo")  # the server approved, still running
        assert config_path.read_text(encoding="utf-8") == other
        assert [n for n in notices(events) if "not saved" in n] == [
            "'always allow' for mcp__h__echo was not saved to config.toml: its "
            f"[mcp.servers.h] table there runs another program now ({config_path}); the "
            "answer holds for the server as it runs now"]
        assert manager.reload()[1]
        await ready(manager, "h")
        assert not manager.is_trusted("mcp__h__echo")  # the other program: asked anew

        ask = Ctx(answer=APPROVE_ALWAYS)  # the table as it runs: written
        assert await manager.call("mcp__h__echo", {"text": "b"}, ask) == "echo: b"
        assert 'trust = ["echo"]' in config_path.read_text(encoding="utf-8")
    finally:
        await manager.aclose()


async def test_always_allow_does_not_hold_for_the_same_command_with_another_env(tmp_path):
    """The environment is part of what a server runs (``PYTHONPATH``, ``LD_PRELOAD``,
    ``NODE_OPTIONS`` load other code into the same command): a table given another env
    under the same name is asked about anew, and trusted again once it is back."""
    config_path = tmp_path / "config.toml"
    config_path.write_text(table("h", None, 'env = { MODE = "plain" }'), encoding="utf-8")
    manager, _events = await from_file(config_path)
    try:
        ask = Ctx(answer=APPROVE_ALWAYS)
        assert await manager.call("mcp__h__echo", {"text": "a"}, ask) == "echo: a"
        assert manager.is_trusted("mcp__h__echo")

        config_path.write_text(table("h", None, 'env = { MODE = "other" }'), encoding="utf-8")
        assert manager.reload()[1]
        await ready(manager, "h")
        assert not manager.is_trusted("mcp__h__echo")  # never approved with this env
        other = Ctx(answer=APPROVE_ONCE)
        assert await manager.call("mcp__h__echo", {"text": "b"}, other) == "echo: b"
        assert len(other.asked) == 1

        config_path.write_text(table("h", None, 'env = { MODE = "plain" }'), encoding="utf-8")
        assert manager.reload()[1]
        await ready(manager, "h")
        assert manager.is_trusted("mcp__h__echo")
    finally:
        await manager.aclose()
