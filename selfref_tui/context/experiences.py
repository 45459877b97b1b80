"""Durable experiences: the facts an agent keeps in its system prompt.

Experiences live on the system message as structured data (``experiences``: a
list of ``{"id", "text"}``, and ``exp_seq``: the last number handed out) and
are rendered into the prompt only at compile time. Keeping them structured
means a forget never has to parse XML back out of a prompt, and keeping the
counter means an id is never reused after a forget.

Each experience also says where it came from (:data:`PROVENANCE`: ``created``,
``source`` — "agent", "person" or "compaction" — and ``message``, the number
of the message it came from); the model reads only id and text, the person
reads all of it (sidebar, ``experiences list --json``).
"""

from __future__ import annotations

from typing import Any

EXPERIENCES_KEY = "experiences"
SEQ_KEY = "exp_seq"
#: where an experience came from, beside its id and text (absent on older keys)
PROVENANCE = ("created", "source", "message")
SOURCES = ("agent", "person", "compaction")


def normalize_text(text: str) -> str:
    """Whitespace-normalised text, the form used to spot duplicates."""
    return " ".join(text.split())


def format_id(number: int) -> str:
    return f"exp_{number:03d}"


def experiences_of(system_message: dict[str, Any] | None) -> list[dict[str, str]]:
    if not system_message:
        return []
    return list(system_message.get(EXPERIENCES_KEY) or [])


def find_existing(experiences: list[dict[str, str]], text: str) -> str | None:
    """The id of an experience whose text equals ``text`` after normalising."""
    wanted = normalize_text(text)
    for exp in experiences:
        if isinstance(exp, dict) and normalize_text(str(exp.get("text", ""))) == wanted:
            return str(exp.get("id", ""))
    return None


def last_seq(system_message: dict[str, Any] | None) -> int:
    """The highest experience number ever handed out on this system message.

    The stored counter is authoritative, but a system message brought in by a
    replace (a fork, a hand-edited history) may lack it or lag behind its own
    ids; taking the highest numbered id as well keeps new ids unique.
    """
    message = system_message or {}
    try:
        seq = int(message.get(SEQ_KEY) or 0)
    except (TypeError, ValueError):
        seq = 0
    return max(seq, _indexed(message.get(EXPERIENCES_KEY))[1])


#: the last list of experiences indexed, its index and highest number (see :func:`_indexed`)
_last_index: tuple[list[Any], dict[str, str], int] | None = None


def _indexed(experiences: Any) -> tuple[dict[str, str], int]:
    """``experiences``' ids by normalised text (the first of equal texts) and the highest
    number among its ``exp_N`` ids.

    Loading a key folds each batch of experience patches onto the list the last one
    made: the index of that list is kept (with the list, so its identity cannot be
    reused) and not built again. Built again for every batch, 1,000 experiences
    remembered one a turn cost half a million normalisations at each load. Lists
    are never changed in place (every change makes a new one), and the index kept is
    never changed either (a batch adds to a copy).
    """
    last = _last_index
    if last is not None and last[0] is experiences:
        return last[1], last[2]
    known: dict[str, str] = {}
    high = 0
    for exp in experiences if isinstance(experiences, (list, tuple)) else ():
        if not isinstance(exp, dict):
            continue
        exp_id = exp.get("id")
        if isinstance(exp_id, str) and exp_id.startswith("exp_") and exp_id[4:].isdigit():
            high = max(high, int(exp_id[4:]))
        known.setdefault(normalize_text(str(exp.get("text", ""))), str(exp.get("id", "")))
    _remember_index(experiences, known, high)
    return known, high


def _remember_index(experiences: Any, known: dict[str, str], high: int) -> None:
    global _last_index
    if isinstance(experiences, list):
        _last_index = (experiences, known, high)


def next_id(system_message: dict[str, Any] | None) -> str:
    """The id the next new experience on this system message will get."""
    return format_id(last_seq(system_message) + 1)


def provenance(source: str = "", message: int = 0, created: str = "") -> dict[str, Any]:
    """The provenance fields worth storing (empty ones are left out)."""
    out: dict[str, Any] = {}
    if created:
        out["created"] = created
    if source:
        out["source"] = source
    if message:
        out["message"] = message
    return out


def describe_provenance(experience: dict[str, Any], *, local_time: bool = True) -> str:
    """Where an experience came from, in a few words: "agent · #12 · Nov 26 13:58".

    Empty for an experience stored before provenance. ``local_time`` shows the
    time in the machine's zone (people's reading), else as stored (UTC).
    """
    parts = []
    source = experience.get("source")
    if isinstance(source, str) and source:
        parts.append(source)
    message = experience.get("message")
    if type(message) is int and message > 0:
        parts.append(f"#{message}")
    created = experience.get("created")
    if isinstance(created, str) and created:
        parts.append(_short_time(created, local_time))
    if experience.get("edited"):
        parts.append("edited")
    return " · ".join(parts)


