"""What one refresh of the sidebar's ref list costs when it already holds 1,000 refs.

    .venv/bin/python bench/sidebar_bench.py [--refs 1000] [--events 40]

A headless app (``App.run_test``, 120x40) holds the real ``Sidebar``. It is given
``--refs`` refs, then each event re-sends the whole list the way the app does
after a ``RefClosed`` (the store's rows, rebuilt): one new ref at the end, and
every fourth event an early ref defined again (a row at the end, its earlier
row turns "old"). Printed:

- ``assign``: CPU milliseconds the assignment itself takes (the list updated);
- ``frame``: CPU milliseconds from the assignment to the next frame drawn (the
  list's layout and paint included; CPU time, so time the loop sleeps waiting
  for the next frame does not count).

Medians and the worst case. Figures on a shared machine are noisy: compare runs
taken side by side.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from textual.app import App, ComposeResult

from selfref_tui.ui.widgets.sidebar import Sidebar


def _rows(definitions: list[tuple[str, str]]) -> list[dict]:
    """Rows as the app builds them from the store: one per definition, oldest first."""
    last = {ref_id: index for index, (ref_id, _) in enumerate(definitions)}
    return [
        {"id": ref_id, "content": content, "superseded": last[ref_id] != index}
        for index, (ref_id, content) in enumerate(definitions)
    ]


def _definition(index: int, version: int = 0) -> tuple[str, str]:
    return f"ref_{index:05d}", f"def f{index}():\n    return {version}\n" * 4


def _assign(sidebar: Sidebar, rows: list[dict]) -> None:
    if hasattr(sidebar, "set_refs"):  # the setter API this bench was first run against
        sidebar.set_refs(rows)
    else:
        sidebar.refs = rows


class BenchApp(App):
    def compose(self) -> ComposeResult:
        yield Sidebar()


async def run(refs: int, events: int) -> None:
    app = BenchApp()
    async with app.run_test(size=(120, 40)) as pilot:
        sidebar = app.query_one(Sidebar)
        definitions = [_definition(index) for index in range(refs)]
        _assign(sidebar, _rows(definitions))
        await pilot.pause()
        assign_ms: list[float] = []
        frame_ms: list[float] = []
        for event in range(events):
            if event % 4 == 3:
                definitions.append(_definition(event, version=1))  # an early ref defined again
            else:
                definitions.append(_definition(len(definitions)))
            rows = _rows(definitions)
            started = time.process_time()
            _assign(sidebar, rows)
            assigned = time.process_time()
            await pilot.pause()  # the refresh, its layout and the frame
            drawn = time.process_time()
            assign_ms.append((assigned - started) * 1000)
            frame_ms.append((drawn - started) * 1000)
        shown = len(sidebar.ref_list.refs)
        print(f"sidebar: {refs} refs, {events} refreshes, {shown} rows at the end")
        for name, values in (("assign", assign_ms), ("frame", frame_ms)):
            print(
                f"  {name:7s} median {statistics.median(values):7.2f} ms"
                f"  max {max(values):7.2f} ms"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--refs", type=int, default=1000)
    parser.add_argument("--events", type=int, default=40)
    args = parser.parse_args()
    asyncio.run(run(args.refs, args.events))


if __name__ == "__main__":
    main()
