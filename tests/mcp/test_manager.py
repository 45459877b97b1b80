"""The manager against the in-repo SDK server, started as a real subprocess."""

from __future__ import annotations

import asyncio
import base64
import os
import signal
import time
from dataclasses import dataclass, field

import pytest
import pytest_asyncio

from selfref_tui.agent.events import Notice
from selfref_tui.agent.mcp.approval import APPROVE_ALWAYS, APPROVE_ONCE, DENY
from selfref_tui.agent.mcp.manager import McpManager
from selfref_tui.agent.tools.builtin import NOT_ASKED, ToolError
from selfref_tui.refs.fds import FdTable
from tests.agent.helpers import wait_until
from tests.hostile_servers import alive

from .conftest import server_config
from .server import LONG_TEXT_CHARS, tiny_png

# One server process serves every test below that does not need its own set-up:
# starting the SDK's server costs seconds on a busy machine.
pytestmark = pytest.mark.asyncio(loop_scope="module")
TRUSTED = ("echo", "long_text", "picture", "fail", "mixed", "slow")


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def shared(tmp_path_factory):
    mark = tmp_path_factory.mktemp("mcp") / "mark"
    saved: list[tuple[str, str]] = []
    manager, events = await started(
        server_config(trust=TRUSTED, env=(("SELFREF_MCP_MARK", str(mark)),)),
        on_trust=lambda s, t: saved.append((s, t)))
    manager.mark, manager.saved, manager.events = mark, saved, events
    yield manager
    await manager.aclose()
    assert manager.statuses()[0].state == "stopped" and manager.tools() == []


@dataclass
class Ctx:
    """What ``McpManager.call`` uses of a ToolContext: fds, records and ask."""

    answer: str = APPROVE_ONCE
    asked: list[str] = field(default_factory=list)
    fds: FdTable = field(default_factory=lambda: FdTable(threshold=8_000))
    records: list[dict] = field(default_factory=list)

    async def ask(self, prompt, choices, default):
        self.asked.append(prompt)
        assert default == NOT_ASKED and self.answer in choices
        return self.answer


class SlowPerson:
    """A ToolContext whose person takes their time: ``asked`` is set once the question is
    up, and it is answered ``answer`` once ``answered`` is set."""

    fds = None

    def __init__(self, answer: str) -> None:
        self.answer, self.records = answer, []
        self.asked, self.answered = asyncio.Event(), asyncio.Event()

    async def ask(self, prompt, choices, default):
        self.asked.set()
        await self.answered.wait()
        return self.answer


async def started(*configs, **kwargs) -> tuple[McpManager, list]:
    events: list = []
    manager = McpManager(configs, events.append, **kwargs)
    await manager.wait_started(timeout=60)
    return manager, events


def children_of(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(entry))
    return out


async def test_tools_are_listed_named_and_called(shared):
    manager, events = shared, shared.events
    [status] = manager.statuses()
    assert status.state == "ready" and status.start_s and status.start_s > 0
    names = {t.exposed for t in manager.tools()}
    assert {"mcp__test__echo", "mcp__test__long_text", "mcp__test__picture",
            "mcp__test__odd_name_with_chars"} <= names
    echo = next(s for s in manager.schemas() if s["function"]["name"] == "mcp__test__echo")
    assert echo["function"]["description"].startswith("Echo the text back")
    assert echo["function"]["parameters"]["properties"]["text"]["type"] == "string"
    assert echo["function"]["parameters"]["required"] == ["text"]

    ctx = Ctx()
    out = await manager.call("mcp__test__echo", {"text": "hi"}, ctx)
    assert out == "echo: hi" and not ctx.asked
    assert events == []


