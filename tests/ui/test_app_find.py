"""Find in the conversation on screen: ctrl+f, /find, marks, count, older and collapsed parts."""

from __future__ import annotations

from rich.color import Color
from textual.widgets import Input

from selfref_tui.context.mutations import (
    AssistantMessageMutation,
    ToolResultMutation,
    UserMessageMutation,
)
from selfref_tui.demo.server import DemoServer
from selfref_tui.selfref.reference import SelfReference
from selfref_tui.ui.transcript.model import ToolItem, UserItem
from selfref_tui.ui.widgets.find_bar import FindBar
from tests.ui.helpers import SIZE, make_app, started, type_and_send, wait_until


def _seed(tmp_path) -> None:
    """60 turns: "needle" in the first question (behind the banner), in a collapsed tool
    result, and in the last answer."""
    with SelfReference(tmp_path / "data") as store:
        memory = store.open("main")
        memory.commit([UserMessageMutation({"role": "user", "content": "a needle at the start"}),
                       AssistantMessageMutation(content="noted")])
        for i in range(60):
            memory.commit([UserMessageMutation({"role": "user", "content": f"question {i}"}),
                           AssistantMessageMutation(content=f"answer {i}")])
        call = {"id": "c1", "type": "function",
                "function": {"name": "read_file", "arguments": '{"path": "hay.txt"}'}}
        memory.commit([UserMessageMutation({"role": "user", "content": "read the file"}),
                       AssistantMessageMutation(content="", tool_calls=[call]),
                       ToolResultMutation("c1", "hay hay NEEDLE hay"),
                       AssistantMessageMutation(content="Found a needle. Done.")])


def _marked(app, word: str) -> list[tuple[str, bool]]:
    """(text, current) of every marked occurrence of ``word`` on screen."""
    transcript = app.transcript
    out = []
    for y in range(transcript.scrollable_content_region.height):
        for segment in transcript.render_line(y):
            style = segment.style
            if segment.text.lower() == word and style is not None and style.bgcolor is not None:
                out.append((segment.text, bool(style.bold)))
    return out


