"""Transcript widgets fed runtime events directly (no runtime, no network)."""

from __future__ import annotations

import asyncio
import gc
import time
import weakref

from textual.app import App, ComposeResult
from textual.widgets import Markdown

from selfref_tui.agent import events as ev
from selfref_tui.ui.widgets.assistant_message import AssistantMessage
from selfref_tui.ui.widgets.compaction_divider import CompactionDivider
from selfref_tui.ui.widgets.error_block import ErrorBlock
from selfref_tui.ui.widgets.ref_block import RefBlock, StreamingMarkdown
from selfref_tui.ui.widgets.settled_markdown import SettledMarkdown
from selfref_tui.ui.widgets.tool_card import ToolCard
from selfref_tui.ui.widgets.transcript import Transcript
from selfref_tui.ui.widgets.user_message import UserMessage

K = "main"


class TranscriptApp(App[None]):
    def compose(self) -> ComposeResult:
        yield Transcript(id="t")

    @property
    def t(self) -> Transcript:
        return self.query_one(Transcript)


async def wait_until(pilot, predicate, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await pilot.pause(0.01)


async def stream(t: Transcript, text: str, size: int = 3) -> None:
    for i in range(0, len(text), size):
        await t.handle(ev.TextDelta(key=K, text=text[i : i + size]))


ANSWER = (
    "Here are two versions.\n\n"
    '<ref id="fib_recursive">\n```python\ndef fib(n):\n'
    "    return n if n < 2 else fib(n-1) + fib(n-2)\n```\n</ref>\n\n"
    "and\n"
    '<ref id="fib_iterative">\n```python\ndef fib(n):\n    a, b = 0, 1\n'
    "    for _ in range(n):\n        a, b = b, a + b\n    return a\n```\n</ref>\n"
    "Done."
)


async def test_refs_become_blocks_while_streaming_and_markdown_streams():
    app = TranscriptApp()
    async with app.run_test(size=(100, 40)) as pilot:
        t = app.t
        await t.handle(ev.TurnStarted(key=K, turn_id=1, user_text="fib please"))
        cut = ANSWER.index('<ref id="fib_recursive">') + len('<ref id="fib_recursive">')
        await stream(t, ANSWER[:cut])
        blocks = t.ref_blocks()
        # The block exists as soon as the opening tag is complete, before any content.
        assert [b.ref_id for b in blocks] == ["fib_recursive"]
        assert blocks[0].has_class("-open") and not blocks[0].closed
        assert str(blocks[0].border_title) == "ref:fib_recursive"
        await stream(t, ANSWER[cut:])
        blocks = t.ref_blocks()
        assert [b.ref_id for b in blocks] == ["fib_recursive", "fib_iterative"]
        assert blocks[0].closed and blocks[0].content.startswith("```python\ndef fib")
        assert not blocks[1].has_class("-open")
        answer = t.current
        assert answer is not None
        # Text before the first ref streams through MarkdownStream, not a full update.
        first_md = answer.query(StreamingMarkdown).first()
        assert first_md.text.startswith("Here are two versions.")
        await t.handle(ev.LLMCallEnded(key=K, step=1, duration_s=0.1, finish_reason="stop"))
        await t.handle(ev.TurnEnded(key=K, turn_id=1, outcome="done"))
        await pilot.pause()
        assert answer.finished and not answer.interrupted
        # Fenced code inside a ref is rendered as a code block (syntax highlighted).
        fences = blocks[1].query("MarkdownFence")
        assert len(fences) == 1
        # After stop() each piece got one full render of its whole text.
        for md in answer.query(StreamingMarkdown):
            assert md.source == md.text


async def test_superseded_ref_is_dimmed_and_unfinished_ref_marked():
    app = TranscriptApp()
    async with app.run_test(size=(100, 40)) as pilot:
        t = app.t
        await stream(t, '<ref id="a">\nold\n</ref>\n')
        await t.handle(ev.LLMCallEnded(key=K, step=1, duration_s=0.1, finish_reason="stop"))
        await stream(t, '<ref id="a">\nnew\n</ref>\n<ref id="b">\nnever closed')
        await t.handle(ev.LLMCallEnded(key=K, step=2, duration_s=0.1, finish_reason="stop"))
        await pilot.pause()
        a_old, a_new, b = t.ref_blocks()
        assert a_old.has_class("-superseded") and not a_new.has_class("-superseded")
        assert b.has_class("-unfinished") and not b.closed
        assert "unfinished" in str(b.border_subtitle)


async def test_abort_keeps_partial_text_marked_interrupted():
    app = TranscriptApp()
    async with app.run_test(size=(100, 30)) as pilot:
        t = app.t
        await stream(t, "A long answer that gets cut")
        await t.handle(ev.LLMCallEnded(key=K, step=1, duration_s=0.1, finish_reason="aborted"))
        await t.handle(ev.Aborted(key=K, reason="user pressed Esc", stage="stream"))
        await t.handle(ev.TurnEnded(key=K, turn_id=1, outcome="aborted"))
        await pilot.pause()
        answer = t.query_one(AssistantMessage)
        assert answer.interrupted and answer.has_class("-interrupted")
        assert "A long answer that gets cut" in answer.query_one(Markdown).source
        assert "interrupted" in str(answer.query_one(".marker").render())


async def test_tool_cards_show_status_duration_and_result():
    app = TranscriptApp()
    async with app.run_test(size=(100, 30)) as pilot:
        t = app.t
        await t.handle(ev.ToolCallStarted(key=K, call_id="c1", name="remember"))
        await t.handle(ev.ToolCallArgumentsDelta(key=K, call_id="c1", delta='{"text": "likes'))
        await t.handle(ev.ToolCallArgumentsDelta(key=K, call_id="c1", delta=' tea"}'))
        card = t.query_one(ToolCard)
        assert card.status == "running" and card.arguments == '{"text": "likes tea"}'
        await t.handle(
            ev.ToolCallEnded(
                key=K,
                call_id="c1",
                name="remember",
                arguments='{"text": "likes tea"}',
                result="exp_001",
                duration_s=0.25,
            )
        )
        await t.handle(ev.ToolCallStarted(key=K, call_id="c2", name="read_fd"))
        await t.handle(
            ev.ToolCallError(
                key=K,
                call_id="c2",
                name="read_fd",
                arguments="{",
                error="invalid JSON arguments",
                duration_s=0.0,
            )
        )
        await t.handle(ev.ToolCallStarted(key=K, call_id="c3", name="slow"))
        await t.handle(ev.Aborted(key=K, reason="user pressed Esc", stage="tools"))
        await pilot.pause()
        c1, c2, c3 = t.query(ToolCard)
        assert (
            c1.collapsed and "remember" in c1.title and "done" in c1.title and "0.25s" in c1.title
        )
        assert c1.result == "exp_001"
        assert c2.status == "error" and c2.has_class("-error")
        assert c3.status == "cancelled"


async def test_queued_message_is_marked_until_delivered():
    app = TranscriptApp()
    async with app.run_test(size=(100, 30)) as pilot:
        t = app.t
        await t.add_user("first")
        await t.handle(ev.TurnStarted(key=K, turn_id=1, user_text="first"))
        await stream(t, "working on it")
        queued = await t.add_user("also this", queued=True)
        assert queued.has_class("-queued") and t.queued_messages() == [queued]
        await t.handle(ev.QueuedMessageDelivered(key=K, text="also this"))
        await pilot.pause()
        assert not queued.queued and not queued.has_class("-queued")
        # It moved to where the model now sees it: after the answer so far.
        assert t.children[-1] is queued
        # TurnStarted for a message already shown does not duplicate it.
        assert len(t.query(UserMessage)) == 2


async def test_compaction_divider_archives_earlier_items_and_errors_inline():
    app = TranscriptApp()
    async with app.run_test(size=(100, 30)) as pilot:
        t = app.t
        await t.add_user("hello")
        await stream(t, "hi")
        await t.handle(ev.LLMCallEnded(key=K, step=1, duration_s=0.1, finish_reason="stop"))
        await t.handle(
            ev.CompactionApplied(
                key=K, summary={"goal": "greet", "completed": ["said hi"]}, messages_before=3
            )
        )
        await t.handle(
            ev.ErrorEvent(
                key=K, message="Provider unreachable at http://x; start it.", kind="connection"
            )
        )
        await pilot.pause()
        assert t.query_one(UserMessage).has_class("archived")
        assert t.query_one(AssistantMessage).has_class("archived")
        divider = t.query_one(CompactionDivider)
        assert divider.collapsed and "3 messages" in divider.title
        error = t.query_one(ErrorBlock)
        assert error.kind == "connection" and "start it" in error.message


HISTORY = [
    {"role": "system", "content": ""},
    {"role": "user", "content": "old question", "archived": True},
    {"role": "assistant", "content": 'old <ref id="x">\nv1\n</ref>', "archived": True},
    {"role": "compaction", "summary": {"goal": "g"}},
    {"role": "user", "content": "summary", "compaction": {"goal": "g"}},
    {"role": "user", "content": "new question"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "t1", "type": "function", "function": {"name": "remember", "arguments": "{}"}}
        ],
    },
    {"role": "tool", "tool_call_id": "t1", "content": "exp_001"},
    {
        "role": "assistant",
        "content": 'new <ref id="x">\nv2\n</ref>',
        "truncated": True,
        "abort_reason": "user pressed Esc",
    },
]