async def test_results_map_to_fd_error_image_and_named_blocks(shared):
    manager = shared
    ctx = Ctx()
    long = await manager.call("mcp__test__long_text", {}, ctx)
    assert long.startswith("<fd_result") and f'chars="{LONG_TEXT_CHARS}"' in long
    assert len(ctx.records) == 1 and ctx.records[0]["t"] == "fd"
    fd = ctx.records[0]["id"]
    assert ctx.fds.read_fd(fd, read_all=True).count("line 00001") == 1

    with pytest.raises(ToolError, match=r"Error executing tool fail|broken"):
        await manager.call("mcp__test__fail", {}, ctx)

    pic = await manager.call("mcp__test__picture", {}, ctx)
    assert "a red square" in pic.text and "image/png" in pic.text
    [message] = pic.user_messages
    assert message["role"] == "user"
    text, image = message["content"]
    assert text["type"] == "text" and "mcp__test__picture" in text["text"]
    url = image["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.split(",", 1)[1]) == tiny_png()

    mixed = await manager.call("mcp__test__mixed", {}, ctx)
    assert "[resource file:///notes/readme.txt (text/plain)]\nresource body" in mixed
    assert "https://example.com/doc" in mixed
    assert "audio (audio/wav" in mixed and mixed.endswith("done")
    assert isinstance(mixed, str)


async def test_cancelling_a_call_sends_the_protocol_cancellation(shared):
    manager, mark = shared, shared.mark
    call = asyncio.create_task(manager.call("mcp__test__slow", {"seconds": 30}, Ctx()))
    await wait_until(lambda: mark.exists(), timeout=20, what="the slow tool to start")
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    await wait_until(lambda: mark.read_text() == "cancelled", timeout=20,
                     what="the server to see the cancellation")
    # The server is still there for the next call.
    assert await manager.call("mcp__test__echo", {"text": "after"}, Ctx()) == "echo: after"


async def test_untrusted_tools_ask_and_always_is_remembered(shared):
    manager, saved = shared, shared.saved
    assert manager.is_trusted("mcp__test__echo")
    assert not manager.is_trusted("mcp__test__odd_name_with_chars")
    ctx = Ctx(answer=DENY)
    with pytest.raises(ToolError, match="declined"):
        await manager.call("mcp__test__odd_name_with_chars", {"why": "\x1b]52;c;x\x07"}, ctx)
    assert "odd name.with/chars" in ctx.asked[0] and "test" in ctx.asked[0]
    once = Ctx(answer=APPROVE_ONCE)
    assert await manager.call("mcp__test__odd_name_with_chars", {}, once) == "odd"
    always = Ctx(answer=APPROVE_ALWAYS)
    await manager.call("mcp__test__odd_name_with_chars", {}, always)
    assert saved == [("test", "odd name.with/chars")]
    later = Ctx(answer=DENY)
    await manager.call("mcp__test__odd_name_with_chars", {}, later)
    assert later.asked == []
    manager._trusted["test"].discard("long_text")
    assert not manager.is_trusted("mcp__test__long_text")
    manager.allowed = ("mcp__test__long*",)
    assert manager.is_trusted("mcp__test__long_text")
    manager.allowed = ()


async def test_failing_and_dying_servers_are_notices_and_the_others_work():
    before = set(children_of(os.getpid()))
    manager, events = await started(
        server_config("broken", args=(str(server_config().args[0]), "--crash")),
        server_config("missing", command="no-such-mcp-server-here", args=()),
        server_config("a", trust=("*",)),
        server_config("b", trust=("*",)),
    )
    try:
        states = {s.name: s.state for s in manager.statuses()}
        assert states == {"broken": "failed", "missing": "failed", "a": "ready", "b": "ready"}
        notices = [e.message for e in events if isinstance(e, Notice)]
        assert any("'broken'" in m and "refuses to start" in m for m in notices), notices
        assert any("'missing'" in m and "command not found" in m for m in notices), notices
        with pytest.raises(ToolError, match="unknown tool"):
            await manager.call("mcp__broken__echo", {}, Ctx())

        pids = sorted((set(children_of(os.getpid())) - before) & _server_pids())
        assert len(pids) == 2
        os.kill(pids[0], signal.SIGKILL)
        await wait_until(lambda: len(events) == 3, timeout=20, what="a notice about the death")
        assert "stopped" in events[-1].message and events[-1].severity == "error"
        [dead] = [s for s in manager.statuses() if s.state == "exited"]
        assert not any(t.server == dead.name for t in manager.tools())
        alive = "b" if dead.name == "a" else "a"
        out = await manager.call(f"mcp__{alive}__echo", {"text": "still"}, Ctx())
        assert out == "echo: still"
    finally:
        await manager.aclose()
    # Stopped means gone: no server process is left behind.
    assert not ((set(children_of(os.getpid())) - before) & _server_pids())


async def test_colliding_server_names_follow_the_config_not_who_starts_first():
    # "my.tools" comes first in the config but starts last; both clean to "my_tools"
    slow = server_config("my.tools", args=(*server_config().args, "--delay", "1.5"),
                         trust=("*",))
    fast = server_config("my tools", trust=("*",))
    manager, _ = await started(slow, fast)
    try:
        assert [s.state for s in manager.statuses()] == ["ready", "ready"]
        assert manager.statuses()[1].start_s < manager.statuses()[0].start_s
        by_server = {(t.server, t.name): t.exposed for t in manager.tools()}
        assert by_server[("my.tools", "echo")] == "mcp__my_tools__echo"
        assert by_server[("my tools", "echo")] == "mcp__my_tools_2__echo"
        assert await manager.call("mcp__my_tools__echo", {"text": "1st"}, Ctx()) == "echo: 1st"
    finally:
        await manager.aclose()


def _server_pids() -> set[int]:
    pids = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if b"tests/mcp/server.py" in f.read():
                        pids.add(int(entry))
            except OSError:
                continue
    return pids


async def test_quitting_while_a_server_starts_does_not_wait_for_its_timeout():
    before = set(children_of(os.getpid()))
    mute = server_config("mute", args=("-c", "import time; time.sleep(60)"),
                         start_timeout_s=60)
    manager = McpManager([mute])
    manager.start()
    await wait_until(lambda: set(children_of(os.getpid())) - before, timeout=20,
                     what="the server process")
    [pid] = set(children_of(os.getpid())) - before
    started = time.monotonic()
    await manager.aclose()
    assert time.monotonic() - started < 15  # the SDK's stdin-close grace, then a signal
    assert manager.statuses()[0].state == "stopped"
    assert not alive(pid)

