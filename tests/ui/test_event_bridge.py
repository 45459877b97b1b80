"""The event bridge's routing: where a key's events belong, and what every key's events do."""

from __future__ import annotations

from tests.ui.helpers import DOWN_URL, SIZE, make_app, started, wait_until


def test_events_are_placed_by_their_keys_structure():
    from selfref_tui.ui.event_bridge import key_place

    assert key_place("main", "main") == "shown"
    assert key_place("main", "main::fork::1") == "fork"
    assert key_place("main", "main::fork::1::fork::2") == "fork"  # a fork's fork
    assert key_place("main", "mainly::fork::1") is None  # another key's fork
    assert key_place("main", "other") is None
    assert key_place("main::fork::1", "main") is None  # a parent is not its fork's


async def test_a_question_is_asked_whichever_key_asks_and_its_turns_end_takes_it_away(tmp_path):
    """The bridge's any-key table: a tool waits on its question whoever asks (the key on
    screen, one of its forks, a key switched away from), and the end of the asker's turn
    (or its parent's) takes the dialog away; another key's turn leaves it."""
    from selfref_tui.agent import events as ev
    from selfref_tui.ui.screens.question import QuestionScreen

    app = make_app(tmp_path, DOWN_URL)
    async with app.run_test(size=SIZE) as pilot:
        await started(pilot, app)
        for asker, ender in (("main", "main"), ("main::fork::1", "main"), ("other", "other")):
            await app.dispatch_event(
                ev.QuestionAsked(asker, f"q-{asker}", "Overwrite notes.md?", ("yes", "no"))
            )
            await wait_until(pilot, lambda: isinstance(app.screen, QuestionScreen),
                             what=f"the question of {asker}")
            await app.dispatch_event(ev.TurnEnded("elsewhere", 1, "done"))
            await pilot.pause()
            assert isinstance(app.screen, QuestionScreen) and f"q-{asker}" in app._questions
            await app.dispatch_event(ev.TurnEnded(ender, 1, "aborted"))
            await wait_until(pilot, lambda: not isinstance(app.screen, QuestionScreen),
                             what=f"the question of {asker} taken away")
            assert app._questions == {}
