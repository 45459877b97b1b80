"""Saving "trust this tool" into config.toml without disturbing the rest of the file.

The file is the person's: comments, order and formatting stay. Only the ``trust``
array of one ``[mcp.servers.NAME]`` table is rewritten (or added under its
header). The edit is checked by parsing the result: it must mean exactly the old
file plus the one tool, or nothing is written. The write is atomic (temp file and
rename), so a crash leaves the old file or the new one, never half of either.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

from ...config import ConfigError


def add_trust(path: Path, server: str, tool: str) -> bool:
    """Add ``tool`` to ``[mcp.servers.<server>] trust``; False if it was already there."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {path} to save the trust: {exc.strerror}") from None
    new_text = trusted_text(text, server, tool, where=str(path))
    if new_text == text:
        return False
    from ...selfref.fsutil import atomic_write

    atomic_write(path, new_text.encode("utf-8"))
    return True


def trusted_text(text: str, server: str, tool: str, *, where: str = "config.toml") -> str:
    """``text`` with ``tool`` in the server's trust list (pure; raises ConfigError)."""
    data = tomllib.loads(text)
    table = data.get("mcp", {}).get("servers", {}).get(server)
    if not isinstance(table, dict):
        raise ConfigError(f"{where} has no [mcp.servers.{server}] table to save the trust in")
    trust = list(table.get("trust", []))
    if "*" in trust or tool in trust:
        return text
    trust.append(tool)
    value = "[" + ", ".join(json.dumps(t, ensure_ascii=False) for t in trust) + "]"
    start, end = _section(text, server, where)
    section = text[start:end]
    line = re.search(r"(?m)^[ \t]*trust[ \t]*=[ \t]*", section)
    if line is None:
        header_end = text.index("\n", start) + 1 if "\n" in text[start:] else len(text)
        if header_end == len(text) and not text.endswith("\n"):
            new = text + f"\ntrust = {value}\n"
        else:
            new = text[:header_end] + f"trust = {value}\n" + text[header_end:]
    else:
        array_start = start + line.end()
        array_end = _array_end(text, array_start, where)
        new = text[:array_start] + value + text[array_end:]
    _check_same_but_trust(data, new, server, trust, where)
    return new


def _section(text: str, server: str, where: str) -> tuple[int, int]:
    """The span from the server's table header to the next table header."""
    quoted = re.escape(json.dumps(server))
    name = rf"(?:{re.escape(server)}|{quoted}|'{re.escape(server)}')"
    header = re.compile(rf"(?m)^[ \t]*\[[ \t]*mcp[ \t]*\.[ \t]*servers[ \t]*\.[ \t]*{name}[ \t]*\]")
    found = header.search(text)
    if found is None:
        raise ConfigError(f"{where}: [mcp.servers.{server}] is not written as a table header; "
                          f"add the tool to its trust list by hand")
    following = re.compile(r"(?m)^[ \t]*\[").search(text, found.end())
    return found.start(), following.start() if following else len(text)


def _array_end(text: str, pos: int, where: str) -> int:
    """The index just after the TOML array starting at ``pos`` (strings, comments, nesting)."""
    if pos >= len(text) or text[pos] != "[":
        raise ConfigError(f"{where}: trust is not an array; fix it by hand")
    depth, i = 0, pos
    while i < len(text):
        c = text[i]
        if c == "#":
            i = text.find("\n", i)
            if i < 0:
                break
        elif c in "\"'":
            triple = text.startswith(c * 3, i)
            quote = c * 3 if triple else c
            i += len(quote)
            while i < len(text) and not text.startswith(quote, i):
                i += 2 if c == '"' and text[i] == "\\" else 1
            i += len(quote) - 1
        elif c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise ConfigError(f"{where}: the trust array is not closed; fix it by hand")


def _check_same_but_trust(old: dict[str, Any], new_text: str, server: str, trust: list[str],
                          where: str) -> None:
    try:
        new = tomllib.loads(new_text)
    except tomllib.TOMLDecodeError:
        new = None
    expected = json.loads(json.dumps(old, default=str))
    expected["mcp"]["servers"][server]["trust"] = trust
    if new is None or json.loads(json.dumps(new, default=str)) != json.loads(
            json.dumps(expected, default=str)):
        raise ConfigError(f"{where}: could not add {tool_text(trust[-1])} to the trust list of "
                          f"[mcp.servers.{server}] safely; add it by hand")


def tool_text(tool: str) -> str:
    return json.dumps(tool, ensure_ascii=False)
