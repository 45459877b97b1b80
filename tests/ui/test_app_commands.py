"""Slash-command parsing and the keymap rules (no screen needed)."""

from __future__ import annotations

import pytest

from selfref_tui.ui.commands import Command, CommandError, is_command, parse_command, unescape
from selfref_tui.ui.keymap import BINDINGS, RESERVED_KEYS, check_keymap, is_key


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
        ("/exit", Command("quit")),  # as in other chat apps
        ("/Quit", Command("quit")),
        ("/key", Command("key")),  # the switcher, as /model alone is the picker
        ("/resume", Command("key")),  # Claude Code's and Codex's names
        ("/clear", Command("new")),
        # a path quoted as in a shell is the path (a folder named '"' was made)
        ('/save "/tmp/my notes.md"', Command("save", ("/tmp/my notes.md",))),
        ("/export fib 'out/my file.py'", Command("export", ("fib", "out/my file.py"))),
        ('/attach "cat.png"', Command("attach", ("cat.png",))),
        ("/save it's.md", Command("save", ("it's.md",))),
        ('/remember "quoted"', Command("remember", ('"quoted"',))),
        ('/export "fib"', Command("export", ('"fib"',))),
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



def test_keymap_refuses_a_key_that_is_no_key_and_takes_every_kind_that_is():
    """A typo ("ctlr+r") put the binding on a key no terminal sends: ctrl+r stopped copying,
    and nothing said why."""
    usable, warnings = check_keymap({"copy_ref": "ctlr+r", "find": "f3,nonsense",
                                     "help": "f24", "toggle_forks": "alt+slash",
                                     "toggle_sidebar": "ctrl+shift+question_mark",
                                     "new_key": "super+n", "switch_key": "ctrl+pageup"})
    assert usable == {"help": "f24", "toggle_forks": "alt+slash",
                      "toggle_sidebar": "ctrl+shift+question_mark", "new_key": "super+n",
                      "switch_key": "ctrl+pageup"}
    assert warnings == [
        "[keymap] copy_ref = 'ctlr+r' ignored: 'ctlr+r' is not a key; write one like f6, "
        "ctrl+r or alt+x",
        "[keymap] find = 'f3,nonsense' ignored: 'nonsense' is not a key; write one like f6, "
        "ctrl+r or alt+x"]
    for binding in BINDINGS:  # every default is a key
        assert all(is_key(key) for key in binding.key.split(",")), binding.key


def test_every_command_has_a_handler_and_every_handler_a_command():
    from selfref_tui.ui.command_handlers import HANDLERS
    from selfref_tui.ui.commands import COMMANDS

    assert set(HANDLERS) == {spec.name for spec in COMMANDS}

