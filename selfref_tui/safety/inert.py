"""Untrusted text made inert for a terminal: control characters shown, never sent.

Why visible replacements rather than deletion: a person should still see that
something odd was in the text (an answer that tried to write the clipboard
looks different from one that did not), and deleting characters can join
neighbouring text into something misleading.

Newline and tab are kept (they are layout, not commands). A ``\\r\\n`` pair is
a line break from a Windows-minded server and becomes ``\\n``; a lone ``\\r``
(which would move the cursor back over the line) is shown as ``␍``.
"""

from __future__ import annotations

import re
import unicodedata
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from textual.content import Content


def _table() -> dict[int, str]:
    table: dict[int, str] = {}
    for code in range(0x20):
        if code in (0x09, 0x0A):
            continue
        table[code] = chr(0x2400 + code)  # the Control Pictures block: ␀ … ␟, ␛ for ESC
    table[0x7F] = "\u2421"  # ␡
    for code in range(0x80, 0xA0):  # C1: no pictures exist; show the code
        table[code] = f"\\x{code:02x}"
    # Bidirectional overrides and isolates reorder what is shown ("Trojan source").
    # A lone surrogate (half a pair, from a JSON escape or undecodable bytes) has no
    # UTF-8: written out, it is a raw byte (0xdc9b → 0x9b, a C1 CSI) or an encoding error.
    for code in (*range(0x202A, 0x202F), *range(0x2066, 0x206A), *range(0xD800, 0xE000)):
        table[code] = f"\\u{code:04x}"
    return table


_TABLE = _table()
#: the characters of _TABLE, as ranges (a class of 2,000 single characters is slow)
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_LINE_TABLE = {**_TABLE, 0x0A: " ", 0x09: " "}


def has_controls(text: str) -> bool:
    """Whether :func:`inert` would change ``text`` (beyond a ``\\r\\n`` pair)."""
    return _UNSAFE.search(text) is not None


def inert(text: str) -> str:
    """``text`` with every terminal control character made visible.

    No C0 character other than newline and tab survives, nor ESC, DEL, a C1
    character (U+0080–U+009F) or a bidirectional override. Text without any
    comes back as the same object (the common case costs one regex scan).
    """
    if not isinstance(text, str):
        text = str(text)
    if _UNSAFE.search(text) is None:
        return text
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    return text.translate(_TABLE)


def inert_line(text: str, limit: int | None = None) -> str:
    """:func:`inert` for one-line places: newlines and tabs become spaces.

    ``limit`` cuts the result to that many characters, ending in ``…``.
    """
    if not isinstance(text, str):
        text = str(text)
    line = text.replace("\r\n", "\n").translate(_LINE_TABLE)
    if limit is not None and len(line) > limit:
        line = line[: max(limit - 1, 0)] + "…"
    return line


def name_line(text: str, limit: int | None = None) -> str:
    """A name (a conversation's) for one line: :func:`inert_line`, and every invisible
    format character (Unicode category Cf: zero-width space and joiners, U+2060,
    U+FEFF, bidirectional marks, overrides and isolates …) shown as its escape.

    Why names and not all text: in an answer a zero-width joiner builds an emoji
    and a mark orders Arabic words, but two names a person tells apart by sight
    must look different when they are different ("main" and "ma\\u200bin").
    A name never holds a backslash (it is refused as a path separator), so the
    escape cannot be mistaken for characters of the name.

    So is a space other than the plain one (no-break, en, ideographic …: "my\u00a0chat"
    reads as "my chat"), and a letter that mixes scripts into a word
    (:func:`lookalike_letters`: "m\u0430in" with a Cyrillic "а" reads as "main").
    """
    line = inert_line(text)
    if not line.isascii():  # fast path: a plain name has nothing to show
        foreign = lookalike_letters(line)
        line = "".join(_escaped(ch) if i in foreign or _odd_space(ch)
                       or unicodedata.category(ch) == "Cf" else ch
                       for i, ch in enumerate(line))
    if limit is not None and len(line) > limit:
        line = line[: max(limit - 1, 0)] + "…"
    return line


#: the scripts whose letters look alike: Latin "a", Cyrillic "а", Greek "ο" and Latin "o" …
LOOKALIKE_SCRIPTS = ("LATIN", "CYRILLIC", "GREEK")


def lookalike_letters(text: str) -> set[int]:
    """Where ``text`` mixes lookalike scripts inside one word: the indexes of the letters
    of the word's smaller script (of the non-Latin one on a tie).

    A word is a run of letters and marks. Why words and not the whole text: a name wholly
    in Cyrillic or Greek, or words of each ("notes-заметки"), is someone's honest name;
    one word that mixes them ("m\u0430in", "hell\u03bf") is made to look like another.
    """
    found: set[int] = set()
    word: list[tuple[int, str]] = []
    for index, ch in enumerate(text):
        if unicodedata.category(ch)[0] in "LM":
            word.append((index, _script(ch)))
            continue
        found |= _minority(word)
        word = []
    return found | _minority(word)


#: letters that look alike across the lookalike scripts, each followed by its Latin twin
_TWINS = {
    "CYRILLIC": "аaеeоoрpсcуyхxіiјjѕsԁdһhӏlԛqԝwАAВBЕEКKМMНHОOРPСCТTХXІIЈJЅSҮY",
    "GREEK": "αaοoνvιiκkρpυuχxΑAΒBΕEΖZΗHΙIΚKΜMΝNΟOΡPΤTΥYΧX",
}
_TO_LATIN = {foreign: latin for pairs in _TWINS.values()
             for foreign, latin in zip(pairs[::2], pairs[1::2], strict=True)}
