"""Tool names for the model and result mapping: pure, no server needed."""

from __future__ import annotations

import asyncio
import base64
import re
from types import SimpleNamespace as NS

from selfref_tui.agent.mcp.manager import McpManager
from selfref_tui.agent.mcp.naming import MAX_LEN, exposed_name, server_tags
from selfref_tui.agent.mcp.results import MAX_IMAGE_BYTES, map_result
from selfref_tui.agent.mcp.server_state import _Run
from selfref_tui.context.images import MAX_RESULT_IMAGES

from .conftest import server_config
from .server import tiny_png

VALID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def test_names_are_cleaned_bounded_and_unique():
    assert exposed_name("time", "get_current_time") == "mcp__time__get_current_time"
    assert exposed_name("my docs", "search.v2/all") == "mcp__my_docs__search_v2_all"
    taken: set[str] = set()
    names = []
    for tool in ("a.b", "a_b", "a/b", "a b"):  # all clean to a_b
        name = exposed_name("s", tool, taken)
        taken.add(name)
        names.append(name)
    assert names == ["mcp__s__a_b", "mcp__s__a_b_2", "mcp__s__a_b_3", "mcp__s__a_b_4"]
    long_a = exposed_name("server" * 5, "tool_" * 20 + "a")
    long_b = exposed_name("server" * 5, "tool_" * 20 + "b")
    assert long_a != long_b and len(long_a) == MAX_LEN == len(long_b)
    crowded = {long_a}
    again = exposed_name("server" * 5, "tool_" * 20 + "a", crowded)
    assert again != long_a and len(again) <= MAX_LEN
    for name in (*names, long_a, long_b, again, exposed_name("ü→", "😀")):
        assert VALID.match(name), name


def test_server_tags_are_unique_in_config_order_and_never_hold_a_double_underscore():
    tags = server_tags(["my.tools", "my tools", "my_tools_2", "a__b", "a_", "", "x" * 40])
    assert list(tags.values())[:6] == ["my_tools", "my_tools_2", "my_tools_2_2", "a_b", "a",
                                       "server"]
    assert len(tags["x" * 40]) <= 24 and len(set(tags.values())) == 7
    assert all("__" not in t and not t.endswith("_") for t in tags.values())
    # "a_" and "a" would both be "mcp__a___x" for ("a_", "x") and ("a", "_x") without tags
    tags = server_tags(["a_", "a"])
    assert exposed_name("a_", "x", tag=tags["a_"]) != exposed_name("a", "_x", tag=tags["a"])


def test_names_follow_config_order_not_start_order():
    listing = [NS(name="echo", description="", input_schema={})]
    names = []
    for first in ("my.tools", "my tools"):  # whichever server lists its tools first
        manager = McpManager([server_config("my.tools"), server_config("my tools")])
        second = "my tools" if first == "my.tools" else "my.tools"
        for server in (first, second):
            manager._register(_Run(0, manager.configs[server], manager.status[server],
                                   asyncio.Event()), listing)
        names.append({t.server: t.exposed for t in manager.tools()})
    assert names[0] == names[1] == {"my.tools": "mcp__my_tools__echo",
                                    "my tools": "mcp__my_tools_2__echo"}


def _image(data: bytes, mime: str = "image/png") -> NS:
    return NS(type="image", data=base64.b64encode(data).decode(), mime_type=mime)


def test_text_error_and_structured_results():
    assert map_result(NS(content=[NS(type="text", text="a"), NS(type="text", text="b")],
                         is_error=False)).text == "a\nb"
    failed = map_result(NS(content=[NS(type="text", text="bad input")], is_error=True))
    assert failed.is_error and failed.text == "bad input"
    only_structured = map_result(NS(content=[], is_error=False, structured_content={"n": 1}))
    assert only_structured.text == '{"n": 1}'


def test_images_become_user_message_parts_and_oddities_are_named():
    png = tiny_png()
    result = map_result(NS(is_error=False, content=[
        NS(type="text", text="caption"),
        _image(png),
        _image(b"x", "image/tiff"),
        NS(type="image", data="not base64!!", mime_type="image/png"),
        _image(png + b"\0" * MAX_IMAGE_BYTES),
        NS(type="audio", data=base64.b64encode(b"RIFF").decode(), mime_type="audio/wav"),
        NS(type="resource", resource=NS(uri="file:///a.bin", mime_type="application/x",
                                        blob=base64.b64encode(b"123").decode(), text=None)),
        NS(type="resource_link", uri="https://e.x/d", name="d", description="a doc"),
        NS(type="hologram"),
    ]))
    assert len(result.images) == 1 and result.images[0].size == len(png)
    lines = result.text.splitlines()
    assert lines[0] == "caption" and lines[1] == f"[image 1: image/png, {len(png)} bytes]"
    assert "image/tiff" in lines[2] and "not valid base64" in lines[3]
    assert "over the" in lines[4]
    assert "audio (audio/wav, 4 bytes)" in lines[5]
    assert lines[6] == "[resource file:///a.bin: application/x, 3 bytes, not shown]"
    assert lines[7] == "[resource link d: https://e.x/d] a doc"
    assert "'hologram'" in lines[8]
    [message] = result.user_messages("mcp__s__pic")
    first, image = message["content"]
    assert first["text"].startswith("Result of mcp__s__pic:\ncaption")
    assert image == {"type": "image_url", "image_url": {
        "url": "data:image/png;base64," + base64.b64encode(png).decode()}}


def test_the_overview_hides_credentials_in_targets():
    docs = server_config("docs", command="", args=(), url="http://me:s3cret@127.0.0.1:9/mcp")
    tool = server_config("t", args=("--token", "Bearer abc.def.ghi"))
    rows = {r["name"]: r for r in McpManager([docs, tool]).overview()}
    assert "s3cret" not in rows["docs"]["target"] and "127.0.0.1:9/mcp" in rows["docs"]["target"]
    assert "abc.def.ghi" not in rows["t"]["target"]


def test_the_bytes_decide_an_images_type_not_the_server():
    script = b"#!/bin/sh\nrm -rf ~\n"
    result = map_result(NS(is_error=False, content=[
        _image(script, "image/png"), _image(tiny_png(), "image/jpeg"),
        _image(script, "image/png\x1b]52;c;aGk=\x07" + "x" * 100),
        _image(b"\x89PNG\r\n\x1a\n" + script, "image/png")]))
    [image] = result.images
    assert image.mime_type == "image/png"  # a PNG declared JPEG is a PNG
    assert image.data_url().startswith("data:image/png;base64,iVBOR")
    lines = result.text.splitlines()
    assert lines[0] == (f"[an image declared image/png, {len(script)} bytes: its bytes are not "
                        "a PNG, JPEG, WebP or GIF image, dropped]")
    assert lines[1].startswith("[image 1: image/png,")
    assert "\x1b" not in lines[2] and len(lines[2]) < 200  # the declared type is shown inert
    assert "its bytes are not a PNG" in lines[3]  # a signature alone is not an image
    [message] = result.user_messages("mcp__s__pic")
    assert base64.b64encode(script).decode() not in str(message)


def test_a_result_carries_at_most_a_few_images_and_names_the_rest():
    result = map_result(NS(is_error=False, content=[_image(tiny_png())] * 200))
    assert len(result.images) == MAX_RESULT_IMAGES
    lines = result.text.splitlines()
    assert lines[-1] == f"[{200 - MAX_RESULT_IMAGES} more images left out: one result carries " \
                        f"at most {MAX_RESULT_IMAGES}]"
    assert len(lines) == MAX_RESULT_IMAGES + 1
