"""Saving one entry into config.toml: only that entry changes, on disk as in the text."""

from __future__ import annotations

import os
import tomllib

import pytest

from selfref_tui.config import ConfigError
from selfref_tui.config_edit import toml_value, with_item, with_value
from selfref_tui.selfref.config_file import add_config_item, set_config_value

TRICKY = '''# my settings
default_provider = "local"   # keep this comment
notes = """
[not.a.table]
theme = "not this one"
"""
odd = { a = 1, b = [2, 3] }  # an inline table
when = 1979-05-27 07:32:00Z
'quoted key' = 'x' # literal

[providers.local]
base_url = "http://localhost:11434/v1"
models = [
  ["nested", "arrays"],  # a comment with ] in it
  [],
]

[[profiles]]
name = "one"

[mcp.servers."my server"]
command = "x"
'''


def _only_inserted(old: str, new: str, inserted: str) -> None:
    at = new.index(inserted)
    assert new[:at] + new[at + len(inserted):] == old


def test_a_top_level_key_goes_after_the_last_top_level_key():
    new = with_value(TRICKY, (), "theme", "nord")
    _only_inserted(TRICKY, new, 'theme = "nord"\n')
    assert new.index('theme = "nord"') < new.index("[providers.local]")
    assert tomllib.loads(new)["theme"] == "nord"
    assert tomllib.loads(new)["notes"] == tomllib.loads(TRICKY)["notes"]


def test_an_existing_value_is_replaced_keeping_its_comment():
    text = 'theme = "dark"  # what I like\n[agent]\nstep_limit = 3\n'
    assert with_value(text, (), "theme", "nord") == \
        'theme = "nord"  # what I like\n[agent]\nstep_limit = 3\n'
    assert with_value(text, (), "theme", "dark") is text
    assert with_value(text, ("agent",), "step_limit", 9) == text.replace("= 3", "= 9")


def test_files_without_top_level_keys_or_without_anything():
    assert with_value("", (), "theme", "nord") == 'theme = "nord"\n'
    assert with_value("# only a comment", (), "theme", "x") == '# only a comment\ntheme = "x"\n'
    text = "# my file\n\n# the provider\n[providers.a]\nbase_url = \"http://h/v1\"\n"
    assert with_value(text, (), "theme", "x") == (
        '# my file\n\ntheme = "x"\n\n# the provider\n[providers.a]\nbase_url = "http://h/v1"\n')


def test_a_missing_table_is_added_at_the_end_unless_refused():
    new = with_value(TRICKY, ("mcp", "servers", "my server"), "enabled", False)
    assert new == TRICKY + "enabled = false\n"
    added = with_value("x = 1", ("ui",), "theme", "nord")
    assert added == 'x = 1\n\n[ui]\ntheme = "nord"\n'
    with pytest.raises(ConfigError, match=r"has no \[ui\] table"):
        with_value("x = 1\n", ("ui",), "theme", "nord", create_table=False)


def test_crlf_files_get_crlf_lines_and_no_final_newline_stays_so():
    text = 'a = 1\r\n[t]\r\nb = 2'
    assert with_value(text, (), "theme", "x") == 'a = 1\r\ntheme = "x"\r\n[t]\r\nb = 2'
    assert with_value(text, ("t",), "c", 3) == 'a = 1\r\n[t]\r\nb = 2\r\nc = 3'


def test_arrays_get_one_item_after_their_last():
    assert with_item('t = []\n', (), "t", "a") == 't = ["a"]\n'
    assert with_item('t = ["a", "b"]\n', (), "t", "c") == 't = ["a", "b", "c"]\n'
    assert with_item('t = ["a", ]\n', (), "t", "c") == 't = ["a", "c", ]\n'
    assert with_item('t = [\n  "a"  # first\n]\n', (), "t", "b") == \
        't = [\n  "a",  # first\n  "b"\n]\n'
    assert with_item('t = [\n\t"a", # first\n\t# more later\n]\n', (), "t", "b") == \
        't = [\n\t"a", # first\n\t"b",\n\t# more later\n]\n'
    assert with_item('t = [\n  # none yet\n]\n', (), "t", "a") == 't = ["a"\n  # none yet\n]\n'
    assert with_item('x = 1\n', (), "t", "a") == 'x = 1\nt = ["a"]\n'
    assert with_item('t = ["a"]\n', (), "t", "a") == 't = ["a"]\n'  # already there


def test_what_cannot_be_edited_safely_is_refused():
    with pytest.raises(ConfigError, match="dotted keys"):
        with_value('ui.theme = "x"\n', (), "ui", "y")
    with pytest.raises(ConfigError, match="not written as a table header"):
        with_item('mcp.servers.a.command = "x"\n', ("mcp", "servers", "a"), "trust", "t")
    with pytest.raises(ConfigError, match="not written as a table header"):
        with_item('mcp = { servers = { a = { command = "x" } } }\n', ("mcp", "servers", "a"),
                  "trust", "t")
    with pytest.raises(ConfigError, match="not an array"):
        with_item('t = "a"\n', (), "t", "b")
    with pytest.raises(ConfigError, match="not valid TOML"):
        with_value('t = [\n', (), "theme", "x")


def test_strings_are_escaped_so_the_file_stays_valid_and_inert():
    for text in ("plain", 'q"uote\\', "del\x7f", "esc\x1b[2J", "c1\x9b", "nl\nx", "ünï ✓"):
        value = toml_value(text)
        assert tomllib.loads(f"k = {value}")["k"] == text
        assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in value)


def test_the_file_is_created_private_and_a_bom_is_kept(tmp_path):
    path = tmp_path / "sub" / "config.toml"
    assert set_config_value(path, (), "theme", "nord") is True
    assert path.read_text(encoding="utf-8") == 'theme = "nord"\n'
    assert path.stat().st_mode & 0o777 == 0o600
    assert set_config_value(path, (), "theme", "nord") is False
    bom = tmp_path / "bom.toml"
    bom.write_bytes("\ufeffx = 1\n".encode())
    assert add_config_item(bom, (), "t", 1) is True
    assert bom.read_bytes().decode() == "\ufeffx = 1\nt = [1]\n"


def test_a_hard_linked_or_unreadable_or_non_utf8_config_is_refused(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text("x = 1\n", encoding="utf-8")
    os.link(path, tmp_path / "other.toml")
    with pytest.raises(ConfigError, match="hard links"):
        set_config_value(path, (), "theme", "nord")
    assert path.read_text(encoding="utf-8") == "x = 1\n"
    latin = tmp_path / "latin.toml"
    latin.write_bytes(b'x = "caf\xe9"\n')
    with pytest.raises(ConfigError, match="not UTF-8"):
        set_config_value(latin, (), "theme", "nord")
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match="not a regular file"):
        set_config_value(fifo, (), "theme", "nord")
