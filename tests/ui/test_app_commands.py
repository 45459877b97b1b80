"""Slash-command parsing and the keymap rules (no screen needed)."""

from __future__ import annotations

import pytest

from selfref_tui.ui.commands import Command, CommandError, is_command, parse_command, unescape
from selfref_tui.ui.keymap import BINDINGS, RESERVED_KEYS, check_keymap


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/compact", Command("compact")),
        (
            "/remember I prefer tabs  over spaces",
            Command("remember", ("I prefer tabs  over spaces",)),
        ),
        ("/forget exp_003", Command("forget", ("exp_003",))),
        ("/export fib_iterative", Command("export", ("fib_iterative",))),
        ("/export fib out/my file.py", Command("export", ("fib", "out/my file.py"))),
        ("/key work", Command("key", ("work",))),
        ("  /HELP ", Command("help")),
        ("/new", Command("new")),
        ("/context", Command("context")),
    ],
)
def test_parse(text, expected):
    assert parse_command(text) == expected


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("/remember", "Usage: /remember TEXT"),
        ("/forget", "Usage: /forget ID"),
        ("/key a b", "Too many arguments"),
        ("/nope", "Unknown command /nope"),
        ("/export", "Usage: /export ID [PATH]"),
    ],
)
def test_parse_errors_say_what_to_type(text, hint):
    with pytest.raises(CommandError, match=hint.replace("[", r"\[").replace("]", r"\]")):
        parse_command(text)


def test_what_counts_as_a_command():
    assert is_command("/help") and is_command("  /key x")
    assert not is_command("/ not a command") and not is_command("/") and not is_command("a /b")
    assert not is_command("//etc/hosts") and unescape("//etc/hosts") == "/etc/hosts"


def test_every_binding_has_id_description_tooltip_and_spares_editing_keys():
    ids = [b.id for b in BINDINGS]
    assert all(ids) and len(set(ids)) == len(ids)
    for binding in BINDINGS:
        assert binding.description and binding.tooltip
        for key in binding.key.split(","):
            assert key == "escape" or key not in RESERVED_KEYS, key
    assert {f"ctrl+{c}" for c in "aekuwdxcvzy"} <= RESERVED_KEYS


def test_keymap_remaps_and_refuses_editing_keys_and_unknown_ids():
    usable, warnings = check_keymap({"copy_ref": "f6", "export_ref": "ctrl+k", "nope": "f2"})
    assert usable == {"copy_ref": "f6"}
    assert len(warnings) == 2
    assert any("ctrl+k edits text" in w for w in warnings)
    assert any("'nope' is not a binding id" in w for w in warnings)


def test_every_command_has_a_handler_and_every_handler_a_command():
    from selfref_tui.ui.command_handlers import HANDLERS
    from selfref_tui.ui.commands import COMMANDS

    assert set(HANDLERS) == {spec.name for spec in COMMANDS}

