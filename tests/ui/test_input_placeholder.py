"""The input's placeholder is whole at every width: a narrow input shows a shorter wording.

At 60 columns (or 100 with the sidebar) the one long placeholder was cut
mid-phrase: "(Enter send · shift+enter/ctrl+j newline · /". The screen is read as
the terminal gets it.
"""

from __future__ import annotations

import pytest

from selfref_tui.ui.app import PLACEHOLDER
from selfref_tui.ui.widgets.chat_input import ChatInput
from tests.ui.contrast import screen_cells
from tests.ui.helpers import DOWN_URL, make_app, started, wait_until


def _input_row(app) -> str:
    """The screen's text on the input's first line."""
    field = app.query_one(ChatInput)
    y = field.content_region.y
    return "".join(char for char, _fg, _bg in screen_cells(app)[y])


@pytest.mark.parametrize(("size", "wording"), [
    ((120, 30), 0),  # the sidebar leaves the input 76 columns: the whole text
    ((100, 30), 2),  # the sidebar leaves it 56
    ((60, 20), 2),
    ((30, 12), 3),
])
async def test_the_placeholder_shown_is_whole(tmp_path, size, wording):
    app = make_app(tmp_path, DOWN_URL)
    async with app.run_test(size=size) as pilot:
        await started(pilot, app)
        field = app.query_one(ChatInput)
        await wait_until(pilot, lambda: field.placeholder == PLACEHOLDER[wording],
                         what=f"the placeholder {PLACEHOLDER[wording]!r}")
        await pilot.pause()
        assert PLACEHOLDER[wording] in _input_row(app)
