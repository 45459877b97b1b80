"""Images from a hostile MCP server (a real subprocess) through the loop, over real HTTP.

The server (``tests/hostile_servers/mcp_images.py``) returns 200 images in one
result, a shell script declared ``image/png``, a PNG declared ``image/jpeg``:
what reaches the model is checked, and the key stays usable afterwards.
"""

from __future__ import annotations

import base64

import pytest
import pytest_asyncio

from selfref_tui.agent.mcp.manager import McpManager
from selfref_tui.config import McpServerConfig
from selfref_tui.context.images import MAX_RESULT_IMAGES, REPEATED_TEXT, image_urls
from selfref_tui.demo.script import Reply, ToolCall
from tests.agent.conftest import Harness
from tests.hostile_servers import command
from tests.hostile_servers.mcp_images import SCRIPT

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def images():
    argv = command("mcp_images")
    manager = McpManager([McpServerConfig(name="img", command=argv[0], args=tuple(argv[1:]),
                                          trust=("*",))])
    await manager.wait_started(timeout=60)
    assert manager.statuses()[0].state == "ready", manager.statuses()[0].error
    yield manager
    await manager.aclose()


def _images_in(body: dict) -> list[str]:
    return [url for m in body["messages"] for url in image_urls(m.get("content"))]


async def test_two_hundred_images_in_one_result_leave_the_key_usable(tmp_path, images):
    script = [Reply(tool_calls=[ToolCall("mcp__img__many_images", {"count": 200}, id="c1")]),
              Reply(text="Squares."), Reply(text="Still here.")]
    async with Harness(tmp_path, script) as h:
        h.agent.tool_sources.append(images)
        assert await h.agent.run_turn("main", "draw") == "done"
        assert await h.agent.run_turn("main", "again") == "done"
        sent = _images_in(h.server.requests[2])
    assert len(sent) == MAX_RESULT_IMAGES
    assert (f"[{200 - MAX_RESULT_IMAGES} more images left out: one result carries at most"
            in str(h.server.requests[1]["messages"][-1]["content"]))


async def test_bytes_that_are_not_an_image_never_reach_the_model_as_one(tmp_path, images):
    script = [Reply(tool_calls=[ToolCall("mcp__img__not_an_image", {}, id="c1"),
                                ToolCall("mcp__img__mislabelled", {}, id="c2")]),
              Reply(text="Seen."), Reply(tool_calls=[ToolCall("mcp__img__mislabelled", {},
                                                              id="c3")]), Reply(text="Again.")]
    async with Harness(tmp_path, script) as h:
        h.agent.tool_sources.append(images)
        assert await h.agent.run_turn("main", "show me") == "done"
        assert await h.agent.run_turn("main", "once more") == "done"
        first, later = h.server.requests[1], h.server.requests[3]
    body = str(first)
    assert base64.b64encode(SCRIPT).decode() not in body
    # the one real picture, declared JPEG, goes as the PNG its bytes say it is
    assert [url[:31] for url in _images_in(first)] == ["data:image/png;base64,iVBORw0KG"]
    assert "its bytes are not a PNG, JPEG, WebP or GIF image, dropped" in body
    # images still go to this server: nothing was refused, nothing is left out from then
    # on (the same picture twice goes once, the repeat said in words)
    assert len(_images_in(later)) == 1 and REPEATED_TEXT in str(later)
    assert "image omitted" not in str(later)


async def test_a_results_images_take_at_most_a_share_of_a_small_window(tmp_path, images):
    """Eight tall images (1,445 tokens each) in an 8k window: one fits its quarter."""
    from selfref_tui.context.images import RESULT_IMAGE_SHARE

    script = [Reply(tool_calls=[ToolCall("mcp__img__many_images",
                                         {"count": 8, "width": 768, "height": 2048}, id="c1")]),
              Reply(text="Tall."), Reply(text="Still here.")]
    async with Harness(tmp_path, script, context_window=8192) as h:
        h.agent.tool_sources.append(images)
        assert await h.agent.run_turn("main", "draw") == "done"
        assert await h.agent.run_turn("main", "again") == "done"
        after = h.server.requests[1]["messages"][-1]["content"]
    assert len([p for p in after if p["type"] == "image_url"]) == 1
    left_out = [p["text"] for p in after if p["type"] == "text" and "left out" in p["text"]]
    budget = int(8192 * RESULT_IMAGE_SHARE)
    assert left_out == [f"[an image left out: about 1,445 tokens, past this result's share of "
                        f"the window ({budget:,} tokens for its images)]"] * 7


async def test_an_image_the_server_cannot_read_is_not_taken_for_a_model_without_vision(
        tmp_path, images):
    """OpenAI's 400 for a corrupt image: the step goes again without the tools' images
    so far, and later images still go to this server."""
    script = [Reply(tool_calls=[ToolCall("mcp__img__broken_png", {}, id="c1")]),
              Reply(text="I could not see it."),
              Reply(tool_calls=[ToolCall("mcp__img__mislabelled", {}, id="c2")]),
              Reply(text="A red square.")]
    async with Harness(tmp_path, script, server_options={"check_images": True}) as h:
        h.agent.tool_sources.append(images)
        assert await h.agent.run_turn("main", "look") == "done"
        assert await h.agent.run_turn("main", "and now?") == "done"
        bodies = h.server.requests
        notices = [e.message for e in h.events if type(e).__name__ == "Notice"]
    assert len(bodies) == 5  # the refused step was sent once more, not given up on
    assert "could not read an image of the request" in " ".join(notices)
    assert "a tool image is left out of this request and later ones" in " ".join(notices)
    assert "does not accept images" not in " ".join(notices)
    assert _images_in(bodies[2]) == [] and "the server could not read it" in str(bodies[2])
    assert len(_images_in(bodies[4])) == 1  # the good picture goes; the broken one does not
    assert h.agent.provider.images_ok


async def test_a_persons_unreadable_picture_leaves_the_tools_earlier_images_in(tmp_path, images):
    """The server read the tool's picture in an earlier request: when the person's new
    attachment is the one it cannot read, that picture is not the suspect and still goes."""
    from selfref_tui.agent.turn.router import AgentInputRouter
    from selfref_tui.context.images import data_url

    broken = data_url("image/png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 64)
    script = [Reply(tool_calls=[ToolCall("mcp__img__mislabelled", {}, id="c1")]),
              Reply(text="A red square."), Reply(text="Still a red square.")]
    async with Harness(tmp_path, script, server_options={"check_images": True}) as h:
        h.agent.tool_sources.append(images)
        router = AgentInputRouter(h.agent)
        for text, urls in (("look", []), ("and this?", [broken]), ("and the square?", [])):
            router.submit(text, urls)
            await router.wait_idle()
        bodies = h.server.requests
        notices = [e.message for e in h.events if type(e).__name__ == "Notice"]
        errors = [e.message for e in h.events if type(e).__name__ == "ErrorEvent"]
    assert router.outcomes == ["done", "error", "done"]
    assert len(bodies) == 4  # the refused request was not tried again without the tool's
    assert "send the message again without the attachment" in errors[0]
    assert not [n for n in notices if "left out of this request" in n]
    assert len(_images_in(bodies[-1])) == 1 and "could not read it" not in str(bodies[-1])
