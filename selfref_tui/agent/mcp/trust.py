"""Saving "trust this tool" into config.toml: one item added to one ``trust`` array.

The writing is the general one-entry config writer's
(:mod:`selfref_tui.selfref.config_file`): the person's comments (also inside
the array), layout and line endings stay, a symlinked config is written at its
target, a read-only one is refused. Here is only what trust means: a server
trusted with ``"*"`` needs nothing added.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from ...config_edit import with_item


def add_trust(path: Path, server: str, tool: str) -> bool:
    """Add ``tool`` to ``[mcp.servers.<server>] trust``; False if it was already trusted."""
    from ...selfref.config_file import edit_config

    return edit_config(path, lambda text, where: trusted_text(text, server, tool, where=where))


def trusted_text(text: str, server: str, tool: str, *, where: str = "config.toml") -> str:
    """``text`` with ``tool`` in the server's trust list (pure; raises ConfigError)."""
    try:
        table = tomllib.loads(text).get("mcp", {}).get("servers", {}).get(server)
    except tomllib.TOMLDecodeError:
        table = None  # with_item says what is wrong
    if isinstance(table, dict) and "*" in (table.get("trust") or []):
        return text
    return with_item(text, ("mcp", "servers", server), "trust", tool, where=where)
