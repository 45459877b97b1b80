"""The event bridge's routing, without a screen: where a key's events belong."""

from __future__ import annotations


def test_events_are_placed_by_their_keys_structure():
    from selfref_tui.ui.event_bridge import key_place

    assert key_place("main", "main") == "shown"
    assert key_place("main", "main::fork::1") == "fork"
    assert key_place("main", "main::fork::1::fork::2") == "fork"  # a fork's fork
    assert key_place("main", "mainly::fork::1") is None  # another key's fork
    assert key_place("main", "other") is None
    assert key_place("main::fork::1", "main") is None  # a parent is not its fork's