async def test_stored_history_renders_the_same_widgets():
    app = TranscriptApp()
    async with app.run_test(size=(100, 40)) as pilot:
        t = app.t
        await t.load_history(HISTORY)
        await pilot.pause()
        kinds = [type(c).__name__ for c in t.children if c.display]
        assert kinds == [
            "UserMessage",
            "AssistantMessage",
            "CompactionDivider",
            "UserMessage",
            "AssistantMessage",
            "ToolCard",
            "AssistantMessage",
        ]
        old, new = t.ref_blocks()
        assert old.has_class("-superseded") and new.content == "v2"
        assert t.query(UserMessage).first().has_class("archived")
        assert t.query_one(ToolCard).result == "exp_001"
        assert list(t.query(AssistantMessage))[-1].interrupted


async def test_long_history_mounts_tail_first_and_older_on_demand():
    history = [{"role": "system", "content": ""}]
    for i in range(130):
        history.append({"role": "user", "content": f"q{i}"})
        history.append({"role": "assistant", "content": f"a{i}"})
    app = TranscriptApp()
    async with app.run_test(size=(100, 40)) as pilot:
        t = app.t
        await t.load_history(history, tail=50)
        await pilot.pause()
        assert len(t.query(UserMessage)) + len(t.query(AssistantMessage)) == 50
        assert t.older_count == 210
        assert t.query(UserMessage).first().text == "q105"
        await t.load_older(100)
        assert t.older_count == 110
        assert t.query(UserMessage).first().text == "q55"