async def test_find_marks_counts_and_reaches_collapsed_and_older_parts(tmp_path):
    _seed(tmp_path)
    async with DemoServer([]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            transcript = app.transcript
            assert transcript.older_count  # the first question waits behind the banner
            bar = app.query_one(FindBar)
            assert not bar.display
            await pilot.press("ctrl+f")
            assert bar.display and app.focused is bar.query_one(Input)
            await pilot.press(*"needle")
            await wait_until(pilot, lambda: bar.count == "3 of 3", what="three found")
            # the newest first: the last answer, marked on screen as the current one
            assert "needle" in transcript.highlighted.copy_text.lower()
            assert ("needle", True) in _marked(app, "needle")
            # on up: the one in the collapsed tool result, opened to show it
            await pilot.press("enter")
            await wait_until(pilot, lambda: bar.count == "2 of 3", what="the tool's")
            tool = transcript.highlighted
            assert isinstance(tool, ToolItem) and tool.expanded
            await wait_until(pilot, lambda: ("NEEDLE", True) in _marked(app, "needle"),
                             what="the tool's result marked")
            # up again: the first question, loaded from behind the banner
            await pilot.press("up")
            await wait_until(pilot, lambda: bar.count == "1 of 3", what="the oldest")
            first = transcript.highlighted
            assert isinstance(first, UserItem) and first.text == "a needle at the start"
            assert not transcript.older_count
            # and round again to the newest
            await pilot.press("up")
            await wait_until(pilot, lambda: bar.count == "3 of 3", what="wrapped")
            await pilot.press("down")
            await wait_until(pilot, lambda: bar.count == "1 of 3", what="down wraps too")
            # text that is nowhere
            bar.query_one(Input).value = "nowhere-to-be-found"
            await wait_until(pilot, lambda: bar.count == "no match", what="no match")
            # Esc: the bar, the marks and the count go; typing goes to the input again
            bar.query_one(Input).value = "needle"
            await wait_until(pilot, lambda: bar.count.endswith("of 3"), what="found again")
            await pilot.press("escape")
            await wait_until(pilot, lambda: app.focused is app.chat_input, what="input")
            assert not bar.display
            assert not _marked(app, "needle")
            # /find opens it with its text
            await type_and_send(pilot, "/find question 59")
            await wait_until(pilot, lambda: bar.display and bar.count == "1 of 1",
                             what="/find")
            assert transcript.highlighted.copy_text == "question 59"
            # /find alone opens the bar as ctrl+f does, holding what it found last
            await pilot.press("escape")
            await wait_until(pilot, lambda: not bar.display, what="closed")
            await type_and_send(pilot, "/find")
            await wait_until(pilot, lambda: bar.display and bar.count == "1 of 1",
                             what="/find alone")
            assert app.focused is bar.query_one(Input) and app.chat_input.text == ""


async def test_find_in_an_ansi_theme_marks_in_the_terminals_own_colours(tmp_path):
    """An ANSI theme's background is the terminal's own, with no colour value: the marks
    are drawn without one (the current one reversed), and the app goes on."""
    _seed(tmp_path)
    async with DemoServer([]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            app.theme = "ansi-dark"
            await pilot.press("ctrl+f", *"needle")
            bar = app.query_one(FindBar)
            await wait_until(pilot, lambda: bar.count == "3 of 3", what="three found")
            transcript = app.transcript

            def current_reversed() -> bool:
                """The current occurrence drawn reversed (once the transcript repaints:
                the count may come a frame before the marks, on a busy machine)."""
                return any(segment.style.reverse and segment.style.bold
                           for y in range(transcript.scrollable_content_region.height)
                           for segment in transcript.render_line(y)
                           if segment.text.lower() == "needle" and segment.style is not None)

            await wait_until(pilot, current_reversed, what="the current one drawn reversed")
            await pilot.press("enter")
            await wait_until(pilot, lambda: bar.count == "2 of 3", what="the next one")
            await pilot.pause()
            assert app.is_running and app.return_code is None


def _rewound_seed(tmp_path) -> None:
    """Two turns, a rewind to before the second (which mentions Porto), a third turn."""
    with SelfReference(tmp_path / "data") as store:
        memory = store.open("main")
        memory.commit([UserMessageMutation({"role": "user", "content": "Plan a trip."}),
                       AssistantMessageMutation(content="Day 1: Lisbon.")])
        memory.commit([UserMessageMutation({"role": "user", "content": "Add Porto."}),
                       AssistantMessageMutation(content="Day 2: the train to porto.")])
        memory.commit([memory.rewind_patch(3)])
        memory.commit([UserMessageMutation({"role": "user", "content": "Make it slower."}),
                       AssistantMessageMutation(content="Day 2: a slow morning.")])


async def test_find_reaches_a_rewound_section_and_opens_it(tmp_path):
    _rewound_seed(tmp_path)
    async with DemoServer([]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            transcript = app.transcript
            (section,) = transcript.items_of("rewound")
            assert not section.expanded
            await type_and_send(pilot, "/find porto")
            bar = app.query_one(FindBar)
            # both rewound messages count, though the section was never opened
            await wait_until(pilot, lambda: bar.count == "2 of 2", what="found in the section")
            assert section.expanded  # stepping to the occurrence opened it
            answer = transcript.highlighted
            assert answer.rewound and answer.copy_text == "Day 2: the train to porto."
            await wait_until(pilot, lambda: ("porto", True) in _marked(app, "porto"),
                             what="marked in the opened section")
            await pilot.press("enter")
            await wait_until(pilot, lambda: bar.count == "1 of 2", what="the question")
            assert transcript.highlighted.copy_text == "Add Porto."
            # closed again by the person: stepping to it opens it once more
            transcript.toggle_section(section, False)
            await pilot.press("down")
            await wait_until(pilot, lambda: bar.count == "2 of 2", what="the answer again")
            assert section.expanded
            assert ("porto", True) in _marked(app, "porto")


def _marked_lines(app) -> list[str]:
    """The marked text of each line on screen that has some ("" for the others)."""
    transcript = app.transcript
    palette = transcript._palette
    colours = {palette.mix(palette.warning, 0.4), Color.parse(palette.accent.hex)}
    lines = []
    for y in range(transcript.scrollable_content_region.height):
        lines.append("".join(
            segment.text for segment in transcript.render_line(y)
            if segment.style is not None and segment.style.bgcolor in colours))
    return lines


async def test_an_occurrence_wrapped_over_two_lines_is_marked_on_both(tmp_path):
    # words of many lengths between the pairs: some line ends inside a pair
    fillers = ["a", "bb", "ccc", "dddd", "eeeee", "ffffff", "ggggggg"]
    answer = " ".join(f"{fillers[i % 7]} alpha omega" for i in range(40))
    with SelfReference(tmp_path / "data") as store:
        store.open("main").commit([
            UserMessageMutation({"role": "user", "content": "words"}),
            AssistantMessageMutation(content=answer)])
    async with DemoServer([]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "/find alpha omega")
            bar = app.query_one(FindBar)
            await wait_until(pilot, lambda: bar.count == "40 of 40", what="all found")
            await app.transcript.settle()
            lines = _marked_lines(app)
            split = [n for n in range(len(lines) - 1)
                     if lines[n].endswith("alpha") and lines[n + 1].startswith("omega")]
            assert split, "no pair was wrapped: choose other fillers"
            marked = "".join(lines).replace(" ", "")
            assert marked == "alphaomega" * 40  # every pair marked whole, split or not


async def test_found_text_is_readable_on_its_marks_in_every_theme(tmp_path):
    """The current occurrence was the background colour on the accent (1.5:1 on
    textual-light: light on light orange), the others the row's text on a warning
    tint (2.8:1 on solarized-light). Every letter on screen is read, in every theme."""
    from textual.theme import BUILTIN_THEMES

    from selfref_tui.demo.script import Reply
    from tests.ui.contrast import describe, unreadable
    from tests.ui.helpers import turn_done

    failures = []
    async with DemoServer([Reply(text="The fib function and fib again: fib.")]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await type_and_send(pilot, "say fib")
            await turn_done(pilot, app)
            await pilot.press("ctrl+f", "f", "i", "b")
            bar = app.query_one(FindBar)
            await wait_until(pilot, lambda: bar.count.endswith(" of 4"), what="4 found")
            for theme in [name for name in BUILTIN_THEMES if not name.startswith("ansi")]:
                app.theme = theme
                await pilot.pause()
                bad = unreadable(app, region=app.transcript.region)
                if bad:
                    failures.append(f"{theme}:\n{describe(bad, app)}")
    assert not failures, "\n".join(failures)
