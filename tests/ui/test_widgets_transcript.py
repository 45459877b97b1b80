"""The transcript widget fed runtime events directly (no runtime, no network)."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.color import Color
from textual.geometry import Offset
from textual.selection import Selection
from textual.strip import Strip

from selfref_tui.agent import events as ev
from selfref_tui.safety import content
from selfref_tui.ui.theme_colors import contrast
from selfref_tui.ui.transcript import layout
from selfref_tui.ui.transcript.layout import KEEP_LINES
from selfref_tui.ui.transcript.paint import Painter
from selfref_tui.ui.transcript.paint_answer import CONTINUATION
from selfref_tui.ui.transcript.rows import Row
from selfref_tui.ui.widgets.transcript import Transcript
from tests.hostile import CORPUS, assert_inert
from tests.ui.contrast import READABLE
from tests.ui.helpers import wait_until

K = "main"


class TranscriptApp(App[None]):
    def __init__(self) -> None:
        super().__init__()
        self.highlights: list[str] = []

    def compose(self) -> ComposeResult:
        yield Transcript(id="t")

    @property
    def t(self) -> Transcript:
        return self.query_one(Transcript)

    def on_transcript_ref_highlighted(self, message: Transcript.RefHighlighted) -> None:
        self.highlights.append(message.ref_id)


def set_back(t: Transcript, strip, text: str | None = None) -> bool:
    """The strip's text (or its ``text`` only) is fainter than the transcript's own text,
    and still readable: what archived messages and superseded refs look like."""
    palette = t._palette
    normal = contrast(palette.fg, palette.bg)
    shown = [seg for seg in strip
             if seg.text.strip() and (text is None or seg.text.strip() == text)]
    ratios = [contrast(Color.from_rich_color(seg.style.color),
                       Color.from_rich_color(seg.style.bgcolor)) for seg in shown]
    return bool(ratios) and all(READABLE <= ratio < normal for ratio in ratios)


async def stream(t: Transcript, text: str, size: int = 3) -> None:
    for i in range(0, len(text), size):
        await t.handle(ev.TextDelta(key=K, text=text[i : i + size]))


async def shown(pilot, t: Transcript) -> str:
    await t.settle()
    await pilot.pause()
    return "\n".join(t.visible_text())


ANSWER = (
    "Here are two versions.\n\n"
    '<ref id="fib_recursive">\n```python\ndef fib(n):\n'
    "    return n if n < 2 else fib(n-1) + fib(n-2)\n```\n</ref>\n\n"
    "and\n"
    '<ref id="fib_iterative">\n```python\ndef fib(n):\n    a, b = 0, 1\n'
    "    for _ in range(n):\n        a, b = b, a + b\n    return a\n```\n</ref>\n"
    "Done."
)


async def test_refs_are_framed_while_streaming_and_code_is_highlighted():
    app = TranscriptApp()
    async with app.run_test(size=(100, 40)) as pilot:
        t = app.t
        await t.handle(ev.TurnStarted(key=K, turn_id=1, user_text="fib please"))
        cut = ANSWER.index('<ref id="fib_recursive">') + len('<ref id="fib_recursive">')
        await stream(t, ANSWER[:cut])
        (block,) = t.ref_blocks()
        # The frame is drawn as soon as the opening tag is complete, before any content.
        screen = await shown(pilot, t)
        assert "ref:fib_recursive" in screen and "streaming…" in screen
        assert not block.closed
        await stream(t, ANSWER[cut:])
        await t.handle(ev.LLMCallEnded(key=K, step=1, duration_s=0.1, finish_reason="stop"))
        await t.handle(ev.TurnEnded(key=K, turn_id=1, outcome="done"))
        screen = await shown(pilot, t)
        first, _second = t.ref_blocks()
        assert first.closed and first.content.startswith("```python\ndef fib")
        assert f"4 ln · {len(first.content)} ch" in screen
        assert "fib please" in screen and "Done." in screen
        assert "```" not in screen  # fences are drawn as code, not as their markers
        assert "return n if n < 2 else fib(n-1) + fib(n-2)" in screen
        answer = t.current or t.items_of("answer")[0]
        assert answer.finished and not answer.interrupted
        # Fenced code is syntax-highlighted: the keyword has a colour of its own.
        row = next(r for r in t._rows if r.block is not None and r.block.kind == "code")
        styles = {seg.style.color for seg in row.lines[0].strip if seg.text.strip() == "def"}
        assert styles and None not in styles


async def test_superseded_ref_is_dimmed_and_unfinished_ref_marked():
    app = TranscriptApp()
    async with app.run_test(size=(100, 40)) as pilot:
        t = app.t
        await stream(t, '<ref id="a">\nold\n</ref>\n')
        await t.handle(ev.LLMCallEnded(key=K, step=1, duration_s=0.1, finish_reason="stop"))
        await stream(t, '<ref id="a">\nnew\n</ref>\n<ref id="b">\nnever closed')
        await t.handle(ev.LLMCallEnded(key=K, step=2, duration_s=0.1, finish_reason="stop"))
        screen = await shown(pilot, t)
        a_old, a_new, b = t.ref_blocks()
        assert a_old.superseded and not a_new.superseded
        assert b.unfinished and not b.closed
        assert "unfinished" in screen and "superseded" in screen
        old_row = next(r for r in t._rows if r.block is not None and a_old in r.block.frames)
        assert set_back(t, old_row.lines[0].strip, "old")


async def test_abort_keeps_partial_text_marked_interrupted():
    app = TranscriptApp()
    async with app.run_test(size=(100, 30)) as pilot:
        t = app.t
        await stream(t, "A long answer that gets cut")
        await t.handle(ev.LLMCallEnded(key=K, step=1, duration_s=0.1, finish_reason="aborted"))
        await t.handle(ev.Aborted(key=K, reason="user pressed Esc", stage="stream"))
        await t.handle(ev.TurnEnded(key=K, turn_id=1, outcome="aborted"))
        screen = await shown(pilot, t)
        (answer,) = t.items_of("answer")
        assert answer.interrupted and answer.text == "A long answer that gets cut"
        assert "A long answer that gets cut" in screen
        assert "■ interrupted — user pressed Esc" in screen


async def test_tool_cards_show_status_duration_and_open_on_click():
    app = TranscriptApp()
    async with app.run_test(size=(100, 30)) as pilot:
        t = app.t
        await t.handle(ev.ToolCallStarted(key=K, call_id="c1", name="remember"))
        await t.handle(ev.ToolCallArgumentsDelta(key=K, call_id="c1", delta='{"text": "likes'))
        await t.handle(ev.ToolCallArgumentsDelta(key=K, call_id="c1", delta=' tea"}'))
        (card,) = t.items_of("tool")
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
                error="bad JSON",
                duration_s=0.0,
            )
        )
        await t.handle(ev.ToolCallStarted(key=K, call_id="c3", name="slow"))
        await t.handle(ev.Aborted(key=K, reason="user pressed Esc", stage="tools"))
        screen = await shown(pilot, t)
        c1, c2, c3 = t.items_of("tool")
        assert c1.collapsed and c1.result == "exp_001"
        assert "⚙ remember  ✓ done  0.25s" in screen and "exp_001" not in screen
        assert c2.status == "error" and "✖ error" in screen
        assert c3.status == "cancelled" and "■ cancelled" in screen
        # A click on the title opens the card: arguments (pretty JSON) and result.
        y = next(i for i, line in enumerate(t.visible_text()) if "remember" in line)
        await pilot.click(Transcript, offset=(10, y))
        screen = await shown(pilot, t)
        assert not c1.collapsed
        assert '"text": "likes tea"' in screen and "exp_001" in screen


async def test_queued_message_is_marked_until_delivered():
    app = TranscriptApp()
    async with app.run_test(size=(100, 30)) as pilot:
        t = app.t
        await t.add_user("first")
        await t.handle(ev.TurnStarted(key=K, turn_id=1, user_text="first"))
        await stream(t, "working on it")
        queued = await t.add_user("also this", queued=True)
        assert t.queued_messages() == [queued]
        assert "queued — delivered at the next step" in await shown(pilot, t)
        await t.handle(ev.QueuedMessageDelivered(key=K, text="also this"))
        screen = await shown(pilot, t)
        assert not queued.queued and "queued —" not in screen
        # It moved to where the model now sees it: after the answer so far.
        assert t.items[-1] is queued
        # TurnStarted for a message already shown does not duplicate it.
        assert [m.text for m in t.items_of("user")] == ["first", "also this"]


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
        screen = await shown(pilot, t)
        user, answer, divider, error = t.items
        assert user.archived and answer.archived and not error.archived
        assert divider.collapsed and "Compacted 3 messages" in screen
        assert error.error_kind == "connection" and "start it" in screen
        # Archived lines are set back (fainter, still readable).
        row = t._rows[0]
        assert row.item is user
        assert set_back(t, row.lines[1].strip)
        # The divider opens on a click to show the summary.
        y = next(i for i, line in enumerate(t.visible_text()) if "Compacted" in line)
        await pilot.click(Transcript, offset=(10, y))
        assert "Goal: greet" in await shown(pilot, t)


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


async def test_stored_history_shows_the_same_items():
    app = TranscriptApp()
    async with app.run_test(size=(100, 40)) as pilot:
        t = app.t
        await t.load_history(HISTORY)
        screen = await shown(pilot, t)
        kinds = [item.kind for item in t.items]
        assert kinds == ["user", "answer", "divider", "user", "answer", "tool", "answer"]
        old, new = t.ref_blocks()
        assert old.superseded and new.content == "v2"
        assert t.items_of("tool")[0].result == "exp_001"
        assert t.items_of("answer")[-1].interrupted
        assert "■ interrupted — user pressed Esc" in screen and "▌ summary" not in screen


async def test_long_history_shows_its_tail_first_and_older_on_demand():
    history = [{"role": "system", "content": ""}]
    for i in range(130):
        history.append({"role": "user", "content": f"q{i}"})
        history.append({"role": "assistant", "content": f"a{i}"})
    app = TranscriptApp()
    async with app.run_test(size=(100, 40)) as pilot:
        t = app.t
        await t.load_history(history, tail=50)
        screen = await shown(pilot, t)
        assert len(t.items) == 50 and t.older_count == 210
        assert t.items[0].text == "q105" and "a129" in screen
        assert await t.load_older(100) == 100
        assert t.older_count == 110 and t.items[0].text == "q55"
        assert "a129" in await shown(pilot, t)  # what was on screen stays on screen
        # The banner at the top loads the next batch when clicked.
        t.scroll_home(animate=False)
        screen = await shown(pilot, t)
        assert "110 earlier messages" in screen
        await pilot.click(Transcript, offset=(40, 0))
        await wait_until(pilot, lambda: t.older_count == 60)


async def test_the_highlight_moves_over_messages_refs_and_code_blocks():
    app = TranscriptApp()
    async with app.run_test(size=(100, 20)) as pilot:
        t = app.t
        await t.add_user("three refs please")
        await stream(
            t,
            '<ref id="a">\n1\n</ref>\ntext\n<ref id="b">\n2\n</ref>\n<ref id="c">\n3\n</ref>\n'
            "```sh\nmake test\n```\n",
        )
        await t.handle(ev.LLMCallEnded(key=K, step=1, duration_s=0.1, finish_reason="stop"))
        await t.settle()
        user, answer = t.items
        fence = answer.fences()[0]
        assert t.move_highlight(-1) is fence  # starts from the newest
        assert t.move_highlight(-1).ref_id == "c"
        assert t.move_highlight(-1).ref_id == "b"
        assert t.move_highlight(-1).ref_id == "a"
        assert t.move_highlight(-1) is answer
        assert t.move_highlight(-1) is user
        assert t.move_highlight(-1) is user
        assert t.move_highlight(+1) is answer
        assert t.move_highlight(+1).ref_id == "a"
        assert t.move_highlight(+1).ref_id == "b"
        assert [b.highlighted for b in t.ref_blocks()] == [False, True, False]
        assert t.target_ref().ref_id == "b" and t.target() is t.highlighted
        screen = await shown(pilot, t)
        assert "┏━ ref:b" in screen  # the highlighted frame is heavy
        await wait_until(pilot, lambda: app.highlights[-2:] == ["a", "b"])
        assert t.move_highlight(+2) is fence and fence.copy_text == "make test"
        assert t.target_ref().ref_id == "c"  # export still acts on a ref: the newest


async def test_posted_events_are_drawn_once_per_frame():
    app = TranscriptApp()
    async with app.run_test(size=(100, 40)) as pilot:
        t = app.t
        t.post(ev.TurnStarted(key=K, turn_id=1, user_text="fib please"))
        for i in range(0, len(ANSWER), 3):
            t.post(ev.TextDelta(key=K, text=ANSWER[i : i + 3]))
        t.post(ev.LLMCallEnded(key=K, step=1, duration_s=0.1, finish_reason="stop"))
        t.post(ev.ToolCallStarted(key=K, call_id="c1", name="remember"))
        t.post(ev.RefOpened(key=K, ref_id="ignored"))  # the sidebar's business, not shown here
        # The model has it all at once; nothing was drawn yet.
        assert not t.settled and not t._rows
        (answer,) = t.items_of("answer")
        assert answer.text == ANSWER and answer.finished
        await wait_until(pilot, lambda: t.settled)  # the next frame draws it
        assert [item.kind for item in t.items] == ["user", "answer", "tool"]
        assert "Done." in "\n".join(t.visible_text())


async def test_arguments_of_a_closed_tool_call_draw_no_frame_and_an_open_one_shows_them():
    app = TranscriptApp()
    async with app.run_test(size=(100, 30)) as pilot:
        t = app.t
        t.post(ev.ToolCallStarted(key=K, call_id="c1", name="write"))
        await wait_until(pilot, lambda: t.settled)
        for i in range(200):
            t.post(ev.ToolCallArgumentsDelta(key=K, call_id="c1", delta=f"piece {i} "))
        assert t.settled  # a closed card shows its title only: no frame to draw
        (card,) = t.items_of("tool")
        assert card.arguments.endswith("piece 199 ")
        card.expanded = True
        card.touch()
        t.redraw()
        t.post(ev.ToolCallArgumentsDelta(key=K, call_id="c1", delta="the_tail"))
        assert not t.settled
        await wait_until(pilot, lambda: t.settled)
        assert "the_tail" in "\n".join(t.visible_text())
        # a long call still streaming shows its newest part, the rest counted
        t.post(ev.ToolCallArgumentsDelta(key=K, call_id="c1", delta="y" * 10_000 + " END_MARK"))
        await wait_until(pilot, lambda: t.settled)
        screen = "\n".join(t.visible_text())
        assert "END_MARK" in screen and "characters before" in t.shown_text(card)


def many_refs(count: int) -> str:
    return "".join(f'Step {i}:\n<ref id="r{i}">\nvalue = {i}\n</ref>\n\n' for i in range(count))


async def test_the_cost_follows_the_screen_not_the_answer():
    """1,000 refs in one answer: only what is on screen is drawn, and only the tail redraws."""
    app = TranscriptApp()
    async with app.run_test(size=(100, 30)) as pilot:
        t = app.t
        text = many_refs(1000)
        await stream(t, text[: len(text) // 2], size=4000)
        await t.settle()
        drawn = [r for r in t._rows if r.lines]
        first_lines = drawn[-3].lines if len(drawn) > 3 else None
        await stream(t, text[len(text) // 2 :], size=4000)
        await t.handle(ev.LLMCallEnded(key=K, step=1, duration_s=0.1, finish_reason="stop"))
        screen = await shown(pilot, t)
        assert "ref:r999" in screen and len(t.ref_blocks()) == 1000
        rows = t._rows
        assert len(rows) > 3000
        assert sum(1 for r in rows if r.key is not None) < 200  # drawn: about a screen's worth
        assert t.virtual_size.height >= 6 * 1000  # every ref has its place to scroll to
        # Scrolling to the top draws the top, which sits where its estimate said.
        t.scroll_home(animate=False)
        screen = await shown(pilot, t)
        assert "ref:r0" in screen and "Step 0:" in screen
        if first_lines is not None:  # a block drawn earlier was not drawn again
            assert drawn[-3].lines is first_lines


async def test_a_huge_line_is_drawn_in_parts():
    app = TranscriptApp()
    async with app.run_test(size=(100, 30)) as pilot:
        t = app.t
        text = "word " * 200_000  # 1 MB on one line
        await stream(t, text, size=50_000)
        await t.handle(ev.LLMCallEnded(key=K, step=1, duration_s=0.1, finish_reason="stop"))
        screen = await shown(pilot, t)
        assert "word word" in screen
        assert len(t._rows) >= 500
        assert sum(1 for r in t._rows if r.key is not None) < 20


async def test_a_row_on_screen_taller_than_the_bound_keeps_its_lines_while_a_stream_runs(
    monkeypatch,
):
    """A row on screen that alone passes KEEP_LINES (a block of very short lines) is not let
    go at each relayout: it is drawn once, not again at every frame of the stream after it."""
    keep = 20
    monkeypatch.setattr(layout, "KEEP_LINES", keep)
    draws: list[Row] = []
    real_draw = Painter.draw

    def counted(painter: Painter, row: Row):
        draws.append(row)
        return real_draw(painter, row)

    monkeypatch.setattr(Painter, "draw", counted)
    app = TranscriptApp()
    async with app.run_test(size=(60, 40)) as pilot:
        t = app.t
        code = "```\n" + "".join(f"{i}\n" for i in range(3 * keep)) + "```\n\n"
        await stream(t, code + "Then", size=len(code) + 4)
        await shown(pilot, t)
        tall = next(r for r in t._rows if len(r.lines) > keep)  # the code block, on screen
        assert t._row_start(tall) + len(tall.lines) > int(t.scroll_y)
        before = draws.count(tall)
        for i in range(5):  # the answer goes on below the tall row: five relayouts and frames
            await stream(t, f" word{i}", size=10)
            screen = await shown(pilot, t)
            assert f"word{i}" in screen and str(3 * keep - 1) in screen
            assert tall.lines  # still drawn
        assert draws.count(tall) == before  # never let go, so never drawn again


async def test_rows_far_off_screen_let_their_drawn_lines_go_and_draw_them_again(monkeypatch):
    """A long answer streamed past the screen keeps at most KEEP_LINES drawn lines (each a
    Strip with caches of its own); a row that let its lines go draws the same ones again."""
    keep = 100
    monkeypatch.setattr(layout, "KEEP_LINES", keep)
    assert KEEP_LINES >= 10 * 40  # the real bound: many screens to scroll back through
    app = TranscriptApp()
    async with app.run_test(size=(100, 30)) as pilot:
        t = app.t
        count = 60
        text = "".join(f"Paragraph {i}: " + "word " * 100 + "\n\n" for i in range(count))
        first: list[str] = []
        for i in range(0, len(text), 2000):  # each part on screen once, as a stream is
            await stream(t, text[i : i + 2000], size=2000)
            await shown(pilot, t)
            if not first and t._starts[-1] > 60:  # (once the scroll bar took its column)
                row = next(r for r in t._rows if r.part == "block" and r.lines and r.exact)
                first = [line.text for line in row.lines]
                assert any("Paragraph" in line for line in first)
        await t.handle(ev.LLMCallEnded(key=K, step=1, duration_s=0.1, finish_reason="stop"))
        await shown(pilot, t)
        assert t._starts[-1] > 3 * keep  # it drew far more than it keeps
        assert sum(len(r.lines) for r in t._rows) <= keep
        assert t._kept == sum(len(r.lines) for r in t._rows)
        assert row.lines == () and row.exact  # let go, its height kept
        height = t._starts[-1]
        t.scroll_home(animate=False)
        screen = await shown(pilot, t)
        assert "Paragraph 0:" in screen
        t.scroll_to(y=t._row_start(row), animate=False, immediate=True)
        await shown(pilot, t)
        assert [line.text for line in row.lines] == first
        assert t._starts[-1] == height  # nothing moved: the heights were exact
        app.screen.selections = {t: Selection(None, None)}  # select all: every row again
        await pilot.pause()
        copied = app.screen.get_selected_text()
        assert copied is not None
        assert all(f"Paragraph {i}:" in copied for i in range(count))


async def test_selection_copies_the_text_without_bars_frames_or_wrap_marks():
    app = TranscriptApp()
    async with app.run_test(size=(60, 30)) as pilot:
        t = app.t
        long_line = "total = " + " + ".join(f"value_{i}" for i in range(12))
        await t.add_user("copy me")
        await stream(
            t, f'Intro line.\n\n<ref id="r">\n```python\n{long_line}\nx = 1\n```\n</ref>\n'
        )
        await t.handle(ev.LLMCallEnded(key=K, step=1, duration_s=0.1, finish_reason="stop"))
        screen = await shown(pilot, t)
        assert CONTINUATION in screen  # the long code line wrapped, marked
        app.screen.selections = {t: Selection(None, None)}  # select all
        await pilot.pause()
        copied = app.screen.get_selected_text()
        assert copied is not None
        assert "copy me" in copied and "Intro line." in copied
        assert long_line in copied and "x = 1" in copied  # the wrapped line comes back whole
        for mark in ("▌", "│", CONTINUATION):
            assert mark not in copied
        await pilot.press("ctrl+c")  # Textual's copy key puts the same text on the clipboard
        assert app.clipboard == copied
        # A partial selection: from "line" in the intro to the end of its line.
        lines = t.visible_text()
        y = next(i for i, line in enumerate(lines) if "Intro line." in line)
        x = lines[y].index("line.")
        y0 = int(t.scroll_y) + y - t._top_pad  # a short transcript sits at the bottom
        text, _ = t.get_selection(Selection(Offset(x, y0), Offset(len(lines[y]), y0)))
        assert text == "line."


async def test_hostile_text_is_shown_inert_everywhere():
    app = TranscriptApp()
    async with app.run_test(size=(120, 200)):
        t = app.t
        for name, text in CORPUS:
            await t.add_user(f"{name}: {text}")
            await stream(t, f'{text}\n\n<ref id="{name}">\n{text}\n```\n{text}\n```\n</ref>\n')
            await t.handle(ev.LLMCallEnded(key=K, step=1, duration_s=0.1, finish_reason="stop"))
            await t.handle(ev.ToolCallStarted(key=K, call_id=name, name=text))
            await t.handle(
                ev.ToolCallError(
                    key=K, call_id=name, name=text, arguments=text, error=text, duration_s=0.0
                )
            )
            await t.add_error(text, "server")
        for card in t.items_of("tool"):
            card.expanded = True
            card.touch()
        await t.settle()
        drawn = []
        for row in t._rows:
            t._draw(row, t._width())
            drawn += [line.strip.text for line in row.lines]
        shown_text = "\n".join(drawn)
        assert_inert(shown_text)
        assert "[@click=app.quit]ERR[/]" in shown_text  # markup shown as text, never run
        assert "[bold red]not bold[/bold red]" in shown_text
        for row in t._rows:
            for line in row.lines:
                for seg in line.strip:
                    assert seg.style is None or seg.style.link is None  # no hyperlinks


async def test_a_new_width_draws_again():
    app = TranscriptApp()
    async with app.run_test(size=(100, 30)) as pilot:
        t = app.t
        await stream(t, "A paragraph that is long enough to wrap at a narrow width, " * 3)
        await t.handle(ev.LLMCallEnded(key=K, step=1, duration_s=0.1, finish_reason="stop"))
        wide = await shown(pilot, t)
        await pilot.resize_terminal(50, 30)
        await pilot.pause()
        narrow = await shown(pilot, t)
        assert max(len(line.rstrip()) for line in narrow.splitlines()) <= 50
        assert len([x for x in narrow.splitlines() if x.strip()]) > len(
            [x for x in wide.splitlines() if x.strip()]
        )


async def test_plain_text_drawn_line_by_line_looks_as_wrapped_text_does():
    """Lines that fit are drawn without wrapping: each looks as ``Content`` draws it."""
    app = TranscriptApp()
    async with app.run_test(size=(100, 30)):
        t = app.t

        def looks(strips) -> list[str]:
            """What reaches the terminal (an empty segment sends its style for nothing)."""
            return [Strip([seg for seg in strip if seg.text]).render(app.console)
                    for strip in strips]

        texts = [text for _, text in CORPUS] + [
            "", "\n", "short", "  indented\n\ttabbed\ntrailing   \n\n\nend",
            "x" * 40, "x" * 41, "word " * 30, "日本語のテキスト" * 4, "emoji 🎉 and é, ç — “q”",
            "\n".join(f"line {i}: some pasted log output" for i in range(50)),
            "fits\n" + "wraps " * 20 + "\nfits again\n\u200bzero width\u200d",
        ]
        for width in (40, 7):
            painter = t._painter_for(width)
            for text in texts:
                fast = painter._text(text, width)
                wrapped = painter._content(content(text), width)
                assert looks(fast) == looks(wrapped), text
                assert all(s.cell_length == width for s in fast)


async def test_a_highlighted_tool_call_or_error_shows_the_highlight_bar_like_a_message():
    """ctrl+up stops on tool calls and errors too: the highlight must be visible there."""
    app = TranscriptApp()
    async with app.run_test(size=(100, 20)) as pilot:
        t = app.t
        await t.add_user("remember it")
        await t.handle(ev.ToolCallStarted(key=K, call_id="c1", name="remember"))
        await t.handle(ev.ToolCallEnded(key=K, call_id="c1", name="remember", arguments="{}",
                                        result="exp_001", duration_s=0.1))
        await t.handle(ev.ErrorEvent(key=K, message="server error (500)", kind="server"))
        await t.settle()
        user, card, error = t.items

        def bar_of(text: str) -> str:
            line = next(line for line in t.visible_text() if text in line)
            return line.strip()[0]

        await shown(pilot, t)
        assert (bar_of("remember it"), bar_of("⚙ remember"), bar_of("server error")) == (
            "▌", "▌", "▌")
        for item, text in ((error, "server error"), (card, "⚙ remember"), (user, "remember it")):
            assert t.move_highlight(-1) is item
            await shown(pilot, t)
            assert bar_of(text) == "┃", text


async def test_a_rewound_line_with_long_numbers_fits_one_line_at_80_columns():
    """"⟲ Rewound #10234–#10240 · 7 messages the model no longer sees · click to show"
    wrapped its "click to show" onto a second line at 80 columns: narrow, it says less,
    on one line, and still what it is and that a click shows (or hides) it."""
    numbers = list(range(10234, 10242))
    history = [{"role": "user" if n % 2 == 0 else "assistant", "content": f"message {n}",
                **({"rewound": True} if n < 10241 else {})} for n in numbers]
    app = TranscriptApp()
    async with app.run_test(size=(80, 24)) as pilot:
        t = app.t
        await t.load_history(history, numbers=numbers)
        for action in ("click to show", "click to hide"):
            screen = (await shown(pilot, t)).splitlines()
            (index,) = [i for i, line in enumerate(screen) if "Rewound" in line]
            assert "⟲ Rewound #10234–#10240" in screen[index] and action in screen[index]
            assert "sees" not in screen[index + 1] and "show" not in screen[index + 1]
            (section,) = t.items_of("rewound")
            t.toggle_section(section, True)
    # wide enough, the whole wording
    app = TranscriptApp()
    async with app.run_test(size=(120, 24)) as pilot:
        await app.t.load_history(history, numbers=numbers)
        assert "7 messages the model no longer sees · click to show" in await shown(pilot, app.t)


QUOTING = (
    "Earlier I wrote this:\n\n"
    '<quoted_ref id="fib_recursive">\n```python\ndef fib(n):\n'
    "    return n if n < 2 else fib(n-1) + fib(n-2)\n```\n</quoted_ref>\n\n"
    "and now the fast one:\n"
    '<ref id="fib_fast">\nfib = lambda n: round(((1 + 5 ** 0.5) / 2) ** n / 5 ** 0.5)\n</ref>\n'
    "A fence shows the syntax: ```<quoted_ref id=\"x\">``` and\n"
    '```\n<quoted_ref id="shown">\n```\n'
    "Done."
)


async def test_a_quoted_ref_in_an_answer_is_framed_as_a_quotation_and_defines_nothing():
    """What the recall tools show of a ref in old history, repeated by the model, was plain
    text with its tags. It is framed now, faint and titled "quoted ref:…", while it streams
    and once stored, and it is no ref: not in the ref list, not where the highlight stops."""
    for size in (1, 7, len(QUOTING)):
        app = TranscriptApp()
        async with app.run_test(size=(100, 40)) as pilot:
            t = app.t
            await t.handle(ev.TurnStarted(key=K, turn_id=1, user_text="recall fib"))
            cut = QUOTING.index("def fib")
            await stream(t, QUOTING[:cut], size)
            screen = await shown(pilot, t)
            assert "quoted ref:fib_recursive" in screen and "<quoted_ref" not in screen, size
            await stream(t, QUOTING[cut:], size)
            await t.handle(ev.LLMCallEnded(key=K, step=1, duration_s=0.1, finish_reason="stop"))
            await t.handle(ev.TurnEnded(key=K, turn_id=1, outcome="done"))
            screen = await shown(pilot, t)
            lines = screen.splitlines()
            top = next(line for line in lines if "quoted ref:fib_recursive" in line)
            assert "┌─ quoted ref:fib_recursive ─" in top, top
            assert "</quoted_ref>" not in screen and "return n if n < 2" in screen
            assert any(line.strip(" ▌").startswith("└") and "4 ln" in line for line in lines)
            # inside a fence a tag is code, shown as written, and opens nothing
            assert 'id="shown">' in screen and "quoted ref:shown" not in screen
            assert screen.count("<quoted_ref") == 2
            assert "quoted ref:x" not in screen
            # the live ref is the only ref: in the list, and where the highlight stops
            assert [ref.ref_id for ref in t.ref_blocks()] == ["fib_fast"]
            stops = [target.ref_id for target in t.targets() if hasattr(target, "ref_id")]
            assert stops == ["fib_fast"]
            (answer,) = t.items_of("answer")
            (quote,) = [b.ref for b in answer.blocks if b.kind == "ref_top" and b.ref.quoted]
            assert quote.content.startswith("```python\ndef fib(n):")
            # drawn faint, untinted: the quotation's edge is not the live ref's colour
            row = next(r for r in t._rows if r.block is not None and r.block.ref is quote)
            live = next(r for r in t._rows if r.block is not None and r.block.ref is not None
                        and not r.block.ref.quoted)
            edge = {seg.style.color for seg in row.lines[-1].strip if seg.text.startswith("┌")}
            live_edge = {seg.style.color for seg in live.lines[-1].strip
                         if seg.text.startswith("╭")}
            assert edge and live_edge and edge != live_edge
    # the same answer stored and shown again
    app = TranscriptApp()
    async with app.run_test(size=(100, 40)) as pilot:
        await app.t.load_history([{"role": "user", "content": "recall fib"},
                                  {"role": "assistant", "content": QUOTING}])
        screen = await shown(pilot, app.t)
        assert "┌─ quoted ref:fib_recursive ─" in screen
        assert screen.count("<quoted_ref") == 2  # the two in code, as written
        assert [ref.ref_id for ref in app.t.ref_blocks()] == ["fib_fast"]


async def test_a_message_is_drawn_one_strip_a_line_and_looks_as_its_text_in_a_bar_does(
        monkeypatch):
    """A pasted 2 MB message made three strips a line (its text, in its bar, in the
    widget's style), each with seven caches: 0.5 GB. Each line that fits is made once,
    and looks exactly as the text drawn, put in the bar and styled does."""
    import textual.strip

    texts = [text for _, text in CORPUS] + [
        "", "short", "  indented\n\ttabbed\ntrailing   \n\n\nend", "word " * 60,
        "日本語のテキスト" * 14, "\n".join(f"line {i}: some pasted log output" for i in range(300)),
    ]
    app = TranscriptApp()
    async with app.run_test(size=(100, 30)) as pilot:
        t = app.t
        for text in texts:
            await t.add_user(text)
        await t.settle()
        rows = [row for row in t._rows if row.part == "user"]
        assert len(rows) == len(texts)
        for theme in (app.theme, "ansi-dark"):  # (ANSI: no background of its own)
            if theme != app.theme:
                seen = t._theme_seen
                app.theme = theme
                await wait_until(pilot, lambda seen=seen: t._theme_seen > seen,
                                 what="the theme's palette")
            painter = t._painter_for(t._width())
            p, base, inner = painter.p, t.rich_style, painter.width - 3
            bg, bar = p.tint(p.primary, 0.12), p.style(p.primary)
            assert (bg is None) is (theme == "ansi-dark"), theme
            for row, text in zip(rows, texts, strict=True):
                drawn = painter.draw(row)[row.margin:]
                expected = painter._bar_lines(painter._text(text, inner), bar, bg)
                assert [(list(x.strip), x.left, x.right) for x in drawn] == [
                    (list(x.strip.apply_style(base)), x.left, x.right) for x in expected], text
        made = 0
        real = textual.strip.Strip.__init__

        def counted(self, *args, **kwargs):
            nonlocal made
            made += 1
            real(self, *args, **kwargs)

        monkeypatch.setattr(textual.strip.Strip, "__init__", counted)
        drawn = painter.draw(rows[-1])
        assert len(drawn) == 300 + rows[-1].margin
        assert made <= len(drawn) + 2
