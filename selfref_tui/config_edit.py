"""One entry of config.toml changed in its text, and nothing else (pure: text in, text out).

config.toml is the person's file: its comments (also those inside arrays), order,
blank lines, quoting and line endings are theirs. So a change is made where the
entry is written, not by dumping parsed data: a small scanner finds the
statements (table headers and ``key = value``, a value possibly spanning lines),
the one value is replaced, the one key added, or the one item appended to an
array after its last item. Inserted lines use the file's own line ending.

Every edit is checked by parsing the result: it must mean exactly the old file
plus the change, or :class:`ConfigError` is raised and nothing is to be written.
A table written as dotted keys or an inline table is refused (edit it by hand):
rewriting those would change how the person wrote them.

:mod:`selfref_tui.selfref.config_file` writes the result to disk.
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .config import ConfigError

Value = str | int | float | bool | list[Any]

_BARE = re.compile(r"[A-Za-z0-9_-]+")
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f",
            "\r": "\\r"}


def toml_value(value: Value) -> str:
    """``value`` written as TOML. Control characters (DEL and C1 too) are escaped."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return '"' + "".join(_ESCAPES.get(c) or (f"\\u{ord(c):04X}" if _control(c) else c)
                             for c in value) + '"'
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise ConfigError(f"cannot write {type(value).__name__} values into config.toml")


def _control(c: str) -> bool:
    code = ord(c)
    return code < 0x20 or 0x7F <= code <= 0x9F


def toml_key(key: str) -> str:
    return key if _BARE.fullmatch(key) else toml_value(key)


def table_name(table: Sequence[str]) -> str:
    """``[a.b."c d"]`` as the person would write it (for messages and new headers)."""
    return "[" + ".".join(toml_key(k) for k in table) + "]"


# ------------------------------------------------------------------- scanning


@dataclass(frozen=True)
class _Statement:
    kind: str  # "table", "array_table" or "value"
    path: tuple[str, ...]  # the header's table, or the key (dotted keys: several parts)
    start: int  # first character of the statement's line
    value_start: int  # "value" only
    end: int  # just after the statement (its value), before a comment or the newline
    line_end: int  # just after the statement's last line (its newline, if any)


