"""Image blocks in the transcript: drawn with half-blocks, and hostile bytes shown inert."""

from __future__ import annotations

import io
import struct
import zlib

from PIL import Image

from selfref_tui.agent import events as ev
from selfref_tui.context.apply import apply_mutations
from selfref_tui.context.images import data_url
from selfref_tui.context.mutations import (
    AssistantMessageMutation,
    MultimodalToolResultMutation,
)
from selfref_tui.ui.transcript.image import MAX_PIXELS, ImageItem
from tests.hostile import CORPUS, assert_inert
from tests.ui.helpers import wait_until
from tests.ui.test_widgets_transcript import TranscriptApp, shown

K = "main"


def png(width: int = 40, height: int = 20) -> bytes:
    """Red above, blue below: the block's cells must show both."""
    image = Image.new("RGB", (width, height), (255, 0, 0))
    image.paste((0, 0, 255), (0, height // 2, width, height))
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def bomb_png(width: int = 30_000, height: int = 30_000) -> bytes:
    """A PNG header claiming 900 M pixels, with a little zero data: decoding it would eat GBs."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body) & 0xFFFFFFFF
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    data = zlib.compress(b"\x00" * 100_000)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", data)
            + chunk(b"IEND", b""))


async def show_tool_image(t, url: str, name: str = "mcp__pics__draw") -> None:
    await t.handle(ev.TurnStarted(key=K, turn_id=1, user_text="draw"))
    await t.handle(ev.ToolCallStarted(key=K, call_id="c1", name=name))
    await t.handle(ev.ToolCallEnded(key=K, call_id="c1", name=name, arguments="{}",
                                    result="[image 1: image/png]", duration_s=0.1,
                                    images=(url,)))


async def test_a_tool_image_is_a_block_with_type_size_and_its_colours():
    data = png()
    app = TranscriptApp()
    async with app.run_test(size=(100, 40)) as pilot:
        t = app.t
        await show_tool_image(t, data_url("image/png", data))
        screen = await shown(pilot, t)
        assert f"PNG image · 40×20 px · {len(data)} B · tool mcp__pics__draw" in screen
        (image,) = t.items_of("image")
        assert t.items.index(image) == t.items.index(t.items_of("tool")[0]) + 1
        # 40 px wide → 40 cells; 20 px tall → 10 rows of ▀ (two pixels per cell).
        rows = [line for line in screen.splitlines() if "▀" in line]
        assert len(rows) == 10 and all(line.count("▀") == 40 for line in rows)
        # The upper rows are red over red, the lower blue over blue.
        styles = {
            (seg.style.color.triplet, seg.style.bgcolor.triplet)
            for y in range(40)
            for seg in t.render_line(y)
            if seg.text and set(seg.text) == {"▀"}
        }
        assert ((255, 0, 0), (255, 0, 0)) in styles and ((0, 0, 255), (0, 0, 255)) in styles


async def test_a_wide_image_fits_the_width_and_keeps_its_shape():
    app = TranscriptApp()
    async with app.run_test(size=(50, 40)) as pilot:
        await show_tool_image(app.t, data_url("image/png", png(400, 100)))
        screen = await shown(pilot, app.t)
        rows = [line for line in screen.splitlines() if "▀" in line]
        width = rows[0].count("▀")
        # the transcript's left padding (1), then the image's inset (2 + 3) in its rows
        assert width <= 50 - 1 - 5 and abs(len(rows) * 2 / width - 100 / 400) < 0.1


async def test_hostile_images_say_why_they_are_not_shown():
    good = png()
    cases = {
        "truncated": (good[: len(good) // 2], "the data is truncated"),
        "bomb": (bomb_png(), f"over the {MAX_PIXELS:,} pixel limit"),
        "a smaller bomb": (bomb_png(6_000, 6_000), f"6000×6000 pixels is over the {MAX_PIXELS:,}"),
        "not an image": (b"#!/bin/sh\nrm -rf ~\n", "not a PNG, JPEG, WebP or GIF image"),
        "garbage after the magic": (b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4, ""),
    }
    app = TranscriptApp()
    async with app.run_test(size=(100, 60)) as pilot:
        t = app.t
        for index, (data, _reason) in enumerate(cases.values()):
            await t.handle(ev.ToolCallStarted(key=K, call_id=f"c{index}", name="pics"))
            await t.handle(ev.ToolCallEnded(key=K, call_id=f"c{index}", name="pics",
                                            arguments="{}", result="", duration_s=0.1,
                                            images=(data_url("image/png", data),)))
        t.set_expanded(False)
        screen = "\n".join(t.shown_text(item) for item in t.items_of("image"))
        await pilot.pause()
        assert screen.count("image could not be shown (") == len(cases)
        for _data, reason in cases.values():
            assert reason in screen, (reason, screen)
        assert "▀" not in screen
        assert_inert(screen)


async def test_a_hostile_name_and_source_are_shown_inert():
    app = TranscriptApp()
    async with app.run_test(size=(100, 40)) as pilot:
        t = app.t
        for _name, text in CORPUS:
            item = ImageItem(url=data_url("image/png", png(8, 4)), name=text, source=text)
            t.model._add(item)
        screen = await shown(pilot, t)
        assert_inert(screen)
        assert "[@click=app.quit]ERR[/]" in "".join(t.shown_text(i) for i in t.items_of("image"))


async def test_stored_tool_images_come_back_under_their_call():
    url = data_url("image/png", png())
    messages = apply_mutations([{"role": "system", "content": ""}], [
        AssistantMessageMutation("", tool_calls=[
            {"id": "c1", "type": "function",
             "function": {"name": "mcp__pics__draw", "arguments": "{}"}}]),
        MultimodalToolResultMutation("c1", "mcp__pics__draw", "{}", [
            {"role": "user", "content": [{"type": "text", "text": "Result of draw:\nok"},
                                         {"type": "image_url", "image_url": {"url": url}}]}]),
    ])
    app = TranscriptApp()
    async with app.run_test(size=(100, 40)) as pilot:
        t = app.t
        await t.load_history(messages)
        await shown(pilot, t)
        assert [item.kind for item in t.items] == ["tool", "image"]
        (card,) = t.items_of("tool")
        assert card.tool_name == "mcp__pics__draw" and "Result of draw" in (card.result or "")
        assert "40×20 px" in t.shown_text(t.items_of("image")[0])


async def test_a_big_image_is_decoded_off_the_event_loop_then_drawn():
    import os

    noise = Image.frombytes("RGB", (600, 400), os.urandom(600 * 400 * 3))
    out = io.BytesIO()
    noise.save(out, "PNG")
    assert len(out.getvalue()) > 512 * 1024  # over SYNC_BYTES
    app = TranscriptApp()
    async with app.run_test(size=(100, 40)) as pilot:
        t = app.t
        await show_tool_image(t, data_url("image/png", out.getvalue()))
        (image,) = t.items_of("image")
        assert "decoding…" in t.shown_text(image)  # drawn at once, without the picture
        await wait_until(pilot, lambda: "▀" in t.shown_text(image))
        assert "600×400 px" in t.shown_text(image)


async def test_many_pixels_in_few_bytes_decode_off_the_loop_a_few_at_a_time(monkeypatch):
    import threading

    from selfref_tui.ui.transcript import image as image_module

    flat = io.BytesIO()
    Image.new("RGB", (1500, 1500), (0, 128, 0)).save(flat, "PNG")
    assert len(flat.getvalue()) < 64 * 1024  # far under SYNC_BYTES: 2.25 M pixels decide
    assert not ImageItem(url=data_url("image/png", png())).decode_waits  # small: at once
    lock, running, peak, threads = threading.Lock(), [0], [0], []
    decode = ImageItem.decode

    def counted(self) -> None:
        if self._decoded:  # drawing asks again once decoded: nothing is decoded then
            return
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
            threads.append(threading.current_thread().name)
        try:
            decode(self)
        finally:
            with lock:
                running[0] -= 1

    monkeypatch.setattr(ImageItem, "decode", counted)
    app = TranscriptApp()
    async with app.run_test(size=(100, 40)) as pilot:
        t = app.t
        await show_tool_image(t, data_url("image/png", flat.getvalue()))
        (first,) = t.items_of("image")
        assert "decoding…" in t.shown_text(first)  # drawn at once, without the picture
        for n in range(2, 6):
            await t.handle(ev.ToolCallStarted(key=K, call_id=f"c{n}", name="mcp__pics__draw"))
            await t.handle(ev.ToolCallEnded(
                key=K, call_id=f"c{n}", name="mcp__pics__draw", arguments="{}",
                result="[image 1: image/png]", duration_s=0.1,
                images=(data_url("image/png", flat.getvalue()),)))
        images = t.items_of("image")
        await wait_until(pilot, lambda: all(i._decoded for i in images)
                         and "▀" in t.shown_text(first))
        assert "1500×1500 px" in t.shown_text(first)
    assert len(threads) == 5 and all(name.startswith("image-decode") for name in threads)
    assert peak[0] <= image_module.DECODE_THREADS


def test_a_queued_messages_images_move_with_it_when_delivered():
    from selfref_tui.ui.transcript.reducer import TranscriptModel

    model = TranscriptModel()
    url = data_url("image/png", png(4, 2))
    queued = model.add_user("look at this", queued=True, images=[(url, "a.png")])
    model.apply(ev.ToolCallStarted(key=K, call_id="c1", name="slow"))
    assert [i.kind for i in model.items] == ["user", "image", "tool"]
    model.apply(ev.QueuedMessageDelivered(key=K, text="look at this"))
    assert [i.kind for i in model.items] == ["tool", "user", "image"]
    assert model.items[2].owner is queued and not queued.queued


def test_older_history_is_never_cut_between_a_call_and_its_images():
    from selfref_tui.ui.transcript.reducer import TranscriptModel

    url = data_url("image/png", png(4, 2))
    messages = apply_mutations([{"role": "system", "content": ""}], [
        AssistantMessageMutation("", tool_calls=[
            {"id": "c1", "type": "function",
             "function": {"name": "mcp__pics__draw", "arguments": "{}"}}]),
        MultimodalToolResultMutation("c1", "mcp__pics__draw", "{}", [
            {"role": "user", "content": [{"type": "text", "text": "Result:"},
                                         {"type": "image_url", "image_url": {"url": url}}]}]),
        AssistantMessageMutation("done"),
    ])
    model = TranscriptModel()
    model.load_history(messages, tail=2)  # would start at the images' message
    assert [i.kind for i in model.items] == ["tool", "image", "answer"]
    assert model.items[0].tool_name == "mcp__pics__draw"


def test_an_image_block_keeps_its_url_not_its_bytes():
    """The block reads size and type once, draws from a thumbnail, and decodes the URL
    again only for an export: a large picture is not in memory twice."""
    item = ImageItem(url=data_url("image/png", png(64, 64)))
    item.decode()
    assert item.error == "" and item.pixels == (64, 64) and item.data == png(64, 64)
    assert item.mime == "image/png" and "64×64 px" in item.title
    assert not [v for v in vars(item).values() if isinstance(v, bytes | bytearray)]


def test_an_image_block_is_made_without_decoding_its_picture():
    """A block is made on the app's loop (when a message is sent, when a conversation
    opens): its title's type and size come from the URL's head and length, with no copy
    of a 19 MB picture made (that decode held the loop ~0.25 s per picture)."""
    import tracemalloc

    header = png(64, 64)
    url = data_url("image/png", header + bytes(19 * 1024 * 1024))
    tracemalloc.start()
    try:
        item = ImageItem(url=url)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1024 * 1024
    assert item.mime == "image/png" and item.error == ""
    assert "PNG image" in item.title and "19.0 MB" in item.title
    broken = ImageItem(url="data:image/png;base64,iVBORw0KGgo!!!!")
    broken.decode()
    assert broken.error == "not a base64 data URL"
