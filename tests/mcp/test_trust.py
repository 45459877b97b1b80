""""Trust this tool" is written into config.toml, keeping the rest of the file."""

from __future__ import annotations

import tomllib

import pytest

from selfref_tui.agent.mcp.trust import add_trust, trusted_text
from selfref_tui.config import ConfigError, load_config

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


def test_a_new_trust_line_goes_under_the_header(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(FILE, encoding="utf-8")
    assert add_trust(path, "time", "get_current_time") is True
    text = path.read_text(encoding="utf-8")
    assert text == FILE.replace('[mcp.servers.time]\n',
                                '[mcp.servers.time]\ntrust = ["get_current_time"]\n')
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
