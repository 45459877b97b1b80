"""A tool card's arguments and result keep their indentation when a line wraps.

A call's JSON arguments are drawn indented (``json.dumps(indent=2)``); a value
too long for the card went on at the card's left edge, where it read as a key of
the outermost object. Each wrapped piece now starts under its own line.
"""

from __future__ import annotations

import json

from selfref_tui.agent import events as ev
from tests.ui.helpers import wait_until
from tests.ui.test_widgets_transcript import K, TranscriptApp

LONG_PATH = "src/selfref_tui/ui/transcript/a_module_whose_name_goes_on_and_on.py"
ARGUMENTS = {"files": {"paths": [LONG_PATH, "b.py"]},
             "note": "a sentence long enough to wrap inside the card at sixty columns"}
RESULT = "checked:\n    " + "every line of the result is long enough to wrap " * 2


def _card_lines(t) -> list[str]:
    """The card's body on screen, without its bar (the lines after "arguments")."""
    lines = [line.rstrip() for line in t.visible_text()]
    start = next(i for i, line in enumerate(lines) if line.endswith("arguments"))
    bar = lines[start].index("arguments")
    return [line[bar:] for line in lines[start + 1:] if line.strip()]


async def test_wrapped_arguments_and_results_stay_under_their_own_indentation():
    app = TranscriptApp()
    async with app.run_test(size=(60, 40)) as pilot:
        t = app.t
        arguments = json.dumps(ARGUMENTS)
        t.post(ev.ToolCallStarted(key=K, call_id="c1", name="check"))
        t.post(ev.ToolCallEnded(key=K, call_id="c1", name="check", arguments=arguments,
                                result=RESULT, duration_s=0.01))
        await wait_until(pilot, lambda: t.settled and t.items_of("tool"), what="the card")
        (card,) = t.items_of("tool")
        card.expanded = True
        card.touch()
        t.redraw()
        await wait_until(pilot, lambda: t.settled and any(
            line.rstrip().endswith("arguments") for line in t.visible_text()),
            what="the card opened")
        body = _card_lines(t)

        def indent(line: str) -> int:
            return len(line) - len(line.lstrip(" "))

        path_at = next(i for i, line in enumerate(body) if line.lstrip().startswith('"src/'))
        assert indent(body[path_at]) == 6
        # The path did not fit: its rest is on the next line, under its start.
        assert not body[path_at].rstrip().endswith('",')
        assert indent(body[path_at + 1]) == 6, body
        note_at = next(i for i, line in enumerate(body) if '"note"' in line)
        assert indent(body[note_at]) == indent(body[note_at + 1]) == 2, body
        # The result's indented line wraps under itself too; its first line stays at 0.
        result_at = body.index("result")
        assert body[result_at + 1] == "checked:"
        rest = body[result_at + 2:]
        assert len(rest) >= 2 and all(indent(line) == 4 for line in rest), body