_FROM_LATIN = {script: dict(zip(pairs[1::2], pairs[::2], strict=True))
               for script, pairs in _TWINS.items()}


def one_script(text: str) -> str:
    """``text`` with each word in one alphabet: a letter of a word's smaller lookalike
    script (:func:`lookalike_letters`) becomes its twin in the word's main one ("m\u0430in"
    with a Cyrillic "а" → "main"), or is left out when it has none.

    For a name made from an old one (a branch's suggestion, a rename's start): the
    person cannot see which letter to change, and the name as it was is refused.
    """
    foreign = lookalike_letters(text)
    if not foreign:
        return text
    out: list[str] = []
    for index, ch in enumerate(text):
        if index not in foreign:
            out.append(ch)
            continue
        start = _word_start(text, index)
        main = next(_script(c) for at, c in enumerate(_word_at(text, index), start)
                    if at not in foreign and _script(c))
        latin = ch if _script(ch) == "LATIN" else _TO_LATIN.get(ch, "")
        out.append(latin if main == "LATIN" else _FROM_LATIN[main].get(latin, ""))
    return "".join(out)


def _word_start(text: str, index: int) -> int:
    while index > 0 and unicodedata.category(text[index - 1])[0] in "LM":
        index -= 1
    return index


def mixed_scripts(text: str) -> tuple[str, ...]:
    """The lookalike scripts mixed in one of ``text``'s words ("LATIN", "CYRILLIC"), or ()."""
    foreign = lookalike_letters(text)
    if not foreign:
        return ()
    first = min(foreign)
    word_scripts = {_script(ch) for ch in _word_at(text, first)} - {""}
    return tuple(s for s in LOOKALIKE_SCRIPTS if s in word_scripts)


def odd_space(text: str) -> str | None:
    """The first space in ``text`` that is not the plain one (U+00A0, U+2000–U+200A,
    U+3000 …), which reads as a plain space; None when there is none."""
    return next((ch for ch in text if _odd_space(ch)), None)


def _odd_space(ch: str) -> bool:
    return ch != " " and unicodedata.category(ch) == "Zs"


def _script(ch: str) -> str:
    name = unicodedata.name(ch, "")
    return next((script for script in LOOKALIKE_SCRIPTS if name.startswith(script + " ")), "")


def _minority(word: list[tuple[int, str]]) -> set[int]:
    counts: dict[str, int] = {}
    for _index, script in word:
        if script:
            counts[script] = counts.get(script, 0) + 1
    if len(counts) < 2:
        return set()
    kept = max(counts, key=lambda script: (counts[script], script == "LATIN"))
    return {index for index, script in word if script and script != kept}


def _word_at(text: str, index: int) -> str:
    start = end = _word_start(text, index)
    while end < len(text) and unicodedata.category(text[end])[0] in "LM":
        end += 1
    return text[start:end]


def key_option(key: str) -> str:
    """``--key NAME`` for a command line a person copies, that opens this very name
    (:func:`shell_word`); ``--key=NAME`` for a name that starts with ``-``, which the
    parser would take for an option."""
    word = shell_word(key)
    return f"--key={word}" if key.startswith("-") else f"--key {word}"


def shell_word(name: str) -> str:
    """``name`` as one word of a command line a person copies, that gives back this very
    name: shell-quoted, so a name with a space or a quote is still one word (``'my
    chat'``) and a plain one reads as typed (``main``). A name :func:`name_line` marks
    (an invisible character, a space or a letter that only looks plain) is written
    with the same escapes, in ``$'…'``, which bash and zsh read back into the name:
    nothing from the disk reaches the terminal raw, and ``'m\\u0430in'`` quoted
    plainly would name another conversation (one with a backslash, refused).
    """
    import shlex

    if name_line(name) == name:
        return shlex.quote(name)
    foreign = lookalike_letters(name)
    return "$'" + "".join(
        _escaped(ch) if index in foreign or ord(ch) in _LINE_TABLE or _odd_space(ch)
        or unicodedata.category(ch) == "Cf" else "\\'" if ch == "'" else ch
        for index, ch in enumerate(name)) + "'"


def _escaped(ch: str) -> str:
    code = ord(ch)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def one_line(text: object, limit: int) -> str:
    """``text``'s words on one line, every run of whitespace one space, cut at ``limit``.

    The form of an error or note that quotes a server, a tool or an exception:
    short enough for one line of a notice. It is still shown through
    :func:`inert` (control characters other than whitespace are kept here).
    """
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: max(limit - 1, 0)] + "…"


_SURROGATE = re.compile("[\ud800-\udfff]")


def writable(text: str) -> str:
    """``text`` with each lone surrogate (half an emoji's pair a server cut, an
    undecodable byte) written as its escape ``\\udXXX``: a file a person keeps is
    UTF-8, which has no bytes for one, and writing it failed whole."""
    if _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def json_inert(dumped: str) -> str:
    """JSON text (``json.dumps`` output) with no terminal control character left raw.

    ``json.dumps`` escapes C0 characters but, with ``ensure_ascii=False``
    (readable non-ASCII), writes DEL, C1 characters and bidirectional
    overrides as they are. They can only occur inside JSON strings, so
    writing each as a ``\\uXXXX`` escape keeps the document valid and its
    value unchanged.
    """
    if _UNSAFE.search(dumped) is None:
        return dumped
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", dumped)


def content(text: str, style: str = "", *, line: bool = False) -> Content:
    """A Textual ``Content`` of ``text`` as plain characters: markup is never parsed.

    ``line`` gives the one-line form (:func:`inert_line`). ``style`` is ours
    (trusted), applied to the whole text.
    """
    from textual.content import Content

    shown = inert_line(text) if line else inert(text)
    return Content.styled(shown, style) if style else Content(shown)
