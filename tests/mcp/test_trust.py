""""Trust this tool" is written into config.toml, keeping the rest of the file."""

from __future__ import annotations

import tomllib

import pytest

from selfref_tui.agent.mcp.trust import add_trust, trusted_text
from selfref_tui.config import ConfigError
from selfref_tui.config_load import load_config

FILE = '''# my settings
default_provider = "local"   # keep this comment

[providers.local]
base_url = "http://localhost:11434/v1"

[mcp.servers.time]
command = "mcp-server-time"
args = ["--local-timezone", "UTC"]

[mcp.servers.docs]
url = "http://127.0.0.1:9000/mcp"
trust = [
    "search",  # read-only
    'has ] bracket',
]

[agent]
step_limit = 12
'''


def test_a_new_trust_line_goes_after_the_tables_last_key(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(FILE, encoding="utf-8")
    assert add_trust(path, "time", "get_current_time") is True
    text = path.read_text(encoding="utf-8")
    args = 'args = ["--local-timezone", "UTC"]\n'
    assert text == FILE.replace(args, args + 'trust = ["get_current_time"]\n')
    assert load_config(config_path=path, env={}).mcp_servers[0].trusts("get_current_time")
    assert add_trust(path, "time", "get_current_time") is False  # already there
    assert path.read_text(encoding="utf-8") == text


def test_an_existing_multiline_array_is_extended():
    text = trusted_text(FILE, "docs", 'odd "name"')
    assert tomllib.loads(text)["mcp"]["servers"]["docs"]["trust"] == [
        "search", "has ] bracket", 'odd "name"']
    assert text.startswith("# my settings\ndefault_provider = \"local\"   # keep this comment")
    assert text.endswith("[agent]\nstep_limit = 12\n")


def test_star_means_nothing_to_add_and_unknown_servers_are_refused():
    assert trusted_text('[mcp.servers.a]\ncommand = "x"\ntrust = ["*"]\n', "a", "t") == \
        '[mcp.servers.a]\ncommand = "x"\ntrust = ["*"]\n'
    with pytest.raises(ConfigError, match=r"no \[mcp.servers.nope\] table"):
        trusted_text(FILE, "nope", "t")
    inline = 'mcp.servers.a.command = "x"\n'
    with pytest.raises(ConfigError, match="by hand"):
        trusted_text(inline, "a", "t")


def test_comments_inside_the_array_and_crlf_endings_are_kept(tmp_path):
    path = tmp_path / "config.toml"
    crlf = FILE.replace("\n", "\r\n")
    path.write_bytes(crlf.encode())
    assert add_trust(path, "docs", "fetch") is True
    assert path.read_bytes().decode() == crlf.replace(
        "    'has ] bracket',\r\n", "    'has ] bracket',\r\n    \"fetch\",\r\n")
    assert load_config(config_path=path, env={}).mcp_servers[1].trust == (
        "search", "has ] bracket", "fetch")


def test_a_symlinked_config_is_written_at_its_target(tmp_path):
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / "selfref.toml"
    real.write_text(FILE, encoding="utf-8")
    real.chmod(0o644)
    link = tmp_path / "config.toml"
    link.symlink_to(real)
    assert add_trust(link, "time", "get_current_time") is True
    assert link.is_symlink() and link.resolve() == real
    assert 'trust = ["get_current_time"]' in real.read_text(encoding="utf-8")
    assert real.stat().st_mode & 0o777 == 0o644
    dangling = tmp_path / "dangling.toml"
    dangling.symlink_to(tmp_path / "gone.toml")
    with pytest.raises(ConfigError, match="does not exist"):
        add_trust(dangling, "time", "t")
    assert dangling.is_symlink() and not (tmp_path / "gone.toml").exists()


def test_a_read_only_config_is_refused_never_replaced(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(FILE, encoding="utf-8")
    path.chmod(0o444)
    inode = path.stat().st_ino
    with pytest.raises(ConfigError, match="read-only"):
        add_trust(path, "time", "get_current_time")
    assert path.read_text(encoding="utf-8") == FILE
    assert path.stat().st_ino == inode and path.stat().st_mode & 0o777 == 0o444


def test_a_tool_name_with_control_characters_is_escaped_and_trusted(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(FILE, encoding="utf-8")
    name = "del\x7fname\x1b[31m\x85"
    assert add_trust(path, "time", name) is True
    text = path.read_text(encoding="utf-8")
    assert "\\u007F" in text and "\x7f" not in text and "\x1b" not in text
    assert load_config(config_path=path, env={}).mcp_servers[0].trusts(name)
    assert add_trust(path, "time", name) is False