async def test_ref_highlight_moves_through_refs():
    app = TranscriptApp()
    async with app.run_test(size=(100, 20)) as pilot:
        t = app.t
        await stream(
            t, '<ref id="a">\n1\n</ref>\ntext\n<ref id="b">\n2\n</ref>\n<ref id="c">\n3\n</ref>'
        )
        await t.handle(ev.LLMCallEnded(key=K, step=1, duration_s=0.1, finish_reason="stop"))
        await pilot.pause()
        assert t.move_highlight(-1).ref_id == "c"  # starts from the newest
        assert t.move_highlight(-1).ref_id == "b"
        assert t.move_highlight(-1).ref_id == "a"
        assert t.move_highlight(-1).ref_id == "a"
        assert t.move_highlight(+1).ref_id == "b"
        assert [b.has_class("-highlighted") for b in t.ref_blocks()] == [False, True, False]
        assert t.target_ref().ref_id == "b"
        assert isinstance(t.target_ref(), RefBlock)
        await asyncio.sleep(0)


async def test_posted_events_are_shown_in_order_without_waiting():
    """The app posts events and goes back to keys; the transcript shows them in order."""
    app = TranscriptApp()
    async with app.run_test(size=(100, 40)) as pilot:
        t = app.t
        t.post(ev.TurnStarted(key=K, turn_id=1, user_text="fib please"))
        for i in range(0, len(ANSWER), 3):
            t.post(ev.TextDelta(key=K, text=ANSWER[i : i + 3]))
        t.post(ev.LLMCallEnded(key=K, step=1, duration_s=0.1, finish_reason="stop"))
        t.post(ev.ToolCallStarted(key=K, call_id="c1", name="remember"))
        t.post(ev.RefOpened(key=K, ref_id="ignored"))  # sidebar's business, not shown here
        # Nothing is on screen yet: posting never waited for a widget.
        assert not t.query(AssistantMessage)
        assert not t.settled
        await t.settle()
        await pilot.pause()
        assert t.settled
        answer = t.query_one(AssistantMessage)
        assert answer.text == ANSWER  # every delta arrived, joined or not, in order
        assert answer.finished
        assert [b.ref_id for b in answer.ref_blocks] == ["fib_recursive", "fib_iterative"]
        kinds = [type(c) for c in t.children if c.display]
        assert kinds[-3:] == [UserMessage, AssistantMessage, ToolCard]


def long_answer(sections: int) -> str:
    parts = []
    for i in range(sections):
        parts.append(f"### Part {i}\n\nParagraph {i} with **bold** and `code`.\n\n- a\n- b\n\n")
        if i % 3 == 2:
            parts.append(f'<ref id="r{i}">\n```python\nx = {i}\n```\n</ref>\n\n')
    return "".join(parts)


class ManualSettleApp(TranscriptApp):
    def compose(self) -> ComposeResult:
        yield Transcript(id="t", settle_every=None)  # the test settles by hand