class _Scanner:
    def __init__(self, text: str, where: str) -> None:
        self.text = text
        self.where = where

    def fail(self, what: str) -> ConfigError:
        return ConfigError(f"{self.where}: {what}; edit it by hand")

    def statements(self) -> list[_Statement]:
        text, pos, found = self.text, 0, []
        while True:
            pos = self._skip_blank_lines(pos)
            if pos >= len(text):
                return found
            start = text.rfind("\n", 0, pos) + 1
            if text[pos] == "[":
                kind = "array_table" if text.startswith("[[", pos) else "table"
                path, end = self._key(pos + (2 if kind == "array_table" else 1), "]")
                close = "]]" if kind == "array_table" else "]"
                if not text.startswith(close, end):
                    raise self.fail("a table header is not closed")
                end += len(close)
                found.append(_Statement(kind, path, start, end, end, self._line_end(end)))
                pos = found[-1].line_end
            else:
                path, eq = self._key(pos, "=")
                if not text.startswith("=", eq):
                    raise self.fail(f"line {text.count(chr(10), 0, pos) + 1} is not key = value")
                value_start = self._skip_spaces(eq + 1)
                end = self.value_end(value_start)
                found.append(_Statement("value", path, start, value_start, end,
                                        self._line_end(end)))
                pos = found[-1].line_end

    def _skip_spaces(self, pos: int) -> int:
        while pos < len(self.text) and self.text[pos] in " \t":
            pos += 1
        return pos

    def _skip_blank_lines(self, pos: int) -> int:
        text = self.text
        while pos < len(text):
            if text[pos] in " \t\r\n":
                pos += 1
            elif text[pos] == "#":
                pos = self._to_newline(pos)
            else:
                break
        return pos

    def _to_newline(self, pos: int) -> int:
        found = self.text.find("\n", pos)
        return len(self.text) if found < 0 else found

    def _line_end(self, pos: int) -> int:
        """After the statement ending at ``pos``: spaces, a comment, then the newline."""
        pos = self._skip_spaces(pos)
        if pos < len(self.text) and self.text[pos] == "#":
            pos = self._to_newline(pos)
        if self.text.startswith("\r\n", pos):
            return pos + 2
        if pos < len(self.text) and self.text[pos] == "\n":
            return pos + 1
        if pos < len(self.text):
            raise self.fail(f"unexpected text after a value on line "
                            f"{self.text.count(chr(10), 0, pos) + 1}")
        return pos

    def _key(self, pos: int, stop: str) -> tuple[tuple[str, ...], int]:
        """A dotted key from ``pos``; its parts and where ``stop`` should follow."""
        parts: list[str] = []
        while True:
            pos = self._skip_spaces(pos)
            text = self.text
            if pos < len(text) and text[pos] in "\"'":
                end = self._string_end(pos)
                parts.append(tomllib.loads(f"k = {text[pos:end]}")["k"])
                pos = end
            else:
                bare = _BARE.match(text, pos)
                if bare is None:
                    raise self.fail(f"a key on line {text.count(chr(10), 0, pos) + 1} "
                                    "is not one this editor reads")
                parts.append(bare.group())
                pos = bare.end()
            pos = self._skip_spaces(pos)
            if not text.startswith(".", pos):
                return tuple(parts), pos
            pos += 1

    def _string_end(self, pos: int) -> int:
        text, quote = self.text, self.text[pos]
        if text.startswith(quote * 3, pos):
            close = text.find(quote * 3, pos + 3)
            if quote == '"':
                while close >= 0 and _escaped(text, close):
                    close = text.find('"""', close + 1)
            if close < 0:
                raise self.fail("a multi-line string is not closed")
            close += 3
            for _ in range(2):  # up to two quotes may end the content: """a""""
                if text.startswith(quote, close):
                    close += 1
            return close
        i = pos + 1
        while i < len(text) and text[i] != quote and text[i] != "\n":
            i += 2 if quote == '"' and text[i] == "\\" else 1
        if i >= len(text) or text[i] != quote:
            raise self.fail("a string is not closed")
        return i + 1

    def value_end(self, pos: int) -> int:
        """Just after the value starting at ``pos`` (strings, arrays, inline tables, scalars)."""
        text = self.text
        if pos >= len(text):
            raise self.fail("a key has no value")
        c = text[pos]
        if c in "\"'":
            return self._string_end(pos)
        if c in "[{":
            close = "]" if c == "[" else "}"
            i = pos + 1
            while i < len(text):
                i = self._skip_blank_lines(i) if c == "[" else self._skip_spaces(i)
                if i >= len(text):
                    break
                if text[i] == close:
                    return i + 1
                if text[i] == ",":
                    i += 1
                elif c == "{":
                    _key, eq = self._key(i, "=")
                    if not text.startswith("=", eq):
                        raise self.fail("an inline table is not key = value")
                    i = self.value_end(self._skip_spaces(eq + 1))
                else:
                    i = self.value_end(i)
            raise self.fail("an array or inline table is not closed")
        scalar = re.compile(r"[^\s,\]}#]+(?:[ T][0-9:.+\-Z]+)?")  # dates may hold one space
        found = scalar.match(text, pos)
        if found is None:
            raise self.fail(f"a value on line {text.count(chr(10), 0, pos) + 1} is not one this "
                            "editor reads")
        return found.end()

    def array_items(self, pos: int) -> tuple[list[tuple[int, int]], int]:
        """The spans of the items of the array at ``pos``, and where its ``]`` is."""
        text, items, i = self.text, [], pos + 1
        while True:
            i = self._skip_blank_lines(i)
            if i >= len(text):
                raise self.fail("an array is not closed")
            if text[i] == "]":
                return items, i
            if text[i] == ",":
                i += 1
                continue
            end = self.value_end(i)
            items.append((i, end))
            i = end


