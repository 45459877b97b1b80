"""A width the transcript had before: rows drawn for it keep their real heights.

A growing conversation shows the scrollbar and narrows the transcript, and a
resize can take it back: rows were marked "estimated" at each change of width,
and a row whose lines were already drawn for the width it came back to kept its
estimate while showing its real lines — a compaction divider of 5 lines laid
out in 2 showed one rule and lost its label (80×24, the paced demo model).
"""

from __future__ import annotations

from tests.ui.test_widgets_transcript import HISTORY, TranscriptApp, shown


async def test_back_at_a_width_drawn_before_every_row_keeps_its_real_height():
    app = TranscriptApp()
    async with app.run_test(size=(60, 40)) as pilot:
        t = app.t
        await t.load_history(HISTORY * 3)
        await shown(pilot, t)
        await pilot.resize_terminal(90, 40)
        await shown(pilot, t)
        await pilot.resize_terminal(60, 40)
        text = await shown(pilot, t)
        drawn = [r for r in t._rows if r.key is not None and r.key[0][0] == t._width()]
        assert drawn
        for row in drawn:
            assert row.height == len(row.lines), (row.part, row.height, len(row.lines))
        assert "Compacted" in text
