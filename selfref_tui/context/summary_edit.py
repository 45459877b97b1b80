"""The model's summary as text a person edits, and that text read back into a summary.

With ``review_compaction`` the person reads the proposed summary before it
replaces the conversation and may correct it. They edit the model's sections
only, as Markdown blocks under the same titles the model's reader sees
(``## Goal`` …, then ``## Remember`` for the facts to keep as experiences);
what the runtime keeps verbatim (the person's words, pins) is added when the
patch is built, never typed over. Reading back is forgiving: titles match
whatever their case and spacing, list sections take one item per ``- `` line
(a line without the dash is an item too, and a continuation indented under an
item joins it), ``(none)`` means empty, a block under an unknown title stays
with the section before it, and text before the first title joins the goal —
an edit never loses words.
"""

from __future__ import annotations

from dataclasses import fields

from .summary import EMPTY, SECTIONS, Summary, sections

REMEMBER_TITLE = "Remember"
#: every editable section, (title, field), in the order shown
EDITABLE: tuple[tuple[str, str], ...] = (*SECTIONS, (REMEMBER_TITLE, "remember"))
_BY_TITLE = {" ".join(title.lower().split()): name for title, name in EDITABLE}


def editable_text(summary: Summary) -> str:
    """``summary`` as ``## Title`` blocks; :func:`summary_from_text` gives it back."""
    return "\n\n".join(sections(summary, EDITABLE))


def summary_from_text(text: str) -> Summary:
    """The summary a person's edited :func:`editable_text` says."""
    bodies: dict[str, list[str]] = {name: [] for _, name in EDITABLE}
    current = "goal"
    for line in text.replace("\r\n", "\n").split("\n"):
        stripped = line.strip()
        if stripped.startswith("#"):
            title = " ".join(stripped.lstrip("#").lower().split())
            if title in _BY_TITLE:
                current = _BY_TITLE[title]
                continue
        bodies[current].append(line)
    values: dict[str, object] = {}
    for f in fields(Summary):
        lines = bodies.get(f.name, [])
        is_list = str(f.type).startswith("list")
        values[f.name] = _items(lines) if is_list else _prose(lines)
    return Summary(**values)  # type: ignore[arg-type]


def _prose(lines: list[str]) -> str:
    text = "\n".join(lines).strip()
    return "" if text == EMPTY else text


def _items(lines: list[str]) -> list[str]:
    items: list[str] = []
    for line in lines:
        stripped = line.strip()
        if not stripped or stripped == EMPTY:
            continue
        if stripped[:2] in ("- ", "* ") or stripped in ("-", "*"):
            items.append(stripped[2:].strip())
        elif items and line[:1].isspace():
            items[-1] = f"{items[-1]} {stripped}"  # a continuation of the item above
        else:
            items.append(stripped)
    return [item for item in items if item]
