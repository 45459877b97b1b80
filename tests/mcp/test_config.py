"""``[mcp.servers.NAME]`` in config.toml."""

from __future__ import annotations

import pytest

from selfref_tui.config import ConfigError
from selfref_tui.config_load import load_config


def _load(tmp_path, text: str):
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return load_config(config_path=path, env={})


def test_stdio_and_http_servers_are_read(tmp_path):
    config = _load(tmp_path, '''
[mcp.servers.time]
command = "mcp-server-time"
args = ["--local-timezone", "UTC"]
env = { TZ = "UTC", TOKEN = "${MY_TOKEN}" }
[mcp.servers.docs]
url = "http://127.0.0.1:9000/mcp"
headers = { Authorization = "Bearer ${DOCS_TOKEN}" }
trust = ["search"]
''')
    time, docs = config.mcp_servers
    assert (time.name, time.transport, time.args) == ("time", "stdio", ("--local-timezone", "UTC"))
    assert time.resolved_env({"MY_TOKEN": "s3cret"}) == {"TZ": "UTC", "TOKEN": "s3cret"}
    with pytest.raises(ConfigError, match=r"env\.TOKEN names \$MY_TOKEN, which is not set"):
        time.resolved_env({})
    assert docs.transport == "http" and docs.trusts("search") and not docs.trusts("delete")
    assert docs.resolved_headers({"DOCS_TOKEN": "t"}) == {"Authorization": "Bearer t"}
    assert config.config_path == tmp_path / "config.toml"


@pytest.mark.parametrize(("body", "message"), [
    ('[mcp.servers.x]\nargs = ["a"]\n', "exactly one of command"),
    ('[mcp.servers.x]\ncommand = "a"\nurl = "http://h"\n', "exactly one of command"),
    ('[mcp.servers.x]\nurl = "ftp://h"\n', "must start with http"),
    ('[mcp.servers.x]\nurl = "http://h"\nheaders = { Authorization = "Bearer abc" }\n',
     "must name an environment variable"),
    ('[mcp.servers.x]\ncommand = "a"\ntrust = "*"\n', "trust must be list"),
    ('[mcp.servers.x]\ncommand = "a"\nargs = [1]\n', "list of strings"),
    ('[mcp.servers.x]\ncommand = "a"\ncolour = "red"\n', "unknown setting 'colour'"),
    ('[mcp]\nserver = 1\n', "unknown setting 'server' in \\[mcp\\]"),
])
def test_mistakes_are_one_line_errors(tmp_path, body, message):
    with pytest.raises(ConfigError, match=message):
        _load(tmp_path, body)


def test_no_mcp_section_means_no_servers(tmp_path):
    assert _load(tmp_path, 'key = "main"\n').mcp_servers == ()
