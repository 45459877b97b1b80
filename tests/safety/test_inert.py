from __future__ import annotations

import pytest
from textual.content import Content

from selfref_tui.safety import content, has_controls, inert, inert_line, one_line, redact
from tests.hostile import CORPUS, MARKUP_NAMES, assert_inert, hostile


@pytest.mark.parametrize(("name", "text"), CORPUS)
def test_every_hostile_string_is_inert(name: str, text: str) -> None:
    shown = inert(text)
    assert_inert(shown)
    assert_inert(inert_line(text))
    assert "\n" not in inert_line(text + "\nmore")


def test_escape_is_shown_not_dropped() -> None:
    assert inert("a\x1b[2Jb") == "a␛[2Jb"
    assert inert("x\x9by") == "x\\x9by"
    assert inert("d\x7f") == "d␡"
    assert inert("one\r\ntwo") == "one\ntwo"
    assert inert("over\rwrite") == "over␍write"


def test_clean_text_is_returned_unchanged() -> None:
    text = "plain answer with\ttabs and\nnewlines, üñíçødé and 漢字"
    assert inert(text) is text
    assert not has_controls(text)
    assert has_controls(hostile("osc52_clipboard"))


def test_inert_line_cuts_with_ellipsis() -> None:
    assert inert_line("abcdef", limit=4) == "abc…"
    assert inert_line("a\tb\nc") == "a b c"


def test_one_line_joins_whitespace_and_cuts_with_ellipsis() -> None:
    assert one_line("  a\n\tb   c \r\n", 10) == "a b c"
    assert one_line(ValueError("x" * 20), 8) == "xxxxxxx…"
    assert len(one_line("word " * 100, 300)) <= 300


@pytest.mark.parametrize("name", MARKUP_NAMES)
def test_content_never_parses_markup(name: str) -> None:
    text = hostile(name)
    built = content(text)
    assert isinstance(built, Content)
    assert built.plain == text  # every bracket kept as a character
    assert not any(span.style for span in built.spans if "@click" in str(span.style))


def test_content_style_is_ours() -> None:
    built = content("[b]x[/b]", "bold")
    assert built.plain == "[b]x[/b]"
    assert built.spans  # the whole text carries our style


def test_redact_key_bearer_and_userinfo() -> None:
    key = "sk-live-1234567890abcdefXYZ"
    text = (
        f"401 from proxy: Authorization: Bearer {key} rejected; "
        "url https://alice:hunter2secret@api.example.com/v1 "
        '{"authorization": "Bearer abcdef123456"}'
    )
    shown = redact(text, [key])
    assert key not in shown
    assert "hunter2secret" not in shown and "alice" not in shown
    assert "abcdef123456" not in shown
    assert "https://***@api.example.com/v1" in shown
    assert redact("no secrets here: token budget 5") == "no secrets here: token budget 5"


def test_redact_ignores_tiny_secrets() -> None:
    assert redact("a b c", ["a"]) == "a b c"


@pytest.mark.parametrize(("name", "text"), CORPUS)
def test_json_inert_escapes_what_dumps_leaves_raw(name: str, text: str) -> None:
    import json

    from selfref_tui.safety import json_inert

    dumped = json_inert(json.dumps({"text": text, "ü": "漢字"}, ensure_ascii=False, indent=2))
    assert_inert(dumped)
    assert "\u202e" not in dumped
    assert json.loads(dumped) == {"text": text, "ü": "漢字"}  # same value, still readable
    assert "漢字" in dumped


def test_redact_leaves_placeholder_keys_alone() -> None:
    # "test" as the configured key must not turn a path's "pytest" into "py***"
    assert redact("/tmp/pytest-1/x", ["test"]) == "/tmp/pytest-1/x"
    assert redact("key abcdefgh here", ["abcdefgh"]) == "key *** here"


def test_the_pattern_finds_exactly_the_characters_the_table_replaces() -> None:
    from selfref_tui.safety.inert import _TABLE, _UNSAFE

    assert {c for c in range(0x10000) if _UNSAFE.match(chr(c))} == set(_TABLE)


def test_a_lone_surrogate_is_shown_as_its_escape() -> None:
    import json

    from selfref_tui.safety import json_inert

    # half an emoji's pair (a JSON escape), and an undecodable byte (surrogateescape)
    text = "half \ud83d and \udc9b31m"
    assert inert(text) == "half \\ud83d and \\udc9b31m"
    assert inert_line(text) == "half \\ud83d and \\udc9b31m"
    assert inert(text).encode("utf-8")  # nothing left that UTF-8 cannot write
    dumped = json_inert(json.dumps({"t": text}, ensure_ascii=False))
    assert dumped.encode("utf-8") and json.loads(dumped) == {"t": text}


def test_name_line_shows_every_invisible_format_character() -> None:
    import unicodedata

    from selfref_tui.safety import name_line

    assert name_line("ma\u200bin") == "ma\\u200bin"
    assert name_line("\ufeffmain\u2060") == "\\ufeffmain\\u2060"
    assert name_line("tag\U000e0041") == "tag\\U000e0041"
    # right-to-left override: what follows is not reversed on screen
    assert name_line("invoice\u202egnp.exe") == "invoice\\u202egnp.exe"
    assert name_line("a\u2067b\u2069") == "a\\u2067b\\u2069"
    for code in range(0x110000):
        if unicodedata.category(chr(code)) == "Cf":
            shown = name_line(f"x{chr(code)}y")
            assert shown != "xy" and all(unicodedata.category(c) != "Cf" for c in shown), code
    clean = "main ü名前 👍"
    assert name_line(clean) == clean
    assert name_line("new\nline\x1b", 8) == "new lin…"
    assert len(name_line("ma\u200bin" * 20, 12)) == 12


def test_key_option_is_one_shell_word_that_reads_as_typed() -> None:
    import shlex

    from selfref_tui.safety import key_option

    assert key_option("main") == "--key main"
    assert key_option("my chat") == "--key 'my chat'"
    assert shlex.split(key_option("it's")) == ["--key", "it's"]
    assert key_option("-x") == "--key=-x"  # not taken for an option
    assert key_option("ma\u200bin") == "--key $'ma\\u200bin'"  # escaped, never raw
    assert "\x1b" not in key_option("a\x1b]0;t\x07b")


@pytest.mark.parametrize("key", ["main", "my chat", "it's", "-x", "ma\u200bin", "m\u0430in",
                                 "my\u00a0chat", "it's m\u0430in", "-m\u0430in",
                                 "notes-заметки", "invoice\u202egnp.exe"])
def test_key_option_pasted_into_a_shell_opens_that_very_name(key) -> None:
    """The option is copied into a terminal: its escapes must come back as the name's
    characters. Quoted plainly, 'm\\u0430in' named a conversation with a backslash,
    which is refused, so the command offered for a lookalike name never worked."""
    import subprocess

    from selfref_tui.safety import inert_line, key_option, name_line

    option = key_option(key)
    assert inert_line(option) == option  # nothing raw reaches the terminal
    assert name_line(key) == key or key not in option  # a marked name is shown escaped
    said = subprocess.run(["bash", "-c", f"printf '%s\\n' {option}"], capture_output=True,
                          text=True, check=True).stdout.splitlines()
    assert said in (["--key", key], [f"--key={key}"]), said