def _short_time(stamp: str, local_time: bool) -> str:
    from datetime import datetime

    from .local_time import shown_time

    if local_time:
        return shown_time(stamp, "%b %d %H:%M")
    try:
        return datetime.fromisoformat(stamp).strftime("%b %d %H:%M")
    except ValueError:
        return stamp[:40]


def with_remembered(
    system_message: dict[str, Any], text: str, meta: dict[str, Any] | None = None
) -> tuple[dict[str, Any], str]:
    """A copy of ``system_message`` that holds ``text``, and the id it has there.

    Remembering text that is already there returns the existing id unchanged
    (with its first provenance). Empty text is not stored and gets an empty
    id. ``meta``: provenance fields (:func:`provenance`) stored with it.
    """
    clean = text.strip()
    if not clean:
        return system_message, ""
    experiences = experiences_of(system_message)
    existing = find_existing(experiences, clean)
    if existing is not None:
        return system_message, existing
    seq = last_seq(system_message) + 1
    exp_id = format_id(seq)
    updated = dict(system_message)
    updated[EXPERIENCES_KEY] = [*experiences, {"id": exp_id, "text": clean, **(meta or {})}]
    updated[SEQ_KEY] = seq
    return updated, exp_id


def with_all_remembered(
    system_message: dict[str, Any], items: list[tuple[str, dict[str, Any] | None]]
) -> dict[str, Any]:
    """:func:`with_remembered` for each ``(text, meta)`` of ``items`` in turn, in one pass.

    One at a time, each remember copied the list and normalised every text already
    there to look for a duplicate: a batch of 1,000 (a compaction's, or a key built
    by a script) cost a million normalisations at every load of the key. Here the
    list's index is built once (or reused: :func:`_indexed`) and the list copied once.
    """
    if not any(text.strip() for text, _ in items):
        return system_message
    current = system_message.get(EXPERIENCES_KEY)
    known, high = _indexed(current)
    seq = last_seq(system_message)
    known = dict(known)
    added: list[dict[str, Any]] = []
    for text, meta in items:
        clean = text.strip()
        if not clean:
            continue
        wanted = normalize_text(clean)
        if wanted in known:
            continue
        seq += 1
        exp_id = format_id(seq)
        known[wanted] = exp_id
        added.append({"id": exp_id, "text": clean, **(meta or {})})
    if not added:
        return system_message
    experiences = [*experiences_of(system_message), *added]
    updated = dict(system_message)
    updated[EXPERIENCES_KEY] = experiences
    updated[SEQ_KEY] = seq
    _remember_index(experiences, known, max(high, seq))
    return updated


def with_edited(
    system_message: dict[str, Any], experience_id: str, text: str, edited: str = ""
) -> tuple[dict[str, Any], bool]:
    """A copy of ``system_message`` where ``experience_id`` says ``text``; whether it was there.

    The id and provenance stay (the fact is the same one, corrected); ``edited``
    records when. Empty text changes nothing (forgetting is its own patch).
    """
    clean = text.strip()
    experiences = experiences_of(system_message)
    index = next((i for i, e in enumerate(experiences) if e.get("id") == experience_id), None)
    if index is None or not clean:
        return system_message, False
    changed = {**experiences[index], "text": clean}
    if edited:
        changed["edited"] = edited
    updated = dict(system_message)
    updated[EXPERIENCES_KEY] = [*experiences[:index], changed, *experiences[index + 1:]]
    return updated, True

def with_forgotten(
    system_message: dict[str, Any], experience_id: str
) -> tuple[dict[str, Any], bool]:
    """A copy of ``system_message`` without ``experience_id``; whether it was there."""
    experiences = experiences_of(system_message)
    kept = [exp for exp in experiences if exp.get("id") != experience_id]
    if len(kept) == len(experiences):
        return system_message, False
    updated = dict(system_message)
    updated[EXPERIENCES_KEY] = kept
    return updated, True


def escape(text: str, entities: dict[str, str] | None = None) -> str:
    """XML-escape ``&``, ``<``, ``>`` (and ``entities``), like xml.sax.saxutils.escape.

    Own copy because importing xml.sax.saxutils pulls in urllib, http and ssl.
    """
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    for char, entity in (entities or {}).items():
        text = text.replace(char, entity)
    return text


def render_experiences_block(experiences: list[dict[str, str]]) -> str:
    lines = ["<experiences>"]
    for exp in experiences:
        exp_id = escape(str(exp.get("id", "")), {'"': "&quot;"})
        lines.append(f'  <exp id="{exp_id}">{escape(str(exp.get("text", "")))}</exp>')
    lines.append("</experiences>")
    return "\n".join(lines)


def render_system_prompt_with_experiences(
    base_prompt: str, experiences: list[dict[str, str]]
) -> str:
    """The system prompt the model sees: the base prompt, then the experiences block.

    With no experiences the base prompt is returned unchanged, so a fresh key
    costs no tokens for an empty block.
    """
    if not experiences:
        return base_prompt
    block = render_experiences_block(experiences)
    if not base_prompt:
        return block
    return f"{base_prompt.rstrip()}\n\n{block}"
