"""SVG snapshot of an image block: a tool's picture, reloaded from the store.

Regenerate with ``pytest tests/ui/test_snapshot_image.py --snapshot-update`` and
look at the SVG (``rsvg-convert`` makes a PNG of it).
"""

from __future__ import annotations

from selfref_tui.context.images import data_url
from selfref_tui.context.mutations import (
    AssistantMessageMutation,
    MultimodalToolResultMutation,
    UserMessageMutation,
)
from selfref_tui.demo.picture import sunset_png
from selfref_tui.selfref.reference import SelfReference
from tests.ui.helpers import SIZE, fixed_clock, make_app, started, thread_server, wait_until


def test_an_image_block_from_a_tool(snap_compare, tmp_path):
    store = SelfReference(tmp_path / "data")
    memory = store.open("main")
    call = {"id": "c1", "type": "function",
            "function": {"name": "mcp__camera__snapshot", "arguments": "{}"}}
    memory.commit([
        UserMessageMutation({"role": "user", "content": "Take a picture of the view."}),
        AssistantMessageMutation("", tool_calls=[call]),
        MultimodalToolResultMutation("c1", "mcp__camera__snapshot", "{}", [
            {"role": "user", "content": [
                {"type": "text", "text": "Result of mcp__camera__snapshot:\n[image 1: image/png]"},
                {"type": "image_url", "image_url": {"url": data_url("image/png", sunset_png())}},
            ]}]),
        AssistantMessageMutation("A sunset over the sea."),
    ])
    store.close()
    with thread_server([]) as url:
        app = make_app(tmp_path, url, clock=fixed_clock)

        async def run_before(pilot) -> None:
            await started(pilot, app)
            await wait_until(pilot, lambda: app.transcript.items_of("image"), what="image")
            await app.transcript.settle()
            await wait_until(pilot, lambda: app.sidebar.meter.window > 0, what="token count")

        assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
