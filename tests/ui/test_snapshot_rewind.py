"""SVG snapshots of a rewound section: collapsed and marked, and opened.

The key is written through the store (three turns, a rewind to before the
second, a new turn), then opened in the app, as after a restart; the sidebar is
hidden (its token figure is not what these show).
"""

from __future__ import annotations

from selfref_tui.context.mutations import AssistantMessageMutation, UserMessageMutation
from selfref_tui.selfref.reference import SelfReference
from tests.ui.helpers import (
    SIZE,
    fixed_clock,
    make_app,
    started,
    steady_usage,
    thread_server,
)


def turn(question: str, answer: str) -> list:
    return [UserMessageMutation({"role": "user", "content": question}),
            AssistantMessageMutation(content=answer)]


def rewound_key(tmp_path) -> None:
    store = SelfReference(tmp_path / "data")
    memory = store.open("main")
    memory.commit(turn("Plan a three-day trip to Lisbon.",
                       "Day 1: Alfama and the castle. Day 2: Belém. Day 3: Sintra."))
    memory.commit(turn("Make it five days.", "Day 4: Cascais. Day 5: Évora."))
    memory.commit(turn("And add a day trip to Porto.", "Day 6: the train to Porto."))
    memory.commit([memory.rewind_patch(3)])
    memory.commit(turn("Make it four days, with a slow morning each day.",
                       "Day 4: Cascais, after a late breakfast at the market."))
    store.close()


def test_rewound_section_collapsed(snap_compare, tmp_path):
    rewound_key(tmp_path)
    with thread_server([]) as url:
        app = make_app(tmp_path, url, clock=fixed_clock)

        async def run_before(pilot) -> None:
            await started(pilot, app)
            await steady_usage(pilot, app)
            app.action_toggle_sidebar()  # the section is the subject, not the meter's figure
            await app.transcript.settle()

        assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_rewound_section_opened(snap_compare, tmp_path):
    rewound_key(tmp_path)
    with thread_server([]) as url:
        app = make_app(tmp_path, url, clock=fixed_clock)

        async def run_before(pilot) -> None:
            await started(pilot, app)
            await steady_usage(pilot, app)
            app.action_toggle_sidebar()
            (section,) = app.transcript.items_of("rewound")
            app.transcript.toggle_section(section, True)
            await app.transcript.settle()

        assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