async def test_pieces_out_of_view_settle_into_identical_lines_and_thaw_on_change():
    app = ManualSettleApp()
    async with app.run_test(size=(100, 30)) as pilot:
        t = app.t
        text = long_answer(30)
        await stream(t, text, size=40)
        await t.handle(ev.LLMCallEnded(key=K, step=1, duration_s=0.1, finish_reason="stop"))
        await pilot.pause()
        answer = t.query_one(AssistantMessage)
        t.scroll_home(animate=False)
        await pilot.pause()
        assert not app.query(SettledMarkdown)
        before = app.export_screenshot()
        live_widgets = len(list(app.query("*")))

        t.scroll_end(animate=False)
        await pilot.pause()
        pieces = [weakref.ref(p) for p in t.query(StreamingMarkdown)]
        settled = 0
        while swept := t.settle_out_of_view():  # each sweep has a time budget
            settled += swept
            await pilot.pause()
        assert settled > 10
        await pilot.pause()
        gc.collect()
        freed = sum(1 for p in pieces if p() is None)
        assert freed >= settled // 2  # settling frees the live blocks; nothing holds on to them
        assert len(app.query(SettledMarkdown)) == settled
        assert len(list(app.query("*"))) < live_widgets / 2  # the tree layout walks shrank
        assert t.settle_out_of_view() == 0  # what is on screen stays live

        t.scroll_home(animate=False)
        await pilot.pause()
        assert app.export_screenshot() == before  # the same lines, pixel for pixel
        assert answer.text == text
        first = answer.ref_blocks[0]
        assert first.text_so_far == "```python\nx = 2\n```"

        # A style change of an enclosing ref puts its live Markdown back.
        assert first.query(SettledMarkdown)
        t.highlight(first)
        await pilot.pause()
        assert not first.query(SettledMarkdown)
        assert first.query_one(StreamingMarkdown).text.strip() == "```python\nx = 2\n```"

        # So does a new width: the captured lines only fit the old one.
        await pilot.resize_terminal(80, 30)
        await wait_until(pilot, lambda: not app.query(SettledMarkdown))
        assert answer.text == text


class PieceApp(App[None]):
    def compose(self) -> ComposeResult:
        yield StreamingMarkdown(classes="piece")


async def test_a_piece_finished_before_its_stream_task_ran_shows_its_text():
    """The feeder opens the stream, and finish() comes before the stream's task first runs.

    Textual's ``MarkdownStream.stop()`` cancels that task and awaits it; a task
    cancelled before it started raises ``CancelledError`` into the awaiting
    caller. It once killed the transcript's event pump on about one full test
    run in ten, leaving the turn's end unshown for good.
    """
    app = PieceApp()
    async with app.run_test(size=(60, 10)) as pilot:
        piece = app.query_one(StreamingMarkdown)
        piece.write("hello **there**")
        await asyncio.sleep(0)  # the feeder runs once: it opens the stream and yields
        assert piece._stream is not None
        await piece.finish(full_render=False)  # must not raise
        await pilot.pause()
        assert not piece.streaming
        shown = "".join(str(block._content) for block in piece.query("MarkdownBlock"))
        assert "there" in shown


async def test_the_event_pump_survives_a_stray_cancellation_from_a_widget():
    """A ``CancelledError`` that is not the pump's own stops one event, not the queue."""
    app = TranscriptApp()
    async with app.run_test(size=(100, 40)) as pilot:
        t = app.t
        shown: list[str] = []
        original = t.handle

        async def handle(event):
            if isinstance(event, ev.TextDelta) and event.text == "boom":
                raise asyncio.CancelledError  # what an awaited, cancelled child task raises
            shown.append(type(event).__name__)
            await original(event)

        t.handle = handle  # type: ignore[method-assign]
        t.post(ev.TextDelta(key=K, text="boom"))
        t.post(ev.TurnEnded(key=K, turn_id=1, outcome="done"))
        await wait_until(pilot, lambda: t.settled)
        assert "TurnEnded" in shown


async def test_a_piece_whose_code_scrolls_sideways_is_not_settled():
    """Settled lines are cut at the edge; a wide fence must stay scrollable."""
    app = ManualSettleApp()
    async with app.run_test(size=(60, 20)) as pilot:
        t = app.t
        wide = "x = " + " + ".join(f"value_{i}" for i in range(40))
        tail = "\n\n".join(f"Line {i}." for i in range(60))
        # A ref ends the first piece: the fence's piece is finished and scrolls out of view.
        text = f"```python\n{wide}\n```\n\n<ref id=\"r\">kept</ref>\n\n{tail}"
        await stream(t, text, size=50)
        await t.handle(ev.LLMCallEnded(key=K, step=1, duration_s=0.1, finish_reason="stop"))
        await pilot.pause()
        t.scroll_end(animate=False)
        await pilot.pause()
        pieces = list(t.query(StreamingMarkdown))
        fence_piece = next(p for p in pieces if p.query("MarkdownFence"))
        assert fence_piece.query_one("MarkdownFence").max_scroll_x > 0
        plain = [p for p in pieces if p is not fence_piece and not p.query("MarkdownFence")]
        while t.settle_out_of_view():
            await pilot.pause()
        assert fence_piece.is_attached and not fence_piece.streaming  # still live
        assert any(not p.is_attached for p in plain)  # while others did settle