def _escaped(text: str, pos: int) -> bool:
    backslashes = 0
    while pos - backslashes - 1 >= 0 and text[pos - backslashes - 1] == "\\":
        backslashes += 1
    return backslashes % 2 == 1


# -------------------------------------------------------------------- editing


def with_value(text: str, table: Sequence[str], key: str, value: Value, *,
               where: str = "config.toml", create_table: bool = True) -> str:
    """``text`` with ``key = value`` in ``[table]`` (``()``: the top level)."""
    table = tuple(table)
    old = _parse(text, where)
    current = _lookup(old, table)
    if isinstance(current, dict) and key in current and _same(current[key], value):
        return text
    expected = json.loads(json.dumps(old, default=str))
    _lookup(expected, table, create=True)[key] = json.loads(json.dumps(value))
    new = _EditPlan(text, where).set(table, key, toml_value(value), create_table)
    return _checked(new, expected, where, f"{key} in {table_name(table)}")


def with_item(text: str, table: Sequence[str], key: str, item: Value, *,
              where: str = "config.toml", create_table: bool = False) -> str:
    """``text`` with ``item`` appended to the array ``key`` of ``[table]`` (made if missing)."""
    table = tuple(table)
    old = _parse(text, where)
    current = _lookup(old, table)
    array = current.get(key) if isinstance(current, dict) else None
    if array is not None and not isinstance(array, list):
        raise ConfigError(f"{where}: {key} in {table_name(table)} is not an array; "
                          "edit it by hand")
    if array is not None and any(_same(v, item) for v in array):
        return text
    expected = json.loads(json.dumps(old, default=str))
    target = _lookup(expected, table, create=True)
    target[key] = [*target.get(key, []), json.loads(json.dumps(item))]
    plan = _EditPlan(text, where)
    if array is None:
        new = plan.set(table, key, toml_value([item]), create_table)
    else:
        new = plan.append(table, key, toml_value(item))
    return _checked(new, expected, where, f"{key} in {table_name(table)}")


class _EditPlan:
    def __init__(self, text: str, where: str) -> None:
        self.text = text
        self.where = where
        self.scanner = _Scanner(text, where)
        self.statements = self.scanner.statements()
        self.newline = "\r\n" if "\r\n" in text else "\n"

    def _section(self, table: tuple[str, ...]) -> tuple[_Statement | None, list[_Statement]]:
        """The table's header (None: the top level, or no header) and its statements."""
        header, body = None, []
        for statement in self.statements:
            if statement.kind != "value":
                if header is not None or not table:
                    break
                if statement.kind == "table" and statement.path == table:
                    header = statement
            elif header is not None or not table:
                body.append(statement)
        return header, body

    def _defined_elsewhere(self, table: tuple[str, ...]) -> bool:
        data = _parse(self.text, self.where)
        return _lookup(data, table) is not None

    def set(self, table: tuple[str, ...], key: str, value: str, create_table: bool) -> str:
        header, body = self._section(table)
        if table and header is None:
            if self._defined_elsewhere(table):
                raise ConfigError(f"{self.where}: {table_name(table)} is not written as a table "
                                  "header; edit it by hand")
            if not create_table:
                raise ConfigError(f"{self.where} has no {table_name(table)} table")
            return self._new_table(table, key, value)
        for statement in body:
            if statement.path == (key,):
                return self.text[:statement.value_start] + value + self.text[statement.end:]
            if statement.path[0] == key:
                raise ConfigError(f"{self.where}: {key} in {table_name(table)} is written as "
                                  "dotted keys; edit it by hand")
        line = f"{toml_key(key)} = {value}{self.newline}"
        if body:
            at = body[-1].line_end
            if at == len(self.text) and not self.text.endswith("\n"):
                line = self.newline + line[: -len(self.newline)]
        elif header is not None:
            at = header.line_end
            if at == len(self.text) and not self.text.endswith("\n"):
                line = self.newline + line
        else:  # the top level of a file that has no key there yet: above the first table
            first = next((s for s in self.statements if s.kind != "value"), None)
            at = first.start if first is not None else len(self.text)
            if first is not None:
                at = self._comments_above(at)
                line += self.newline
            elif self.text and not self.text.endswith("\n"):
                line = self.newline + line
        return self.text[:at] + line + self.text[at:]

    def _comments_above(self, pos: int) -> int:
        """Back over the comment lines right above ``pos`` (they belong to what follows)."""
        lines = self.text[:pos].splitlines(keepends=True)
        while lines and lines[-1].lstrip().startswith("#"):
            pos -= len(lines.pop())
        return pos

    def _new_table(self, table: tuple[str, ...], key: str, value: str) -> str:
        nl = self.newline
        text = self.text
        if text and not text.endswith("\n"):
            text += nl
        gap = nl if text.strip() else ""
        return f"{text}{gap}{table_name(table)}{nl}{toml_key(key)} = {value}{nl}"

    def append(self, table: tuple[str, ...], key: str, item: str) -> str:
        header, body = self._section(table)
        if table and header is None:
            raise ConfigError(f"{self.where}: {table_name(table)} is not written as a table "
                              "header; edit it by hand")
        statement = next((s for s in body if s.path == (key,)), None)
        if statement is None:
            raise ConfigError(f"{self.where}: {key} in {table_name(table)} is not written as "
                              "key = [...]; edit it by hand")
        text, start = self.text, statement.value_start
        if not text.startswith("[", start):
            raise ConfigError(f"{self.where}: {key} in {table_name(table)} is not an array; "
                              "edit it by hand")
        items, close = self.scanner.array_items(start)
        if not items:
            return text[: start + 1] + item + text[start + 1:]
        last_end = items[-1][1]
        after = self.scanner._skip_spaces(last_end)
        comma = after if text.startswith(",", after) else None
        tail_from = comma + 1 if comma is not None else last_end
        if "\n" not in text[tail_from:close]:  # "]" on the last item's line: stay on it
            if comma is not None:
                return text[:tail_from] + f" {item}," + text[tail_from:]
            return text[:last_end] + f", {item}" + text[last_end:]
        # One item a line: a new line like the last item's, after its comment if any.
        line_start = text.rfind("\n", 0, items[-1][0]) + 1
        indent = re.match(r"[ \t]*", text[line_start:]).group()
        line_end = self.scanner._to_newline(tail_from)
        if text[line_end - 1: line_end] == "\r":
            line_end -= 1
        new_line = f"{self.newline}{indent}{item}{',' if comma is not None else ''}"
        new = text[:line_end] + new_line + text[line_end:]
        if comma is None:
            new = new[:last_end] + "," + new[last_end:]
        return new


# --------------------------------------------------------------------- checks


def _parse(text: str, where: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where} is not valid TOML ({exc}); fix it first") from None


def _lookup(data: dict[str, Any], table: Sequence[str], create: bool = False) -> Any:
    for part in table:
        if not isinstance(data, dict):
            return None
        if part not in data and create:
            data[part] = {}
        data = data.get(part)  # type: ignore[assignment]
    return data


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, default=str, sort_keys=True) == json.dumps(b, default=str,
                                                                      sort_keys=True)


def _checked(new: str, expected: dict[str, Any], where: str, what: str) -> str:
    try:
        got = json.loads(json.dumps(tomllib.loads(new), default=str))
    except tomllib.TOMLDecodeError:
        got = None
    if got != expected:
        raise ConfigError(f"{where}: could not change {what} without changing something else; "
                          "edit it by hand")
    return new
